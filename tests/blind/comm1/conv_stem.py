"""A convolutional image stem and head, data parallel over `data` with the output channels split over `model`:
a local convolution, a 1x1 convolution contracting the split channels, non-overlapping max pooling into
class-token-led patches, an overlapping average pool over an image split along its height (spatial
parallelism), and a pooled head."""

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
import jax

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32

MESH = {"data": 4, "model": 2}

Images = NamedArray[f32, "batch@data height width channels"]
Features = NamedArray[f32, "batch@data height width features@model"]


def stem(images: Images, kernel: NamedArray[f32, "kh kw channels features@model"]) -> Features:
    grid = tnp.conv(images, kernel, {"height": "kh", "width": "kw"}, "channels", padding="SAME")
    return tnp.relu(grid)


def pointwise(
    x: Features, kernel: NamedArray[f32, "kh kw features@model out"]
) -> NamedArray[f32, "batch@data height width out"]:
    """A 1x1 convolution back to `out`: the split `features` are summed."""
    return tnp.conv(x, kernel, {"height": "kh", "width": "kw"}, "features")


def patch_tokens(
    x: Features, cls: NamedArray[f32, "features@model"]
) -> NamedArray[f32, "batch@data patch features@model"]:
    """A 2x2 max pool, the grid flattened to `patch` and a class token put in front."""
    grid = tnp.max_pool(x, {"height": 2, "width": 2})
    tokens = tx.merge_axes(grid, ("height", "width"), "patch")
    first = tnp.zeros_like(cls, new_axes={"batch": x.named_shape["batch"], "patch": 1}) + cls
    return tnp.concatenate([first, tokens], axis="patch")


def smooth_rows(
    x: NamedArray[f32, "batch height@model width channels"],
) -> NamedArray[f32, "batch height@model width channels"]:
    """A 3-row average with stride 1 over rows split across `model`: each block needs its neighbours' edges."""
    return tnp.avg_pool(x, {"height": 3}, strides=1, padding="SAME")


def head(x: Features, w: NamedArray[f32, "features@model label"]) -> NamedArray[f32, "batch@data label"]:
    pooled = x.mean(("height", "width"))
    return tnp.einsum("{features},{features,label}->{label}", pooled, w)


def example_arguments() -> dict[str, tuple[object, ...]]:
    keys = iter(jax.random.split(jax.random.key(4), 8))
    images = tx.shard(
        tx.random.normal(next(keys), {"batch": 8, "height": 8, "width": 8, "channels": 8}), {"batch": "data"}
    )
    k_stem = tx.shard(
        tx.random.normal(next(keys), {"kh": 3, "kw": 3, "channels": 8, "features": 16}), {"features": "model"}
    )
    feats = tx.shard(
        tx.random.normal(next(keys), {"batch": 8, "height": 8, "width": 8, "features": 16}),
        {"batch": "data", "features": "model"},
    )
    k_point = tx.shard(
        tx.random.normal(next(keys), {"kh": 1, "kw": 1, "features": 16, "out": 8}), {"features": "model"}
    )
    rows = tx.shard(
        tx.random.normal(next(keys), {"batch": 8, "height": 16, "width": 8, "channels": 8}), {"height": "model"}
    )
    cls = tx.shard(tx.random.normal(next(keys), {"features": 16}), {"features": "model"})
    w_head = tx.shard(tx.random.normal(next(keys), {"features": 16, "label": 8}), {"features": "model"})
    return {
        "stem": (images, k_stem),
        "pointwise": (feats, k_point),
        "patch_tokens": (feats, cls),
        "smooth_rows": (rows,),
        "head": (feats, w_head),
    }


if __name__ == "__main__":
    from jax.sharding import AxisType

    mesh = jax.make_mesh((4, 2), ("data", "model"), axis_types=(AxisType.Explicit,) * 2)
    with jax.set_mesh(mesh):
        for name, args in example_arguments().items():
            jax.jit(globals()[name])(*args)
