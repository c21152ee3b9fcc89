"""An FSDP-style residual MLP stack trained with SGD: every weight is stored split along ``embed`` over the
``data`` axis (the axis its first matmul contracts), the activations are split by ``batch`` over ``data``,
and the hidden ``mlp`` axis is tensor-parallel over ``model``. A layer norm sits in front of each MLP."""

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

FSDP = {"embed": "data", "mlp": "model"}
BATCH = {"batch": "data"}

Acts = NamedArray[f32, "batch@data embed"]


@dataclass(frozen=True)
class MLPConfig:
    batch: int = 16
    embed: int = 8
    mlp: int = 32
    lr: float = 0.05


class Layer(TypedDict):
    scale: NamedArray[f32, "embed@data"]
    w_in: NamedArray[f32, "embed@data mlp@model"]
    w_out: NamedArray[f32, "mlp@model embed@data"]


def init_layer(cfg: MLPConfig, key: jax.Array) -> Layer:
    k1, k2 = jax.random.split(key)
    layer: Layer = {
        "scale": tnp.ones({"embed": cfg.embed}, jnp.float32),
        "w_in": tx.random.normal(k1, {"embed": cfg.embed, "mlp": cfg.mlp}) * 0.1,
        "w_out": tx.random.normal(k2, {"mlp": cfg.mlp, "embed": cfg.embed}) * 0.1,
    }
    return tx.shard(layer, FSDP)  # plant[p1 resource static]: return tx.shard(layer, {"embed": "data", "mlp": "data"})


def layer_norm(x: Acts, scale: NamedArray[f32, "embed"]) -> Acts:
    mean = tnp.mean(x, "embed")
    centred = x - mean
    var = tnp.mean(centred * centred, "embed")
    return centred / tnp.sqrt(var + 1e-5) * scale  # plant[p2 resource static]: return centred / tnp.sqrt(var + 1e-5) * tx.constrain(scale, {"embed": "data"})


@tx.typed
def mlp(x: Acts, layer: Layer) -> Acts:
    h = layer_norm(x, tx.constrain(layer["scale"], {"embed": None}))
    w_out = tx.constrain(layer["w_out"], {"mlp": "model", "embed": None})  # the FSDP gather before use
    hidden = tnp.gelu(tnp.einsum("{batch,embed},{embed,mlp}->{batch,mlp}", h, layer["w_in"]))  # plant[p3 resource static]: hidden = tnp.gelu(tnp.einsum("{batch,embed},{embed,mlp}->{batch,mlp}", h, tx.constrain(layer["w_in"], {"mlp": "data", "embed": None})))
    out = tnp.einsum("{batch,mlp},{mlp,embed}->{batch,embed}", hidden, w_out)
    return x + tx.constrain(out, BATCH)  # plant[p4 resource static]: return tx.constrain(x + out, {"batch": "model"})


def loss_fn(layers: list[Layer], x: Acts, y: Acts) -> jax.Array:
    for layer in layers:
        x = mlp(x, layer)
    err = x - y
    total: jax.Array = tnp.mean(err * err, ("batch", "embed")).data
    return total


@jax.jit
def train_step(layers: list[Layer], x: Acts, y: Acts) -> tuple[list[Layer], jax.Array]:
    value, grads = jax.value_and_grad(loss_fn)(layers, x, y)
    updated = jax.tree.map(lambda p, g: p - 0.05 * g, layers, grads)
    return updated, value


@tx.typed
def make_batch(cfg: MLPConfig, key: jax.Array) -> tuple[Acts, Acts]:
    x = tx.random.normal(key, {"batch": cfg.batch, "embed": cfg.embed})
    y = tnp.tanh(x) * 0.5
    return tx.shard(x, BATCH), tx.shard(y, BATCH)  # plant[p5 resource static]: return tx.shard(x, {"embed": "data"}), tx.shard(y, BATCH)


if __name__ == "__main__":
    cfg = MLPConfig()
    mesh = tx.fitting_mesh((2, 4), ("data", "model"))
    jax.set_mesh(mesh)
    keys = jax.random.split(jax.random.key(0), 3)
    layers = [init_layer(cfg, keys[0]), init_layer(cfg, keys[1])]
    x, y = make_batch(cfg, keys[2])
    layers, value = train_step(layers, x, y)
    first = float(value)
    for _ in range(4):
        layers, value = train_step(layers, x, y)
    print("loss", first, "->", float(value))
    assert float(value) < first
    assert tx.resources_of(layers[0]["w_in"]) == FSDP
    print("ok")
