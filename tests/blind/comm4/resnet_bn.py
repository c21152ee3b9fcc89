"""A ResNet basic block with batch normalisation, trained on images split by batch over ``data`` (data parallel)
and with the block's inner filters split over ``model`` (tensor parallel convolutions): the first conv makes
``filters@model``, the second contracts it (an all-reduce over model); batch statistics are taken over the split
batch (all-reduces over data); a max-pooled, averaged head classifies, and one SGD step trains it all."""

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

from typing import TypedDict

import jax

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32, i32

MESH = {"data": 4, "model": 2}

BATCH, SIZE, CHANNELS, FILTERS, LABELS, KERNEL = 8, 8, 8, 16, 8, 3
EPS = 1e-5
LEARNING_RATE = 0.1

Images = NamedArray[f32, "batch@data height width channels"]
Inner = NamedArray[f32, "batch@data height width filters@model"]
Labels = NamedArray[i32, "batch@data"]


class Block(TypedDict):
    conv1: NamedArray[f32, "kh kw channels filters@model"]
    scale1: NamedArray[f32, "filters@model"]
    shift1: NamedArray[f32, "filters@model"]
    conv2: NamedArray[f32, "kh kw filters@model channels"]
    scale2: NamedArray[f32, "channels"]
    shift2: NamedArray[f32, "channels"]
    head: NamedArray[f32, "channels label"]


RESOURCES = {"batch": "data", "filters": "model"}


def batch_norm(
    x: NamedArray[f32, "batch@data height width *features"],
    scale: NamedArray[f32, "*features"],
    shift: NamedArray[f32, "*features"],
) -> NamedArray[f32, "batch@data height width *features"]:
    """Normalise each feature over the batch and the image (training-mode statistics)."""
    axes = ("batch", "height", "width")
    mean = tnp.mean(x, axes)
    var = tnp.var(x, axes)
    return (x - mean) / tnp.sqrt(var + EPS) * scale + shift


def conv_bn(x: Images, p: Block) -> Inner:
    """The first 3x3 conv (channels -> filters, split over model), its batch norm and a relu."""
    h = tnp.conv(x, p["conv1"], {"height": "kh", "width": "kw"}, "channels", padding="SAME")
    h = tx.constrain(h, RESOURCES)
    return tnp.relu(batch_norm(h, p["scale1"], p["shift1"]))


def block(x: Images, p: Block) -> Images:
    """The residual block: conv-bn-relu, conv (contracting the split filters)-bn, plus the input, relu."""
    h = conv_bn(x, p)
    y = tnp.conv(h, p["conv2"], {"height": "kh", "width": "kw"}, "filters", padding="SAME")
    y = tx.constrain(y, {"batch": "data"})
    return tnp.relu(batch_norm(y, p["scale2"], p["shift2"]) + x)


def head_logits(x: Images, head: NamedArray[f32, "channels label"]) -> NamedArray[f32, "batch@data label"]:
    """A 2x2 max pool, the mean over the pooled image, a linear classifier."""
    pooled = tnp.max_pool(x, {"height": 2, "width": 2}, strides=2)
    features = tnp.mean(pooled, ("height", "width"))
    return tnp.einsum("{batch,channels},{channels,label}->{batch,label}", features, head)


def loss(p: Block, x: Images, labels: Labels) -> jax.Array:
    """Cross-entropy of the block's classification: each example's own label picked from its log-probs."""
    log_probs = tnp.log_softmax(head_logits(block(x, p), p["head"]), "label")
    picked = log_probs[{"label": labels}]
    return tx.positional(-tnp.mean(picked, "batch"), [])


def train_step(p: Block, x: Images, labels: Labels) -> tuple[jax.Array, Block]:
    """One SGD step over the whole block."""
    value, grads = jax.value_and_grad(loss)(p, x, labels)
    new: Block = jax.tree.map(lambda w, g: w - LEARNING_RATE * g, p, grads)
    return value, new


def init(key: jax.Array) -> Block:
    k1, k2, k3 = jax.random.split(key, 3)
    return {
        "conv1": tx.random.normal(k1, {"kh": KERNEL, "kw": KERNEL, "channels": CHANNELS, "filters": FILTERS}) * 0.1,
        "scale1": tnp.ones({"filters": FILTERS}),
        "shift1": tnp.zeros({"filters": FILTERS}),
        "conv2": tx.random.normal(k2, {"kh": KERNEL, "kw": KERNEL, "filters": FILTERS, "channels": CHANNELS}) * 0.1,
        "scale2": tnp.ones({"channels": CHANNELS}),
        "shift2": tnp.zeros({"channels": CHANNELS}),
        "head": tx.random.normal(k3, {"channels": CHANNELS, "label": LABELS}) * 0.3,
    }


def example_arguments() -> dict[str, tuple[object, ...]]:
    key = jax.random.key(0)
    params = tx.shard(init(key), RESOURCES)
    images = tx.random.normal(jax.random.key(1), {"batch": BATCH, "height": SIZE, "width": SIZE, "channels": CHANNELS})
    images = tx.shard(images, RESOURCES)
    labels = tx.shard(tx.random.randint(jax.random.key(2), {"batch": BATCH}, 0, LABELS), RESOURCES)
    return {
        "conv_bn": (images, params),
        "block": (images, params),
        "head_logits": (images, params["head"]),
        "train_step": (params, images, labels),
    }


if __name__ == "__main__":
    from jax.sharding import AxisType

    mesh = jax.make_mesh((4, 2), ("data", "model"), axis_types=(AxisType.Explicit,) * 2)
    with jax.set_mesh(mesh):
        for name, args in example_arguments().items():
            jax.jit(globals()[name])(*args)
