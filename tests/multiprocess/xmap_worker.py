"""One process of a 2-process xmap run on CPU (4 devices each, gloo collectives over loopback).

Usage: python xmap_worker.py PROCESS_ID PORT. Prints "OK <process id>" on success.
"""

import os
import sys

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"
os.environ["JAX_PLATFORMS"] = "cpu"

import jax
import numpy as np
from jax import lax
from jax.sharding import AxisType, NamedSharding, PartitionSpec as P

jax.config.update("jax_cpu_collectives_implementation", "gloo")


def main() -> int:
    process_id, port = int(sys.argv[1]), int(sys.argv[2])
    jax.distributed.initialize(
        coordinator_address=f"127.0.0.1:{port}",
        num_processes=2,
        process_id=process_id,
        initialization_timeout=60,
        heartbeat_timeout_seconds=20,
        shutdown_timeout_seconds=20,
    )
    import typed_xmap as tx

    mesh = jax.make_mesh((2, 4), ("x", "y"), axis_types=(AxisType.Auto, AxisType.Auto))  # row x == process
    full = np.arange(16 * 8, dtype=np.float32).reshape(16, 8)
    w = np.arange(8, dtype=np.float32)
    local = full[process_id * 8 : (process_id + 1) * 8]  # this process's slice of 'batch' (split over x)

    f = tx.xmap(
        lambda v, w: (lax.psum(v * w, "batch"), v * 2),
        in_axes=(["batch", "feat", ...], ["feat", ...]),
        out_axes=(["feat", ...], ["batch", "feat", ...]),
        axis_resources={"batch": "x", "feat": "y"},
        axis_sizes={"batch": 16},  # global sizes
    )
    with jax.set_mesh(mesh):
        total, doubled = f(local, w)
        g = tx.xmap(
            lambda v: lax.psum(v, "batch"), in_axes=["batch", ...], out_axes=[...], axis_resources={"batch": ("x", "y")}
        )
        gathered = g(full[process_id * 8 : (process_id + 1) * 8])
        # a global jax.Array already sharded as xmap shards 'batch' and 'feat' is taken as it is
        placed = jax.make_array_from_callback(full.shape, NamedSharding(mesh, P("x", "y")), lambda index: full[index])
        total_from_global, _ = f(placed, w)
    expected = (full * w).sum(0)
    for shard in total_from_global.addressable_shards:
        np.testing.assert_allclose(np.asarray(shard.data), expected[shard.index], rtol=1e-6)
    for shard in total.addressable_shards:
        np.testing.assert_allclose(np.asarray(shard.data), expected[shard.index], rtol=1e-6)
    for shard in doubled.addressable_shards:
        np.testing.assert_allclose(np.asarray(shard.data), (2 * full)[shard.index])
    for shard in gathered.addressable_shards:
        np.testing.assert_allclose(np.asarray(shard.data), full.sum(0)[shard.index])
    assert doubled.shape == (16, 8)
    print(f"OK {process_id}", flush=True)
    jax.distributed.shutdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
