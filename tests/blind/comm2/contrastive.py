"""A CLIP-style contrastive loss between image and text embeddings. Both towers' features arrive split along the
batch over ``data``; a projection head splits its output features over ``model`` (tensor parallel), so the L2
normalisation sums over a split axis. The similarity matrix compares each local image with every text of the
global batch, so the texts are gathered over ``data`` (renamed to ``pair``) with ``tx.constrain``; the
cross-entropy is a log-softmax over the whole ``pair`` axis and a mean over the split batch."""

from __future__ import annotations

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

import jax

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32

MESH = {"data": 4, "model": 2}

BATCH = {"batch": "data"}
HEAD = {"batch": "data", "proj": "model"}
TEMPERATURE = 0.07

Features = NamedArray[f32, "batch@data hidden"]
Embedded = NamedArray[f32, "batch@data proj"]


def project(feats: Features, w: NamedArray[f32, "hidden proj@model"]) -> NamedArray[f32, "batch@data proj@model"]:
    """The projection head, then L2-normalised over the split ``proj``."""
    z = tnp.einsum("{hidden},{hidden,proj}->{proj}", feats, w)
    return z / tnp.sqrt(tnp.sum(z * z, "proj") + 1e-6)


def similarities(images: Embedded, texts: Embedded) -> NamedArray[f32, "batch@data pair"]:
    """Every local image against every text of the global batch."""
    all_texts = tx.constrain(texts.rename({"batch": "pair"}), BATCH)
    return tnp.einsum("{batch,proj},{pair,proj}->{batch,pair}", images, all_texts) / TEMPERATURE


def contrastive_loss(images: Embedded, texts: Embedded) -> NamedArray[f32, ""]:
    """Image-to-text cross-entropy; the positives are the diagonal, read as the own batch index."""
    logits = similarities(images, texts)
    own = tnp.arange("batch", images.named_shape["batch"])
    log_probs = tnp.log_softmax(logits, "pair")
    positives = tnp.where(own == tnp.arange("pair", images.named_shape["batch"]), log_probs, 0.0)
    return -tnp.mean(tnp.sum(positives, "pair"), "batch")


def retrieval_accuracy(images: Embedded, texts: Embedded) -> NamedArray[f32, ""]:
    """The share of images whose best text is their own."""
    best = tnp.argmax(similarities(images, texts), "pair")
    hits = (best == tnp.arange("batch", images.named_shape["batch"])).astype("float32")
    return hits.mean("batch")


def example_arguments() -> dict[str, tuple[object, ...]]:
    """Each jitted function's arguments, placed as its annotations say."""
    k1, k2, k3 = jax.random.split(jax.random.key(2), 3)
    feats = tx.shard(tx.random.normal(k1, {"batch": 16, "hidden": 16}), BATCH)
    w = tx.shard(tx.random.normal(k2, {"hidden": 16, "proj": 8}) / 4, HEAD)
    images = tx.shard(tx.random.normal(k1, {"batch": 16, "proj": 8}), BATCH)
    texts = tx.shard(tx.random.normal(k3, {"batch": 16, "proj": 8}), BATCH)
    return {
        "project": (feats, w),
        "similarities": (images, texts),
        "contrastive_loss": (images, texts),
        "retrieval_accuracy": (images, texts),
    }


if __name__ == "__main__":
    from jax.sharding import AxisType

    mesh = jax.make_mesh((4, 2), ("data", "model"), axis_types=(AxisType.Explicit,) * 2)
    with jax.set_mesh(mesh):
        for name, args in example_arguments().items():
            jax.jit(globals()[name])(*args)
