"""A CLIP-like contrastive model: an image tower (patch pixels projected to an embedding split over ``model``,
mean-pooled) and a text tower (a token lookup in a vocabulary table split over ``model``, mean-pooled), both
with the batch split over ``data``. The embeddings are L2-normalised; the text embeddings are gathered whole
(``tx.constrain`` after renaming ``batch`` to ``pair``) so that every image meets every caption, and the loss is
the symmetric cross-entropy along both axes of the similarity matrix, its diagonal the matching pairs."""

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

from typing import TypedDict

import jax
import jax.numpy as jnp

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32, i32

MESH = {"data": 4, "model": 2}

BATCH, PATCHES, PIXELS, SEQ, VOCAB, EMBED = 8, 8, 16, 8, 32, 16
LOGIT_SCALE = 10.0

Patches = NamedArray[f32, "batch@data patch pixels"]
Captions = NamedArray[i32, "batch@data seq"]
Embedding = NamedArray[f32, "batch@data embed@model"]


class Towers(TypedDict):
    image_proj: NamedArray[f32, "pixels embed@model"]
    text_embed: NamedArray[f32, "vocab embed@model"]
    image_out: NamedArray[f32, "embed@model out"]
    text_out: NamedArray[f32, "embed@model out"]


RESOURCES = {"batch": "data", "embed": "model"}


def l2_normalise(x: NamedArray[f32, "batch@data out"]) -> NamedArray[f32, "batch@data out"]:
    return x / tnp.sqrt(tnp.sum(x * x, "out") + 1e-6)


def image_tower(patches: Patches, p: Towers) -> NamedArray[f32, "batch@data out"]:
    h = tnp.gelu(tnp.einsum("{batch,patch,pixels},{pixels,embed}->{batch,patch,embed}", patches, p["image_proj"]))
    pooled = tnp.mean(h, "patch")
    return l2_normalise(tnp.einsum("{batch,embed},{embed,out}->{batch,out}", pooled, p["image_out"]))


def text_tower(captions: Captions, p: Towers) -> NamedArray[f32, "batch@data out"]:
    h = tnp.mean(p["text_embed"][{"vocab": captions}], "seq")
    return l2_normalise(tnp.einsum("{batch,embed},{embed,out}->{batch,out}", h, p["text_out"]))


def similarity(
    images: NamedArray[f32, "batch@data out"], texts: NamedArray[f32, "batch@data out"]
) -> NamedArray[f32, "batch@data pair"]:
    """Each local image against every caption of the global batch (an all-gather of the captions)."""
    every_text = tx.constrain(tx.rename(texts, {"batch": "pair"}), {})
    return LOGIT_SCALE * tnp.einsum("{batch,out},{pair,out}->{batch,pair}", images, every_text)


def clip_loss(p: Towers, patches: Patches, captions: Captions) -> jax.Array:
    logits = similarity(image_tower(patches, p), text_tower(captions, p))
    diagonal = tnp.equal(tnp.arange("batch", BATCH), tnp.arange("pair", BATCH))
    directions = tnp.stack([tnp.log_softmax(logits, "pair"), tnp.log_softmax(logits, "batch")], "direction")
    matched = tnp.where(diagonal, directions, 0.0)
    return tx.positional(-tnp.sum(matched, ("batch", "pair", "direction")) / (2 * BATCH), [])


def _rank_of_positive(row: NamedArray[f32, "pair"], positive: NamedArray[f32, ""]) -> NamedArray[i32, ""]:
    """How many captions score above an image's own caption (written for one image)."""
    return tnp.sum((row > positive).astype(jnp.int32), "pair")


def metrics(
    logits: NamedArray[f32, "batch@data pair"],
) -> tuple[NamedArray[f32, ""], NamedArray[f32, ""], NamedArray[f32, ""], NamedArray[i32, "batch@data"]]:
    """Top-1 accuracy, the worst positive similarity, the hardest negative's mean margin, each image's rank."""
    diagonal = tnp.equal(tnp.arange("batch", BATCH), tnp.arange("pair", BATCH))
    positive = tnp.sum(tnp.where(diagonal, logits, 0.0), "pair")
    accuracy = tnp.mean((tnp.argmax(logits, "pair") == tnp.arange("batch", BATCH)).astype(jnp.float32), "batch")
    worst = tnp.min(positive, "batch")
    hardest = tnp.max(tnp.where(diagonal, -jnp.inf, logits), "pair")
    margin = tnp.mean(positive - hardest, "batch")
    ranks = tx.vmap(_rank_of_positive, axis="batch")(logits, positive)
    return accuracy, worst, margin, ranks


def train_step(p: Towers, patches: Patches, captions: Captions) -> tuple[jax.Array, Towers]:
    value, grads = jax.value_and_grad(clip_loss)(p, patches, captions)
    return value, jax.tree.map(lambda w, g: w - 0.05 * g, p, grads)


def init(key: jax.Array) -> Towers:
    k = jax.random.split(key, 4)
    return {
        "image_proj": tx.random.normal(k[0], {"pixels": PIXELS, "embed": EMBED}) / 4,
        "text_embed": tx.random.normal(k[1], {"vocab": VOCAB, "embed": EMBED}),
        "image_out": tx.random.normal(k[2], {"embed": EMBED, "out": EMBED}) / 4,
        "text_out": tx.random.normal(k[3], {"embed": EMBED, "out": EMBED}) / 4,
    }


def example_arguments() -> dict[str, tuple[object, ...]]:
    p = tx.shard(init(jax.random.key(0)), RESOURCES)
    patches = tx.shard(
        tx.random.normal(jax.random.key(1), {"batch": BATCH, "patch": PATCHES, "pixels": PIXELS}), RESOURCES
    )
    captions = tx.shard(tx.random.randint(jax.random.key(2), {"batch": BATCH, "seq": SEQ}, 0, VOCAB), RESOURCES)
    images = tx.shard(tx.random.normal(jax.random.key(3), {"batch": BATCH, "out": EMBED}), RESOURCES)
    texts = tx.shard(tx.random.normal(jax.random.key(4), {"batch": BATCH, "out": EMBED}), RESOURCES)
    return {
        "image_tower": (patches, p),
        "text_tower": (captions, p),
        "similarity": (images, texts),
        "clip_loss": (p, patches, captions),
        "metrics": (tx.shard(tx.random.normal(jax.random.key(5), {"batch": BATCH, "pair": BATCH}), RESOURCES),),
        "train_step": (p, patches, captions),
    }


if __name__ == "__main__":
    from jax.sharding import AxisType

    mesh = jax.make_mesh((4, 2), ("data", "model"), axis_types=(AxisType.Explicit,) * 2)
    with jax.set_mesh(mesh):
        for name, args in example_arguments().items():
            jax.jit(globals()[name])(*args)
