"""An FSDP-style (ZeRO-3) stack of dense layers: every weight is split along the axis it is contracted over
(``embed`` or ``hidden``, over the mesh axis ``data``), and the activations are split along ``batch`` over the
same mesh axis, so each matmul all-gathers its weight; ``model`` splits the sequence. Auto mesh: XLA moves
the weights, we pin the activations with ``tx.constrain`` after every layer."""

from __future__ import annotations

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.sharding import AxisType

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32

N_LAYERS = 3
BATCH, SEQ, EMBED, HIDDEN = 8, 4, 16, 32

ACT = {"batch": "data", "seq": "model"}


class Dense(NamedTuple):
    up: NamedArray[f32, "embed hidden"]
    down: NamedArray[f32, "hidden embed"]


def shard_layer(layer: Dense) -> Dense:
    """ZeRO-3: each weight split along its contracted (input) axis."""
    up = tx.shard(layer.up, {"embed": "data"})  # plant[p1 resource static]: up = tx.shard(layer.up, {"embed": "data", "hidden": "data"})
    down = tx.shard(layer.down, {"hidden": "data"})
    return Dense(up, down)


def up_proj(x: NamedArray[f32, "batch@data seq@model embed"], up: NamedArray[f32, "embed@data hidden"]) -> NamedArray[f32, "batch@data seq@model hidden"]:  # plant[p2 resource static]: def up_proj(x: NamedArray[f32, "batch@data seq@model embed"], up: NamedArray[f32, "embed@data hidden"]) -> NamedArray[f32, "batch@model seq hidden"]:
    return tnp.relu(tnp.einsum("{embed},{embed,hidden}->{hidden}", x, up))  # plant[p4 name static]: return tnp.relu(tnp.einsum("{embed},{embed,hidden}->{embed}", x, up))


def down_proj(h: NamedArray[f32, "batch@data seq@model hidden"], down: NamedArray[f32, "hidden@data embed"]) -> NamedArray[f32, "batch@data seq@model embed"]:
    out = tnp.einsum("{hidden},{hidden,embed}->{embed}", h, down)
    return tx.constrain(out, {"batch": "data", "seq": "model"})  # plant[p3 resource static]: return tx.constrain(out, {"batch": "data", "embed": "data", "seq": "model"})


def forward(layers: list[Dense], x: NamedArray[f32, "batch@data seq@model embed"]) -> NamedArray[f32, "batch@data seq@model embed"]:
    for layer in layers:
        h = up_proj(x, layer.up)
        x = x + down_proj(h, layer.down)
        x = tx.constrain(x, ACT)
    return x


def loss(layers: list[Dense], x: NamedArray[f32, "batch@data seq@model embed"]) -> jax.Array:
    out = forward(layers, x)
    return tx.positional(tnp.mean(tnp.square(out - x), ("batch", "seq", "embed")), [])


@jax.jit
def train_step(layers: list[Dense], x: NamedArray[f32, "batch@data seq@model embed"]) -> tuple[list[Dense], jax.Array]:
    value, grads = jax.value_and_grad(loss)(layers, x)
    return jax.tree.map(lambda w, g: w - 0.05 * g, layers, grads), value


if __name__ == "__main__":
    mesh = tx.fitting_mesh((4, 2), ("data", "model"), axis_types=(AxisType.Auto, AxisType.Auto))
    with jax.set_mesh(mesh):
        keys = jax.random.split(jax.random.key(2), 2 * N_LAYERS + 1)
        layers = [
            shard_layer(
                Dense(
                    tx.random.normal(keys[2 * i], {"embed": EMBED, "hidden": HIDDEN}) * 0.1,
                    tx.random.normal(keys[2 * i + 1], {"hidden": HIDDEN, "embed": EMBED}) * 0.1,
                )
            )
            for i in range(N_LAYERS)
        ]
        x = tx.shard(tx.random.normal(keys[-1], {"batch": BATCH, "seq": SEQ, "embed": EMBED}), ACT)  # plant[p5 size runtime]: x = tx.shard(tx.random.normal(keys[-1], {"batch": BATCH - 2, "seq": SEQ, "embed": EMBED}), ACT)
        assert tx.resources_of(layers[0].up) == {"embed": "data"}
        for _ in range(2):
            layers, value = train_step(layers, x)
            print("loss", float(value))
        assert tx.resources_of(layers[0].down) == {"hidden": "data"}, tx.resources_of(layers[0].down)
    print("ok")
