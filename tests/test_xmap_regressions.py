"""Regressions from issue 8 and from fuzzing xmap's arguments: each pins the full message."""

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import AxisResourceConflict, NamedShapeError, xmap
from typed_xmap._algebra import ErrorKind

X = np.arange(8.0, dtype=np.float32)


@pytest.fixture
def mesh():
    with jax.set_mesh(jax.make_mesh((4, 2), ("x", "y"))) as mesh:
        yield mesh


def identity(v):
    return v


def test_a_second_xmap_of_the_same_function_does_not_trace_again():
    traces = []

    def f(v):
        traces.append(v)
        return v * 2

    first = xmap(f, in_axes=["a", ...], out_axes=["a", ...])(X)
    second = xmap(f, in_axes=["a", ...], out_axes=["a", ...])(X)
    assert len(traces) == 1
    np.testing.assert_array_equal(first, second)
    xmap(f, in_axes=["b", ...], out_axes=["b", ...])(X)  # other specs: another program
    assert len(traces) == 2


def test_program_cache_lets_the_function_go():
    import gc
    import weakref

    def f(v):
        return v + 1

    xmap(f, in_axes=["a", ...], out_axes=["a", ...])(X)
    ref = weakref.ref(f)
    del f
    gc.collect()
    assert ref() is None


def test_equal_but_distinct_functions_keep_their_own_programs():
    """Bound methods of one object compare equal but are distinct objects: dropping the first xmap must not
    strand the second (it once raised "an xmap program outlived its function" on its next trace)."""
    import dataclasses
    import gc

    class Model:
        def f(self, v):
            return v * 2

    @dataclasses.dataclass(frozen=True)
    class Scale:
        k: float

        def __call__(self, v):
            return v * self.k

    model = Model()
    for make in (lambda: model.f, lambda: Scale(2.0)):
        first = xmap(make(), in_axes=["a", ...], out_axes=["a", ...])
        second = xmap(make(), in_axes=["a", ...], out_axes=["a", ...])
        np.testing.assert_allclose(second(X), X * 2)
        del first
        gc.collect()
        np.testing.assert_allclose(second(np.arange(6.0)), np.arange(6.0) * 2)  # a new shape: traces again


def test_conflict_only_in_a_nested_output(mesh):
    inner = xmap(lambda v: v, in_axes=[], out_axes=["i"], axis_sizes={"i": 4}, axis_resources={"i": "x"})
    outer = xmap(inner, in_axes=["j", ...], out_axes=["j", ...], axis_resources={"j": "x"})
    with pytest.raises(AxisResourceConflict) as info:
        outer(np.arange(4))
    assert str(info.value) == (
        "the output (out_axes = ['i']) of <lambda> is broadcast along axis 'i', which is assigned to mesh axis "
        "'x', but the output is already partitioned along 'x' because it carries axis 'j'. Fix: drop 'i' from "
        "its out_axes, or assign 'i' to another mesh axis"
    )


@pytest.mark.parametrize("collective", ["ppermute", "pshuffle"])
def test_permute_over_two_axes_is_our_error(collective):
    def body(v):
        if collective == "ppermute":
            return lax.ppermute(v, ("i", "j"), [(k, (k + 1) % 8) for k in range(8)])
        return lax.pshuffle(v, ("i", "j"), list(range(8))[::-1])

    f = xmap(body, in_axes=["i", "j", ...], out_axes=["i", "j", ...])
    with pytest.raises(NamedShapeError) as info:
        f(np.ones((2, 4), np.float32))
    message = re.sub(r"at \S+test_xmap_regressions.py:\d+:\d+ \(\S+\)", "at LINE", str(info.value))
    assert message == (
        "a lax.ppermute/pshuffle in body at LINE permutes over axes 'i', 'j' together, which xmap's vmap levels "
        "cannot do (each level permutes one axis). Fix: permute over one axis at a time (one ppermute per axis, "
        "when the permutation factors), or merge the axes into one named axis before the xmap and permute over it"
    )
    assert info.value.kind is ErrorKind.INVALID_ARGUMENT


def test_permute_over_one_axis_of_two_still_works():
    f = xmap(
        lambda v: lax.ppermute(v, "j", [(k, (k + 1) % 4) for k in range(4)]),
        in_axes=["i", "j", ...],
        out_axes=["i", "j", ...],
    )
    np.testing.assert_array_equal(f(np.arange(8.0).reshape(2, 4)), np.roll(np.arange(8.0).reshape(2, 4), 1, 1))


def test_two_axes_on_one_named_serial_loop(mesh):
    f = xmap(identity, in_axes=["a", "b", ...], out_axes=["a", "b", ...], axis_resources={"a": "l", "b": "l"})
    with tx.serial_loop("l", 2), pytest.raises(AxisResourceConflict) as info:
        f(np.ones((4, 4)))
    assert str(info.value) == (
        "axes 'a' and 'b' are both assigned the serial loop 'l', but a loop steps through the chunks of one axis: "
        "two axes on one loop resource conflict. Fix: give 'b' its own loop or a mesh axis, or nest two xmaps"
    )


def test_two_axes_on_one_serial_loop_object():
    loop = tx.SerialLoop(2)
    f = xmap(identity, in_axes=["a", "b", ...], out_axes=["a", "b", ...], axis_resources={"a": loop, "b": loop})
    with pytest.raises(AxisResourceConflict) as info:
        f(np.ones((4, 4)))
    assert str(info.value) == (
        "axes 'a' and 'b' are both assigned the same serial loop SerialLoop(2), but a loop steps through the "
        "chunks of one axis: two axes on one loop resource conflict. Fix: give 'b' its own loop or a mesh axis, "
        "or nest two xmaps"
    )


def test_conflict_in_the_body_names_the_users_line(mesh):
    f = xmap(
        lambda q, u: tnp.einsum("{},{}->{}", q, u),
        in_axes=(["a", ...], ["b", ...]),
        out_axes=["a", "b", ...],
        axis_resources={"a": "x", "b": "x"},
    )
    with pytest.raises(AxisResourceConflict) as info:
        f(X, X)
    message = str(info.value)
    assert "typed_xmap/" not in message
    assert re.fullmatch(
        r"axes 'a' and 'b' are both assigned to mesh axis 'x', but they meet in a value computed by `dot_general` at "
        r"\S+test_xmap_regressions.py:\d+(:\d+)? \(\S+\): one value cannot be split over one mesh axis along two of "
        r"its axes. Fix: assign 'b' to another mesh axis, or keep the two axes in separate values \(reduce one of "
        r"them first\)",
        message,
    ), message


def test_conflict_in_a_library_function_names_the_calling_line(mesh):
    matmul = xmap(
        jnp.vdot,
        in_axes=({0: "left"}, {1: "right"}),
        out_axes=["left", "right", ...],
        axis_resources={"left": "x", "right": "x"},
    )
    with pytest.raises(AxisResourceConflict) as info:
        matmul(np.ones((8, 4)), np.ones((4, 8)))
    line = f"{__file__}:{info.tb.tb_lineno}"
    assert str(info.value) == (
        f"axes 'left' and 'right' are both assigned to mesh axis 'x', but they meet in a value computed by "
        f"`dot_general` at {line} (test_conflict_in_a_library_function_names_the_calling_line): one value cannot "
        f"be split over one mesh axis along two of its axes. Fix: assign 'right' to another mesh axis, or keep the "
        f"two axes in separate values (reduce one of them first)"
    )


@pytest.mark.parametrize(
    ("donate", "message"),
    [
        (
            5,
            "donate_argnums=5 for identity, which takes 1 positional argument(s): there is no argument 5. Fix: "
            "donate existing arguments, by index 0",
        ),
        (
            -5,
            "donate_argnums=-5 for identity, which takes 1 positional argument(s): there is no argument -5. Fix: "
            "donate existing arguments, by index 0",
        ),
        (
            "0",
            "donate_argnums='0' for identity: donate_argnums is an argument index or a tuple of them. Fix: write "
            "donate_argnums=0 or donate_argnums=(0, 2)",
        ),
        (
            (True,),
            "donate_argnums=(True,) for identity: donate_argnums is an argument index or a tuple of them. Fix: "
            "write donate_argnums=0 or donate_argnums=(0, 2)",
        ),
    ],
)
def test_bad_donate_argnums(donate, message):
    with pytest.raises(NamedShapeError) as info:
        xmap(identity, in_axes=["a", ...], out_axes=["a", ...], donate_argnums=donate)
    assert str(info.value) == message and info.value.kind is ErrorKind.INVALID_ARGUMENT


def test_donate_argnums_beyond_the_call_of_a_varargs_function():
    f = xmap(lambda *args: args[0], in_axes=["a", ...], out_axes=["a", ...], donate_argnums=3)
    with pytest.raises(NamedShapeError) as info:
        f(X)
    assert str(info.value) == (
        "donate_argnums=(3,) for <lambda>, but it was called with 1 argument(s): there is no argument 3. "
        "Fix: pass that argument, or donate only the arguments given"
    )


def test_negative_donate_argnums_in_range_is_accepted():
    f = xmap(lambda u, v: u + v, in_axes=["a", ...], out_axes=["a", ...], donate_argnums=-1)
    np.testing.assert_array_equal(f(X, jnp.asarray(X)), 2 * X)


def test_axis_sizes_must_be_a_dict():
    with pytest.raises(NamedShapeError) as info:
        xmap(identity, in_axes=["a", ...], out_axes=["a", ...], axis_sizes=[("a", 4)])
    assert str(info.value) == (
        "axis_sizes must be a dict from axis names to sizes, got list [('a', 4)]. Fix: write axis_sizes={'batch': 8}"
    )
    assert info.value.kind is ErrorKind.INVALID_ARGUMENT


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            [""],
            "in_axes = ['']: axis names are Python identifiers (as in NamedArray annotations), got '' at dim 0. "
            "Fix: name the axis with an identifier, e.g. 'batch'",
        ),
        (
            ["a b"],
            "in_axes = ['a b']: axis names are Python identifiers (as in NamedArray annotations), got 'a b' at "
            "dim 0. Fix: name the axis with an identifier, e.g. 'batch'",
        ),
        ([b"a"], "in_axes = [b'a']: axis names must be strings, got b'a' at dim 0. Fix: name the axis with a string"),
        ([1.5], "in_axes = [1.5]: axis names must be strings, got 1.5 at dim 0. Fix: name the axis with a string"),
        (
            {0: ...},
            "in_axes = {0: Ellipsis}: axis names must be strings, got Ellipsis at dim 0. Fix: name the axis "
            "with a string",
        ),
    ],
)
def test_axis_names_are_identifiers(spec, message):
    with pytest.raises(NamedShapeError) as info:
        xmap(identity, in_axes=spec, out_axes=["a", ...])
    assert str(info.value) == message and info.value.kind is ErrorKind.SYNTAX
    with pytest.raises(NamedShapeError) as named:
        tx.named(X, spec)
    assert str(named.value) == message.replace("in_axes = ", "axes = ")


def test_axis_names_in_object_specs_and_axis_sizes():
    with pytest.raises(NamedShapeError, match=r"axis names must be strings, got <object object at \w+> at dim 0"):
        xmap(identity, in_axes=[object()], out_axes=["a", ...])
    with pytest.raises(NamedShapeError) as info:
        xmap(identity, in_axes=["a", ...], out_axes=["a", ...], axis_sizes={"": 3})
    assert str(info.value) == (
        "axis_sizes['']: axis names are Python identifiers (as in NamedArray annotations), got ''. Fix: name the "
        "axis with an identifier, e.g. 'batch'"
    )


def test_empty_axis_resources_entry():
    with pytest.raises(NamedShapeError) as info:
        xmap(identity, in_axes=["a", ...], out_axes=["a", ...], axis_resources={"a": ()})
    assert str(info.value) == (
        "axis_resources['a'] = () assigns no resource. Fix: leave 'a' out of axis_resources (it is then not "
        "split), or name a mesh axis: axis_resources={'a': 'x'}"
    )


@pytest.mark.parametrize("length", [True, 0, -1, 2.0])
def test_serial_loop_length(length):
    with pytest.raises(NamedShapeError) as info:
        tx.SerialLoop(length)
    assert str(info.value) == (
        f"SerialLoop length must be a positive int, got {length!r}. Fix: give the number of loop steps, "
        f"e.g. SerialLoop(4)"
    )


def test_a_string_argument():
    with pytest.raises(NamedShapeError) as info:
        xmap(identity, in_axes=[...], out_axes=[...])("abc")
    assert str(info.value) == (
        "xmap of identity: args[0] is a str ('abc'), not an array. Fix: pass arrays or numbers (jnp.asarray(...)); "
        "close over other values in the function instead of passing them"
    )


def test_an_empty_axis_on_a_mesh_axis(mesh):
    f = xmap(identity, in_axes=["a", ...], out_axes=["a", ...], axis_resources={"a": "x"})
    with pytest.raises(NamedShapeError) as info:
        f(np.ones((0, 4)))
    assert str(info.value) == (
        "axis 'a' has size 0 and is assigned to mesh axis 'x': JAX cannot split an empty axis over devices (the "
        "result could not be read back). Fix: drop 'a' from axis_resources for empty inputs, or skip the call "
        "when 'a' is empty"
    )
    assert xmap(identity, in_axes=["a", ...], out_axes=["a", ...])(np.ones((0, 4))).shape == (0, 4)


def test_xmap_of_a_non_function():
    with pytest.raises(TypeError) as info:
        xmap(3, in_axes=[...], out_axes=[...])
    assert str(info.value) == (
        "xmap expects a function, got int: 3. Fix: pass the function to map, e.g. xmap(jnp.vdot, in_axes=..., "
        "out_axes=...)"
    )


def test_a_body_returning_none_returns_none():
    """None is an empty pytree: as with jax.jit (and the original xmap), nothing comes back, and nothing fails."""
    f = tx.xmap(lambda v: None, in_axes=["i", ...], out_axes=["i", ...])
    assert f(np.arange(4.0)) is None
