"""Normalisations of activations whose features are split over `model` (the residual stream of a sequence-
and feature-sharded model, `embed@model`) and whose batch is split over `data`: a layer norm and an RMS norm
over the split features, a batch norm over the split batch, a logsumexp over split classes and global
statistics over every axis."""

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
import jax

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32

MESH = {"data": 4, "model": 2}
EPS = 1e-5

Stream = NamedArray[f32, "batch@data seq embed@model"]
Scale = NamedArray[f32, "embed@model"]


def layer_norm(x: Stream, scale: Scale, bias: Scale) -> Stream:
    centred = x - tnp.mean(x, "embed")
    return centred / tnp.sqrt(tnp.var(x, "embed") + EPS) * scale + bias


def rms_norm(x: Stream, scale: Scale) -> Stream:
    return x / tnp.sqrt(tnp.mean(tnp.square(x), "embed") + EPS) * scale


def batch_norm(x: Stream) -> Stream:
    """Statistics over the examples and positions of the batch, per feature."""
    mean = x.mean(("batch", "seq"))
    std = tnp.std(x, ("batch", "seq"))
    return (x - mean) / (std + EPS)


def class_log_partition(scores: NamedArray[f32, "batch@data label@model"]) -> NamedArray[f32, "batch@data"]:
    return tnp.logsumexp(scores, "label")


def global_stats(x: Stream) -> NamedArray[f32, "stat"]:
    """The largest magnitude and the mean square of the whole stream, stacked (for logging)."""
    peak = tnp.max(tnp.abs(x), ("batch", "seq", "embed"))
    power = tnp.mean(x * x, ("batch", "seq", "embed"))
    return tnp.stack([peak, power], axis="stat")


def example_arguments() -> dict[str, tuple[object, ...]]:
    keys = iter(jax.random.split(jax.random.key(3), 8))
    x = tx.shard(tx.random.normal(next(keys), {"batch": 8, "seq": 8, "embed": 16}), {"batch": "data", "embed": "model"})
    scale = tx.shard(tx.random.normal(next(keys), {"embed": 16}), {"embed": "model"})
    bias = tx.shard(tx.random.normal(next(keys), {"embed": 16}), {"embed": "model"})
    scores = tx.shard(tx.random.normal(next(keys), {"batch": 8, "label": 16}), {"batch": "data", "label": "model"})
    return {
        "layer_norm": (x, scale, bias),
        "rms_norm": (x, scale),
        "batch_norm": (x,),
        "class_log_partition": (scores,),
        "global_stats": (x,),
    }


if __name__ == "__main__":
    from jax.sharding import AxisType

    mesh = jax.make_mesh((4, 2), ("data", "model"), axis_types=(AxisType.Explicit,) * 2)
    with jax.set_mesh(mesh):
        for name, args in example_arguments().items():
            jax.jit(globals()[name])(*args)
