"""A top-2 mixture-of-experts layer with expert parallelism, written as a user would: every size from a
config dataclass. The clean twin of the planted mistakes in ``tests/test_plugin_models.py``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import jax

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32


@dataclass(frozen=True)
class MoEConfig:
    embed: int = 8
    mlp: int = 16
    experts: int = 4


class MoEParams(NamedTuple):
    router: NamedArray[f32, "embed expert"]
    w_in: NamedArray[f32, "expert embed mlp"]
    w_out: NamedArray[f32, "expert mlp embed"]


Tokens = NamedArray[f32, "batch embed"]


def init(cfg: MoEConfig, key: jax.Array) -> MoEParams:
    k_router, k_in, k_out = jax.random.split(key, 3)
    return MoEParams(
        router=tx.random.normal(k_router, {"embed": cfg.embed, "expert": cfg.experts}),
        w_in=tx.random.normal(k_in, {"expert": cfg.experts, "embed": cfg.embed, "mlp": cfg.mlp}) / cfg.embed,
        w_out=tx.random.normal(k_out, {"expert": cfg.experts, "mlp": cfg.mlp, "embed": cfg.embed}) / cfg.mlp,
    )


def top2_gates(cfg: MoEConfig, params: MoEParams, x: Tokens) -> NamedArray[f32, "batch expert"]:
    """Each token's weights over its two best experts (zero elsewhere), renormalised."""
    probs = tnp.softmax(tnp.einsum("{embed},{embed,expert}->{expert}", x, params.router), "expert")
    first = tnp.one_hot(tnp.argmax(probs, "expert"), "expert", cfg.experts)
    rest = probs * (1.0 - first)
    second = tnp.one_hot(tnp.argmax(rest, "expert"), "expert", cfg.experts)
    gates = probs * (first + second)
    return gates / tnp.sum(gates, "expert")


def moe_layer(cfg: MoEConfig, params: MoEParams, x: Tokens) -> Tokens:
    gates = top2_gates(cfg, params, x)
    hidden = tnp.relu(tnp.einsum("{embed},{expert,embed,mlp}->{expert,mlp}", x, params.w_in))
    hidden = tx.constrain(hidden, {"batch": "data", "expert": "model"})
    out = tnp.einsum("{expert,mlp},{expert,mlp,embed}->{expert,embed}", hidden, params.w_out)
    return x + tnp.sum(out * gates, "expert")


def load_balance(gates: NamedArray[f32, "batch expert"]) -> NamedArray[f32, ""]:
    """Mean routing weight of expert 0 and the variance of the experts' loads."""
    share = tnp.mean(gates, "batch")
    return share[{"expert": 0}] * 0.0 + tnp.var(share, "expert")


def place(params: MoEParams, x: Tokens) -> tuple[MoEParams, Tokens]:
    """Experts over the ``model`` mesh axis, tokens over ``data`` (call under a 2x4 mesh)."""
    return tx.shard(params, {"expert": "model"}), tx.shard(x, {"batch": "data"})
