"""An MLP block trained with fully sharded data parallelism and tensor parallelism at once (weights split
along ``embed`` over ``data``, FSDP/ZeRO-3 style, and along ``mlp`` over ``model``), with its optimizer step:
Adam's two moments live exactly where their weights do, the gradients are clipped by their global norm (a
sum over every device's blocks), and an exponential moving average of the weights is kept for evaluation."""

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

from typing import TypedDict

import jax
import jax.numpy as jnp
from jax.sharding import AxisType

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32

MESH = {"data": 4, "model": 2}
PLACEMENT = {"batch": "data", "embed": "data", "mlp": "model"}
"""Activations take ``batch``; weights take ``embed`` and ``mlp`` (one mapping, each value takes its keys)."""
LEARNING_RATE, BETA1, BETA2, MAX_NORM, EMA = 1e-3, 0.9, 0.999, 1.0, 0.99


class Params(TypedDict):
    w_in: NamedArray[f32, "embed@data mlp@model"]
    b_in: NamedArray[f32, "mlp@model"]
    w_out: NamedArray[f32, "mlp@model embed@data"]
    scale: NamedArray[f32, "embed@data"]


def forward(x: NamedArray[f32, "batch@data embed"], p: Params) -> NamedArray[f32, "batch@data embed"]:
    """Layer norm, the MLP, a residual. The input weight's ``embed`` blocks meet the batch's ``data`` split (the
    FSDP all-gather); the output weight is gathered explicitly before its contraction over the split ``mlp``."""
    centred = x - x.mean("embed")
    normed = centred / tnp.sqrt((centred * centred).mean("embed") + 1e-5) * tx.constrain(p["scale"], {"embed": None})
    h = tnp.gelu(tnp.einsum("{embed},{embed,mlp}->{mlp}", normed, p["w_in"]) + p["b_in"])
    w_out = tx.constrain(p["w_out"], {"mlp": "model", "embed": None})
    return x + tnp.einsum("{mlp},{mlp,embed}->{embed}", h, w_out)


def global_norm(g: Params) -> jax.Array:
    """The gradients' global L2 norm: each weight's squares summed over all its (split) axes."""
    total = (
        (g["w_in"] * g["w_in"]).sum(("embed", "mlp"))
        + (g["b_in"] * g["b_in"]).sum("mlp")
        + (g["w_out"] * g["w_out"]).sum(("mlp", "embed"))
        + (g["scale"] * g["scale"]).sum("embed")
    )
    norm: jax.Array = tnp.sqrt(total).data
    return norm


def adam_step(p: Params, g: Params, mu: Params, nu: Params, step: jax.Array) -> tuple[Params, Params, Params]:
    """Clip by global norm, update the moments in place of their weights, apply the bias-corrected step."""
    clip = jnp.minimum(1.0, MAX_NORM / (global_norm(g) + 1e-6))
    g = jax.tree.map(lambda v: v * clip, g)
    mu = jax.tree.map(lambda m, v: BETA1 * m + (1 - BETA1) * v, mu, g)
    nu = jax.tree.map(lambda n, v: BETA2 * n + (1 - BETA2) * v * v, nu, g)
    c1, c2 = 1 - BETA1 ** (step + 1), 1 - BETA2 ** (step + 1)
    p = jax.tree.map(lambda w, m, n: w - LEARNING_RATE * (m / c1) / (tnp.sqrt(n / c2) + 1e-8), p, mu, nu)
    return p, mu, nu


def ema_update(average: Params, p: Params) -> Params:
    new: Params = {
        "w_in": EMA * average["w_in"] + (1 - EMA) * p["w_in"],
        "b_in": EMA * average["b_in"] + (1 - EMA) * p["b_in"],
        "w_out": EMA * average["w_out"] + (1 - EMA) * p["w_out"],
        "scale": EMA * average["scale"] + (1 - EMA) * p["scale"],
    }
    return new


def _params(seed: int) -> Params:
    key = iter(jax.random.split(jax.random.key(seed), 4))
    embed, mlp = 16, 32
    p: Params = {
        "w_in": tx.random.normal(next(key), {"embed": embed, "mlp": mlp}),
        "b_in": tx.random.normal(next(key), {"mlp": mlp}),
        "w_out": tx.random.normal(next(key), {"mlp": mlp, "embed": embed}),
        "scale": tx.random.normal(next(key), {"embed": embed}),
    }
    placed: Params = tx.shard(p, PLACEMENT)
    return placed


def example_arguments() -> dict[str, tuple[object, ...]]:
    p, g, mu, nu = _params(5), _params(6), _params(7), _params(8)
    x = tx.shard(tx.random.normal(jax.random.key(9), {"batch": 8, "embed": 16}), {"batch": "data"})
    return {
        "forward": (x, p),
        "global_norm": (g,),
        "adam_step": (p, g, mu, nu, jnp.int32(3)),
        "ema_update": (mu, p),
    }


if __name__ == "__main__":
    mesh = jax.make_mesh((4, 2), ("data", "model"), axis_types=(AxisType.Explicit,) * 2)
    with jax.set_mesh(mesh):
        for name, args in example_arguments().items():
            jax.jit(globals()[name])(*args)
