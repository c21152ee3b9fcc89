"""Nested xmaps compile to what nested ``vmap(spmd_axis_name=...)`` compile to (issue 11, item 1).

The placement rule: a dim is placed where its name's resources put it; dims no name covers are the
compiler's (``PartitionSpec.UNCONSTRAINED``), never forced replicated. So an inner xmap does not undo its
enclosing xmaps' placement (no all-gathers, dynamic-slices or copies the hand-written nest lacks), and a
nest's results come back where its names put them. Checked on the compiled ops, never on time.
"""

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import AxisType, NamedSharding, PartitionSpec as P

import typed_xmap as tx

MESH_AXES = ("x", "y", "z")
OPS = ("all-gather", "dynamic-slice", "copy")


def element(v):
    return v * 2.0 + 1.0


def nested_xmap(depth, body=element):
    fn = body
    for level in reversed(range(depth)):
        fn = tx.xmap(
            fn, in_axes=[f"a{level}", ...], out_axes=[f"a{level}", ...], axis_resources={f"a{level}": MESH_AXES[level]}
        )
    return fn


def nested_vmap(depth, sharding, body=element):
    fn = body
    for level in reversed(range(depth)):
        fn = jax.vmap(fn, spmd_axis_name=MESH_AXES[level])
    return jax.jit(fn, in_shardings=sharding, out_shardings=sharding)


def op_counts(lowered):
    text = lowered.compile().as_text()
    return {op: len(re.findall(rf" {op}\(", text)) for op in OPS}


@pytest.fixture(params=[AxisType.Explicit, AxisType.Auto], ids=["explicit", "auto"])
def mesh(request):
    mesh = jax.make_mesh((2, 2, 2), MESH_AXES, axis_types=(request.param,) * 3)
    with jax.set_mesh(mesh):
        yield mesh


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_nested_xmap_compiles_like_nested_vmap(mesh, depth):
    shape = (2,) * depth + (64,)
    sharding = NamedSharding(mesh, P(*MESH_AXES[:depth]))
    data = jax.device_put(jnp.arange(np.prod(shape), dtype=jnp.float32).reshape(shape), sharding)
    xmapped, hand = nested_xmap(depth), nested_vmap(depth, sharding)
    out = xmapped(data)
    np.testing.assert_allclose(out, hand(data))
    assert op_counts(xmapped.lower(data)) == op_counts(hand.lower(data)) == dict.fromkeys(OPS, 0)
    # the nest's result is where its names put it, not replicated
    assert tuple(out.sharding.spec)[:depth] == MESH_AXES[:depth]


def test_inner_xmap_leaves_the_outer_placement_of_positional_dims(mesh):
    # the inner xmap sees the outer's positional dim 1 (size 8, on 'z' by the caller): it constrains only
    # its own axis's dim and leaves that one to the compiler, so no all-gather brings it back together
    data = jax.device_put(jnp.ones((2, 2, 8)), NamedSharding(mesh, P("x", "y")))
    inner = tx.xmap(lambda v: jnp.sin(v), in_axes=["b", ...], out_axes=["b", ...], axis_resources={"b": "y"})
    outer = tx.xmap(inner, in_axes=["a", ...], out_axes=["a", ...], axis_resources={"a": "x"})
    np.testing.assert_allclose(outer(data), np.sin(np.ones((2, 2, 8))), rtol=1e-6)
    assert op_counts(outer.lower(data))["all-gather"] == 0
