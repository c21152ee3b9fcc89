"""One decoding step of a transformer with a key/value cache, and its sampling head. The cache holds every
sequence's past keys and values, split by sequence over ``data`` and by head over ``model`` (tensor parallel
attention); the new token's keys and values are written at the step's position, attention reads the whole
cache, and the output projection contracts the split heads. The head's logits are split by vocabulary over
``model`` (the embedding is tied), so the greedy token, the top candidates and the temperature softmax all
run along a split axis."""

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

import math

import jax
import jax.numpy as jnp
from jax.sharding import AxisType

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32, i32

MESH = {"data": 4, "model": 2}

Token = NamedArray[f32, "batch@data embed"]
Cache = NamedArray[f32, "batch@data kv heads@model head_dim"]
Proj = NamedArray[f32, "embed heads@model head_dim"]
Logits = NamedArray[f32, "batch@data vocab@model"]


def write_cache(cache: Cache, x: Token, w: Proj, position: jax.Array) -> Cache:
    """Project the new token to this layer's keys and write them into the cache at ``position``."""
    k = tnp.einsum("{embed},{embed,heads,head_dim}->{heads,head_dim}", x, w)
    return tnp.dynamic_update_slice(cache, k, {"kv": position})


def attend(x: Token, keys: Cache, values: Cache, wq: Proj, wo: Proj, length: jax.Array) -> Token:
    """The new token's query over the cache's first ``length`` positions, then the output projection."""
    q = tnp.einsum("{embed},{embed,heads,head_dim}->{heads,head_dim}", x, wq) / math.sqrt(wq.named_shape["head_dim"])
    scores = tnp.einsum("{heads,head_dim},{kv,heads,head_dim}->{heads,kv}", q, keys)
    seen = tnp.arange("kv", keys.named_shape["kv"]) < length
    weights = tnp.softmax(tnp.where(seen, scores, -1e9), "kv")
    mixed = tnp.einsum("{heads,kv},{kv,heads,head_dim}->{heads,head_dim}", weights, values)
    return tnp.einsum("{heads,head_dim},{embed,heads,head_dim}->{embed}", mixed, wo)


def head(x: Token, embed: NamedArray[f32, "vocab@model embed"]) -> Logits:
    """Tied output: every vocabulary entry's score, the vocabulary split over ``model``."""
    return tnp.einsum("{embed},{vocab,embed}->{vocab}", x, embed)


def greedy(x: Token, embed: NamedArray[f32, "vocab@model embed"]) -> NamedArray[i32, "batch@data"]:
    """The most likely next token of each sequence."""
    return tnp.argmax(head(x, embed), "vocab")


def top_candidates(logits: Logits, temperature: jax.Array) -> NamedArray[f32, "batch@data choice"]:
    """The probabilities (at a temperature) of the eight likeliest tokens, renormalised among them."""
    probs = tnp.softmax(logits / temperature, "vocab")
    best, _ = tnp.top_k(probs, 8, axis="vocab", new_axis="choice")
    return best / best.sum("choice")


def example_arguments() -> dict[str, tuple[object, ...]]:
    key = iter(jax.random.split(jax.random.key(1), 8))
    batch, kv, heads, head_dim, embed, vocab = 8, 16, 4, 8, 16, 64
    cache_shape = {"batch": batch, "kv": kv, "heads": heads, "head_dim": head_dim}
    cache = tx.shard(tx.random.normal(next(key), cache_shape), {"batch": "data", "heads": "model"})
    values = tx.shard(tx.random.normal(next(key), cache_shape), {"batch": "data", "heads": "model"})
    x = tx.shard(tx.random.normal(next(key), {"batch": batch, "embed": embed}), {"batch": "data"})
    proj = {"embed": embed, "heads": heads, "head_dim": head_dim}
    wk = tx.shard(tx.random.normal(next(key), proj), {"heads": "model"})
    wq = tx.shard(tx.random.normal(next(key), proj), {"heads": "model"})
    wo = tx.shard(tx.random.normal(next(key), proj), {"heads": "model"})
    table = tx.shard(tx.random.normal(next(key), {"vocab": vocab, "embed": embed}), {"vocab": "model"})
    logits = tx.shard(
        tx.random.normal(next(key), {"batch": batch, "vocab": vocab}), {"batch": "data", "vocab": "model"}
    )
    return {
        "write_cache": (cache, x, wk, jnp.int32(5)),
        "attend": (x, cache, values, wq, wo, jnp.int32(6)),
        "head": (x, table),
        "greedy": (x, table),
        "top_candidates": (logits, jnp.float32(0.7)),
    }


if __name__ == "__main__":
    mesh = jax.make_mesh((4, 2), ("data", "model"), axis_types=(AxisType.Explicit,) * 2)
    with jax.set_mesh(mesh):
        for name, args in example_arguments().items():
            jax.jit(globals()[name])(*args)
