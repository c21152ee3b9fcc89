"""An MLP whose weights are split two ways at once: each weight matrix is split along ``embed`` over ``data``
(fully sharded data parallel: the weight is gathered where it is used) and along ``mlp`` over ``model`` (tensor
parallel), while the activations are split along the batch over ``data``. The up-projection gathers its weight
over ``data`` by the contraction; the down-projection's weight is gathered explicitly with ``tx.constrain``
before its ``mlp`` contraction (an all-reduce over ``model``); the weights' global norm reduces over both mesh axes."""

from __future__ import annotations

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

import jax

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32

MESH = {"data": 4, "model": 2}

ACTIVATIONS = {"batch": "data", "mlp": "model"}
WEIGHTS = {"embed": "data", "mlp": "model"}
GATHERED = {"mlp": "model"}
"""A weight as the matmul uses it: ``embed`` whole, ``mlp`` still split over model."""

Hidden = NamedArray[f32, "batch@data embed"]
Inner = NamedArray[f32, "batch@data mlp@model"]
WeightIn = NamedArray[f32, "embed@data mlp@model"]
WeightOut = NamedArray[f32, "mlp@model embed@data"]


def up(x: Hidden, w: WeightIn, b: NamedArray[f32, "mlp@model"]) -> Inner:
    """Column-parallel projection; ``embed`` is split in ``w`` and whole in ``x``."""
    return tnp.relu(tnp.einsum("{batch,embed},{embed,mlp}->{batch,mlp}", x, w) + b)


def down(h: Inner, w: WeightOut) -> Hidden:
    """Row-parallel projection: gather the weight's ``embed`` first, then contract the split ``mlp``."""
    whole = tx.constrain(w, GATHERED)
    return tnp.einsum("{batch,mlp},{mlp,embed}->{batch,embed}", h, whole)


def block(x: Hidden, w_in: WeightIn, b: NamedArray[f32, "mlp@model"], w_out: WeightOut) -> Hidden:
    """Residual MLP block from the two helpers, with an RMS norm over the whole ``embed``."""
    rms = tnp.sqrt(tnp.mean(x * x, "embed") + 1e-6)
    return x + down(up(x / rms, w_in, b), w_out)


def global_norm(w_in: WeightIn, w_out: WeightOut) -> NamedArray[f32, ""]:
    """The norm over both weights (as for gradient clipping): sums over every split axis."""
    total = tnp.sum(w_in * w_in, ("embed", "mlp")) + tnp.sum(w_out * w_out, ("mlp", "embed"))
    return tnp.sqrt(total)


def example_arguments() -> dict[str, tuple[object, ...]]:
    """Each jitted function's arguments, placed as its annotations say."""
    k1, k2, k3, k4 = jax.random.split(jax.random.key(1), 4)
    x = tx.shard(tx.random.normal(k1, {"batch": 16, "embed": 16}), ACTIVATIONS)
    w_in = tx.shard(tx.random.normal(k2, {"embed": 16, "mlp": 32}) / 4, WEIGHTS)
    w_out = tx.shard(tx.random.normal(k3, {"mlp": 32, "embed": 16}) / 4, WEIGHTS)
    b = tx.shard(tnp.zeros({"mlp": 32}), WEIGHTS)
    h = tx.shard(tx.random.normal(k4, {"batch": 16, "mlp": 32}), ACTIVATIONS)
    return {
        "up": (x, w_in, b),
        "down": (h, w_out),
        "block": (x, w_in, b, w_out),
        "global_norm": (w_in, w_out),
    }


if __name__ == "__main__":
    from jax.sharding import AxisType

    mesh = jax.make_mesh((4, 2), ("data", "model"), axis_types=(AxisType.Explicit,) * 2)
    with jax.set_mesh(mesh):
        for name, args in example_arguments().items():
            jax.jit(globals()[name])(*args)
