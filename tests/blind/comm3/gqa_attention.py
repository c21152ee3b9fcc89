"""Grouped-query attention (as in Llama 2/3): ``kv_heads`` key/value heads, each shared by ``group`` query
heads, with RMS norm and rotary position embeddings. The key/value heads are split over ``model`` (each device
owns whole groups, so no query ever needs another device's keys), the batch over ``data``. Between blocks the
activations are kept sequence-parallel (``seq`` over ``model``) and gathered back before attention with
``tx.constrain``."""

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

import math

import jax
from jax.sharding import AxisType

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32

MESH = {"data": 4, "model": 2}

Hidden = NamedArray[f32, "batch@data seq embed"]
Query = NamedArray[f32, "batch@data seq kv_heads@model group head_dim"]
Key = NamedArray[f32, "batch@data seq kv_heads@model head_dim"]
Angles = NamedArray[f32, "seq half"]


def rms_norm(x: Hidden, scale: NamedArray[f32, "embed"]) -> Hidden:
    return x / tnp.sqrt(tnp.mean(x * x, "embed") + 1e-6) * scale


def norm_and_gather(x: NamedArray[f32, "batch@data seq@model embed"], scale: NamedArray[f32, "embed"]) -> Hidden:
    """RMS norm on the sequence-parallel activations, then the whole sequence on every ``model`` device."""
    normed = x / tnp.sqrt(tnp.mean(x * x, "embed") + 1e-6) * scale
    return tx.constrain(normed, {"batch": "data", "seq": None})


def rotary(q: NamedArray[f32, "*heads seq head_dim"], cos: Angles, sin: Angles) -> NamedArray[f32, "*heads seq head_dim"]:
    """Rotate the two halves of each head's features by the position's angles (queries or keys)."""
    half = cos.named_shape["half"]
    first = q[{"head_dim": slice(0, half)}].rename({"head_dim": "half"})
    second = q[{"head_dim": slice(half, 2 * half)}].rename({"head_dim": "half"})
    rotated = tnp.concatenate([first * cos - second * sin, second * cos + first * sin], axis="half")
    return rotated.rename({"half": "head_dim"})


def attention(
    x: Hidden,
    wq: NamedArray[f32, "embed kv_heads@model group head_dim"],
    wk: NamedArray[f32, "embed kv_heads@model head_dim"],
    wv: NamedArray[f32, "embed kv_heads@model head_dim"],
    wo: NamedArray[f32, "kv_heads@model group head_dim embed"],
    cos: Angles,
    sin: Angles,
) -> Hidden:
    """Causal grouped-query attention; the output projection contracts the split key/value heads."""
    q = rotary(tnp.einsum("{embed},{embed,kv_heads,group,head_dim}->{kv_heads,group,head_dim}", x, wq), cos, sin)
    k = rotary(tnp.einsum("{embed},{embed,kv_heads,head_dim}->{kv_heads,head_dim}", x, wk), cos, sin)
    v = tnp.einsum("{embed},{embed,kv_heads,head_dim}->{kv_heads,head_dim}", x, wv)
    keys, values = k.rename({"seq": "kv"}), v.rename({"seq": "kv"})
    scores = tnp.einsum("{seq,head_dim},{kv,head_dim}->{seq,kv}", q, keys) / math.sqrt(q.named_shape["head_dim"])
    causal = tnp.causal_mask("seq", "kv", x.named_shape["seq"])
    weights = tnp.softmax(tnp.where(causal, scores, -1e9), "kv")
    mixed = tnp.einsum("{seq,kv},{kv,head_dim}->{seq,head_dim}", weights, values)
    return tnp.einsum("{kv_heads,group,head_dim},{kv_heads,group,head_dim,embed}->{embed}", mixed, wo)


def example_arguments() -> dict[str, tuple[object, ...]]:
    key = iter(jax.random.split(jax.random.key(3), 12))
    batch, seq, embed, kv_heads, group, head_dim = 8, 16, 32, 2, 2, 8
    x = tx.shard(tx.random.normal(next(key), {"batch": batch, "seq": seq, "embed": embed}), {"batch": "data"})
    x_sp = tx.shard(tx.random.normal(next(key), {"batch": batch, "seq": seq, "embed": embed}), {"batch": "data", "seq": "model"})
    scale = tx.random.normal(next(key), {"embed": embed})
    heads = {"kv_heads": "model"}
    wq = tx.shard(tx.random.normal(next(key), {"embed": embed, "kv_heads": kv_heads, "group": group, "head_dim": head_dim}), heads)
    wk = tx.shard(tx.random.normal(next(key), {"embed": embed, "kv_heads": kv_heads, "head_dim": head_dim}), heads)
    wv = tx.shard(tx.random.normal(next(key), {"embed": embed, "kv_heads": kv_heads, "head_dim": head_dim}), heads)
    wo = tx.shard(tx.random.normal(next(key), {"kv_heads": kv_heads, "group": group, "head_dim": head_dim, "embed": embed}), heads)
    angles = tx.random.uniform(next(key), {"seq": seq, "half": head_dim // 2})
    cos, sin = tnp.cos(angles), tnp.sin(angles)
    q = tx.shard(
        tx.random.normal(next(key), {"batch": batch, "seq": seq, "kv_heads": kv_heads, "group": group, "head_dim": head_dim}),
        {"batch": "data", "kv_heads": "model"},
    )
    return {
        "rms_norm": (x, scale),
        "norm_and_gather": (x_sp, scale),
        "rotary": (q, cos, sin),
        "attention": (x, wq, wk, wv, wo, cos, sin),
    }


if __name__ == "__main__":
    mesh = jax.make_mesh((4, 2), ("data", "model"), axis_types=(AxisType.Explicit,) * 2)
    with jax.set_mesh(mesh):
        for name, args in example_arguments().items():
            jax.jit(globals()[name])(*args)
