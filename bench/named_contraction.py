"""Named contraction through ``typed_xmap.numpy`` against hand-written ``jnp.einsum``, under ``jit`` on one mesh.

Two workloads, x[batch, in], w[in, out], y[batch, out]:
- the regression loss ``mean_batch(sum_out((einsum_in(x, w) - y)^2))``, value and gradients;
- the named matmul ``einsum('{in},{in,out}->{out}', x, w)``.
Each is run three ways: hand-written positional ``jnp.einsum`` (the baseline), ``tnp`` on NamedArrays, and
``tnp`` on plain per-element values in nested ``vmap(axis_name=..., spmd_axis_name=...)`` (an untyped xmap
body). Inputs are pre-placed on the 8-device mesh (fitted to fewer devices where there are fewer), cases run
in interleaved rounds; the table prints the ratio to the baseline (goal <= 1.1x) and whether each compiled
HLO holds a ``dot``.

Run: ``PYTHONPATH=. python bench/named_contraction.py`` (sets 8 emulated CPU devices itself).
"""

import os
import re
import sys
from pathlib import Path

if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8").strip()
sys.path.insert(0, str(Path(__file__).parent))

import jax
import jax.numpy as jnp
import numpy as np
from _timing import bench_mesh, interleaved, print_table
from jax.sharding import AxisType, NamedSharding, PartitionSpec as P

import typed_xmap as tx
import typed_xmap.numpy as tnp

SIZES = {"batch": 256, "in": 512, "out": 512}
DIMS = {"x": ("batch", "in"), "w": ("in", "out"), "y": ("batch", "out")}


def hand_matmul(x, w):
    """``x @ w``; on an Explicit mesh a contraction over a sharded dim needs ``out_sharding`` by hand too."""
    mesh = jax.sharding.get_abstract_mesh()
    explicit = not mesh.empty and AxisType.Explicit in mesh.axis_types
    out = P(jax.typeof(x).sharding.spec[0], jax.typeof(w).sharding.spec[1]) if explicit else None
    return jnp.einsum("bi,io->bo", x, w, out_sharding=out)


def hand_loss(x, w, y):
    return jnp.mean(jnp.sum((hand_matmul(x, w) - y) ** 2, axis=1))


def named_loss(x, w, y):
    return tnp.mean(tnp.sum((tnp.einsum("{in},{in,out}->{out}", x, w) - y) ** 2, "out"), "batch").data


def per_element(body, resources, out):
    """``body(xe, we, ye)`` in nested vmaps (batch outermost), as an untyped xmap body sees it."""

    def wrapped(x, w, y):
        f = body
        for name in ("out", "in", "batch"):
            f = jax.vmap(
                f,
                in_axes=tuple(0 if name in d else None for d in DIMS.values()),
                axis_name=name,
                spmd_axis_name=resources.get(name),
                out_axes=0 if name in out else None,
            )
        return f(x, w, y)

    return wrapped


def element_loss(xe, we, ye):
    return tnp.mean(tnp.sum((tnp.einsum("{in},{in,out}->{out}", xe, we) - ye) ** 2, "out"), "batch")


def has_dot(fn, *args):
    return bool(re.search(r"\bdot\(", fn.lower(*args).compile().as_text()))


def run(kind: str, resources: dict) -> bool:
    types = (AxisType.Explicit,) * 2 if kind == "Explicit" else (AxisType.Auto,) * 2
    mesh = bench_mesh((4, 2), ("x", "y"), axis_types=types)
    rng = np.random.default_rng(0)
    raw = {k: rng.normal(size=[SIZES[n] for n in d]).astype(np.float32) for k, d in DIMS.items()}
    all_dots = True
    with jax.set_mesh(mesh):
        arrays = [
            jax.device_put(raw[k], NamedSharding(mesh, P(*(resources.get(n) for n in d)))) for k, d in DIMS.items()
        ]
        named = [tx.named(a, list(d)) for a, d in zip(arrays, DIMS.values(), strict=True)]
        grads = (0, 1)
        cases = {
            "loss+grad: hand-written jnp.einsum": (jax.value_and_grad(hand_loss, grads), arrays),
            "loss+grad: tnp on NamedArrays": (jax.value_and_grad(named_loss, grads), named),
            "loss+grad: tnp per element (nested vmap)": (
                jax.value_and_grad(per_element(element_loss, resources, ()), grads),
                arrays,
            ),
            "matmul: hand-written jnp.einsum": (lambda x, w, y: hand_matmul(x, w), arrays),
            "matmul: tnp on NamedArrays": (lambda x, w, y: tnp.einsum("{in},{in,out}->{out}", x, w), named),
            "matmul: tnp per element (nested vmap)": (
                per_element(lambda xe, we, ye: tnp.einsum("{in},{in,out}->{out}", xe, we), resources, ("batch", "out")),
                arrays,
            ),
        }
        jitted = {name: (jax.jit(fn), args) for name, (fn, args) in cases.items()}
        dots = {name: has_dot(fn, *args) for name, (fn, args) in jitted.items()}
        all_dots = all(dots.values())
        times = interleaved(
            {name: (lambda fn=fn, args=args: jax.block_until_ready(fn(*args))) for name, (fn, args) in jitted.items()},
            rounds=15,
            calls=10,
        )
    placement = ", ".join(f"{k}->{v}" for k, v in resources.items())
    for prefix in ("loss+grad", "matmul"):
        part = {name: t for name, t in times.items() if name.startswith(prefix)}
        print_table(
            f"{prefix}, sizes {SIZES}, {kind} mesh {tuple(mesh.shape.values())}, {placement}",
            part,
            f"{prefix}: hand-written jnp.einsum",
            goal="<= 1.1x",
        )
        for name in part:
            print(f"    HLO holds a dot: {dots[name]!s:<5}  {name}")
    return all_dots


def main() -> int:
    ok = True
    for kind in ("Explicit", "Auto"):
        for resources in ({"batch": "x", "out": "y"}, {"in": "x"}):
            ok &= run(kind, resources)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
