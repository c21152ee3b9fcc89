"""A deep residual MLP whose layers are stacked along ``layers`` and run with ``tx.scan`` (the carry keeps the
batch split over ``data``; each layer's ``mlp`` units live on ``model``), trained with DP-SGD: per-example
gradients from ``tx.vmap`` (kept split over ``data`` by ``axis_resources``), each clipped to a norm bound,
averaged and noised."""

from __future__ import annotations

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

from dataclasses import dataclass
from typing import TypedDict

import jax
import jax.numpy as jnp

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32

BATCH = {"batch": "data"}
STACK = {"mlp": "model"}


@dataclass(frozen=True)
class DPConfig:
    layers: int = 3
    embed: int = 8
    mlp: int = 16
    batch: int = 8
    clip: float = 1.0
    noise: float = 0.01
    lr: float = 0.1


class Layer(TypedDict):
    w1: NamedArray[f32, "embed mlp@model"]  # plant[p1 resource static]: w1: NamedArray[f32, "embed mlp@data"]
    w2: NamedArray[f32, "mlp@model embed"]


class Stack(TypedDict):
    w1: NamedArray[f32, "layers embed mlp@model"]
    w2: NamedArray[f32, "layers mlp@model embed"]


@tx.typed
def block(h: NamedArray[f32, "batch@data embed"], p: Layer) -> tuple[NamedArray[f32, "batch@data embed"], NamedArray[f32, ""]]:
    z = tnp.relu(tnp.einsum("{embed},{embed,mlp}->{mlp}", h, p["w1"]))
    h = h + tnp.einsum("{mlp},{mlp,embed}->{embed}", z, p["w2"]) / 4.0
    return h, tnp.mean(h * h, ("batch", "embed"))


def forward(stack: Stack, x: NamedArray[f32, "batch@data embed"]) -> tuple[NamedArray[f32, "batch@data embed"], NamedArray[f32, "layers"]]:
    return tx.scan(block, x, stack, axis="layers")  # plant[p2 name static]: return tx.scan(block, x, stack, axis="layer")


@tx.typed
def example_block(h: NamedArray[f32, "embed"], p: Layer) -> tuple[NamedArray[f32, "embed"], NamedArray[f32, ""]]:
    z = tnp.relu(tnp.einsum("{embed},{embed,mlp}->{mlp}", h, p["w1"]))
    h = h + tnp.einsum("{mlp},{mlp,embed}->{embed}", z, p["w2"]) / 4.0
    return h, tnp.mean(h * h, "embed")


def example_loss(stack: Stack, x: NamedArray[f32, "embed"], y: NamedArray[f32, "embed"]) -> jax.Array:
    h, _ = tx.scan(example_block, x, stack, axis="layers")
    return tx.positional(tnp.mean((h - y) ** 2, "embed"), [])


@tx.typed
def clip_per_example(g: NamedArray[f32, "batch@data layers embed mlp"], bound: float) -> NamedArray[f32, "batch@data layers embed mlp"]:
    norm = tnp.sqrt(tnp.sum(g * g, ("layers", "embed", "mlp")))
    return g * tnp.minimum(1.0, bound / (norm + 1e-6))


def noisy_update(w: NamedArray[f32, "layers embed mlp"], per_example: NamedArray[f32, "batch layers embed mlp"], key: jax.Array) -> NamedArray[f32, "layers embed mlp"]:
    g = clip_per_example(per_example, 1.0)
    mean = tnp.mean(g, "batch")
    noise = tx.random.normal(key, mean.named_shape) * 0.01
    return w - 0.1 * (mean + noise)


@jax.jit
def dp_step(stack: Stack, x: NamedArray[f32, "batch@data embed"], y: NamedArray[f32, "batch@data embed"], key: jax.Array) -> Stack:
    per_example = tx.vmap(jax.grad(example_loss), axis="batch", axis_resources=BATCH)(stack, x, y)  # plant[p3 resource runtime]: per_example = tx.vmap(jax.grad(example_loss), axis="batch", axis_resources={"batch": "model"})(stack, x, y)
    k1, k2 = jax.random.split(key)
    return {
        "w1": tx.constrain(noisy_update(stack["w1"], per_example["w1"], k1), STACK),
        "w2": tx.constrain(noisy_update(stack["w2"], per_example["w2"], k2), STACK),
    }


def main() -> None:
    cfg = DPConfig()
    jax.set_mesh(tx.fitting_mesh((2, 4), ("data", "model")))
    k1, k2, kx, kn = jax.random.split(jax.random.key(5), 4)
    stack: Stack = {
        "w1": tx.random.normal(k1, {"layers": cfg.layers, "embed": cfg.embed, "mlp": cfg.mlp}) / cfg.embed**0.5,
        "w2": tx.random.normal(k2, {"layers": cfg.layers, "mlp": cfg.mlp, "embed": cfg.embed}) / cfg.mlp**0.5,
    }
    stack = tx.shard(stack, STACK)
    x = tx.shard(tx.random.normal(kx, {"batch": cfg.batch, "embed": cfg.embed}), BATCH)  # plant[p4 resource static]: x = tx.shard(tx.random.normal(kx, {"batch": cfg.batch, "embed": cfg.embed}), {"batch": "model"})
    y = tx.shard(tnp.zeros({"batch": cfg.batch, "embed": cfg.embed}), BATCH)
    h, energies = jax.jit(forward)(stack, x)
    assert energies.named_shape == {"layers": cfg.layers}
    assert tx.resources_of(h) == {"batch": "data"}, tx.resources_of(h)
    before = float(tnp.mean((h - y) ** 2, ("batch", "embed")).data)
    for key in jax.random.split(kn, 3):
        stack = dp_step(stack, x, y, key)
    h, _ = jax.jit(forward)(stack, x)
    after = float(tnp.mean((h - y) ** 2, ("batch", "embed")).data)
    out = tx.constrain(h, {"batch": "data"})  # plant[p5 resource static]: out = tx.shard(h, {"batch": "data", "embed": "data"})
    assert tx.resources_of(out) == {"batch": "data"}
    assert tx.resources_of(stack["w1"]) == {"mlp": "model"}
    assert after < before, (before, after)
    print("dp_scan", round(before, 4), "->", round(after, 4))


if __name__ == "__main__":
    main()
