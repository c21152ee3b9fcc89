"""The structural vocabulary: rename, merge/split axes, broadcast_to, stack/concatenate/split, roll, pad,
cumsum, constructors by name, masks, random, and NamedArray's methods: values against NumPy, named shapes,
gradients, jit, and shardings by name on Explicit and Auto meshes."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import AxisType

import typed_xmap as tx
import typed_xmap.numpy as tnp


def heads():
    """``batch=2, heads=4, head_dim=8`` holding 0..63 in that order."""
    return tx.named(jnp.arange(64.0).reshape(2, 4, 8), ["batch", "heads", "head_dim"])


def values(x, axes):
    return np.asarray(tx.positional(x, axes))


def test_rename():
    x = heads()
    y = tx.rename(x, {"batch": "b", "heads": "h"})
    assert y.named_shape == {"b": 2, "h": 4, "head_dim": 8}
    np.testing.assert_array_equal(values(y, ["b", "h", "head_dim"]), values(x, ["batch", "heads", "head_dim"]))
    assert x.rename({"batch": "zz"}).named_shape == {"zz": 2, "heads": 4, "head_dim": 8}
    swapped = tx.rename(x, {"batch": "heads", "heads": "batch"})  # a swap: no clash
    np.testing.assert_array_equal(
        values(swapped, ["heads", "batch", "head_dim"]), values(x, ["batch", "heads", "head_dim"])
    )


def test_merge_and_split_axes_against_reshape():
    x = heads()
    merged = tx.merge_axes(x, ("heads", "head_dim"), "embed")
    assert merged.named_shape == {"batch": 2, "embed": 32}
    np.testing.assert_array_equal(values(merged, ["batch", "embed"]), np.arange(64.0).reshape(2, 32))
    minor_first = tx.merge_axes(x, ("head_dim", "heads"), "embed")  # the order given: head_dim major
    expected = np.arange(64.0).reshape(2, 4, 8).transpose(0, 2, 1).reshape(2, 32)
    np.testing.assert_array_equal(values(minor_first, ["batch", "embed"]), expected)
    back = tx.split_axis(merged, "embed", {"heads": 4, "head_dim": 8})
    assert back.named_shape == x.named_shape
    np.testing.assert_array_equal(
        values(back, ["batch", "heads", "head_dim"]), values(x, ["batch", "heads", "head_dim"])
    )
    np.testing.assert_array_equal(
        values(x.merge_axes(("batch", "heads"), "bh"), ["bh", "head_dim"]), np.arange(64.0).reshape(8, 8)
    )


def test_broadcast_to():
    x = tx.named(jnp.arange(3.0), ["embed"])
    y = tx.broadcast_to(x, {"batch": 2, "embed": 3})
    assert y.named_shape == {"batch": 2, "embed": 3}
    np.testing.assert_array_equal(values(y, ["batch", "embed"]), np.broadcast_to(np.arange(3.0), (2, 3)))


def test_stack_concatenate_split():
    a = tx.named(jnp.arange(6.0).reshape(2, 3), ["batch", "seq"])
    b = tx.named(jnp.arange(10.0, 16.0).reshape(3, 2), ["seq", "batch"])  # another order
    stacked = tnp.stack([a, b], axis="layers")
    assert stacked.named_shape == {"batch": 2, "layers": 2, "seq": 3}
    np.testing.assert_array_equal(
        values(stacked, ["layers", "batch", "seq"]),
        np.stack([values(a, ["batch", "seq"]), values(b, ["batch", "seq"])]),
    )
    joined = tnp.concatenate([a, b], axis="seq")
    assert joined.named_shape == {"batch": 2, "seq": 6}
    np.testing.assert_array_equal(
        values(joined, ["batch", "seq"]), np.concatenate([values(a, ["batch", "seq"]), values(b, ["batch", "seq"])], 1)
    )
    parts = tnp.split(joined, axis="seq", sections=[2, 4])
    assert [p.named_shape for p in parts] == [{"batch": 2, "seq": 2}, {"batch": 2, "seq": 4}]
    np.testing.assert_array_equal(values(parts[1], ["batch", "seq"]), values(joined, ["batch", "seq"])[:, 2:])
    halves = tnp.split(joined, axis="seq", sections=2)
    np.testing.assert_array_equal(values(halves[1], ["batch", "seq"]), values(b, ["batch", "seq"]))


def test_roll_pad_cumsum():
    x = tx.named(jnp.arange(6.0).reshape(2, 3), ["batch", "seq"])
    plain = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(values(tnp.roll(x, 1, axis="seq"), ["batch", "seq"]), np.roll(plain, 1, 1))
    padded = tnp.pad(x, {"seq": (1, 0)}, value=-1)
    assert padded.named_shape == {"batch": 2, "seq": 4}
    np.testing.assert_array_equal(values(padded, ["batch", "seq"]), np.pad(plain, [(0, 0), (1, 0)], constant_values=-1))
    np.testing.assert_array_equal(values(tnp.cumsum(x, axis="seq"), ["batch", "seq"]), np.cumsum(plain, 1))
    np.testing.assert_array_equal(values(x.cumprod("batch"), ["batch", "seq"]), np.cumprod(plain, 0))


def test_constructors():
    z = tnp.zeros({"batch": 2, "embed": 3}, dtype=jnp.int32)
    assert z.named_shape == {"batch": 2, "embed": 3} and z.dtype == jnp.int32
    assert float(tnp.sum(tnp.ones({"a": 2, "b": 5}), ("a", "b")).data) == 10.0
    np.testing.assert_array_equal(values(tnp.full({"a": 2}, 7.0), ["a"]), [7.0, 7.0])
    assert tnp.zeros_like(z).named_shape == z.named_shape and tnp.ones_like(z, jnp.float32).dtype == jnp.float32
    np.testing.assert_array_equal(values(tnp.arange("seq", 2, 8, 2), ["seq"]), [2, 4, 6])
    tokens = tx.named(jnp.array([[0, 2], [1, 1]]), ["batch", "seq"])
    hot = tnp.one_hot(tokens, "vocab", 3)
    assert hot.named_shape == {"batch": 2, "seq": 2, "vocab": 3}
    np.testing.assert_array_equal(values(hot, ["batch", "seq", "vocab"]), np.eye(3)[[[0, 2], [1, 1]]])
    mask = tnp.causal_mask("q_seq", "k_seq", 3)
    assert mask.dtype == jnp.bool_
    np.testing.assert_array_equal(values(mask, ["q_seq", "k_seq"]), np.tril(np.ones((3, 3), bool)))


def test_random_by_name():
    key = jax.random.key(0)
    w = tx.random.normal(key, {"in": 4, "out": 3})
    assert w.named_shape == {"in": 4, "out": 3}
    # the axes are drawn sorted by name: the dict's order does not change the values
    np.testing.assert_array_equal(
        values(w, ["in", "out"]), values(tx.random.normal(key, {"out": 3, "in": 4}), ["in", "out"])
    )
    u = tx.random.uniform(key, {"a": 100}, minval=2.0, maxval=3.0)
    assert float(tnp.min(u, "a").data) >= 2.0 and float(tnp.max(u, "a").data) < 3.0
    assert tx.random.bernoulli(key, 0.5, {"a": 4}).dtype == jnp.bool_


def test_methods_delegate_to_tnp():
    x = tx.named(jnp.arange(6.0).reshape(2, 3), ["batch", "seq"])
    plain = np.arange(6.0).reshape(2, 3)
    np.testing.assert_allclose(values(x.sum("batch"), ["seq"]), plain.sum(0))
    np.testing.assert_allclose(values(x.mean("seq"), ["batch"]), plain.mean(1))
    np.testing.assert_allclose(values(x.max("seq"), ["batch"]), plain.max(1))
    np.testing.assert_allclose(values(x.min("seq"), ["batch"]), plain.min(1))
    np.testing.assert_allclose(values(x.std("seq"), ["batch"]), plain.std(1), rtol=1e-6)
    np.testing.assert_allclose(values(x.var("seq"), ["batch"]), plain.var(1), rtol=1e-6)
    np.testing.assert_array_equal(values(x.argmax("seq"), ["batch"]), plain.argmax(1))


def test_gradients_through_merge_split_concatenate():
    x = heads()

    def loss(v):
        merged = tx.merge_axes(v, ("heads", "head_dim"), "embed")
        joined = tnp.concatenate([merged, merged * 2.0], axis="embed")
        first, _ = tnp.split(joined, axis="embed", sections=2)
        back = tx.split_axis(first, "embed", {"heads": 4, "head_dim": 8})
        return tnp.sum(back * back, ("batch", "heads", "head_dim")).data

    grad = jax.grad(loss)(x)
    assert grad.named_shape == x.named_shape
    np.testing.assert_allclose(
        values(grad, ["batch", "heads", "head_dim"]), 2 * values(x, ["batch", "heads", "head_dim"])
    )
    np.testing.assert_allclose(float(jax.jit(loss)(x)), float((np.arange(64.0) ** 2).sum()))


@pytest.fixture(params=["explicit", "auto"])
def mesh(request):
    kwargs = {} if request.param == "explicit" else {"axis_types": (AxisType.Auto,) * 2}
    mesh = jax.make_mesh((2, 4), ("data", "model"), **kwargs)
    with jax.set_mesh(mesh):
        yield request.param


def spec(x, axes):
    """The partition spec of ``x``'s named axes ``axes``, by name (None: replicated)."""
    entries = tuple(x.data.sharding.spec) + (None,) * x.data.ndim
    return tuple(entries[x.ndim + x.axes.index(a)] for a in axes)


def test_shardings_by_name(mesh):
    x = tx.shard(heads(), {"batch": "data", "heads": "model"})
    merged = jax.jit(lambda v: tx.merge_axes(v, ("heads", "head_dim"), "embed"))(x)
    assert spec(merged, ["batch", "embed"]) == ("data", "model")
    np.testing.assert_array_equal(values(merged, ["batch", "embed"]), np.arange(64.0).reshape(2, 32))
    split = jax.jit(lambda v: tx.split_axis(v, "embed", {"heads": 4, "head_dim": 8}))(merged)
    assert spec(split, ["batch", "heads", "head_dim"]) == ("data", "model", None)
    minor = tx.shard(heads(), {"batch": "data", "head_dim": "model"})  # a sharded minor part is gathered
    merged_minor = jax.jit(lambda v: tx.merge_axes(v, ("heads", "head_dim"), "embed"))(minor)
    np.testing.assert_array_equal(values(merged_minor, ["batch", "embed"]), np.arange(64.0).reshape(2, 32))
    assert spec(merged_minor, ["batch"]) == ("data",)
    renamed = jax.jit(lambda v: tx.rename(v, {"batch": "b"}))(x)
    assert spec(renamed, ["b", "heads"]) == ("data", "model")
    stacked = jax.jit(lambda v: tnp.stack([v, v], axis="layers"))(x)
    assert spec(stacked, ["layers", "batch", "heads"]) == (None, "data", "model")
    joined = jax.jit(lambda v: tnp.concatenate([v, v], axis="head_dim"))(x)
    assert joined.named_shape["head_dim"] == 16 and spec(joined, ["batch", "heads"]) == ("data", "model")
    parts = jax.jit(lambda v: tnp.split(v, axis="head_dim", sections=2))(x)
    assert spec(parts[0], ["batch", "heads"]) == ("data", "model")


def test_constructors_sharded_by_name(mesh):
    z = jax.jit(lambda: tnp.zeros({"batch": 2, "embed": 8}, sharding={"batch": "data", "embed": "model"}))()
    assert spec(z, ["batch", "embed"]) == ("data", "model")
    tokens = tx.shard(tx.named(jnp.zeros((2, 4), jnp.int32), ["batch", "seq"]), {"batch": "data"})
    hot = jax.jit(lambda t: tnp.one_hot(t, "vocab", 8))(tokens)
    assert hot.named_shape == {"batch": 2, "seq": 4, "vocab": 8} and spec(hot, ["batch"]) == ("data",)
    w = tx.random.normal(jax.random.key(0), {"in": 4, "out": 8}, sharding={"out": "model"})
    assert spec(w, ["in", "out"]) == (None, "model")
    mask = tnp.causal_mask("q_seq", "k_seq", 8, sharding={"q_seq": "model"})
    assert spec(mask, ["q_seq", "k_seq"]) == ("model", None)


def test_mapped_axes_are_gathered():
    """Inside a ``vmap(axis_name=...)`` level a NamedArray's mapped axis is brought into the data first."""
    from typed_xmap import NamedArray

    data = jnp.arange(24.0).reshape(2, 3, 4)
    shapes = []

    def body(row):
        x = NamedArray(row, ["seq", "embed"], mapped=[("batch", 2)])
        merged = tx.merge_axes(x, ("batch", "seq"), "bs")
        renamed = tx.rename(x, {"batch": "b"})
        shapes.append(tnp.concatenate([x, x], axis="batch").named_shape)
        return tx.positional(merged, ["bs", "embed"]), tx.positional(renamed, ["b", "seq", "embed"])

    merged, renamed = jax.vmap(body, axis_name="batch", out_axes=(None, None))(data)
    np.testing.assert_array_equal(merged, np.arange(24.0).reshape(6, 4))
    np.testing.assert_array_equal(renamed, np.arange(24.0).reshape(2, 3, 4))
    assert shapes == [{"batch": 4, "embed": 4, "seq": 3}]


def test_explicit_placements_hold_outside_set_mesh():
    """Values placed on an Explicit mesh and used after its ``jax.set_mesh`` block ends: the rules read each
    value's own mesh, so merge, split, stack and concatenate place results as they do inside the block."""
    mesh = jax.make_mesh((2, 4), ("data", "model"))
    with jax.set_mesh(mesh):
        x = tx.shard(heads(), {"batch": "data", "heads": "model"})
        other = tx.shard(heads(), {"head_dim": "model"})  # placed differently: resharded as x is
        inside = [
            tx.merge_axes(x, ("heads", "head_dim"), "embed"),
            tnp.stack([x, other], axis="layers"),
            tnp.concatenate([x, other], axis="head_dim"),
        ]
    merged = tx.merge_axes(x, ("heads", "head_dim"), "embed")
    split = tx.split_axis(merged, "embed", {"heads": 4, "head_dim": 8})
    stacked = tnp.stack([x, other], axis="layers")
    joined = tnp.concatenate([x, other], axis="head_dim")
    assert spec(merged, ["batch", "embed"]) == spec(inside[0], ["batch", "embed"]) == ("data", "model")
    assert spec(split, ["batch", "heads", "head_dim"]) == ("data", "model", None)
    axes = ["layers", "batch", "heads", "head_dim"]
    assert spec(stacked, axes) == spec(inside[1], axes) == (None, "data", "model", None)
    assert spec(joined, axes[1:]) == spec(inside[2], axes[1:]) == ("data", "model", None)
    np.testing.assert_array_equal(values(merged, ["batch", "embed"]), np.arange(64.0).reshape(2, 32))
    np.testing.assert_array_equal(values(joined, axes[1:]), np.concatenate([values(x, axes[1:])] * 2, axis=-1))


@pytest.mark.parametrize("under_jit", [False, True])
def test_roll_pad_and_scans_along_a_split_axis(mesh, under_jit):
    """Explicit mesh axes refuse to roll, pad or scan along a split dim: the dim is gathered, the operation
    runs, and the result is split again as the operand was (where a padded size no longer divides, whole)."""
    x = tx.shard(heads(), {"batch": "data", "heads": "model"})
    plain = np.arange(64.0).reshape(2, 4, 8)
    axes = ["batch", "heads", "head_dim"]
    run = jax.jit if under_jit else (lambda f: f)
    rolled = run(lambda v: tnp.roll(v, 1, axis="heads"))(x)
    np.testing.assert_array_equal(values(rolled, axes), np.roll(plain, 1, 1))
    summed = run(lambda v: tnp.cumsum(v, axis="heads"))(x)
    np.testing.assert_array_equal(values(summed, axes), np.cumsum(plain, 1))
    product = run(lambda v: tnp.cumprod(v, axis="batch"))(x)
    np.testing.assert_array_equal(values(product, axes), np.cumprod(plain, 0))
    padded = run(lambda v: tnp.pad(v, {"heads": (1, 3), "batch": (0, 1)}, value=-1.0))(x)
    np.testing.assert_array_equal(values(padded, axes), np.pad(plain, [(0, 1), (1, 3), (0, 0)], constant_values=-1))
    if mesh == "explicit":
        assert spec(rolled, axes) == spec(summed, axes) == spec(product, axes) == ("data", "model", None)
        assert spec(padded, axes) == (None, "model", None)  # batch 3 no longer splits over data=2; heads 8 does


def test_concatenate_operands_split_differently_along_the_joined_axis(mesh):
    """The joined axis is gathered on every operand first: sizes along it need not split alike."""
    x = tx.shard(heads(), {"batch": "data", "heads": "model"})  # heads=4 over model=4
    y = tx.named(jnp.full((2, 2, 8), -1.0), ["batch", "heads", "head_dim"])  # heads=2: cannot split over 4
    axes = ["batch", "heads", "head_dim"]
    for run in (lambda f: f, jax.jit):
        joined = run(lambda a, b: tnp.concatenate([a, b], axis="heads"))(x, y)
        expected = np.concatenate([np.arange(64.0).reshape(2, 4, 8), np.full((2, 2, 8), -1.0)], axis=1)
        np.testing.assert_array_equal(values(joined, axes), expected)
        if mesh == "explicit":
            assert spec(joined, axes) == ("data", None, None)  # heads=6 does not split over model=4
        twice = run(lambda a: tnp.concatenate([a, a], axis="heads"))(x)
        if mesh == "explicit":
            assert spec(twice, axes) == ("data", "model", None)
