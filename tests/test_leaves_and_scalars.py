"""What ``jax.tree.map`` makes of NamedArray params when it returns no arrays, and 0-axis NamedArrays as scalars.

``jax.tree.map(lambda a: a.shape, params)`` keeps the tree's structure (a NamedArray node per parameter, as
Haliax and Penzai do), each node holding the non-array leaf: it prints, compares and feeds JAX and optax back.
"""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import typed_xmap as tx
import typed_xmap.numpy as tnp


def params():
    return {"w": tx.named(jnp.ones((3, 4)), ["in", "out"]), "b": tx.named(jnp.zeros(4), ["out"])}


@pytest.mark.parametrize(
    ("fn", "leaves"),
    [
        (lambda a: a.shape, {"w": (3, 4), "b": (4,)}),
        (lambda a: a.dtype, {"w": np.dtype("float32"), "b": np.dtype("float32")}),
        (lambda a: "decay", {"w": "decay", "b": "decay"}),
        (lambda a: a.ndim > 1, {"w": True, "b": False}),
        (lambda a: None, {"w": None, "b": None}),
    ],
    ids=["shape", "dtype", "str", "bool", "None"],
)
def test_tree_map_to_non_array_leaves_prints_and_compares(fn, leaves):
    mapped = jax.tree.map(fn, params())
    assert jax.tree.structure(mapped) == jax.tree.structure(jax.tree.map(fn, params()))
    for name, leaf in leaves.items():
        assert mapped[name] == leaf
        assert (mapped[name] != leaf) is False
        assert mapped[name] == jax.tree.map(fn, params())[name]
        assert repr(leaf) in repr(mapped[name]) and "out" in repr(mapped[name])
    assert mapped == jax.tree.map(fn, params())
    print(mapped)  # the crash: repr of a NamedArray holding a tuple


def test_the_shape_tree_prints_the_names_and_the_data_shape():
    shapes = jax.tree.map(lambda a: a.shape, params())
    assert str(shapes) == "{'b': NamedArray((4,), axes=('out',)), 'w': NamedArray((3, 4), axes=('in', 'out'))}"


def test_a_leaf_equals_only_the_same_leaf_under_the_same_names():
    shapes = jax.tree.map(lambda a: a.shape, params())
    assert shapes["w"] != tx.named(jnp.ones((3, 4)), ["in", "out"])  # an array is not its shape
    assert shapes["w"] != jax.tree.map(lambda a: a.shape, {"w": tx.named(jnp.ones((3, 4)), ["in", "batch"])})["w"]
    assert bool(jax.tree.map(lambda a: a.ndim > 1, params())["w"]) is True
    assert jax.tree.map(lambda a: float(a.sum()), params())["w"] == 12.0


def test_leaf_trees_feed_jax_and_optax_back():
    """A mask tree of bools (optax's weight-decay mask), a sharding tree (device_put), a prefix tree."""
    p = params()
    mask = jax.tree.map(lambda a: a.ndim > 1, p)
    optimizer = optax.adamw(0.1, weight_decay=0.5, mask=mask)
    updates, _ = optimizer.update(jax.tree.map(jnp.zeros_like, p), optimizer.init(p), p)
    assert tnp.all(updates["w"] < 0, ("in", "out")) and tnp.all(updates["b"] == 0, "out")
    picked = jax.tree.map(lambda keep, a: a if keep else None, mask, p)
    assert picked["w"].named_shape == {"in": 3, "out": 4} and picked["b"].data is None  # None held under names
    shardings = jax.tree.map(lambda a: a.sharding, p)
    placed = jax.device_put(p, shardings)
    assert placed["w"].named_shape == {"in": 3, "out": 4}


def test_a_scalar_named_array_converts():
    loss = tnp.sum(tx.named(jnp.arange(6.0).reshape(2, 3), ["a", "b"]), ("a", "b"))
    assert float(loss) == 15.0 and int(loss) == 15 and complex(loss) == 15 + 0j
    assert bool(loss) is True
    assert format(loss, ".2f") == "15.00" and f"{loss:.1e}" == "1.5e+01"
    assert f"{loss}" == str(loss)
    assert np.isclose(loss, 15.0)


def test_a_named_axis_blocks_the_conversion():
    x = tx.named(jnp.ones(3), ["batch"])
    for convert in (float, int, complex, lambda v: format(v, ".2f")):
        with pytest.raises(tx.NamedShapeError, match=r"it has named axes\. Fix: reduce them first"):
            convert(x)
    assert f"{x}" == str(x)  # no format spec: the repr, as for any object


def _named_loss(w, x):
    return tnp.sum(tnp.einsum("{in},{in,out}->{out}", x, w) ** 2, ("batch", "out"))


W = tx.named(jnp.arange(12.0).reshape(3, 4) / 10, ["in", "out"])
X = tx.named(jnp.arange(6.0).reshape(2, 3), ["batch", "in"])


def test_grad_of_a_loss_returning_a_scalar_named_array_says_the_fix():
    """jax.grad needs a positional scalar output (its cotangent is a plain array, which cannot match a NamedArray
    node): our error, named after jax.grad (JAX's check of its output is ``_check_scalar``), not JAX's."""
    with pytest.raises(tx.NamedShapeError, match=r"returned NamedArray\(float32\[\]\)\. Fix: return tx\.positional"):
        jax.grad(_named_loss)(W, X)
    grads = jax.grad(lambda w: tx.positional(_named_loss(w, X), []))(W)  # the fix
    assert grads.named_shape == {"in": 3, "out": 4}


def test_value_and_grad_of_a_loss_with_named_axes_left_names_them():
    with pytest.raises(tx.NamedShapeError, match=r"still has named axes \('out',\)"):
        jax.value_and_grad(lambda w: tnp.sum(tnp.einsum("{in},{in,out}->{out}", X, w), "batch"))(W)
