"""vmap vs pmap vs xmap: 10,000,000 dot products of 3-vectors with the named axis over 8 devices."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import typed_xmap as tx

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
    # placement (reshard / sharding constraints) around exactly one batched dot_general
    assert primitives.count("dot_general") == 1
    assert set(primitives) <= {"dot_general", "reshard", "sharding_constraint"}
