"""A ViT-like classifier, written as a user would: every size from a config dataclass.

Patches by ``tx.split_axis``/``tx.merge_axes``, a class token, one attention block, mean pooling. The clean
twin of the planted mistakes in ``tests/test_plugin_models.py``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import jax

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32


@dataclass(frozen=True)
class ViTConfig:
    image: int = 8
    patch: int = 4
    channels: int = 3
    embed: int = 16
    heads: int = 2
    mlp: int = 32
    classes: int = 10

    @property
    def grid(self) -> int:
        return self.image // self.patch


class ViTParams(NamedTuple):
    w_patch: NamedArray[f32, "pixels embed"]
    tokens: NamedArray[f32, "token embed"]
    w_qkv: NamedArray[f32, "embed part heads head_dim"]
    w_up: NamedArray[f32, "embed mlp"]
    w_down: NamedArray[f32, "mlp embed"]
    w_head: NamedArray[f32, "embed classes"]


Images = NamedArray[f32, "batch height width channel"]
Tokens = NamedArray[f32, "batch token embed"]


def init(cfg: ViTConfig, key: jax.Array) -> ViTParams:
    keys = jax.random.split(key, 6)
    pixels = cfg.patch * cfg.patch * cfg.channels
    cls = tnp.zeros({"token": 1, "embed": cfg.embed})
    positions = tx.random.normal(keys[1], {"token": cfg.grid * cfg.grid, "embed": cfg.embed})
    return ViTParams(
        w_patch=tx.random.normal(keys[0], {"pixels": pixels, "embed": cfg.embed}) / pixels,
        tokens=tnp.concatenate([cls, positions], axis="token"),
        w_qkv=tx.random.normal(
            keys[2], {"embed": cfg.embed, "part": 3, "heads": cfg.heads, "head_dim": cfg.embed // cfg.heads}
        ),
        w_up=tx.random.normal(keys[3], {"embed": cfg.embed, "mlp": cfg.mlp}) / cfg.embed,
        w_down=tx.random.normal(keys[4], {"mlp": cfg.mlp, "embed": cfg.embed}) / cfg.mlp,
        w_head=tx.random.normal(keys[5], {"embed": cfg.embed, "classes": cfg.classes}),
    )


def patchify(cfg: ViTConfig, images: Images) -> NamedArray[f32, "batch token pixels"]:
    rows = tx.split_axis(images, "height", {"grid_h": cfg.grid, "ph": cfg.patch})
    cells = tx.split_axis(rows, "width", {"grid_w": cfg.grid, "pw": cfg.patch})
    grid = tx.merge_axes(cells, ("grid_h", "grid_w"), "token")
    return tx.merge_axes(grid, ("ph", "pw", "channel"), "pixels")


def attention(params: ViTParams, x: Tokens) -> Tokens:
    qkv = tnp.einsum("{embed},{embed,part,heads,head_dim}->{part,heads,head_dim}", x, params.w_qkv)
    q, k, v = qkv[{"part": 0}], qkv[{"part": 1}], qkv[{"part": 2}]
    k = tx.rename(k, {"token": "kv_token"})
    v = tx.rename(v, {"token": "kv_token"})
    scores = tnp.einsum("{token,heads,head_dim},{kv_token,heads,head_dim}->{token,kv_token,heads}", q, k)
    weights = tnp.softmax(scores / 4.0, "kv_token")
    mixed = tnp.einsum("{token,kv_token,heads},{kv_token,heads,head_dim}->{token,heads,head_dim}", weights, v)
    return x + tx.merge_axes(mixed, ("heads", "head_dim"), "embed")


def classify(cfg: ViTConfig, params: ViTParams, images: Images) -> NamedArray[f32, "batch classes"]:
    patches = tnp.einsum("{pixels},{pixels,embed}->{embed}", patchify(cfg, images), params.w_patch)
    batch = images.named_shape["batch"]
    cls = tx.broadcast_to(params.tokens[{"token": slice(0, 1)}], {"batch": batch, "token": 1, "embed": cfg.embed})
    x = tnp.concatenate([cls, patches + params.tokens[{"token": slice(1, None)}]], axis="token")
    x = attention(params, x)
    hidden = tnp.gelu(tnp.einsum("{embed},{embed,mlp}->{mlp}", x, params.w_up))
    x = x + tnp.einsum("{mlp},{mlp,embed}->{embed}", hidden, params.w_down)
    pooled = tnp.mean(x, "token")
    return tnp.einsum("{embed},{embed,classes}->{classes}", pooled, params.w_head)


def loss(cfg: ViTConfig, params: ViTParams, images: Images, labels: NamedArray[f32, "batch classes"]) -> jax.Array:
    logp = tnp.log_softmax(classify(cfg, params, images), "classes")
    value: jax.Array = tx.positional(-tnp.mean(tnp.sum(logp * labels, "classes"), "batch"), [])
    return value
