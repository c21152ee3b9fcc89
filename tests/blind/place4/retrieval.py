"""A retrieval head: variable-length queries arrive as a flat stream of tokens (split over ``data``) with a
segment id each; the tokens are summed into their queries with ``tnp.segment_sum``, projected, and scored
against an item table split along ``items`` over ``model``. Training is a softmax over the split items; serving
takes the top-k items of each query."""

from __future__ import annotations

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

from functools import partial
from typing import Final, NamedTuple

import jax
import jax.numpy as jnp

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32, i32

STREAM: Final = {"tok": "data"}
QUERIES: Final = {"query": "data"}
TABLE: Final = {"items": "model"}


class RetrievalConfig(NamedTuple):
    tokens: int = 32
    queries: int = 8
    feat: int = 12
    dim: int = 8
    items: int = 16
    k: int = 3
    lr: float = 0.2


class Retriever(NamedTuple):
    proj: NamedArray[f32, "feat dim"]
    table: NamedArray[f32, "items@model dim"]
    temperature: NamedArray[f32, ""]


def init(cfg: RetrievalConfig, key: jax.Array) -> Retriever:
    k_p, k_t = jax.random.split(key)
    proj = tx.random.normal(k_p, {"feat": cfg.feat, "dim": cfg.dim}) * cfg.feat**-0.5
    table = tx.random.normal(k_t, {"items": cfg.items, "dim": cfg.dim}) * cfg.dim**-0.5
    return Retriever(
        proj=proj,
        table=tx.shard(table, TABLE),  # plant[u1 resource static]: table=tx.shard(table, {"items": "data"}),
        temperature=tnp.ones({}),
    )


@tx.typed
def encode(
    p: Retriever, tok_feats: NamedArray[f32, "tok@data feat"], segments: NamedArray[i32, "tok@data"], n_queries: int
) -> NamedArray[f32, "query@data dim"]:
    pooled = tnp.segment_sum(tok_feats, segments, n_queries, axis="tok", new_axis="query")
    counts = tnp.segment_sum(tnp.ones_like(segments).astype(jnp.float32), segments, n_queries, axis="tok", new_axis="query")
    mean = pooled / tnp.maximum(counts, 1.0)
    placed = tx.constrain(mean, QUERIES)  # plant[u2 resource static]: placed = tx.constrain(mean, {"query": "model"})
    q = tnp.einsum("{query,feat},{feat,dim}->{query,dim}", placed, p.proj)  # plant[u6 resource runtime]: q = tnp.einsum("{query,feat},{feat,dim}->{query,dim}", mean, p.proj)
    return q * tnp.reciprocal(tnp.sqrt(tnp.sum(q * q, "dim") + 1e-6))


@tx.typed
def score(p: Retriever, q: NamedArray[f32, "query@data dim"]) -> NamedArray[f32, "query@data items@model"]:
    scores: NamedArray[f32, "query@data items@model"] = tnp.einsum("{query,dim},{items,dim}->{query,items}", q, p.table)  # plant[u3 resource static]: scores: NamedArray[f32, "query@data items@data"] = tnp.einsum("{query,dim},{items,dim}->{query,items}", q, p.table)
    return scores / p.temperature


@tx.typed
def retrieve(p: Retriever, q: NamedArray[f32, "query@data dim"], k: int) -> NamedArray[i32, "query@data rank"]:
    _, ids = tnp.top_k(score(p, q), k, axis="items", new_axis="rank")  # plant[u5 name static]: _, ids = tnp.top_k(score(p, q), k, axis="dim", new_axis="rank")
    return ids


def loss(
    p: Retriever, tok_feats: NamedArray[f32, "tok@data feat"], segments: NamedArray[i32, "tok@data"], positives: NamedArray[i32, "query@data"]
) -> jax.Array:
    q = encode(p, tok_feats, segments, positives.named_shape["query"])
    logp = tnp.log_softmax(score(p, q), "items")
    return tx.positional(-tnp.mean(logp[{"items": positives}], "query"), [])


@partial(jax.jit, static_argnames=("lr",))
def train_step(
    p: Retriever, tok_feats: NamedArray[f32, "tok@data feat"], segments: NamedArray[i32, "tok@data"], positives: NamedArray[i32, "query@data"], lr: float
) -> tuple[Retriever, jax.Array]:
    value, grads = jax.value_and_grad(loss)(p, tok_feats, segments, positives)
    return jax.tree.map(lambda w, g: w - lr * g, p, grads), value


def main() -> None:
    cfg = RetrievalConfig()
    jax.set_mesh(jax.make_mesh((4, 2), ("data", "model")))
    k_p, k_f, k_y = jax.random.split(jax.random.key(4), 3)
    params = init(cfg, k_p)
    per_query = cfg.tokens // cfg.queries
    raw = tx.random.normal(k_f, {"tok": cfg.tokens, "feat": cfg.feat})
    tok_feats = tx.shard(raw, STREAM)  # plant[u4 resource static]: tok_feats = tx.shard(raw, {"feat": "data"})
    segments = tx.shard(tnp.arange("tok", cfg.tokens) // per_query, STREAM)
    positives = tx.shard(tx.random.randint(k_y, {"query": cfg.queries}, 0, cfg.items), QUERIES)
    for step in range(2):
        params, value = train_step(params, tok_feats, segments, positives, cfg.lr)
        print("step", step, float(value))
    q = encode(params, tok_feats, segments, cfg.queries)
    ids = retrieve(params, q, cfg.k)
    print("top items", tx.positional(ids, ["query", "rank"]).shape)


if __name__ == "__main__":
    main()
