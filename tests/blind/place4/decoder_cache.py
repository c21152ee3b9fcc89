"""One-layer attention decoder with a KV cache: each decode step embeds the new token (a tied embedding split
along ``vocab`` over ``model``), writes its keys and values into the cache with ``.at[]``, attends over the
positions written so far, and samples the next token from the top-k of the split vocabulary. The batch is split
over ``data`` and the heads over ``model``; the cache is placed like the heads."""

from __future__ import annotations

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

from dataclasses import dataclass
from functools import partial
from typing import Final, NamedTuple

import jax
import jax.numpy as jnp

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32, i32

PARAMS: Final = {"vocab": "model", "heads": "model"}
CACHE: Final = {"batch": "data", "heads": "model"}
TOKENS: Final = {"batch": "data"}


@dataclass(frozen=True)
class DecoderConfig:
    batch: int = 4
    vocab: int = 32
    embed: int = 16
    heads: int = 4
    max_len: int = 6
    top_k: int = 5
    temperature: float = 0.8
    lr: float = 0.1

    @property
    def head_dim(self) -> int:
        return self.embed // self.heads


class Weights(NamedTuple):
    emb: NamedArray[f32, "vocab@model embed"]
    wq: NamedArray[f32, "embed heads@model hd"]
    wk: NamedArray[f32, "embed heads@model hd"]
    wv: NamedArray[f32, "embed heads@model hd"]
    wo: NamedArray[f32, "heads@model hd embed"]


class Cache(NamedTuple):
    k: NamedArray[f32, "batch@data pos heads@model hd"]
    v: NamedArray[f32, "batch@data pos heads@model hd"]


def init(cfg: DecoderConfig, key: jax.Array) -> Weights:
    ke, kq, kk, kv, ko = jax.random.split(key, 5)
    proj = {"embed": cfg.embed, "heads": cfg.heads, "hd": cfg.head_dim}
    scale = cfg.embed**-0.5
    weights = Weights(
        emb=tx.random.normal(ke, {"vocab": cfg.vocab, "embed": cfg.embed}) * scale,
        wq=tx.random.normal(kq, proj) * scale,
        wk=tx.random.normal(kk, proj) * scale,
        wv=tx.random.normal(kv, proj) * scale,
        wo=tx.random.normal(ko, {"heads": cfg.heads, "hd": cfg.head_dim, "embed": cfg.embed}) * scale,
    )
    return tx.shard(weights, PARAMS)


def empty_cache(cfg: DecoderConfig) -> Cache:
    zeros = tnp.zeros({"batch": cfg.batch, "pos": cfg.max_len, "heads": cfg.heads, "hd": cfg.head_dim})
    return Cache(tx.shard(zeros, CACHE), tx.shard(zeros, CACHE))  # plant[s5 resource static]: return Cache(tx.shard(zeros, {"batch": "data", "pos": "model"}), tx.shard(zeros, CACHE))


@tx.typed
def attend(
    q: NamedArray[f32, "batch@data heads@model hd"],
    cache: Cache,
    t: int,
) -> NamedArray[f32, "batch@data heads@model hd"]:
    scores = tnp.einsum("{batch,heads,hd},{batch,pos,heads,hd}->{batch,heads,pos}", q, cache.k)
    scores = scores * q.named_shape["hd"] ** -0.5
    visible = tnp.arange("pos", cache.k.named_shape["pos"]) <= t
    probs = tnp.softmax(tnp.where(visible, scores, -1e9), "pos")  # plant[s1 name static]: probs = tnp.softmax(tnp.where(visible, scores, -1e9), "hd")
    return tnp.einsum("{batch,heads,pos},{batch,pos,heads,hd}->{batch,heads,hd}", probs, cache.v)


@tx.typed
def decode(
    w: Weights, cache: Cache, tok: NamedArray[i32, "batch@data"], t: int
) -> tuple[NamedArray[f32, "batch@data vocab@model"], Cache]:
    x = w.emb[{"vocab": tok}]
    q = tnp.einsum("{batch,embed},{embed,heads,hd}->{batch,heads,hd}", x, w.wq)
    k = tnp.einsum("{batch,embed},{embed,heads,hd}->{batch,heads,hd}", x, w.wk)
    v = tnp.einsum("{batch,embed},{embed,heads,hd}->{batch,heads,hd}", x, w.wv)
    cache = Cache(cache.k.at[{"pos": t}].set(k), cache.v.at[{"pos": t}].set(v))
    o = attend(q, cache, t)
    h = x + tnp.einsum("{batch,heads,hd},{heads,hd,embed}->{batch,embed}", o, w.wo)
    emb = w.emb  # plant[s2 resource static]: emb = tx.constrain(w.emb, {"vocab": "data"})
    logits = tnp.einsum("{batch,embed},{vocab,embed}->{batch,vocab}", h, emb)
    return logits, cache


@tx.typed
def sample(
    key: jax.Array, logits: NamedArray[f32, "batch@data vocab@model"], k: int, temperature: float
) -> NamedArray[i32, "batch@data"]:
    top, ids = tnp.top_k(logits, k, axis="vocab", new_axis="choice")
    pick = tx.random.categorical(key, top / temperature, axis="choice")
    chosen = ids[{"choice": pick}]
    return chosen  # plant[s3 resource static]: return tx.constrain(chosen, {"batch": "model"})


def loss(w: Weights, cache: Cache, tok: NamedArray[i32, "batch@data"], target: NamedArray[i32, "batch@data"]) -> jax.Array:
    logits, _ = decode(w, cache, tok, 0)
    logp = tnp.log_softmax(logits, "vocab")
    return tx.positional(-tnp.mean(logp[{"vocab": target}], "batch"), [])


@partial(jax.jit, static_argnames=("lr",))
def train_step(
    w: Weights, cache: Cache, tok: NamedArray[i32, "batch@data"], target: NamedArray[i32, "batch@data"], lr: float
) -> tuple[Weights, jax.Array]:
    value, grads = jax.value_and_grad(loss)(w, cache, tok, target)
    return jax.tree.map(lambda p, g: p - lr * g, w, grads), value


@partial(jax.jit, static_argnames=("t", "cfg"))
def generate_step(
    w: Weights, cache: Cache, tok: NamedArray[i32, "batch@data"], key: jax.Array, t: int, cfg: DecoderConfig
) -> tuple[NamedArray[i32, "batch@data"], Cache]:
    logits, cache = decode(w, cache, tok, t)
    return sample(key, logits, cfg.top_k, cfg.temperature), cache


def main() -> None:
    cfg = DecoderConfig()
    jax.set_mesh(jax.make_mesh((4, 2), ("data", "model")))
    k_w, k_t, k_s = jax.random.split(jax.random.key(2), 3)
    w = init(cfg, k_w)
    raw = tx.random.randint(k_t, {"batch": cfg.batch, "pos": 2}, 0, cfg.vocab)
    tok = tx.shard(raw[{"pos": 0}], TOKENS)  # plant[s4 resource static]: tok = tx.shard(raw[{"pos": 0}], PARAMS)
    target = tx.shard(raw[{"pos": 1}], TOKENS)
    for step in range(2):
        w, value = train_step(w, empty_cache(cfg), tok, target, cfg.lr)
        print("step", step, float(value))
    cache = empty_cache(cfg)
    for t, key in enumerate(jax.random.split(k_s, 3)):
        tok, cache = generate_step(w, cache, tok, key, t, cfg)
    print("generated", tx.positional(tok, ["batch"]))


if __name__ == "__main__":
    main()
