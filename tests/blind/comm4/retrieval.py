"""A dense retrieval head over a sharded candidate table: queries are embedded from token ids (a lookup in a
whole vocabulary table), pooled and projected, batch split over ``data``; the candidate table is split by
candidate over ``model``. Scores are an einsum over the embedding (no contraction of a split axis), retrieval is
a top-k over the split candidates followed by a lookup of the chosen rows, and training is an in-batch-negatives
style cross-entropy against each query's positive candidate with an Adam update of the projection and table."""

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

from typing import TypedDict

import jax

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32, i32

MESH = {"data": 4, "model": 2}

BATCH, SEQ, VOCAB, EMBED, DIM, CANDIDATES, TOP = 8, 8, 32, 16, 16, 64, 4
TEMPERATURE = 0.1

QueryTokens = NamedArray[i32, "batch@data seq"]
Query = NamedArray[f32, "batch@data dim"]
Table = NamedArray[f32, "cand@model dim"]
Scores = NamedArray[f32, "batch@data cand@model"]


class Encoder(TypedDict):
    embed: NamedArray[f32, "vocab embed"]
    proj: NamedArray[f32, "embed dim"]
    gain: NamedArray[f32, "dim"]


class Retriever(TypedDict):
    encoder: Encoder
    table: Table


def rms_norm(x: NamedArray[f32, "*rest dim"], gain: NamedArray[f32, "dim"]) -> NamedArray[f32, "*rest dim"]:
    return x / tnp.sqrt(tnp.mean(tnp.square(x), "dim") + 1e-6) * gain


def encode(tokens: QueryTokens, enc: Encoder) -> Query:
    """Mean-pooled token embeddings, projected and RMS-normalised."""
    emb = enc["embed"][{"vocab": tokens}]
    pooled = tnp.mean(emb, "seq")
    return rms_norm(tnp.einsum("{batch,embed},{embed,dim}->{batch,dim}", pooled, enc["proj"]), enc["gain"])


def scores(query: Query, table: Table) -> Scores:
    return tnp.einsum("{batch,dim},{cand,dim}->{batch,cand}", query, table) / TEMPERATURE


def retrieve(
    tokens: QueryTokens, params: Retriever
) -> tuple[NamedArray[i32, "batch@(data,model) hit"], NamedArray[f32, "batch@(data,model) hit dim"]]:
    """The TOP best candidates of each query (ids) and their table rows. The scores move ``model`` from the
    candidates to the queries first, so that each device ranks whole rows."""
    by_query = tx.constrain(scores(encode(tokens, params["encoder"]), params["table"]), {"batch": ("data", "model")})
    _, ids = tnp.top_k(by_query, TOP, axis="cand", new_axis="hit")
    rows = params["table"][{"cand": ids}]
    return ids, rows


def loss(params: Retriever, tokens: QueryTokens, positives: NamedArray[i32, "batch@data"]) -> jax.Array:
    """Softmax cross-entropy over every candidate, the positive picked per query."""
    log_probs = tnp.log_softmax(scores(encode(tokens, params["encoder"]), params["table"]), "cand")
    nll = -log_probs[{"cand": positives}]
    return tx.positional(tnp.mean(nll, "batch"), [])


def adam_step(
    params: Retriever,
    m: Retriever,
    v: Retriever,
    tokens: QueryTokens,
    positives: NamedArray[i32, "batch@data"],
) -> tuple[jax.Array, Retriever, Retriever, Retriever]:
    """One Adam step (bias correction of the first step folded into the constants)."""
    value, grads = jax.value_and_grad(loss)(params, tokens, positives)
    b1, b2, lr = 0.9, 0.999, 1e-3
    m = jax.tree.map(lambda a, g: b1 * a + (1 - b1) * g, m, grads)
    v = jax.tree.map(lambda a, g: b2 * a + (1 - b2) * g * g, v, grads)
    params = jax.tree.map(lambda p, a, b: p - lr * (a / (1 - b1)) / (tnp.sqrt(b / (1 - b2)) + 1e-8), params, m, v)
    return value, params, m, v


RESOURCES = {"batch": "data", "cand": "model"}


def init(key: jax.Array) -> Retriever:
    k1, k2, k3 = jax.random.split(key, 3)
    return {
        "encoder": {
            "embed": tx.random.normal(k1, {"vocab": VOCAB, "embed": EMBED}),
            "proj": tx.random.normal(k2, {"embed": EMBED, "dim": DIM}) / 4,
            "gain": tnp.ones({"dim": DIM}),
        },
        "table": tx.random.normal(k3, {"cand": CANDIDATES, "dim": DIM}) / 4,
    }


def example_arguments() -> dict[str, tuple[object, ...]]:
    params = tx.shard(init(jax.random.key(0)), RESOURCES)
    zeros = jax.tree.map(lambda p: p * 0.0, params)
    tokens = tx.shard(tx.random.randint(jax.random.key(1), {"batch": BATCH, "seq": SEQ}, 0, VOCAB), RESOURCES)
    positives = tx.shard(tx.random.randint(jax.random.key(2), {"batch": BATCH}, 0, CANDIDATES), RESOURCES)
    query = tx.shard(tx.random.normal(jax.random.key(3), {"batch": BATCH, "dim": DIM}), RESOURCES)
    return {
        "encode": (tokens, params["encoder"]),
        "scores": (query, params["table"]),
        "retrieve": (tokens, params),
        "loss": (params, tokens, positives),
        "adam_step": (params, zeros, zeros, tokens, positives),
    }


if __name__ == "__main__":
    from jax.sharding import AxisType

    mesh = jax.make_mesh((4, 2), ("data", "model"), axis_types=(AxisType.Explicit,) * 2)
    with jax.set_mesh(mesh):
        for name, args in example_arguments().items():
            jax.jit(globals()[name])(*args)
