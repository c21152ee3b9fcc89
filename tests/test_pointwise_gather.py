"""Pointwise gathers and updates (an index array sharing named axes with the value it indexes) go through
``lax.gather``/``lax.scatter`` with batching dims for the shared axes. Their values are those of numpy's form of
the same read, ``take_along_axis``'s (an ``arange`` index per shared axis, as ``jnp`` carries it out), bit for
bit: negative indices counted from the end, reads out of bounds clamped, writes out of bounds dropped, bf16,
under jit, grad and vmap; and on a mesh XLA partitions them along the shared axes (no gather of the indices)."""

from __future__ import annotations

from collections import Counter

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hlo_collectives import MESH, compiled
from jax.sharding import AxisType

import typed_xmap as tx
from typed_xmap import NamedArray, f32, i32

B, S, V, K = 3, 5, 7, 4
RNG = np.random.default_rng(0)
DATA = RNG.normal(size=(B, S, V)).astype(np.float32)
TARGETS = RNG.integers(-V - 2, V + 3, size=(B, S)).astype(np.int32)  # negative and out of bounds both ways
PICKS = RNG.integers(-V - 2, V + 3, size=(B, K)).astype(np.int32)  # an axis (k) the value lacks
LAST = RNG.integers(-S - 1, S + 2, size=(B,)).astype(np.int32)
ARANGE_B, ARANGE_S = jnp.arange(B)[:, None], jnp.arange(S)[None, :]
DTYPES = [pytest.param(jnp.float32, id="f32"), pytest.param(jnp.bfloat16, id="bf16")]


def _value(dtype=jnp.float32):
    return tx.named(jnp.asarray(DATA, dtype), ["batch", "seq", "vocab"])


def _named(array, axes):
    return tx.named(jnp.asarray(array), axes)


def _same(out, axes, expected):
    got = tx.positional(out, axes)
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(np.asarray(got), np.asarray(expected))


# key -> (the result's axes, numpy's take_along_axis form of the same read on DATA laid out batch, seq, vocab)
READS = {
    "shared batch seq": (
        lambda: {"vocab": _named(TARGETS, ["batch", "seq"])},
        ["batch", "seq"],
        lambda d: d[ARANGE_B, ARANGE_S, jnp.asarray(TARGETS)],
    ),
    "index laid out seq batch": (
        lambda: {"vocab": _named(TARGETS.T, ["seq", "batch"])},
        ["batch", "seq"],
        lambda d: d[ARANGE_B, ARANGE_S, jnp.asarray(TARGETS)],
    ),
    "shared batch, a new axis k": (
        lambda: {"vocab": _named(PICKS, ["batch", "k"])},
        ["batch", "k", "seq"],
        lambda d: d[jnp.arange(B)[:, None], :, jnp.asarray(PICKS)],  # numpy puts the index's dims first
    ),
    "two indices": (
        lambda: {"seq": _named(LAST, ["batch"]), "vocab": _named(TARGETS[:, 0], ["batch"])},
        ["batch"],
        lambda d: d[jnp.arange(B), jnp.asarray(LAST), jnp.asarray(TARGETS[:, 0])],
    ),
    "an int alongside": (
        lambda: {"seq": 2, "vocab": _named(PICKS, ["batch", "k"])},
        ["batch", "k"],
        lambda d: d[jnp.arange(B)[:, None], 2, jnp.asarray(PICKS)],
    ),
    "a 0-d index alongside": (
        lambda: {"seq": jnp.int32(-2), "vocab": _named(PICKS, ["batch", "k"])},
        ["batch", "k"],
        lambda d: d[jnp.arange(B)[:, None], jnp.int32(-2), jnp.asarray(PICKS)],
    ),
    "a reversed slice alongside": (
        lambda: {"seq": _named(LAST, ["batch"]), "vocab": slice(None, None, -2)},
        ["batch", "vocab"],
        lambda d: d[jnp.arange(B), jnp.asarray(LAST), ::-2],
    ),
    "unsigned": (
        lambda: {"vocab": _named(np.abs(TARGETS).astype(np.uint8), ["batch", "seq"])},
        ["batch", "seq"],
        lambda d: d[ARANGE_B, ARANGE_S, jnp.asarray(np.abs(TARGETS).astype(np.uint8))],
    ),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", list(READS))
def test_a_pointwise_read_is_take_along_axis_bit_for_bit(case, dtype):
    key, axes, numpy_form = READS[case]
    x = _value(dtype)
    expected = numpy_form(x.data)
    _same(x[key()], axes, expected)
    _same(jax.jit(lambda x: x[key()])(x), axes, expected)


@pytest.mark.parametrize("case", list(READS))
def test_a_pointwise_reads_gradient_is_take_along_axis(case):
    key, axes, numpy_form = READS[case]
    weights = jnp.asarray(RNG.normal(size=numpy_form(jnp.asarray(DATA)).shape), jnp.float32)

    def loss(d):
        return (tx.positional(tx.named(d, ["batch", "seq", "vocab"])[key()], axes) * weights).sum()

    expected = jax.grad(lambda d: (numpy_form(d) * weights).sum())(jnp.asarray(DATA))
    np.testing.assert_array_equal(np.asarray(jax.jit(jax.grad(loss))(jnp.asarray(DATA))), np.asarray(expected))


def test_a_pointwise_read_under_vmap_and_inside_xmap():
    stacked = np.stack([DATA, -DATA])
    targets = _named(TARGETS, ["batch", "seq"])
    out = jax.vmap(
        lambda d: tx.positional(tx.named(d, ["batch", "seq", "vocab"])[{"vocab": targets}], ["batch", "seq"])
    )(jnp.asarray(stacked))
    expected = jnp.asarray(stacked)[:, ARANGE_B, ARANGE_S, jnp.asarray(TARGETS)]
    np.testing.assert_array_equal(np.asarray(out), np.asarray(expected))

    def body(x: NamedArray[f32, "batch seq vocab"], t: NamedArray[i32, "batch seq"]) -> NamedArray[f32, "batch seq"]:
        return x[{"vocab": t}]

    mapped = tx.xmap(body, out_axes=["batch", "seq", ...])(_value(), targets)
    np.testing.assert_array_equal(np.asarray(mapped), np.asarray(expected[0]))


def test_a_slice_of_a_shared_axis_is_read_pointwise_after_the_slice():
    """``x[{"seq": last, "batch": slice(0, 3)}]``: batch, sliced to the index's size, is read pointwise."""
    x = _value()
    last = _named(LAST, ["batch"])
    _same(x[{"seq": last, "batch": slice(0, B)}], ["batch", "vocab"], x.data[jnp.arange(B), jnp.asarray(LAST)])
    reversed_batch = x[{"seq": _named(LAST, ["batch"]), "batch": slice(None, None, -1)}]
    _same(reversed_batch, ["batch", "vocab"], x.data[::-1][jnp.arange(B), jnp.asarray(LAST)])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("method", ["set", "add", "multiply", "min", "max"])
def test_a_pointwise_update_is_jnps_bit_for_bit(method, dtype):
    """``x.at[{"vocab": targets}]``: writes out of bounds dropped (jnp's scatter), a region update laid out by
    name, a scalar, with a slice and an int alongside, eager and jitted."""
    x = _value(dtype)
    targets = _named(TARGETS, ["batch", "seq"])
    region = jnp.asarray(RNG.normal(size=(S, B)), dtype)  # laid out seq, batch
    d = x.data
    cases = [
        (
            {"vocab": targets},
            _named(region, ["seq", "batch"]),
            getattr(d.at[ARANGE_B, ARANGE_S, targets.data], method)(region.T),
        ),
        ({"vocab": targets}, 2, getattr(d.at[ARANGE_B, ARANGE_S, targets.data], method)(2)),
        (
            {"seq": _named(LAST, ["batch"]), "vocab": slice(1, 6, 2)},
            1.5,
            getattr(d.at[jnp.arange(B)[:, None], jnp.asarray(LAST)[:, None], jnp.arange(1, 6, 2)[None]], method)(1.5),
        ),
        (
            {"seq": 1, "vocab": _named(PICKS, ["batch", "k"])},
            -0.5,
            getattr(d.at[jnp.arange(B)[:, None], 1, jnp.asarray(PICKS)], method)(-0.5),
        ),
    ]
    for key, v, expected in cases:
        _same(getattr(x.at[key], method)(v), ["batch", "seq", "vocab"], expected)
        _same(jax.jit(lambda x, v, key=key: getattr(x.at[key], method)(v))(x, v), ["batch", "seq", "vocab"], expected)


def test_a_pointwise_update_warns_as_jnp_on_an_unsafe_cast():
    x = _value(jnp.bfloat16)
    with pytest.warns(FutureWarning, match="cannot safely cast value from dtype=float32 to dtype=bfloat16"):
        x.at[{"seq": _named(LAST, ["batch"])}].set(_named(np.ones(B, np.float32), ["batch"]))


@pytest.mark.parametrize("axis_type", [AxisType.Explicit, AxisType.Auto], ids=["explicit", "auto"])
def test_a_pointwise_gather_is_partitioned_along_its_shared_axes(axis_type):
    """Cross-entropy's pick: log-probs over batch@data seq vocab@model read at targets over batch@data seq.
    With the shared axes as the gather's batching dims XLA keeps each device's batch block: the only
    collective is the lookup's sum over model (the split vocab), no gather of the targets over data; the
    update writes in place (no collective)."""
    mesh = jax.make_mesh(tuple(MESH.values()), tuple(MESH), axis_types=(axis_type,) * len(MESH))
    shape = {"batch": 8, "seq": 4, "vocab": 16}
    with jax.set_mesh(mesh):
        data = np.arange(8 * 4 * 16, dtype=np.float32).reshape(8, 4, 16)
        targets = (np.arange(8 * 4).reshape(8, 4) * 5) % 16
        log_probs = tx.shard(tx.named(jnp.asarray(data), list(shape)), {"batch": "data", "vocab": "model"})
        picked = tx.shard(tx.named(jnp.asarray(targets, jnp.int32), ["batch", "seq"]), {"batch": "data"})
        read = jax.jit(lambda x, t: x[{"vocab": t}])
        assert compiled(read, log_probs, picked) == Counter({("all-reduce", ("model",)): 1})
        out = read(log_probs, picked)
        expected = np.take_along_axis(data, targets[..., None], axis=-1)[..., 0]
        np.testing.assert_array_equal(np.asarray(tx.positional(out, ["batch", "seq"])), expected)
        assert tx.resources_of(out) == {"batch": "data"}
        write = jax.jit(lambda x, t: x.at[{"vocab": t}].add(1.0))
        assert compiled(write, log_probs, picked) == Counter()
        bumped = write(log_probs, picked)
        expected = data.copy()
        np.put_along_axis(expected, targets[..., None], np.take_along_axis(data, targets[..., None], -1) + 1, -1)
        np.testing.assert_array_equal(np.asarray(tx.positional(bumped, list(shape))), expected)
        assert tx.resources_of(bumped) == {"batch": "data", "vocab": "model"}
