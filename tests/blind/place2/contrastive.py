"""A CLIP-style contrastive step: two towers embed paired images and captions, each batch split over ``data``;
the similarity matrix keeps its rows (``batch``) split and needs every caption on every device, so the caption
embeddings are gathered and renamed to ``pair`` before the contraction. Symmetric InfoNCE loss, jitted."""

from __future__ import annotations

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

from dataclasses import dataclass

import jax
import jax.numpy as jnp

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32

IMAGES = {"batch": "data"}
TEXT = {"batch": "data"}  # plant[p1 resource static]: TEXT = {"batch": "data", "words": "data"}
TOWER = {"proj": "model"}


@dataclass
class Towers:
    w_img: NamedArray[f32, "pixels proj@model"]
    w_txt: NamedArray[f32, "words proj@model"]
    w_out: NamedArray[f32, "proj embed"]
    log_temp: NamedArray[f32, ""]


jax.tree_util.register_dataclass(Towers, data_fields=["w_img", "w_txt", "w_out", "log_temp"], meta_fields=[])


def normalize(z: NamedArray[f32, "batch@data embed"]) -> NamedArray[f32, "batch@data embed"]:
    return z / tnp.sqrt(tnp.sum(z * z, "embed") + 1e-6)


def tower(x: NamedArray[f32, "batch@data pixels"], w: NamedArray[f32, "pixels proj@model"], out: NamedArray[f32, "proj embed"]) -> NamedArray[f32, "batch@data embed"]:
    h = tnp.gelu(tnp.einsum("{pixels},{pixels,proj}->{proj}", x, w))
    return normalize(tnp.einsum("{proj},{proj,embed}->{embed}", h, out))


@tx.typed
def similarity(img: NamedArray[f32, "batch@data embed"], txt: NamedArray[f32, "batch@data embed"]) -> NamedArray[f32, "batch@data pair"]:  # plant[p2 resource static]: def similarity(img: NamedArray[f32, "batch@data embed"], txt: NamedArray[f32, "batch@data embed"]) -> NamedArray[f32, "batch pair@data"]:
    every = tx.constrain(txt, {})  # each device needs every caption
    every = tx.rename(every, {"batch": "pair"})
    return tnp.einsum("{embed},{pair,embed}->{pair}", img, every)  # plant[p3 resource static]: return tnp.einsum("{embed},{pair,embed}->{pair}", img, tx.rename(txt, {"batch": "pair"}))


def info_nce(t: Towers, images: NamedArray[f32, "batch@data pixels"], captions: NamedArray[f32, "batch@data words"]) -> jax.Array:
    img = tower(images, t.w_img, t.w_out)
    txt = tower(tx.rename(captions, {"words": "pixels"}), tx.rename(t.w_txt, {"words": "pixels"}), t.w_out)
    sim = similarity(img, txt) * tnp.exp(t.log_temp)
    n = sim.named_shape["batch"]
    rows = tnp.log_softmax(sim, "pair")[{"pair": tnp.arange("batch", n)}]  # plant[p4 name static]: rows = tnp.log_softmax(sim, "pairs")[{"pair": tnp.arange("batch", n)}]
    cols = tnp.log_softmax(sim, "batch")[{"batch": tnp.arange("pair", n)}]
    return tx.positional(-(tnp.mean(rows, "batch") + tnp.mean(cols, "pair")) / 2, [])


@jax.jit
def train_step(t: Towers, images: NamedArray[f32, "batch@data pixels"], captions: NamedArray[f32, "batch@data words"]) -> tuple[Towers, jax.Array]:
    value, grads = jax.value_and_grad(info_nce)(t, images, captions)
    return jax.tree.map(lambda p, g: p - 0.5 * g, t, grads), value


def main() -> None:
    jax.set_mesh(tx.fitting_mesh((2, 4), ("data", "model")))
    n, pixels, words, proj, embed = 8, 12, 12, 16, 8
    keys = jax.random.split(jax.random.key(7), 4)
    towers = Towers(
        w_img=tx.shard(tx.random.normal(keys[0], {"pixels": pixels, "proj": proj}) / 3.0, TOWER),
        w_txt=tx.shard(tx.random.normal(keys[1], {"words": words, "proj": proj}) / 3.0, TOWER),
        w_out=tx.random.normal(keys[2], {"proj": proj, "embed": embed}) / 4.0,
        log_temp=tx.named(jnp.float32(1.0), []),
    )
    shared = tx.random.normal(keys[3], {"batch": n, "pixels": pixels})
    images = tx.shard(shared, IMAGES)
    captions = tx.shard(tx.rename(shared, {"pixels": "words"}) + 0.1, TEXT)  # plant[p5 resource static]: captions = tx.shard(tx.rename(shared, {"pixels": "words"}) + 0.1, TOWER)
    losses = []
    for _ in range(4):
        towers, value = train_step(towers, images, captions)
        losses.append(float(value))
    assert losses[-1] < losses[0], losses
    print("contrastive losses", [round(v, 3) for v in losses])


if __name__ == "__main__":
    main()
