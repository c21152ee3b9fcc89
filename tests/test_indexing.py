"""Indexing by name: ``x[{...}]``, gathers, ``.at`` updates, ``tnp.take`` and the dynamic slices, against NumPy,
eager and under ``jax.jit``, and sharded by name on Explicit and Auto meshes (result specs pinned)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from jax.sharding import AxisType, PartitionSpec

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, NamedShapeError, f32, i32

AXES = ["batch", "seq", "embed"]
X = np.arange(2 * 6 * 4, dtype=np.float32).reshape(2, 6, 4)
EMB = np.arange(16 * 8, dtype=np.float32).reshape(16, 8)  # vocab, embed
TOKENS = (np.arange(4 * 8).reshape(4, 8) * 7) % 16  # batch, seq


def x():
    return tx.named(jnp.asarray(X), AXES)


def emb():
    return tx.named(jnp.asarray(EMB), ["vocab", "embed"])


def tokens():
    return tx.named(jnp.asarray(TOKENS, dtype=jnp.int32), ["batch", "seq"])


def values(v, axes):
    return np.asarray(tx.positional(v, axes))


JIT = [pytest.param(lambda f: f, id="eager"), pytest.param(jax.jit, id="jit")]


@pytest.mark.parametrize("transform", JIT)
def test_int_drops_the_axis_and_negative_ints_count_from_the_end(transform):
    out = transform(lambda v: v[{"batch": 1, "embed": -1}])(x())
    assert out.named_shape == {"seq": 6}
    np.testing.assert_array_equal(values(out, ["seq"]), X[1, :, -1])


@pytest.mark.parametrize("transform", JIT)
def test_slices_keep_the_axis_with_its_new_size(transform):
    out = transform(lambda v: v[{"seq": slice(1, 6, 2), "embed": slice(None, 2)}])(x())
    assert out.named_shape == {"batch": 2, "seq": 3, "embed": 2}
    np.testing.assert_array_equal(values(out, AXES), X[:, 1:6:2, :2])


@pytest.mark.parametrize("item", [slice(None, None, -1), slice(4, None, -2), slice(-2, 0, -1), slice(10, 20)])
def test_slices_follow_numpy_including_reversed_and_empty(item):
    out = x()[{"seq": item}]
    assert out.named_shape["seq"] == len(range(6)[item])
    np.testing.assert_array_equal(values(out, AXES), X[:, item])


_BOUND = st.one_of(st.none(), st.integers(-8, 8))


@settings(max_examples=60, deadline=None)
@given(start=_BOUND, stop=_BOUND, step=st.one_of(st.none(), st.integers(-3, 3).filter(bool)), i=st.integers(-2, 1))
def test_named_indexing_is_numpy_indexing(start, stop, step, i):
    """Any slice of one axis and any valid int of another read what numpy reads at their positions."""
    out = x()[{"seq": slice(start, stop, step), "batch": i}]
    np.testing.assert_array_equal(values(out, ["seq", "embed"]), X[i, start:stop:step])


def test_a_traced_scalar_index_drops_the_axis():
    out = jax.jit(lambda v, i: v[{"seq": i}])(x(), jnp.int32(4))
    assert out.named_shape == {"batch": 2, "embed": 4}
    np.testing.assert_array_equal(values(out, ["batch", "embed"]), X[:, 4])


def test_positional_dims_take_a_plain_key():
    v = tx.named(jnp.asarray(X), {2: "embed"})  # positional dims (2, 6)
    out = v[1, 2:4]
    assert out.shape == (2,) and out.named_shape == {"embed": 4}
    np.testing.assert_array_equal(np.asarray(out.data), X[1, 2:4])  # data: positional dims, then embed
    np.testing.assert_array_equal(np.asarray(v[..., 0].data), X[:, 0])


@pytest.mark.parametrize("transform", JIT)
def test_a_gather_by_name_has_the_indices_axes_and_the_others(transform):
    out = transform(lambda e, t: e[{"vocab": t}])(emb(), tokens())
    assert out.named_shape == {"batch": 4, "seq": 8, "embed": 8}
    np.testing.assert_array_equal(values(out, ["batch", "seq", "embed"]), EMB[TOKENS])


def test_take_is_the_same_gather():
    out = tnp.take(emb(), tokens(), axis="vocab")
    np.testing.assert_array_equal(values(out, ["seq", "embed", "batch"]), EMB[TOKENS].transpose(1, 2, 0))


def test_an_index_axis_that_x_keeps_is_read_pointwise():
    """xarray's vectorized indexing: ``x[{"seq": idx}]`` with ``idx`` over ``batch`` reads, for each batch
    element b, ``x[b, idx[b]]``; the result has ``batch`` once."""
    idx = tx.named(jnp.array([5, 2]), ["batch"])
    out = x()[{"seq": idx}]
    assert out.named_shape == {"batch": 2, "embed": 4}
    np.testing.assert_array_equal(values(out, ["batch", "embed"]), X[np.arange(2), [5, 2]])


def test_two_indices_broadcast_by_name():
    i = tx.named(jnp.array([0, 1, 1]), ["k"])
    j = tx.named(jnp.array([[5, 0, 3], [1, 1, 1]]), ["m", "k"])
    out = x()[{"batch": i, "seq": j}]
    assert out.named_shape == {"k": 3, "m": 2, "embed": 4}
    expected = X[np.array([0, 1, 1])[None, :], np.array([[5, 0, 3], [1, 1, 1]])]  # m, k, embed
    np.testing.assert_array_equal(values(out, ["m", "k", "embed"]), expected)


@pytest.mark.parametrize("method", ["set", "add", "multiply", "min", "max"])
def test_at_updates_broadcast_the_value_by_name(method):
    v = tx.named(jnp.asarray([3.0, -1.0]), ["batch"])  # the region is batch x embed: v broadcasts along embed
    out = getattr(x().at[{"seq": 2}], method)(v)
    expected = X.copy()
    ref = np.array([3.0, -1.0])[:, None]
    region = expected[:, 2]
    expected[:, 2] = {
        "set": np.broadcast_to(ref, region.shape),
        "add": region + ref,
        "multiply": region * ref,
        "min": np.minimum(region, ref),
        "max": np.maximum(region, ref),
    }[method]
    assert out.named_shape == x().named_shape
    np.testing.assert_array_equal(values(out, AXES), expected)


def test_at_takes_a_scalar_any_axis_order_and_get():
    v = tx.named(jnp.ones((4, 2)), ["embed", "batch"])
    out = jax.jit(lambda a, i: a.at[{"seq": i}].add(v))(x(), jnp.int32(1))
    expected = X.copy()
    expected[:, 1] += 1
    np.testing.assert_array_equal(values(out, AXES), expected)
    np.testing.assert_array_equal(values(x().at[{"seq": slice(0, 2)}].set(0.0), AXES)[:, :2], 0)
    np.testing.assert_array_equal(values(x().at[{"batch": 0}].get(), ["seq", "embed"]), X[0])


def test_at_scatter_adds_over_a_gather():
    counts = tx.named(jnp.zeros(16), ["vocab"]).at[{"vocab": tokens()}].add(1.0)
    np.testing.assert_array_equal(values(counts, ["vocab"]), np.bincount(TOKENS.ravel(), minlength=16))


def test_dynamic_slice_and_update_by_name_under_jit():
    out = jax.jit(lambda v, s: tnp.dynamic_slice(v, {"seq": s}, {"seq": 3}))(x(), jnp.int32(2))
    assert out.named_shape == {"batch": 2, "seq": 3, "embed": 4}
    np.testing.assert_array_equal(values(out, AXES), X[:, 2:5])
    row = tx.named(jnp.full((4,), -1.0), ["embed"])  # lacks seq: written at one position
    written = jax.jit(lambda v, s: tnp.dynamic_update_slice(v, row, {"seq": s}))(x(), jnp.int32(3))
    expected = X.copy()
    expected[:, 3] = -1
    np.testing.assert_array_equal(values(written, AXES), expected)


def _meshes():
    return [
        pytest.param(lambda: jax.make_mesh((2, 4), ("data", "model")), id="explicit"),
        pytest.param(
            lambda: jax.make_mesh((2, 4), ("data", "model"), axis_types=(AxisType.Auto,) * 2),
            id="auto",
        ),
    ]


@pytest.mark.parametrize("make_mesh", _meshes())
def test_sharded_embedding_lookup(make_mesh):
    mesh = make_mesh()
    explicit = mesh.axis_types[0] == AxisType.Explicit
    with jax.set_mesh(mesh):
        e = tx.shard(emb(), {"vocab": "model"})
        t = tx.shard(tokens(), {"batch": "data"})
        out = jax.jit(lambda e, t: e[{"vocab": t}])(e, t)
        np.testing.assert_array_equal(values(out, ["batch", "seq", "embed"]), EMB[TOKENS])
        # the result: batch from the tokens ('data'), seq and embed unsplit (embed sorts first in the layout)
        assert out.axes == ("batch", "embed", "seq")
        if explicit:
            assert out.data.sharding.spec == PartitionSpec("data", None, None)
        # the operand's other axes keep their placement; one already used in the result is replicated
        e2 = tx.shard(emb(), {"embed": "model"})
        t2 = tx.shard(tokens(), {"seq": "model"})
        out2 = jax.jit(lambda e, t: e[{"vocab": t}])(e2, t2)
        np.testing.assert_array_equal(values(out2, ["batch", "seq", "embed"]), EMB[TOKENS])
        if explicit:
            assert out2.data.sharding.spec == PartitionSpec(None, None, "model")
        out3 = jax.jit(lambda e, t: e[{"vocab": t}])(e2, t)
        if explicit:
            assert out3.data.sharding.spec == PartitionSpec("data", "model", None)
        # a scatter-add into a vocab-sharded value keeps its placement
        zeros = tx.shard(tx.named(jnp.zeros(16), ["vocab"]), {"vocab": "model"})
        counts = jax.jit(lambda z, t: z.at[{"vocab": t}].add(1.0))(zeros, t)
        np.testing.assert_array_equal(values(counts, ["vocab"]), np.bincount(TOKENS.ravel(), minlength=16))
        if explicit:
            assert counts.data.sharding.spec == PartitionSpec("model")


@pytest.mark.parametrize("make_mesh", _meshes())
def test_sharded_slices_ints_updates_and_dynamic_slices(make_mesh):
    mesh = make_mesh()
    explicit = mesh.axis_types[0] == AxisType.Explicit
    with jax.set_mesh(mesh):
        v = tx.shard(x(), {"batch": "data", "embed": "model"})

        @jax.jit
        def step(v, i):
            return (
                v[{"embed": 1}],
                v[{"seq": slice(0, 3)}],
                v[{"embed": slice(0, 2)}],
                v.at[{"seq": i}].set(tx.named(jnp.ones(2), ["batch"])),
                tnp.dynamic_slice(v, {"seq": i}, {"seq": 2}),
                tnp.dynamic_update_slice(v, tx.named(jnp.zeros((2, 4)), ["batch", "embed"]), {"seq": i}),
            )

        one, first, narrow, updated, window, written = step(v, jnp.int32(2))
        np.testing.assert_array_equal(values(one, ["batch", "seq"]), X[:, :, 1])
        np.testing.assert_array_equal(values(first, AXES), X[:, :3])
        np.testing.assert_array_equal(values(narrow, AXES), X[:, :, :2])
        expected = X.copy()
        expected[:, 2] = 1
        np.testing.assert_array_equal(values(updated, AXES), expected)
        np.testing.assert_array_equal(values(window, AXES), X[:, 2:4])
        expected = X.copy()
        expected[:, 2] = 0
        np.testing.assert_array_equal(values(written, AXES), expected)
        # a sharded dim sliced to a size its mesh axes do not divide: replicated first, values kept
        part = jax.jit(lambda v, i: tnp.dynamic_slice(v, {"embed": i}, {"embed": 3}))(v, jnp.int32(1))
        np.testing.assert_array_equal(values(part, AXES), X[:, :, 1:4])
        col = tx.named(jnp.full((2, 6), -1.0), ["batch", "seq"])
        put = jax.jit(lambda v, i: tnp.dynamic_update_slice(v, col, {"embed": i}))(v, jnp.int32(3))
        expected = X.copy()
        expected[:, :, 3] = -1
        np.testing.assert_array_equal(values(put, AXES), expected)
        bumped = jax.jit(lambda v: v.at[{"embed": 1}].add(1.0))(v)  # an int on a sharded dim
        expected = X.copy()
        expected[:, :, 1] += 1
        np.testing.assert_array_equal(values(bumped, AXES), expected)
        if explicit:  # layout: batch, embed, seq
            assert put.data.sharding.spec == PartitionSpec("data", "model", None)
            assert bumped.data.sharding.spec == PartitionSpec("data", "model", None)
            assert first.data.sharding.spec == PartitionSpec("data", "model", None)
            assert updated.data.sharding.spec == PartitionSpec("data", "model", None)
            assert window.data.sharding.spec == PartitionSpec("data", "model", None)
            assert one.data.sharding.spec[0] == "data"


def test_at_on_positional_dims():
    v = tx.named(jnp.asarray(X), {2: "embed"})  # positional dims (2, 6)
    out = v.at[1, 2].set(tx.named(jnp.full(4, -1.0), ["embed"]))
    expected = X.copy()
    expected[1, 2] = -1
    np.testing.assert_array_equal(np.asarray(out.data), expected)


def test_a_plain_int_on_named_axes_only_asks_for_a_name():
    with pytest.raises(NamedShapeError, match=r"Fix: index by name, e.g. x\[\{'batch': i\}\]"):
        x()[0]


@pytest.mark.parametrize(
    "key, match",
    [
        ({"sq": 0}, "names axis 'sq', but x has named axes 'batch=2 embed=4 seq=6'"),
        ({"seq": 6}, "index 6 is out of bounds for axis 'seq' of size 6"),
        ({"seq": -7}, "index -7 is out of bounds"),
        ({"seq": tx.named(jnp.array([0.5]), ["k"])}, "has dtype float32; a gather takes integer indices"),
        ({"seq": tx.named(jnp.array([0, 1, 2]), ["batch"])}, "axis 'batch' has size 3 in the index of 'seq'"),
    ],
)
def test_bad_keys_raise(key, match):
    with pytest.raises(NamedShapeError, match=match):
        x()[key]


def test_an_update_with_an_axis_the_region_lacks_raises():
    with pytest.raises(NamedShapeError, match="the update v has axis 'seq', but the indexed region"):
        x().at[{"seq": 0}].set(tx.named(jnp.ones(6), ["seq"]))


def test_a_gather_inside_xmap_reads_a_mapped_axis():
    """Inside xmap every named axis is a vmap level: the indexed one is gathered into the data first."""

    def body(e: NamedArray[f32, "vocab embed"], t: NamedArray[i32, "batch seq"]) -> NamedArray[f32, "batch seq embed"]:
        return e[{"vocab": t}]

    out = tx.xmap(body, out_axes=["batch", "seq", "embed", ...])(emb(), tokens())
    np.testing.assert_array_equal(np.asarray(out), EMB[TOKENS])


def test_explicit_mesh_values_used_outside_set_mesh():
    """Values placed on an Explicit mesh and used after the `with jax.set_mesh` block: the gather's and the
    contraction's out_sharding are taken on the values' own mesh (JAX refuses a bare PartitionSpec there)."""
    with jax.set_mesh(jax.make_mesh((2, 4), ("data", "model"))):
        emb = tx.shard(tx.named(jnp.arange(32.0).reshape(8, 4), ["vocab", "embed"]), {"vocab": "model"})
        tokens = tx.shard(tx.named(jnp.array([[1, 7], [0, 3]]), ["batch", "seq"]), {"batch": "data"})

    @jax.jit
    def lookup_and_score(emb, tokens):
        hidden = emb[{"vocab": tokens}]
        return hidden, tnp.einsum("{embed},{vocab,embed}->{vocab}", hidden, emb)

    hidden, logits = lookup_and_score(emb, tokens)
    table = np.arange(32.0).reshape(8, 4)
    np.testing.assert_allclose(tx.positional(hidden, ["batch", "seq", "embed"]), table[[[1, 7], [0, 3]]])
    np.testing.assert_allclose(tx.positional(logits, ["batch", "seq", "vocab"]), table[[[1, 7], [0, 3]]] @ table.T)
    assert hidden.data.sharding.spec == PartitionSpec("data", None, None)  # batch embed seq: batch keeps data
