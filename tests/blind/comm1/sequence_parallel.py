"""Sequence parallelism between tensor-parallel layers (Megatron-SP): the residual stream lives split along
`seq` over `model`; it is gathered for a column-parallel projection and the row-parallel projection's output
is constrained back to `seq@model`. Also a KV-cache update and read of the latest positions, the last position
read from the split stream, and the heads split and merged back by reshapes."""

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
import jax

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32

MESH = {"data": 4, "model": 2}
SEQ_SPLIT = {"batch": "data", "seq": "model"}
TENSOR_SPLIT = {"batch": "data", "mlp": "model"}
HEADS = 4

Stream = NamedArray[f32, "batch@data seq@model embed"]


def sp_mlp(x: Stream, w_in: NamedArray[f32, "embed mlp@model"], w_out: NamedArray[f32, "mlp@model embed"]) -> Stream:
    whole = tx.constrain(x, {"batch": "data"})  # gather the sequence for the tensor-parallel layer
    h = tx.constrain(tnp.gelu(tnp.einsum("{embed},{embed,mlp}->{mlp}", whole, w_in)), TENSOR_SPLIT)
    out = tnp.einsum("{mlp},{mlp,embed}->{embed}", h, w_out)
    return x + tx.constrain(out, SEQ_SPLIT)  # back to the sequence split: partial sums scattered


def update_cache(
    cache: NamedArray[f32, "batch@data seq heads@model head_dim"],
    new: NamedArray[f32, "batch@data heads@model head_dim"],
    position: jax.Array,
) -> NamedArray[f32, "batch@data seq heads@model head_dim"]:
    return tnp.dynamic_update_slice(cache, new, {"seq": position})


def recent(
    cache: NamedArray[f32, "batch@data seq heads@model head_dim"], start: jax.Array
) -> NamedArray[f32, "batch@data seq heads@model head_dim"]:
    """The 4 positions from `start` on (a window of the whole sequence)."""
    return tnp.dynamic_slice(cache, {"seq": start}, {"seq": 4})


def last_token(x: Stream) -> NamedArray[f32, "batch@data embed"]:
    """The stream at the final position, which lives on the last `model` block."""
    return x[{"seq": -1}]


def heads_roundtrip(
    x: NamedArray[f32, "batch@data seq embed"], scale: NamedArray[f32, "heads head_dim"]
) -> NamedArray[f32, "batch@data seq embed"]:
    """Split `embed` into heads, scale each head, and merge them back."""
    per_head = tx.split_axis(x, "embed", {"heads": HEADS, "head_dim": x.named_shape["embed"] // HEADS})
    return tx.merge_axes(per_head * scale, ("heads", "head_dim"), "embed")


def example_arguments() -> dict[str, tuple[object, ...]]:
    keys = iter(jax.random.split(jax.random.key(7), 8))
    x = tx.shard(tx.random.normal(next(keys), {"batch": 8, "seq": 8, "embed": 16}), SEQ_SPLIT)
    w_in = tx.shard(tx.random.normal(next(keys), {"embed": 16, "mlp": 32}), TENSOR_SPLIT)
    w_out = tx.shard(tx.random.normal(next(keys), {"mlp": 32, "embed": 16}), TENSOR_SPLIT)
    cache_resources = {"batch": "data", "heads": "model"}
    cache = tx.shard(tx.random.normal(next(keys), {"batch": 8, "seq": 16, "heads": 4, "head_dim": 8}), cache_resources)
    new = tx.shard(tx.random.normal(next(keys), {"batch": 8, "heads": 4, "head_dim": 8}), cache_resources)
    position = jax.numpy.int32(5)
    x_whole_seq = tx.shard(x, {"batch": "data"})
    scale = tx.random.normal(next(keys), {"heads": 4, "head_dim": 4})
    return {
        "sp_mlp": (x, w_in, w_out),
        "update_cache": (cache, new, position),
        "recent": (cache, jax.numpy.int32(3)),
        "last_token": (x,),
        "heads_roundtrip": (x_whole_seq, scale),
    }


if __name__ == "__main__":
    from jax.sharding import AxisType

    mesh = jax.make_mesh((4, 2), ("data", "model"), axis_types=(AxisType.Explicit,) * 2)
    with jax.set_mesh(mesh):
        for name, args in example_arguments().items():
            jax.jit(globals()[name])(*args)
