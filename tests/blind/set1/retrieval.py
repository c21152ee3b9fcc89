"""Two-tower retrieval: a query tower and a candidate tower into one embedding space, dot-product scores by
einsum, a sampled-softmax training loss over the candidate pool, and top-k retrieval with a re-rank, sharded
over a (data, model) mesh."""

from __future__ import annotations

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

from dataclasses import dataclass
from functools import partial
from typing import TypedDict

import jax
import jax.numpy as jnp

import typed_xmap as tx
import typed_xmap.numpy as tnp
from _sizes import BATCH, HIDDEN, LEARNING_RATE
from typed_xmap import NamedArray, f32, i32


@dataclass(frozen=True)
class Config:
    batch: int = BATCH
    cands: int = 32
    qfeat: int = 12
    dfeat: int = 10
    embed: int = HIDDEN
    k: int = 4
    temperature: float = 0.1

    @property
    def shortlist(self) -> int:
        return 2 * self.k


class Params(TypedDict):
    q1: NamedArray[f32, "qfeat qhid"]
    q2: NamedArray[f32, "qhid embed"]
    d1: NamedArray[f32, "dfeat embed"]
    d_bias: NamedArray[f32, "embed"]


RESOURCES = {"batch": "data", "cand": "model"}


def init(cfg: Config, key: jax.Array) -> Params:
    k1, k2, k3 = jax.random.split(key, 3)
    qhid = cfg.embed * 2
    return {
        "q1": tx.random.normal(k1, {"qfeat": cfg.qfeat, "qhid": qhid}) * cfg.qfeat**-0.5,
        "q2": tx.random.normal(k2, {"qhid": qhid, "embed": cfg.embed}) * qhid**-0.5,  # plant[r1 size static]: "q2": tx.random.normal(k2, {"qhid": cfg.embed, "embed": cfg.embed}) * qhid**-0.5,
        "d1": tx.random.normal(k3, {"dfeat": cfg.dfeat, "embed": cfg.embed}) * cfg.dfeat**-0.5,
        "d_bias": tnp.zeros({"embed": cfg.embed}, jnp.float32),
    }


@tx.typed
def normalize(x: NamedArray[f32, "*rest embed"]) -> NamedArray[f32, "*rest embed"]:
    return x / tnp.sqrt(tnp.sum(x * x, "embed") + 1e-6)  # plant[r2 name static]: return x / tnp.sqrt(tnp.sum(x * x, "batch") + 1e-6)


@tx.typed
def query_tower(p: Params, q: NamedArray[f32, "batch qfeat"]) -> NamedArray[f32, "batch embed"]:
    h = tnp.gelu(tnp.einsum("{qfeat},{qfeat,qhid}->{qhid}", q, p["q1"]))
    return normalize(tnp.einsum("{qhid},{qhid,embed}->{embed}", h, p["q2"]))


@tx.typed
def cand_tower_one(p: Params, d: NamedArray[f32, "dfeat"]) -> NamedArray[f32, "embed"]:
    return normalize(tnp.tanh(tnp.einsum("{dfeat},{dfeat,embed}->{embed}", d, p["d1"]) + p["d_bias"]))


@tx.typed
def scores(p: Params, q: NamedArray[f32, "batch qfeat"], docs: NamedArray[f32, "cand dfeat"]) -> NamedArray[f32, "batch cand"]:
    cands = tx.vmap(cand_tower_one, axis="cand")(p, docs)
    s = tnp.einsum("{batch,embed},{cand,embed}->{batch,cand}", query_tower(p, q), cands)  # plant[r3 name static]: s = tnp.einsum("{batch,embed},{cand,embed}->{batch,embed}", query_tower(p, q), cands)
    return tx.constrain(s, {"batch": "data", "cand": "model"})  # plant[r4 resource static]: return tx.constrain(s, {"batch": "model", "cand": "model"})


@tx.typed
def loss(p: Params, q: NamedArray[f32, "batch qfeat"], docs: NamedArray[f32, "cand dfeat"], pos: NamedArray[i32, "batch"], cfg: Config) -> jax.Array:
    logits = scores(p, q, docs) / cfg.temperature
    logits = logits.at[{"cand": 0}].set(-1e9)  # candidate 0 is the padding item
    target = tnp.one_hot(pos, "cand", cfg.cands, dtype=jnp.float32)
    nll = tnp.logsumexp(logits, "cand") - tnp.sum(logits * target, "cand")
    return tx.positional(tnp.mean(nll, "batch"), [])


@partial(jax.jit, static_argnames="cfg")
def train_step(p: Params, q: NamedArray[f32, "batch qfeat"], docs: NamedArray[f32, "cand dfeat"], pos: NamedArray[i32, "batch"], cfg: Config) -> tuple[Params, jax.Array]:
    value, grads = jax.value_and_grad(loss)(p, q, docs, pos, cfg)
    return jax.tree.map(lambda w, g: w - LEARNING_RATE * g, p, grads), value


@partial(jax.jit, static_argnames="cfg")
def retrieve(p: Params, q: NamedArray[f32, "batch qfeat"], docs: NamedArray[f32, "cand dfeat"], cfg: Config) -> tuple[NamedArray[f32, "batch rank"], NamedArray[i32, "batch rank"]]:
    """A shortlist of 2k by score, re-ranked by score plus a popularity prior, the best k kept."""
    s = scores(p, q, docs).at[{"cand": 0}].set(-jnp.inf)
    short_s, short_i = tnp.top_k(s, cfg.shortlist, axis="cand", new_axis="short")
    prior = tnp.sort(tnp.sum(docs, "dfeat"), "cand") * 0.01
    rerank = short_s + prior[{"cand": short_i}]  # plant[r5 name static]: rerank = short_s + prior[{"cands": short_i}]
    best_s, best_j = tnp.top_k(rerank, cfg.k, axis="short", new_axis="rank")
    best_i = tnp.take(short_i.rename({"short": "slot"}), best_j, axis="slot")  # plant[r6 name static]: best_i = tnp.take(short_i, best_j, axis="slot")
    return best_s, best_i


if __name__ == "__main__":
    cfg = Config()
    params = init(cfg, jax.random.key(0))
    kq, kd, kp = jax.random.split(jax.random.key(1), 3)
    q = tx.random.normal(kq, {"batch": cfg.batch, "qfeat": cfg.qfeat})
    docs = tx.random.normal(kd, {"cand": cfg.cands, "dfeat": cfg.dfeat})
    pos = tx.random.randint(kp, {"batch": cfg.batch}, 1, cfg.cands)
    with jax.set_mesh(jax.make_mesh((2, 4), ("data", "model"))):
        params, q, docs, pos = tx.shard((params, q, docs, pos), RESOURCES)
        for _ in range(2):
            params, value = train_step(params, q, docs, pos, cfg)
            print("loss", float(value))
        best_s, best_i = retrieve(params, q, docs, cfg)
        print("retrieved", best_i.named_shape, jax.device_get(tx.positional(best_i, ["batch", "rank"]))[0])
