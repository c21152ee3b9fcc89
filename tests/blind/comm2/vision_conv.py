"""A small convolutional network for dense prediction, with the image batch split over ``data`` and the image
rows (``height``) split over ``model`` (spatial parallelism), as for large images. Convolutions contract the
channels; a 3x3 smoothing pool with stride 1 overlaps across row blocks (a halo exchange); the classification
head averages over the split rows; the stem's output is placed back on the rows with ``tx.constrain``, and a
1x1 convolution gathers the rows to split its output channels over ``model`` instead."""

from __future__ import annotations

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

import jax

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32

MESH = {"data": 4, "model": 2}

SPATIAL = {"batch": "data", "height": "model"}
CHANNELS = {"batch": "data", "feat": "model"}

Images = NamedArray[f32, "batch@data height@model width channels"]
Maps = NamedArray[f32, "batch@data height@model width feat"]


def smooth(x: Maps) -> Maps:
    """A 3x3 average with stride 1 and SAME padding: each row block needs its neighbours' edge rows."""
    return tnp.avg_pool(x, {"height": 3, "width": 3}, strides=1, padding="SAME")


def stem(images: Images, kernel: NamedArray[f32, "kh kw channels feat"]) -> Maps:
    """A 3x3 convolution over the split rows, placed back on the rows afterwards."""
    maps = tnp.conv(images, kernel, {"height": "kh", "width": "kw"}, "channels", padding="SAME")
    return tx.constrain(tnp.relu(maps), SPATIAL)


def pointwise(x: Maps, w: NamedArray[f32, "feat out@model"]) -> NamedArray[f32, "batch@data out@model height width"]:
    """A 1x1 convolution as an einsum, moved from row-split to channel-split output."""
    rows_whole = tx.constrain(x, {"batch": "data"})
    return tnp.einsum("{feat},{feat,out}->{out}", rows_whole, w)


def head(x: Maps, w: NamedArray[f32, "feat label"]) -> NamedArray[f32, "batch@data label"]:
    """Global average pooling over the split rows and the whole columns, then a linear classifier."""
    pooled = x.mean(("height", "width"))
    return tnp.log_softmax(tnp.einsum("{feat},{feat,label}->{label}", pooled, w), "label")


def example_arguments() -> dict[str, tuple[object, ...]]:
    """Each jitted function's arguments, placed as its annotations say."""
    k1, k2, k3, k4, k5 = jax.random.split(jax.random.key(6), 5)
    images = tx.shard(tx.random.normal(k1, {"batch": 8, "height": 16, "width": 16, "channels": 8}), SPATIAL)
    kernel = tx.random.normal(k2, {"kh": 3, "kw": 3, "channels": 8, "feat": 8}) / 8
    maps = tx.shard(tx.random.normal(k3, {"batch": 8, "height": 16, "width": 16, "feat": 8}), SPATIAL)
    w = tx.shard(tx.random.normal(k4, {"feat": 8, "out": 16}) / 4, {"out": "model"})
    w_head = tx.random.normal(k5, {"feat": 8, "label": 8}) / 4
    return {
        "smooth": (maps,),
        "stem": (images, kernel),
        "pointwise": (maps, w),
        "head": (maps, w_head),
    }


if __name__ == "__main__":
    from jax.sharding import AxisType

    mesh = jax.make_mesh((4, 2), ("data", "model"), axis_types=(AxisType.Explicit,) * 2)
    with jax.set_mesh(mesh):
        for name, args in example_arguments().items():
            jax.jit(globals()[name])(*args)
