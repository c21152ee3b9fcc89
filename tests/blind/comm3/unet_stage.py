"""One stage of a U-Net on 2-D feature maps: group-norm, a 3x3 convolution down, a transposed convolution up,
a skip connection joined along the channels, and a smoothing pool over a map split by rows. The encoder's maps
are split by example over ``data`` and by channel over ``model`` (so each convolution contracts a split
``channels``); the smoothing stage splits the rows (``height``) over ``data`` instead, as spatial parallelism
does for large images."""

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

import jax
from jax.sharding import AxisType

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32

MESH = {"data": 4, "model": 2}

Maps = NamedArray[f32, "batch@data height width channels@model"]
Kernel = NamedArray[f32, "kh kw channels@model out"]
Rows = NamedArray[f32, "batch height@data width channels@model"]


def group_norm(x: Maps) -> Maps:
    """Normalise each example over its whole map and every channel (one group)."""
    centred = x - x.mean(("height", "width", "channels"))
    var = (centred * centred).mean(("height", "width", "channels"))
    return centred / tnp.sqrt(var + 1e-5)


def down(x: Maps, kernel: Kernel) -> NamedArray[f32, "batch@data height width out"]:
    """Norm, relu, a 3x3 convolution over the split channels, then a 2x2 max pool."""
    h = tnp.conv(tnp.relu(group_norm(x)), kernel, {"height": "kh", "width": "kw"}, "channels", padding="SAME")
    return tnp.max_pool(h, {"height": 2, "width": 2})


def up_and_join(
    coarse: NamedArray[f32, "batch@data height width out"],
    skip: Maps,
    kernel: NamedArray[f32, "kh kw out channels@model"],
) -> Maps:
    """A stride-2 transposed convolution back to the skip's size, its channels placed as the skip's, added."""
    up = tnp.conv_transpose(coarse, kernel, {"height": "kh", "width": "kw"}, "out", strides=2, padding="SAME")
    up = tx.constrain(up, {"batch": "data", "channels": "model"})
    return tnp.gelu(up + skip)


def smooth(x: Rows) -> Rows:
    """A 3x3 average over overlapping windows (stride 1, same size), the rows split over ``data``."""
    return tnp.avg_pool(x, {"height": 3, "width": 3}, strides=1, padding="SAME")


def example_arguments() -> dict[str, tuple[object, ...]]:
    key = iter(jax.random.split(jax.random.key(0), 8))
    maps = {"batch": 8, "height": 16, "width": 16, "channels": 8}
    x = tx.shard(tx.random.normal(next(key), maps), {"batch": "data", "channels": "model"})
    k_down = tx.shard(tx.random.normal(next(key), {"kh": 3, "kw": 3, "channels": 8, "out": 16}), {"channels": "model"})
    coarse = tx.shard(tx.random.normal(next(key), {"batch": 8, "height": 8, "width": 8, "out": 16}), {"batch": "data"})
    k_up = tx.shard(tx.random.normal(next(key), {"kh": 2, "kw": 2, "out": 16, "channels": 8}), {"channels": "model"})
    rows = tx.shard(tx.random.normal(next(key), maps), {"height": "data", "channels": "model"})
    return {
        "group_norm": (x,),
        "down": (x, k_down),
        "up_and_join": (coarse, x, k_up),
        "smooth": (rows,),
    }


if __name__ == "__main__":
    mesh = jax.make_mesh((4, 2), ("data", "model"), axis_types=(AxisType.Explicit,) * 2)
    with jax.set_mesh(mesh):
        for name, args in example_arguments().items():
            jax.jit(globals()[name])(*args)
