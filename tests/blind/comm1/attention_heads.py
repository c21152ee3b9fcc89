"""Multi-head self-attention with the heads split over `model` and the batch over `data` (Megatron style): the
projections are local, the output projection contracts the split heads; a sequence-parallel variant puts the
keys' `kv` axis on `model`, so the softmax normalises over a split axis."""

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
import math

import jax

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32

MESH = {"data": 4, "model": 2}

Hidden = NamedArray[f32, "batch@data seq embed"]
Heads = NamedArray[f32, "batch@data seq heads@model head_dim"]
Projection = NamedArray[f32, "embed heads@model head_dim"]


def project(x: Hidden, w: Projection) -> Heads:
    return tnp.einsum("{embed},{embed,heads,head_dim}->{heads,head_dim}", x, w)


def _attend(q: Heads, k: Heads, v: Heads) -> Heads:
    keys = k.rename({"seq": "kv"})
    values = v.rename({"seq": "kv"})
    scores = tnp.einsum("{seq,head_dim},{kv,head_dim}->{seq,kv}", q, keys) / math.sqrt(q.named_shape["head_dim"])
    causal = tnp.causal_mask("seq", "kv", q.named_shape["seq"])
    weights = tnp.softmax(tnp.where(causal, scores, -1e9), "kv")
    return tnp.einsum("{seq,kv},{kv,head_dim}->{seq,head_dim}", weights, values)


def attend(q: Heads, k: Heads, v: Heads) -> Heads:
    """Causal attention per head: every head is local to its devices."""
    return _attend(q, k, v)


def attention(x: Hidden, wq: Projection, wk: Projection, wv: Projection, wo: Projection) -> Hidden:
    mixed = _attend(project(x, wq), project(x, wk), project(x, wv))
    return tnp.einsum("{heads,head_dim},{embed,heads,head_dim}->{embed}", mixed, wo)


def kv_parallel_weights(
    scores: NamedArray[f32, "batch@data heads seq kv@model"],
) -> NamedArray[f32, "batch@data heads seq kv@model"]:
    """The keys split over `model`: the softmax's max and sum are over a split axis."""
    return tnp.softmax(scores, "kv")


def example_arguments() -> dict[str, tuple[object, ...]]:
    keys = iter(jax.random.split(jax.random.key(1), 10))
    x = tx.shard(tx.random.normal(next(keys), {"batch": 8, "seq": 8, "embed": 16}), {"batch": "data"})
    proj = {"embed": 16, "heads": 4, "head_dim": 8}
    wq, wk, wv, wo = (tx.shard(tx.random.normal(next(keys), proj), {"heads": "model"}) for _ in range(4))
    heads = {"batch": 8, "seq": 8, "heads": 4, "head_dim": 8}
    q, k, v = (tx.shard(tx.random.normal(next(keys), heads), {"batch": "data", "heads": "model"}) for _ in range(3))
    scores = tx.shard(
        tx.random.normal(next(keys), {"batch": 8, "heads": 4, "seq": 8, "kv": 8}), {"batch": "data", "kv": "model"}
    )
    return {
        "project": (x, wq),
        "attend": (q, k, v),
        "attention": (x, wq, wk, wv, wo),
        "kv_parallel_weights": (scores,),
    }


if __name__ == "__main__":
    from jax.sharding import AxisType

    mesh = jax.make_mesh((4, 2), ("data", "model"), axis_types=(AxisType.Explicit,) * 2)
    with jax.set_mesh(mesh):
        for name, args in example_arguments().items():
            jax.jit(globals()[name])(*args)
