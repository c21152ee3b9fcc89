"""A transformer block with sequence parallelism (Megatron-SP style): outside attention the activations are
split along the batch over ``data`` and along the sequence over ``model``, so layer norm and the MLP (with
replicated weights) run on each device's own tokens; attention needs every key, so the keys and values are
gathered over ``model`` with ``tx.constrain`` before the scores, and the pooled sequence summary is a mean over
the split ``seq``. A ring of ``jax.lax.ppermute`` steps inside ``tx.xmap`` (each sequence block on its
``model`` device) passes every block's summary around the ring, as ring attention passes its keys."""

from __future__ import annotations

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

import math

import jax

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32

MESH = {"data": 4, "model": 2}

SEQ_SPLIT = {"batch": "data", "seq": "model"}
"""Tokens: batch data-parallel, sequence split over model."""
KEYS_WHOLE = {"batch": "data"}
"""Keys and values: every position on every model device."""

RING = 2
"""The sequence blocks of the ring: one per ``model`` device."""

Tokens = NamedArray[f32, "batch@data seq@model embed"]


def _norm(x: Tokens, scale: NamedArray[f32, "embed"]) -> Tokens:
    centred = x - x.mean("embed")
    return centred / tnp.sqrt((centred * centred).mean("embed") + 1e-5) * scale


def norm_mlp(
    x: Tokens,
    scale: NamedArray[f32, "embed"],
    w_in: NamedArray[f32, "embed mlp"],
    w_out: NamedArray[f32, "mlp embed"],
) -> Tokens:
    """Pre-norm MLP with a residual; every operation is local to a device's tokens."""
    h = tnp.gelu(tnp.einsum("{embed},{embed,mlp}->{mlp}", _norm(x, scale), w_in))
    return x + tnp.einsum("{mlp},{mlp,embed}->{embed}", h, w_out)


def attention(
    x: Tokens,
    wq: NamedArray[f32, "embed head_dim"],
    wk: NamedArray[f32, "embed head_dim"],
    wv: NamedArray[f32, "embed head_dim"],
) -> Tokens:
    """Single-head attention: queries stay split by ``seq``, keys and values are gathered whole."""
    keys = tx.constrain(x.rename({"seq": "kv"}), KEYS_WHOLE)
    q = tnp.einsum("{embed},{embed,head_dim}->{head_dim}", x, wq)
    k = tnp.einsum("{embed},{embed,head_dim}->{head_dim}", keys, wk)
    v = tnp.einsum("{embed},{embed,head_dim}->{head_dim}", keys, wv)
    scores = tnp.einsum("{seq,head_dim},{kv,head_dim}->{seq,kv}", q, k) / math.sqrt(q.named_shape["head_dim"])
    weights = tnp.softmax(scores, "kv")
    mixed = tnp.einsum("{seq,kv},{kv,head_dim}->{seq,head_dim}", weights, v)
    return x + tnp.einsum("{head_dim},{embed,head_dim}->{embed}", mixed, wv)


def summary(x: Tokens) -> NamedArray[f32, "batch@data embed"]:
    """Mean over the split sequence and the maximum over it, side by side."""
    return x.mean("seq") + tnp.max(x, "seq")


def regather(x: Tokens) -> NamedArray[f32, "batch@data seq embed"]:
    """Leave sequence parallelism: the full sequence on every ``model`` device, then a causal running mean."""
    whole = tx.constrain(x, {"batch": "data"})
    counts = tnp.arange("seq", x.named_shape["seq"]).astype("float32") + 1.0
    return tnp.cumsum(whole, "seq") / counts


def _ring_body(block: jax.Array) -> jax.Array:
    """One (batch element, sequence block): its chunk of tokens, (chunk, embed)."""
    perm = [(i, (i + 1) % RING) for i in range(RING)]
    message = block.mean(0)
    context = message
    for _ in range(RING - 1):
        message = jax.lax.ppermute(message, "block", perm)
        context = context + message
    return block + context / RING


_ring = tx.xmap(
    _ring_body,
    in_axes=["batch", "block", ...],
    out_axes=["batch", "block", ...],
    axis_resources={"batch": "data", "block": "model"},
)


def ring_context(x: Tokens) -> Tokens:
    """Every token plus the mean over the whole sequence, gathered block by block around the ring."""
    blocks = tx.split_axis(x, "seq", {"block": RING, "chunk": x.named_shape["seq"] // RING})
    out = _ring(tx.positional(blocks, ["batch", "block", "chunk", "embed"]))
    return tx.merge_axes(tx.named(out, ["batch", "block", "chunk", "embed"]), ("block", "chunk"), "seq")


def example_arguments() -> dict[str, tuple[object, ...]]:
    """Each jitted function's arguments, placed as its annotations say."""
    k = iter(jax.random.split(jax.random.key(0), 8))
    sizes = {"batch": 8, "seq": 16, "embed": 16}
    x = tx.shard(tx.random.normal(next(k), sizes), SEQ_SPLIT)
    scale = tnp.ones({"embed": 16})
    w_in = tx.random.normal(next(k), {"embed": 16, "mlp": 32}) / 4
    w_out = tx.random.normal(next(k), {"mlp": 32, "embed": 16}) / 4
    wq, wk, wv = (tx.random.normal(next(k), {"embed": 16, "head_dim": 8}) / 4 for _ in range(3))
    return {
        "norm_mlp": (x, scale, w_in, w_out),
        "attention": (x, wq, wk, wv),
        "summary": (x,),
        "regather": (x,),
        "ring_context": (x,),
    }


if __name__ == "__main__":
    from jax.sharding import AxisType

    mesh = jax.make_mesh((4, 2), ("data", "model"), axis_types=(AxisType.Explicit,) * 2)
    with jax.set_mesh(mesh):
        for name, args in example_arguments().items():
            jax.jit(globals()[name])(*args)
