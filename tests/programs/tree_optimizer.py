"""An MLP trained with Adam over a dict of parameters, written as a user would: the optimizer, gradient
clipping and per-leaf norms walk the params pytree with ``is_leaf=lambda v: isinstance(v, tx.NamedArray)``,
and leaves are narrowed with ``isinstance``. Clean under pyright, basedpyright and mypy with the plugin
(``tests/test_isinstance_named_array.py``)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32

Params = dict[str, NamedArray[f32, "*dims"]]


@dataclass(frozen=True)
class Config:
    embed: int = 4
    hidden: int = 8
    classes: int = 3
    lr: float = 0.05
    b1: float = 0.9
    b2: float = 0.999
    max_norm: float = 1.0


class AdamState(NamedTuple):
    mu: Params
    nu: Params
    steps: int


def is_named(v: object) -> bool:
    return isinstance(v, tx.NamedArray)


def init(cfg: Config, key: jax.Array) -> Params:
    k1, k2 = jax.random.split(key)
    return {
        "w_in": tx.random.normal(k1, {"embed": cfg.embed, "hidden": cfg.hidden}) / cfg.embed,
        "b_in": tnp.zeros({"hidden": cfg.hidden}),
        "w_out": tx.random.normal(k2, {"hidden": cfg.hidden, "classes": cfg.classes}) / cfg.hidden,
    }


def loss(params: Params, x: NamedArray[f32, "batch embed"], y: NamedArray[f32, "batch classes"]) -> jax.Array:
    hidden = tnp.relu(tnp.einsum("{embed},{embed,hidden}->{hidden}", x, params["w_in"]) + params["b_in"])
    logits = tnp.einsum("{hidden},{hidden,classes}->{classes}", hidden, params["w_out"])
    error = logits - y
    mean: jax.Array = tnp.mean(error * error, ("batch", "classes")).data
    return mean


def leaf_norms(tree: Params) -> dict[str, float]:
    """The norm of each leaf, for logging: a tree map whose leaves are the NamedArrays."""
    norms = jax.tree.map(
        lambda g: tnp.sqrt(tnp.sum(g * g, g.axes)), tree, is_leaf=lambda v: isinstance(v, tx.NamedArray)
    )
    return {name: float(norm) for name, norm in norms.items()}


def global_norm(tree: Any) -> float:
    total = 0.0
    for leaf in jax.tree.leaves(tree, is_leaf=is_named):
        if isinstance(leaf, tx.NamedArray):
            total += float(tnp.sum(leaf * leaf, leaf.axes))
        else:  # a plain array or a number beside the NamedArrays
            total += float(jnp.sum(jnp.square(leaf)))
    return math.sqrt(total)


def clip(grads: Params, max_norm: float) -> Params:
    scale = min(1.0, max_norm / (global_norm(grads) + 1e-6))
    clipped: Params = jax.tree.map(lambda g: g * scale, grads, is_leaf=lambda v: isinstance(v, tx.NamedArray))
    return clipped


def adam_init(params: Params) -> AdamState:
    zeros: Params = jax.tree.map(tnp.zeros_like, params, is_leaf=lambda v: isinstance(v, tx.NamedArray))
    return AdamState(mu=zeros, nu=dict(zeros), steps=0)


def adam_update(cfg: Config, grads: Params, state: AdamState, params: Params) -> tuple[Params, AdamState]:
    leaf = is_named
    mu: Params = jax.tree.map(lambda m, g: cfg.b1 * m + (1 - cfg.b1) * g, state.mu, grads, is_leaf=leaf)
    nu: Params = jax.tree.map(lambda v, g: cfg.b2 * v + (1 - cfg.b2) * g * g, state.nu, grads, is_leaf=leaf)
    count = state.steps + 1
    step = cfg.lr * (1 - cfg.b2**count) ** 0.5 / (1 - cfg.b1**count)
    updated: Params = jax.tree.map(
        lambda p, m, v: p - step * m / (tnp.sqrt(v) + 1e-8),
        params,
        mu,
        nu,
        is_leaf=lambda v: isinstance(v, tx.NamedArray),
    )
    return updated, AdamState(mu, nu, count)


def describe(tree: Any) -> dict[str, str]:
    """Each leaf's named shape, or its positional shape for a leaf that is not a NamedArray."""
    shapes = {}
    for path, leaf in jax.tree_util.tree_leaves_with_path(tree, is_leaf=lambda v: isinstance(v, tx.NamedArray)):
        key = jax.tree_util.keystr(path)
        if isinstance(leaf, tx.NamedArray):
            shapes[key] = " ".join(f"{axis}={size}" for axis, size in leaf.named_shape.items())
        else:
            shapes[key] = str(jnp.shape(leaf))
    return shapes


def train(cfg: Config, steps: int) -> tuple[list[float], Params]:
    key = jax.random.PRNGKey(0)
    params = init(cfg, key)
    x = tx.random.normal(jax.random.PRNGKey(1), {"batch": 16, "embed": cfg.embed})
    y = tnp.einsum("{embed},{embed,classes}->{classes}", x, tnp.ones({"embed": cfg.embed, "classes": cfg.classes}))
    state = adam_init(params)
    losses = []
    for _ in range(steps):
        value, grads = jax.value_and_grad(loss)(params, x, y)
        params, state = adam_update(cfg, clip(grads, cfg.max_norm), state, params)
        losses.append(float(value))
    return losses, params
