"""A NamedArray pickles as its constructor's arguments, so a pickle survives changes of the pytree flatten's aux;
a value pickled by an older typed_xmap (its slots, a 2-entry aux ``(axes, mapped)`` among them) loads through the
constructor, and ``jax.jit`` takes it."""

from __future__ import annotations

import copy
import pickle

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import typed_xmap as tx
from typed_xmap import NamedArray, NamedShapeError


class _OldPickle:
    """Loads as an older typed_xmap's pickle of a NamedArray does: an empty value (``object.__new__``, what its
    ``NEWOBJ`` ran), then its slots set from the pickled state."""

    def __init__(self, state: object) -> None:
        self.state = state

    def __reduce__(self) -> tuple[object, ...]:
        return (object.__new__, (NamedArray,), self.state)


def _old_state(data: jax.Array, axes: tuple[str, ...]) -> tuple[None, dict[str, object]]:
    return (None, {"data": data, "axes": axes, "mapped": (), "_flat": ((data,), (axes, ()))})


def test_a_value_round_trips_through_pickle_and_jit():
    x = tx.named(jnp.arange(6.0).reshape(2, 3), ["batch", "embed"])
    y = pickle.loads(pickle.dumps(x))
    assert y.named_shape == {"batch": 2, "embed": 3}
    assert y._flat[1] == x._flat[1]
    np.testing.assert_array_equal(tx.positional(jax.jit(lambda v: v * 2)(y), ["batch", "embed"]), 2 * x.data)
    assert copy.deepcopy(x).named_shape == x.named_shape


def test_an_old_pickle_with_a_two_entry_aux_loads_and_jits():
    data = jnp.arange(6.0).reshape(3, 2)  # laid out (embed, batch): not name order
    old = pickle.dumps(_OldPickle(_old_state(data, ("embed", "batch"))))
    y = pickle.loads(old)
    assert type(y) is NamedArray
    assert len(y._flat[1]) == 3  # this version's aux
    assert y.named_shape == {"batch": 2, "embed": 3}
    doubled = jax.jit(lambda v: v * 2)(y)
    np.testing.assert_array_equal(tx.positional(doubled, ["embed", "batch"]), 2 * data)


def test_an_unreadable_state_says_what_to_do():
    with pytest.raises(NamedShapeError, match=r"cannot read \(list.*Fix: pickle the value again"):
        pickle.loads(pickle.dumps(_OldPickle([1, 2])))


def test_an_error_keeps_its_kind_and_axes_through_pickle():
    try:
        tx.rename(tx.named(jnp.ones((2, 3)), ["a", "b"]), {"a": "b"})
    except NamedShapeError as error:
        again = pickle.loads(pickle.dumps(error))
        assert (str(again), again.kind, again.axes) == (str(error), error.kind, ("b",))
    else:
        raise AssertionError("renaming 'a' to 'b' beside 'b' is a clash")
