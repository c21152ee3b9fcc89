"""A small convolutional classifier, data parallel: images split by ``batch`` over ``data`` (and by
``width`` over ``model``, a spatial split: the 3x3 convs need their neighbours' edges), two conv + pool
stages, global average pooling and a linear head. Explicit 4x2 mesh; a jitted training step."""

from __future__ import annotations

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

from dataclasses import dataclass
from typing import TypedDict

import jax
import jax.numpy as jnp

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32, i32


@dataclass(frozen=True)
class NetConfig:
    batch: int = 8
    size: int = 16
    channels: int = 3
    width1: int = 8
    width2: int = 16
    classes: int = 10


CFG = NetConfig()
IMAGES = {"batch": "data", "width": "model"}

Images = NamedArray[f32, "batch@data height width@model channels"]


class Params(TypedDict):
    conv1: NamedArray[f32, "kh kw channels out"]
    conv2: NamedArray[f32, "kh kw channels out"]
    head: NamedArray[f32, "channels classes"]


def init(cfg: NetConfig, key: jax.Array) -> Params:
    k1, k2, k3 = jax.random.split(key, 3)
    return {
        "conv1": tx.random.normal(k1, {"kh": 3, "kw": 3, "channels": cfg.channels, "out": cfg.width1}) * 0.2,
        "conv2": tx.random.normal(k2, {"kh": 3, "kw": 3, "channels": cfg.width1, "out": cfg.width2}) * 0.1,
        "head": tx.random.normal(k3, {"channels": cfg.width2, "classes": cfg.classes}) * 0.1,
    }


def conv_stage(x: Images, kernel: NamedArray[f32, "kh kw channels out"]) -> Images:
    y = tnp.conv(x, kernel, {"height": "kh", "width": "kw"}, "channels", padding="SAME")  # plant[p1 name static]: y = tnp.conv(x, kernel, {"height": "kw", "width": "kh"}, "out", padding="SAME")
    y = tnp.relu(y).rename({"out": "channels"})
    # JAX 0.10 leaves `width` whole after the conv on an Explicit mesh (the sharding guide says the split is kept)
    y = tx.constrain(y, IMAGES)  # plant[p5 resource static]: y = tx.constrain(y, {"batch": "model", "width": "data"})
    return tnp.max_pool(y, {"height": 2, "width": 2})  # plant[p2 name static]: return tnp.max_pool(y, {"height": 2, "widht": 2})


def logits_of(params: Params, images: Images) -> NamedArray[f32, "batch@data classes"]:  # plant[p3 resource static]: def logits_of(params: Params, images: Images) -> NamedArray[f32, "batch@model classes"]:
    x = conv_stage(images, params["conv1"])
    x = conv_stage(x, params["conv2"])
    return classify(tnp.mean(x, ("height", "width")), params["head"])


@tx.typed
def classify(pooled: NamedArray[f32, "batch@data channels"], head: NamedArray[f32, "channels classes"]) -> NamedArray[f32, "batch@data classes"]:
    head = tx.constrain(head, {"classes": None})  # plant[p4 resource static]: head = tx.constrain(head, {"classes": "data"})
    return tnp.einsum("{channels},{channels,classes}->{classes}", pooled, head)


def loss(params: Params, images: Images, labels: NamedArray[i32, "batch@data"]) -> jax.Array:
    logp = tnp.log_softmax(logits_of(params, images), "classes")
    return tx.positional(-tnp.mean(logp[{"classes": labels}], "batch"), [])


@jax.jit
def train_step(params: Params, images: Images, labels: NamedArray[i32, "batch@data"]) -> tuple[Params, jax.Array]:
    value, grads = jax.value_and_grad(loss)(params, images, labels)
    return jax.tree.map(lambda w, g: w - 0.1 * g, params, grads), value


if __name__ == "__main__":
    jax.set_mesh(tx.fitting_mesh((4, 2), ("data", "model")))
    k_p, k_x, k_y = jax.random.split(jax.random.key(4), 3)
    params = init(CFG, k_p)
    images = tx.random.normal(k_x, {"batch": CFG.batch, "height": CFG.size, "width": CFG.size, "channels": CFG.channels})
    images = tx.shard(images, IMAGES)
    labels = tx.shard(tx.random.randint(k_y, {"batch": CFG.batch}, 0, CFG.classes), {"batch": "data"})
    for _ in range(2):
        params, value = train_step(params, images, labels)
        print("loss", float(value))
    out = jax.jit(logits_of)(params, images)
    assert tx.resources_of(out) == {"batch": "data"}, tx.resources_of(out)
    print("ok")
