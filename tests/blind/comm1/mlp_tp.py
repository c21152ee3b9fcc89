"""A transformer MLP block in three placements: Megatron tensor parallelism (the hidden `mlp` axis split over
`model`, the batch over `data`), the same block with its norm and residual, and an FSDP variant where the
weights are stored split along `embed` over `data` and met by activations split along the batch."""

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
import jax

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32

MESH = {"data": 4, "model": 2}

Hidden = NamedArray[f32, "batch@data seq embed"]
Inner = NamedArray[f32, "batch@data seq mlp@model"]
WIn = NamedArray[f32, "embed mlp@model"]
WOut = NamedArray[f32, "mlp@model embed"]


def _norm(x: Hidden, scale: NamedArray[f32, "embed"]) -> Hidden:
    centred = x - x.mean("embed")
    return centred / tnp.sqrt((centred * centred).mean("embed") + 1e-5) * scale


def up(x: Hidden, w_in: WIn) -> Inner:
    """Column-parallel projection: nothing is contracted over a split axis."""
    return tnp.gelu(tnp.einsum("{embed},{embed,mlp}->{mlp}", x, w_in))


def down(h: Inner, w_out: WOut) -> Hidden:
    """Row-parallel projection: the split `mlp` is contracted, partial sums over `model`."""
    return tnp.einsum("{mlp},{mlp,embed}->{embed}", h, w_out)


def block(x: Hidden, scale: NamedArray[f32, "embed"], w_in: WIn, w_out: WOut) -> Hidden:
    h = tnp.gelu(tnp.einsum("{embed},{embed,mlp}->{mlp}", _norm(x, scale), w_in))
    return x + tnp.einsum("{mlp},{mlp,embed}->{embed}", h, w_out)


def fsdp_up(x: Hidden, w: NamedArray[f32, "embed@data mlp"]) -> NamedArray[f32, "batch@data seq mlp"]:
    """FSDP: the weight is stored split along the contracted `embed` over `data`, as the batch is."""
    return tnp.relu(tnp.einsum("{embed},{embed,mlp}->{mlp}", x, w))


def example_arguments() -> dict[str, tuple[object, ...]]:
    keys = iter(jax.random.split(jax.random.key(0), 8))
    x = tx.shard(tx.random.normal(next(keys), {"batch": 8, "seq": 8, "embed": 16}), {"batch": "data"})
    h = tx.shard(tx.random.normal(next(keys), {"batch": 8, "seq": 8, "mlp": 32}), {"batch": "data", "mlp": "model"})
    w_in = tx.shard(tx.random.normal(next(keys), {"embed": 16, "mlp": 32}), {"mlp": "model"})
    w_out = tx.shard(tx.random.normal(next(keys), {"mlp": 32, "embed": 16}), {"mlp": "model"})
    scale = tx.random.normal(next(keys), {"embed": 16})
    w_fsdp = tx.shard(tx.random.normal(next(keys), {"embed": 16, "mlp": 32}), {"embed": "data"})
    return {
        "up": (x, w_in),
        "down": (h, w_out),
        "block": (x, scale, w_in, w_out),
        "fsdp_up": (x, w_fsdp),
    }


if __name__ == "__main__":
    from jax.sharding import AxisType

    mesh = jax.make_mesh((4, 2), ("data", "model"), axis_types=(AxisType.Explicit,) * 2)
    with jax.set_mesh(mesh):
        for name, args in example_arguments().items():
            jax.jit(globals()[name])(*args)
