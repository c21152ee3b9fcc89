"""A GRU sequence classifier with per-example gradients, written as a user would: every size from a config
dataclass. The clean twin of the planted mistakes in ``tests/test_plugin_models.py``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import jax

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32

Hidden = NamedArray[f32, "hidden"]


@dataclass(frozen=True)
class GRUConfig:
    embed: int = 4
    hidden: int = 6
    classes: int = 3


class GRUParams(NamedTuple):
    w_x: NamedArray[f32, "gate embed hidden"]
    w_h: NamedArray[f32, "gate hidden_in hidden"]
    w_out: NamedArray[f32, "hidden classes"]


def init(cfg: GRUConfig, key: jax.Array) -> GRUParams:
    keys = jax.random.split(key, 7)
    w_z = tx.random.normal(keys[0], {"embed": cfg.embed, "hidden": cfg.hidden})
    w_r = tx.random.normal(keys[1], {"embed": cfg.embed, "hidden": cfg.hidden})
    w_n = tx.random.normal(keys[2], {"embed": cfg.embed, "hidden": cfg.hidden})
    u_z = tx.random.normal(keys[3], {"hidden_in": cfg.hidden, "hidden": cfg.hidden})
    u_r = tx.random.normal(keys[4], {"hidden_in": cfg.hidden, "hidden": cfg.hidden})
    u_n = tx.random.normal(keys[5], {"hidden_in": cfg.hidden, "hidden": cfg.hidden})
    return GRUParams(
        w_x=tnp.stack([w_z, w_r, w_n], axis="gate") / cfg.embed,
        w_h=tnp.stack([u_z, u_r, u_n], axis="gate") / cfg.hidden,
        w_out=tx.random.normal(keys[6], {"hidden": cfg.hidden, "classes": cfg.classes}),
    )


def gru_cell(params: GRUParams, h: Hidden, x: NamedArray[f32, "embed"]) -> Hidden:
    gx = tnp.einsum("{embed},{gate,embed,hidden}->{gate,hidden}", x, params.w_x)
    h_in = tx.rename(h, {"hidden": "hidden_in"})
    gh = tnp.einsum("{hidden_in},{gate,hidden_in,hidden}->{gate,hidden}", h_in, params.w_h)
    z = tnp.sigmoid(gx[{"gate": 0}] + gh[{"gate": 0}])
    r = tnp.sigmoid(gx[{"gate": 1}] + gh[{"gate": 1}])
    n = tnp.tanh(gx[{"gate": 2}] + r * gh[{"gate": 2}])
    return (1.0 - z) * n + z * h


def encode(cfg: GRUConfig, params: GRUParams, xs: NamedArray[f32, "time embed"]) -> Hidden:
    def step(h: Hidden, x: NamedArray[f32, "embed"]) -> tuple[Hidden, Hidden]:
        h = gru_cell(params, h, x)
        return h, h

    # the first step's value broadcast to the hidden size: h0 carries the axes tx.vmap maps by name
    h0 = tnp.zeros({"hidden": cfg.hidden}) + 0.0 * xs[{"time": 0, "embed": 0}]
    last, _ = tx.scan(step, h0, xs, axis="time")
    final: Hidden = last
    return final


def example_loss(
    params: GRUParams, xs: NamedArray[f32, "time embed"], label: NamedArray[f32, "classes"], cfg: GRUConfig
) -> jax.Array:
    """One sequence's cross-entropy, a positional scalar for ``jax.grad``."""
    logits = tnp.einsum("{hidden},{hidden,classes}->{classes}", encode(cfg, params, xs), params.w_out)
    value: jax.Array = tx.positional(-tnp.sum(tnp.log_softmax(logits, "classes") * label, "classes"), [])
    return value


def per_example_grads(
    cfg: GRUConfig,
    params: GRUParams,
    xs: NamedArray[f32, "batch time embed"],
    labels: NamedArray[f32, "batch classes"],
) -> Any:
    """Each sequence's gradient (every leaf gains ``batch``), mapped by name with ``tx.vmap``."""
    grads = tx.vmap(jax.grad(example_loss), axis="batch")(params, xs, labels, cfg)
    return grads
