"""Greedy-ish decoding with a key/value cache: one jitted step per token writes the new keys and values into
the cache with ``.at[]``, attends over the filled positions, projects back through a tied embedding whose
vocabulary is split over ``model`` and picks the next token with ``tnp.top_k`` over that split vocabulary.
The batch of sequences is split over ``data`` and the heads over ``model`` everywhere."""

from __future__ import annotations

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

import math
from typing import NamedTuple, TypedDict

import jax
import jax.numpy as jnp

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32, i32

BATCH, MAX_LEN, EMBED, HEADS, HEAD_DIM, VOCAB = 4, 8, 16, 4, 4, 32

WEIGHTS = {"heads": "model", "vocab": "model"}
CACHE = {"batch": "data", "heads": "model"}


class Weights(TypedDict):
    emb: NamedArray[f32, "vocab@model embed"]
    wq: NamedArray[f32, "embed heads@model hd"]
    wk: NamedArray[f32, "embed heads@model hd"]
    wv: NamedArray[f32, "embed heads@model hd"]
    wo: NamedArray[f32, "heads@model hd embed"]


class Cache(NamedTuple):
    k: NamedArray[f32, "batch@data pos heads@model hd"]
    v: NamedArray[f32, "batch@data pos heads@model hd"]


def init_weights(key: jax.Array) -> Weights:
    ks = jax.random.split(key, 5)
    scale = 1.0 / math.sqrt(EMBED)
    w: Weights = {
        "emb": tx.random.normal(ks[0], {"vocab": VOCAB, "embed": EMBED}) * scale,
        "wq": tx.random.normal(ks[1], {"embed": EMBED, "heads": HEADS, "hd": HEAD_DIM}) * scale,
        "wk": tx.random.normal(ks[2], {"embed": EMBED, "heads": HEADS, "hd": HEAD_DIM}) * scale,
        "wv": tx.random.normal(ks[3], {"embed": EMBED, "heads": HEADS, "hd": HEAD_DIM}) * scale,
        "wo": tx.random.normal(ks[4], {"heads": HEADS, "hd": HEAD_DIM, "embed": EMBED}) * scale,
    }
    return tx.shard(w, WEIGHTS)


def empty_cache() -> Cache:
    zeros = tnp.zeros({"batch": BATCH, "pos": MAX_LEN, "heads": HEADS, "hd": HEAD_DIM}, jnp.float32)
    placed = tx.shard(zeros, CACHE)  # plant[p1 resource static]: placed = tx.shard(zeros, {"batch": "data", "pos": "data", "heads": "model"})
    return Cache(placed, placed)


@tx.typed
def attend(
    x: NamedArray[f32, "batch@data embed"], w: Weights, cache: Cache, t: jax.Array
) -> tuple[NamedArray[f32, "batch@data embed"], Cache]:
    q = tnp.einsum("{batch,embed},{embed,heads,hd}->{batch,heads,hd}", x, w["wq"])  # plant[p2 resource static]: q = tnp.einsum("{batch,embed},{embed,heads,hd}->{batch,heads,hd}", x, tx.constrain(w["wq"], {"heads": "data"}))
    k_new = tnp.einsum("{batch,embed},{embed,heads,hd}->{batch,heads,hd}", x, w["wk"])
    v_new = tnp.einsum("{batch,embed},{embed,heads,hd}->{batch,heads,hd}", x, w["wv"])
    cache = Cache(cache.k.at[{"pos": t}].set(k_new), cache.v.at[{"pos": t}].set(v_new))
    scores = tnp.einsum("{batch,heads,hd},{batch,pos,heads,hd}->{batch,heads,pos}", q, cache.k) / math.sqrt(HEAD_DIM)
    filled = tnp.arange("pos", MAX_LEN) <= t
    scores = tnp.where(filled, scores, -1e9)
    weights = tnp.softmax(scores, "pos")  # plant[p3 name static]: weights = tnp.softmax(scores, "position")
    ctx = tnp.einsum("{batch,heads,pos},{batch,pos,heads,hd}->{batch,heads,hd}", weights, cache.v)
    out = tnp.einsum("{batch,heads,hd},{heads,hd,embed}->{batch,embed}", ctx, w["wo"])
    return x + out, cache


@jax.jit
def step(
    w: Weights, cache: Cache, token: NamedArray[i32, "batch@data"], t: jax.Array
) -> tuple[NamedArray[i32, "batch@data"], Cache]:
    x = tx.constrain(w["emb"][{"vocab": token}], {"batch": "data"})
    h, cache = attend(x, w, cache, t)
    logits = tnp.einsum("{batch,embed},{vocab,embed}->{batch,vocab}", h, w["emb"])
    probs: NamedArray[f32, "batch@data vocab@model"] = tnp.softmax(logits, "vocab")  # plant[p4 resource static]: probs: NamedArray[f32, "batch@model vocab"] = tnp.softmax(logits, "vocab")
    best, chosen = tnp.top_k(probs, 2, axis="vocab", new_axis="choice")
    return chosen[{"choice": 0}], cache


if __name__ == "__main__":
    mesh = tx.fitting_mesh((2, 4), ("data", "model"))
    jax.set_mesh(mesh)
    weights = init_weights(jax.random.key(0))
    assert tx.resources_of(empty_cache().k) == CACHE
    blank = tnp.zeros({"batch": BATCH, "pos": MAX_LEN, "heads": HEADS, "hd": HEAD_DIM}, jnp.float32)
    cache = Cache(tx.shard(blank, CACHE), tx.shard(blank, CACHE))  # plant[p5 resource static]: cache = Cache(tx.shard(blank, {"heads": "model"}), tx.shard(blank, {"heads": "model"}))
    token = tx.shard(tx.named(jnp.arange(BATCH, dtype=jnp.int32), ["batch"]), {"batch": "data"})
    generated = []
    for t in range(MAX_LEN):
        token, cache = step(weights, cache, token, jnp.int32(t))  # plant[p6 resource static]: token, cache = step(weights, cache, tx.shard(token, {"batch": "model"}), jnp.int32(t))
        generated.append(tx.positional(token, ["batch"]))
    out = jnp.stack(generated, axis=1)
    assert out.shape == (BATCH, MAX_LEN)
    assert tx.resources_of(cache.k) == CACHE
    print(out)
    print("ok")
