"""Batched dot products of 10,000,000 pairs of 3-vectors on an 8-device mesh.

``xmap`` with the named axis on the mesh axis, against the best of hand-written ``jit(vmap(dot))``,
``pmap(vmap(dot))`` (which needs the batch reshaped to one row per device) and ``shard_map``; all
inputs are placed on the devices before timing, interleaved rounds (goal: xmap <= 1.1x the best).
"""

import os
import sys
from pathlib import Path

if "jax" not in sys.modules:
    os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
sys.path.insert(0, str(Path(__file__).parent))

import jax
import jax.numpy as jnp
import numpy as np
from _timing import interleaved, print_table
from jax.sharding import NamedSharding, PartitionSpec as P

import typed_xmap as tx

N = 10_000_000


def main() -> int:
    devices = jax.device_count()
    mesh = jax.make_mesh((devices,), ("x",))
    a = jax.random.normal(jax.random.key(0), (N, 3))
    b = jax.random.normal(jax.random.key(1), (N, 3))
    rows = NamedSharding(mesh, P("x"))
    a_x, b_x = jax.device_put(a, rows), jax.device_put(b, rows)
    with jax.set_mesh(mesh):
        xmapped = tx.xmap(jnp.dot, in_axes=(["n", ...], ["n", ...]), out_axes=["n", ...], axis_resources={"n": "x"})
    jit_vmap = jax.jit(jax.vmap(jnp.dot), in_shardings=(rows, rows), out_shardings=rows)
    shard_mapped = jax.jit(jax.shard_map(jax.vmap(jnp.dot), mesh=mesh, in_specs=(P("x"), P("x")), out_specs=P("x")))
    pmapped = jax.pmap(jax.vmap(jnp.dot))  # pmap cannot run under jax.set_mesh: time it outside
    to_devices = jax.pmap(lambda v: v)
    a_p, b_p = to_devices(a.reshape(devices, N // devices, 3)), to_devices(b.reshape(devices, N // devices, 3))

    def under_mesh(fn):
        def run():
            with jax.set_mesh(mesh):
                return fn(a_x, b_x)

        return run

    expected = np.einsum("nk,nk->n", np.asarray(a[:1000]), np.asarray(b[:1000]))
    results = {
        "tx.xmap(jnp.dot), n -> x": under_mesh(xmapped),
        "jax.jit(jax.vmap(jnp.dot)) + shardings": under_mesh(jit_vmap),
        "jax.pmap(jax.vmap(jnp.dot)), reshaped": lambda: pmapped(a_p, b_p),
        "jax.shard_map(jax.vmap(jnp.dot))": under_mesh(shard_mapped),
    }
    for name, run in results.items():
        got = np.asarray(run()).reshape(-1)[:1000]
        if not np.allclose(got, expected, rtol=1e-4, atol=1e-5):
            print(f"{name}: WRONG VALUES")
            return 1
    times = interleaved(
        {name: (lambda run=run: run().block_until_ready()) for name, run in results.items()}, rounds=5, calls=3
    )
    best = min((t, name) for name, t in times.items() if not name.startswith("tx."))[1]
    print_table(
        f"{N:,} dot products of 3-vectors, {devices} devices (ratios vs the best hand-written: {best})",
        {name: times[name] for name in [best] + [n for n in times if n != best]},
        best,
        goal="xmap <= 1.1x",
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
