"""Eager NamedArray operations against the same ``jnp`` operations on positional arrays.

Rows: ``x + b`` and ``x * b`` with ``b`` broadcast (by name: ``b`` carries only ``out``), ``tnp.sum`` over a
named axis, ``tnp.softmax`` over a named axis, a pointwise gather ``x[{'out': t}]`` (``t`` over ``batch``: one
element per batch row, against ``jnp.take_along_axis``) and its scatter-add, ``tnp.einsum`` of ``x`` and a weight
``w`` (``{out,hid}``), off a mesh and on an Explicit one (``batch`` split over all devices; against
``jnp.einsum`` with its ``out_sharding`` written by hand); each against the positional ``jnp`` call that computes
the same values. Cases run interleaved in one process; the table prints each ratio to its ``jnp`` row (goal:
``x + b`` and ``tnp.sum`` <= 1.5x).

Run: ``PYTHONPATH=. python bench/eager_ops.py``.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import jax
import jax.numpy as jnp
import numpy as np
from _timing import interleaved
from jax.sharding import AxisType, NamedSharding, PartitionSpec as P

import typed_xmap as tx
import typed_xmap.numpy as tnp


def main() -> int:
    x = jnp.asarray(np.random.default_rng(0).normal(size=(64, 128)), jnp.float32)
    b = jnp.asarray(np.random.default_rng(1).normal(size=(128,)), jnp.float32)
    t = jnp.asarray(np.random.default_rng(2).integers(0, 128, size=(64,)), jnp.int32)
    nx, nb, nt = tx.named(x, ["batch", "out"]), tx.named(b, ["out"]), tx.named(t, ["batch"])
    w = jnp.asarray(np.random.default_rng(3).normal(size=(128, 32)), jnp.float32)
    nw = tx.named(w, ["out", "hid"])
    mesh = jax.make_mesh((len(jax.devices()),), ("x",), axis_types=(AxisType.Explicit,))
    xs = jax.device_put(x, NamedSharding(mesh, P("x", None)))
    ws = jax.device_put(w, NamedSharding(mesh, P()))
    nxs, nws = tx.named(xs, ["batch", "out"]), tx.named(ws, ["out", "hid"])
    out = NamedSharding(mesh, P("x", None))
    spec = "{batch,out},{out,hid}->{batch,hid}"
    rows = {
        "x + b (broadcast)": (lambda: x + b, lambda: nx + nb),
        "x * b (broadcast)": (lambda: x * b, lambda: nx * nb),
        "tnp.sum(x, 'batch')": (lambda: jnp.sum(x, axis=0), lambda: tnp.sum(nx, "batch")),
        "tnp.softmax(x, 'out')": (lambda: jax.nn.softmax(x, axis=1), lambda: tnp.softmax(nx, "out")),
        "x[{'out': t}] (pointwise)": (
            lambda: jnp.take_along_axis(x, t[:, None], axis=1)[:, 0],
            lambda: nx[{"out": nt}],
        ),
        "x.at[{'out': t}].add(1)": (
            lambda: x.at[jnp.arange(64), t].add(1.0),
            lambda: nx.at[{"out": nt}].add(1.0),
        ),
        "tnp.einsum(x, w)": (lambda: jnp.einsum("bo,oh->bh", x, w), lambda: tnp.einsum(spec, nx, nw)),
        "tnp.einsum(x, w) Explicit": (
            lambda: jnp.einsum("bo,oh->bh", xs, ws, out_sharding=out),
            lambda: tnp.einsum(spec, nxs, nws),
        ),
    }
    cases = {}
    for name, (plain, named) in rows.items():
        cases[f"jnp   {name}"] = lambda plain=plain: jax.block_until_ready(plain())
        cases[f"named {name}"] = lambda named=named: jax.block_until_ready(named().data)
    times = interleaved(cases, rounds=15, calls=300)
    print("eager ops, NamedArray vs jnp  (goal: x + b and tnp.sum <= 1.5x)")
    for name in rows:
        base, own = times[f"jnp   {name}"], times[f"named {name}"]
        print(f"  {name:<28} jnp {base * 1e6:8.2f} us   named {own * 1e6:8.2f} us   {own / base:6.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
