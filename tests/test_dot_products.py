"""vmap vs pmap vs xmap: 10,000,000 dot products of 3-vectors with the named axis over 8 devices."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import typed_xmap as tx
from typed_xmap._algebra import STREAMED_CONTRACTION_MAX, contraction_kernel

N = 10_000_000


@pytest.fixture
def mesh():
    with jax.set_mesh(jax.make_mesh((8,), ("x",))) as mesh:
        yield mesh


def dots():
    return tx.xmap(jnp.dot, in_axes=(["n", ...], ["n", ...]), out_axes=["n", ...], axis_resources={"n": "x"})


@pytest.mark.slow
def test_ten_million_dot_products(mesh):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((N, 3), dtype=np.float32)
    b = rng.standard_normal((N, 3), dtype=np.float32)
    out = dots()(a, b)
    assert out.shape == (N,)
    assert out.sharding.spec == jax.P("x")
    assert len(out.addressable_shards) == 8  # no device-count limit: 10M elements on 8 devices
    picks = rng.integers(0, N, 1000)
    np.testing.assert_allclose(np.asarray(out)[picks], np.einsum("nk,nk->n", a[picks], b[picks]), rtol=1e-5, atol=1e-5)


def test_pmap_would_need_a_device_per_element():
    # 16 elements on 8 devices: pmap maps one element per device, so it cannot run this at all
    # (jax 0.10.2 words it "cannot select an axis to squeeze out ..."); xmap splits the axis in chunks.
    with pytest.raises(ValueError):
        jax.pmap(jnp.dot)(jnp.ones((16, 3)), jnp.ones((16, 3)))
    with jax.set_mesh(jax.make_mesh((8,), ("x",))):
        assert dots()(jnp.ones((16, 3)), jnp.ones((16, 3))).shape == (16,)


def test_jaxpr_reads_cleanly(mesh):
    jaxpr = jax.make_jaxpr(dots())(jnp.ones((16, 3)), jnp.ones((16, 3)))
    text = str(jaxpr)
    assert "name=xmap(dot)" in text
    primitives = [eqn.primitive.name for eqn in jaxpr.jaxpr.eqns[0].params["jaxpr"].eqns]
    # placement (reshard / sharding constraints) around the inner products of 3-vectors as 3 multiplies and
    # 2 adds (the streamed kernel: a batched dot_general of size 3 runs at ~20% of memory bandwidth on CPU)
    assert "dot_general" not in primitives
    assert primitives.count("mul") == 3 and primitives.count("add") == 2
    assert set(primitives) <= {"mul", "add", "slice", "squeeze", "reshard", "sharding_constraint"}


def _primitives(f, *args):
    return {eqn.primitive.name for eqn in jax.make_jaxpr(f)(*args).jaxpr.eqns[0].params["jaxpr"].eqns}


@pytest.mark.parametrize("fun", [jnp.dot, jnp.inner, jnp.vdot], ids=["dot", "inner", "vdot"])
def test_small_inner_products_stream_with_the_same_values(fun):
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((64, 3)).astype(np.float32), rng.standard_normal((64, 3)).astype(np.float32)
    f = tx.xmap(fun, in_axes=(["n", ...], ["n", ...]), out_axes=["n", ...])
    assert "dot_general" not in _primitives(f, a, b)
    np.testing.assert_allclose(f(a, b), np.einsum("nk,nk->n", a, b), rtol=1e-6, atol=1e-6)
    c = (a + 1j * b).astype(np.complex64)
    expected = np.einsum("nk,nk->n", np.conj(c) if fun is jnp.vdot else c, c)
    np.testing.assert_allclose(f(c, c), expected, rtol=1e-5, atol=1e-5)


def test_contractions_with_reuse_or_of_ordinary_size_stay_one_dot_general():
    size = STREAMED_CONTRACTION_MAX + 1
    long = jnp.ones((4, size))
    per_row = tx.xmap(jnp.dot, in_axes=(["n", ...], ["n", ...]), out_axes=["n", ...])
    assert "dot_general" in _primitives(per_row, long, long)
    np.testing.assert_allclose(per_row(long, long), np.full(4, size))
    # different names on the two vectors: the inner products form a matmul (reuse), whatever their size
    matmul = tx.xmap(jnp.vdot, in_axes=({0: "l"}, {1: "r"}), out_axes=["l", "r", ...])
    a, b = jnp.ones((8, 3)), jnp.ones((3, 6))
    assert "dot_general" in _primitives(matmul, a, b)
    np.testing.assert_allclose(matmul(a, b), np.full((8, 6), 3.0))
    # integer vectors keep jnp.dot's own kernel
    ints = jnp.ones((4, 3), jnp.int32)
    assert "dot_general" in _primitives(per_row, ints, ints)


def test_the_kernel_rule():
    assert contraction_kernel(3, batch_only=True) == "streamed"
    assert contraction_kernel(STREAMED_CONTRACTION_MAX, batch_only=True) == "streamed"
    assert contraction_kernel(STREAMED_CONTRACTION_MAX + 1, batch_only=True) == "dot_general"
    assert contraction_kernel(3, batch_only=False) == "dot_general"  # a matmul: operands reused
    assert contraction_kernel(None, batch_only=True) == "dot_general"  # unknown size (the plugin's)
    assert contraction_kernel(0, batch_only=True) == "dot_general"
