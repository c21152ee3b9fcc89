"""A small vision stem for image classification, data parallel over ``data`` with the stem's output channels
split over ``model``: a 3x3 conv, a 2x2 max pool, a second conv, global average pooling and a linear head.
The images arrive replicated and are placed once; every layer's annotation says where its axes live."""

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

IMAGES = {"batch": "data"}
STEM = {"feat": "model"}
HEAD = {"classes": "model"}

Images = NamedArray[f32, "batch@data height width rgb"]
Features = NamedArray[f32, "batch@data feat@model ph pw"]
Logits = NamedArray[f32, "batch@data classes@model"]


class Params(TypedDict):
    conv1: NamedArray[f32, "kh kw rgb feat"]
    conv2: NamedArray[f32, "kh kw chan feat"]
    head: NamedArray[f32, "feat classes"]


@dataclass(frozen=True)
class StemConfig:
    batch: int = 8
    size: int = 16
    rgb: int = 3
    feat: int = 8
    classes: int = 12


def init(cfg: StemConfig, key: jax.Array) -> Params:
    k1, k2, k3 = jax.random.split(key, 3)
    conv1 = tx.random.normal(k1, {"kh": 3, "kw": 3, "rgb": cfg.rgb, "feat": cfg.feat}) * 0.2
    conv2 = tx.random.normal(k2, {"kh": 3, "kw": 3, "chan": cfg.feat, "feat": cfg.feat}) * 0.2
    head = tx.random.normal(k3, {"feat": cfg.feat, "classes": cfg.classes}) * 0.2
    return {"conv1": conv1, "conv2": conv2, "head": head}


@tx.typed
def stem(images: Images, conv1: NamedArray[f32, "kh kw rgb feat@model"]) -> Features:
    h = tnp.conv(images, conv1, {"height": "kh", "width": "kw"}, "rgb", padding="SAME")
    h = tnp.relu(h)
    h = tnp.max_pool(h, {"height": 2, "width": 2})  # plant[p1 name static]: h = tnp.max_pool(h, {"height": 2, "widht": 2})
    h = tx.rename(h, {"height": "ph", "width": "pw"})
    return tx.constrain(h, {"batch": "data", "feat": "model"})  # plant[p2 resource static]: return tx.constrain(h, {"batch": "data", "feat": "data"})


@tx.typed
def block(h: Features, conv2: NamedArray[f32, "kh kw chan feat@model"]) -> Features:
    x = tx.rename(h, {"feat": "chan"})
    y = tnp.conv(x, conv2, {"ph": "kh", "pw": "kw"}, "chan", padding="SAME")
    y = tx.constrain(y, {"batch": "data", "feat": "model"})  # plant[p3 resource static]: y = tx.constrain(y, {"batch": "data", "feat": "data"})
    return h + tnp.gelu(y)


@tx.typed
def classify(h: Features, head: NamedArray[f32, "feat classes@model"]) -> Logits:
    pooled = tnp.mean(h, ("ph", "pw"))
    logits = tnp.einsum("{batch,feat},{feat,classes}->{batch,classes}", pooled, head)
    return logits  # plant[p4 resource static]: return tx.constrain(logits, {"batch": "model", "classes": None})


def forward(params: Params, images: Images) -> Logits:
    h = stem(images, params["conv1"])
    h = block(h, params["conv2"])
    return classify(h, params["head"])


if __name__ == "__main__":
    cfg = StemConfig()
    mesh = tx.fitting_mesh((2, 4), ("data", "model"))
    jax.set_mesh(mesh)
    params = init(cfg, jax.random.key(0))
    params["conv1"] = tx.shard(params["conv1"], STEM)
    params["conv2"] = tx.shard(params["conv2"], STEM)
    params["head"] = tx.shard(params["head"], HEAD)  # plant[p5 resource static]: params["head"] = tx.shard(params["head"], {"classes": "model", "feat": "model"})
    raw = tx.random.uniform(jax.random.key(1), {"batch": cfg.batch, "height": cfg.size, "width": cfg.size, "rgb": cfg.rgb})
    images = tx.shard(raw, IMAGES)  # plant[p6 resource static]: images = tx.shard(raw, {"rgb": None})
    logits = jax.jit(forward)(params, images)
    assert logits.named_shape == {"batch": cfg.batch, "classes": cfg.classes}
    assert tx.resources_of(logits) == {"batch": "data", "classes": "model"}
    print("logits", float(jnp.sum(tx.positional(logits, ["batch", "classes"]))))
    print("ok")
