"""The NamedArray pytree node's unflatten (issue 27): a leaf with the named dims its validated aux asks for is
the value's data as it is (the fast path every ``jit`` call's results take); every other leaf takes the checked
path, which keeps a leaf of the wrong rank a named error and a scalar a plain scalar."""

from __future__ import annotations

import copy
import inspect
import pickle

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import typed_xmap as tx
from typed_xmap import NamedShapeError
from typed_xmap._value._flat import CHECKED, SORTED_AUX, aux_of
from typed_xmap._value._pytree import _unflatten


def _params() -> dict[str, tx.NamedArray]:
    return {"w": tx.named(jnp.arange(6.0).reshape(2, 3), ["b", "a"]), "v": tx.named(jnp.ones(3), ["a"])}


def test_an_aux_says_which_leaves_the_fast_path_takes():
    """The aux is decided once per named shape: the rank a leaf needs when its axes are in name order and
    nothing is mapped, else CHECKED; equal whether it is the shared one or made again (scan carries match)."""
    assert aux_of(("a", "b"), ()) == (("a", "b"), (), 2)
    assert aux_of((), ()) == ((), (), 0)
    assert aux_of(("b", "a"), ())[2] == CHECKED  # a placeholder's axes, out of order
    assert aux_of(("a",), (("i", 4),))[2] == CHECKED  # mapped by an enclosing vmap level
    w = _params()["w"]
    assert w._flat[1] is SORTED_AUX[("a", "b")] and w._flat[1] == aux_of(("a", "b"), ())


def test_jit_results_are_named_arrays_around_their_leaves():
    params = _params()
    out = jax.jit(lambda p: jax.tree.map(lambda x: x * 2, p))(params)
    for name, value in out.items():
        assert type(value) is tx.NamedArray and value.mapped == ()
        assert value.axes == params[name].axes and jax.tree.leaves(value)[0] is value.data
        np.testing.assert_array_equal(value.data, params[name].data * 2)
    assert jax.tree.structure(out) == jax.tree.structure(params)


def test_a_leaf_of_the_wrong_rank_from_a_tree_map_is_a_named_error():
    """A concrete leaf with fewer dims than its axes (not a scalar) fails the fast path's rank test and is
    explained; under a trace too."""
    params = _params()
    with pytest.raises(NamedShapeError, match=r"named axes \('a', 'b'\) needs at least 2 dims"):
        jax.tree.map(lambda x: x.sum(0), params)
    with pytest.raises(NamedShapeError, match=r"needs at least 2 dims"):
        jax.jit(lambda p: jax.tree.map(lambda x: x.sum(0), p))(params)
    sums = jax.tree.map(jnp.sum, params)  # reduced to scalars: plain scalars, as before
    assert not isinstance(sums["w"], tx.NamedArray) and float(sums["w"]) == 15.0


def test_leaves_without_an_aval_take_the_checked_path():
    """A shape, numpy data: no aval, so the checked path builds the value (numpy data laid out in name order)."""
    params = _params()
    shapes = jax.tree.map(lambda x: x.shape, params)
    assert type(shapes["w"]) is tx.NamedArray and shapes["w"].data == (3, 2) and shapes["w"].axes == ("a", "b")
    host = jax.tree.map(np.asarray, params)
    assert isinstance(host["w"].data, np.ndarray) and host["w"].axes == ("a", "b")
    np.testing.assert_array_equal(tx.positional(host["w"], ["b", "a"]), np.arange(6.0).reshape(2, 3))


def test_children_in_any_iterable():
    """JAX hands the unflatten a tuple; a list or an iterator (a library calling it itself) works too."""
    w = _params()["w"]
    (leaf,), aux = w._flat
    for children in ((leaf,), [leaf], iter([leaf])):
        value = _unflatten(aux, children)
        assert type(value) is tx.NamedArray and value.data is leaf and value.axes == ("a", "b")
        assert jax.tree.leaves(value) == [leaf]


def test_mapped_axes_take_the_checked_path():
    """A value with an axis an enclosing vmap level maps has a CHECKED aux: a tree.map keeps the mapped axis
    (the fast path would drop it)."""
    from typed_xmap._value._named_array import wrap

    def body(row):
        x = wrap(row, ("feat",), (("batch", 4),))
        assert x._flat[1][2] == CHECKED
        doubled = jax.tree.map(lambda d: d * 2, x)
        assert doubled.mapped == (("batch", 4),) and doubled.axes == ("feat",)
        return doubled.data

    out = jax.vmap(body, axis_name="batch")(jnp.arange(12.0).reshape(4, 3))
    np.testing.assert_allclose(out, 2 * np.arange(12.0).reshape(4, 3))


def test_the_constructor_checks_and_copies_pickle():
    """``NamedArray(data, axes, mapped)`` (its metaclass checks; the class has no ``__init__``) keeps its
    signature and errors; values copy and pickle as before."""
    assert list(inspect.signature(tx.NamedArray).parameters) == ["data", "axes", "mapped"]
    with pytest.raises(NamedShapeError, match="needs at least 2 dims"):
        tx.NamedArray(jnp.ones(3), ["a", "b"])
    x = tx.NamedArray(np.arange(6.0).reshape(2, 3), ["b", "a"])
    assert type(x) is tx.NamedArray and x.axes == ("a", "b")
    for twin in (copy.copy(x), pickle.loads(pickle.dumps(x))):
        assert twin.axes == x.axes and jax.tree.structure(twin) == jax.tree.structure(x)
        np.testing.assert_array_equal(twin.data, x.data)
