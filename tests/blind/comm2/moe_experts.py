"""A mixture-of-experts MLP whose experts are split over ``data`` and whose experts' hidden units are split over
``model`` (expert parallel times tensor parallel). Tokens are split along the batch over ``data``; dispatching
them moves ``data`` from the batch to the experts (an all-to-all) and combining moves it back. Each expert's MLP
contracts its split ``mlp`` (an all-reduce over ``model``). A per-expert weight statistic is computed with
``tx.xmap`` over ``expert``, placed by ``axis_resources``."""

from __future__ import annotations

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

from typing import TypedDict

import jax

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32

MESH = {"data": 4, "model": 2}

TOKENS = {"batch": "data"}
EXPERTS = {"expert": "data"}
PARAMS = {"expert": "data", "mlp": "model"}
CAPACITY = 4
TOP = 2

Hidden = NamedArray[f32, "batch@data seq embed"]


class Experts(TypedDict):
    router: NamedArray[f32, "embed expert"]
    w_in: NamedArray[f32, "expert@data embed mlp@model"]
    w_out: NamedArray[f32, "expert@data mlp@model embed"]


def route(x: Hidden, router: NamedArray[f32, "embed expert"]) -> NamedArray[f32, ""]:
    """The router's load-balancing loss alone (for logging)."""
    logits = tnp.einsum("{embed},{embed,expert}->{expert}", x, router)
    _, _, balance = tx.moe_route(logits, TOP, CAPACITY, expert="expert", tokens="seq")
    return balance


def moe_layer(x: Hidden, p: Experts) -> tuple[Hidden, NamedArray[f32, ""]]:
    """Top-2 routing, each expert's MLP on its own devices, outputs back at their tokens."""
    logits = tnp.einsum("{embed},{embed,expert}->{expert}", x, p["router"])
    dispatch, combine, balance = tx.moe_route(logits, TOP, CAPACITY, expert="expert", tokens="seq")
    inputs = tx.moe_dispatch(x, dispatch, tokens="seq", resources=EXPERTS, from_resources=TOKENS)
    hidden = tnp.silu(tnp.einsum("{expert,embed},{expert,embed,mlp}->{expert,mlp}", inputs, p["w_in"]))
    outputs = tnp.einsum("{expert,mlp},{expert,mlp,embed}->{expert,embed}", hidden, p["w_out"])
    return x + tx.moe_combine(outputs, combine, resources=TOKENS, from_resources=EXPERTS), balance


@tx.typed
def _expert_scale(
    w_in: NamedArray[f32, "expert embed mlp"], w_out: NamedArray[f32, "expert mlp embed"]
) -> NamedArray[f32, "expert"]:
    """Each expert's product of its two weights' largest column norms (every axis is xmapped)."""
    norms_in = tnp.max(tnp.sqrt(tnp.sum(w_in * w_in, "embed")), "mlp")
    norms_out = tnp.max(tnp.sqrt(tnp.sum(w_out * w_out, "mlp")), "embed")
    return norms_in * norms_out


_per_expert = tx.xmap(_expert_scale, out_axes=["expert", ...], axis_resources={"expert": "data", "mlp": "model"})


def expert_scales(
    w_in: NamedArray[f32, "expert@data embed mlp@model"], w_out: NamedArray[f32, "expert@data mlp@model embed"]
) -> NamedArray[f32, "expert@data"]:
    """Every expert's scale, computed per expert by the xmapped body (xmap returns it positionally)."""
    return tx.named(_per_expert(w_in, w_out), ["expert"])


def example_arguments() -> dict[str, tuple[object, ...]]:
    """Each jitted function's arguments, placed as its annotations say."""
    k1, k2, k3, k4 = jax.random.split(jax.random.key(7), 4)
    x = tx.shard(tx.random.normal(k1, {"batch": 8, "seq": 8, "embed": 16}), TOKENS)
    params: Experts = {
        "router": tx.random.normal(k2, {"embed": 16, "expert": 8}) / 4,
        "w_in": tx.shard(tx.random.normal(k3, {"expert": 8, "embed": 16, "mlp": 16}) / 4, PARAMS),
        "w_out": tx.shard(tx.random.normal(k4, {"expert": 8, "mlp": 16, "embed": 16}) / 4, PARAMS),
    }
    return {
        "route": (x, params["router"]),
        "moe_layer": (x, params),
        "expert_scales": (params["w_in"], params["w_out"]),
    }


if __name__ == "__main__":
    from jax.sharding import AxisType

    mesh = jax.make_mesh((4, 2), ("data", "model"), axis_types=(AxisType.Explicit,) * 2)
    with jax.set_mesh(mesh):
        for name, args in example_arguments().items():
            jax.jit(globals()[name])(*args)
