"""Nested xmaps against hand-written nested ``vmap``s, depth 1-3, on an 8-device (2, 2, 2) mesh
(fitted to fewer devices where there are fewer: ``_timing.bench_mesh``).

Depth d maps the first d dims of a ``(2, ..., 2, N)`` array, one xmap per axis (outermost on mesh axis
``x``, then ``y``, then ``z``); the hand-written program is ``jit`` of the same nest of
``vmap(spmd_axis_name=...)`` with the same input and output shardings. Interleaved rounds, medians
(goal: xmap <= 1.1x at every depth). Also prints the all-gathers, dynamic-slices and copies each compiled
module holds.
"""

import os
import re
import sys
from pathlib import Path

if "jax" not in sys.modules:
    os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
sys.path.insert(0, str(Path(__file__).parent))

import jax
import numpy as np
from _timing import bench_mesh, interleaved, print_table
from jax.sharding import NamedSharding, PartitionSpec as P

import typed_xmap as tx

MESH_AXES = ("x", "y", "z")
SHAPES = {1: (2, 2_097_152), 2: (2, 2, 1_048_576), 3: (2, 2, 2, 524_288)}
OPS = ("all-gather", "dynamic-slice", "copy")


def element(v):
    return v * 2.0 + 1.0


def nested_xmap(depth: int):
    fn = element
    for level in reversed(range(depth)):
        fn = tx.xmap(
            fn, in_axes=[f"a{level}", ...], out_axes=[f"a{level}", ...], axis_resources={f"a{level}": MESH_AXES[level]}
        )
    return fn


def nested_vmap(depth: int, sharding: NamedSharding):
    fn = element
    for level in reversed(range(depth)):
        fn = jax.vmap(fn, spmd_axis_name=MESH_AXES[level])
    return jax.jit(fn, in_shardings=sharding, out_shardings=sharding)


def op_counts(lowered) -> dict[str, int]:
    text = lowered.compile().as_text()
    return {op: len(re.findall(rf" {op}\(", text)) for op in OPS}


def main() -> int:
    mesh = bench_mesh((2, 2, 2), MESH_AXES)
    status = 0
    for depth, shape in SHAPES.items():
        sharding = NamedSharding(mesh, P(*MESH_AXES[:depth]))
        data = jax.device_put(jax.random.normal(jax.random.key(0), shape), sharding)
        with jax.set_mesh(mesh):
            xmapped = nested_xmap(depth)
            hand = nested_vmap(depth, sharding)
            if not np.allclose(np.asarray(xmapped(data)), np.asarray(hand(data)), rtol=1e-5, atol=1e-5):
                print(f"depth {depth}: WRONG VALUES")
                return 1
            counts = {"xmap": op_counts(xmapped.lower(data)), "vmap": op_counts(hand.lower(data))}

        def under_mesh(fn, data=data):
            def run():
                with jax.set_mesh(mesh):
                    return fn(data).block_until_ready()

            return run

        times = interleaved(
            {"jit(nested vmap), hand-written": under_mesh(hand), f"tx.xmap nested {depth} deep": under_mesh(xmapped)},
            rounds=9,
            calls=5,
        )
        print_table(
            f"depth {depth}: {shape} through {depth} nested map(s), mesh axes {MESH_AXES[:depth]}",
            times,
            "jit(nested vmap), hand-written",
            goal="xmap <= 1.1x",
        )
        print(f"  HLO ops (all-gather, dynamic-slice, copy): xmap {counts['xmap']}  vmap {counts['vmap']}")
    return status


if __name__ == "__main__":
    raise SystemExit(main())
