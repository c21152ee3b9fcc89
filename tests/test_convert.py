"""tx.named / tx.positional with xmap spec leaves, and their errors."""

import jax.numpy as jnp
import numpy as np
import pytest

import typed_xmap as tx
from typed_xmap import NamedShapeError


def test_round_trips():
    a = np.arange(24.0).reshape(2, 3, 4)
    for spec in (["i", "j", "k"], ["i", ...], {0: "i", 2: "k"}, {1: "j"}, [None, "j", ...], {}):
        x = tx.named(a, spec)
        np.testing.assert_array_equal(tx.positional(x, spec), a)


def test_positional_reorders_and_inserts_in_ascending_order():
    x = tx.named(jnp.zeros((2, 4, 3)), {0: "i", 1: "j"})  # positional (3,)
    assert tx.positional(x, ["j", "i", ...]).shape == (4, 2, 3)
    assert tx.positional(x, {0: "i", 2: "j"}).shape == (2, 3, 4)


def test_named_on_a_named_array_names_its_positional_dims():
    x = tx.named(jnp.zeros((5, 2)), {1: "a"})
    y = tx.named(x, ["b"])
    assert y.named_shape == {"a": 2, "b": 5} and y.shape == ()


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda: tx.named(jnp.zeros((2, 3)), ["i"]),
            "axes = ['i']: a list spec without '...' asserts rank 1, but the value has rank 2 (shape (2, 3)). "
            "Fix: end the list with ... to allow more dims",
        ),
        (
            lambda: tx.named(jnp.zeros(3), {1: "i"}),
            "axes = {1: 'i'} names dim 1, so the value needs at least 2 positional dims, but it has rank 1 "
            "(shape (3,)). Fix: name dims the value has",
        ),
        (
            lambda: tx.named(jnp.zeros(3), {-1: "i"}),
            "axes = {-1: 'i'}: negative dim -1 for axis 'i'; xmap specs count dims from the front. Fix: use a "
            "non-negative position",
        ),
        (
            lambda: tx.named(jnp.zeros((3, 3)), ["i", "i"]),
            "axes = ['i', 'i']: axis 'i' is named twice (dims 0 and 1); names must be unique within one spec. "
            "Fix: give each dim its own name",
        ),
        (
            lambda: tx.positional(tx.named(jnp.zeros((2, 3)), ["i", "j"]), ["i", ...]),
            "axes = ['i', ...] does not list axis 'j', which the value NamedArray(float32[i=2, j=3]) carries. "
            "Fix: list every named axis, e.g. ['i', 'j', ...]",
        ),
        (
            lambda: tx.positional(tx.named(jnp.zeros(2), ["i"]), ["i", "k"]),
            "axes = ['i', 'k'] lists axis 'k', but the value NamedArray(float32[i=2]) does not carry it, so its "
            "size is unknown. Fix: drop it from the spec, or broadcast x first",
        ),
    ],
)
def test_errors(call, message):
    with pytest.raises(NamedShapeError) as info:
        call()
    assert str(info.value) == message


def test_a_string_is_not_a_spec():
    with pytest.raises(NamedShapeError, match=r"for a whole argument without named axes, use \{\}"):
        tx.named(jnp.zeros(2), "i")


def test_none_in_a_dict_spec_is_an_error():
    with pytest.raises(NamedShapeError, match=r"dim 1 maps to None; in a dict spec every entry names an axis"):
        tx.named(jnp.zeros((2, 3)), {0: "a", 1: None})
