"""Per-output regression diagnostics with ``tx.xmap`` on a 4x2 grid of devices: rows split the examples,
columns split the outputs. A standardisation step, a least-squares loss per output and its gradient are
each written for whole named values and mapped with ``axis_resources``."""

from __future__ import annotations

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32

N, D_IN, D_OUT = 8, 4, 6
GRID = {"batch": "rows", "out": "cols"}


def standardise(x: NamedArray[f32, "batch feat"]) -> NamedArray[f32, "batch feat"]:
    mu = tnp.mean(x, "batch")
    sd = tnp.sqrt(tnp.mean((x - mu) ** 2, "batch") + 1e-6)
    return (x - mu) / sd


normalise = tx.xmap(
    standardise,
    in_axes=["batch", "feat", ...],
    out_axes=["batch", "feat", ...],
    axis_resources={"batch": "rows", "feat": "cols"},  # plant[p1 resource static]: axis_resources={"batch": "rows", "feat": "rows"},
)


@partial(
    tx.xmap,
    in_axes=(["batch", "inp", ...], ["inp", "out", ...], ["batch", "out", ...]),
    out_axes=["out", ...],  # plant[p2 name static]: out_axes=["batch", ...],
    axis_resources=GRID,  # plant[p3 resource static]: axis_resources={"batch": "rows", "out": "rows"},
)
def per_output_loss(
    x: NamedArray[f32, "batch inp"], w: NamedArray[f32, "inp out"], y: NamedArray[f32, "batch out"]
) -> NamedArray[f32, "out"]:
    pred = tnp.einsum("{batch,inp},{inp,out}->{batch,out}", x, w)
    return tnp.mean((pred - y) ** 2, "batch")


@partial(
    tx.xmap,
    in_axes=(["batch", "inp", ...], ["inp", "out", ...], ["batch", "out", ...]),
    out_axes=["inp", "out", ...],
    axis_resources={"batch": "rows", "out": "cols"},  # plant[p4 resource static]: axis_resources={"batch": "rows", "inp": "cols", "out": "cols"},
)
def weight_grad(
    x: NamedArray[f32, "batch inp"], w: NamedArray[f32, "inp out"], y: NamedArray[f32, "batch out"]
) -> NamedArray[f32, "inp out"]:
    residual = tnp.einsum("{batch,inp},{inp,out}->{batch,out}", x, w) - y
    return tnp.einsum("{batch,inp},{batch,out}->{inp,out}", x, residual) * (2.0 / N)


if __name__ == "__main__":
    mesh = tx.fitting_mesh((4, 2), ("rows", "cols"))
    jax.set_mesh(mesh)
    rng = np.random.default_rng(0)
    xs = rng.normal(size=(N, D_IN)).astype(np.float32) * 3.0 + 1.0
    true_w = rng.normal(size=(D_IN, D_OUT)).astype(np.float32)
    xs_n = normalise(xs)  # plant[p5 resource runtime]: xs_n = normalise(xs[:6])
    np.testing.assert_allclose(np.asarray(xs_n).mean(0), 0.0, atol=1e-5)
    ys = np.asarray(xs_n) @ true_w
    w = jnp.zeros((D_IN, D_OUT), jnp.float32)
    losses = per_output_loss(xs_n, w, ys)
    for _ in range(20):
        w = w - 0.2 * weight_grad(xs_n, w, ys)
    after = per_output_loss(xs_n, w, ys)
    assert after.shape == (D_OUT,)
    print("loss per output", np.asarray(losses).round(3), "->", np.asarray(after).round(3))
    assert float(jnp.max(after)) < float(jnp.min(losses))
    print("ok")
