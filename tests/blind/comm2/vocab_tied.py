"""A language model's input and output layers with one embedding table tied between them and its vocabulary
split over ``model`` (vocab parallel), the tokens split along the batch over ``data``. The lookup is a gather
over the split ``vocab``; the output logits contract the whole ``embed`` and keep ``vocab`` split; the
cross-entropy and a z-loss reduce over the split ``vocab``; greedy decoding takes an argmax and sampling
candidates a top-k over it."""

from __future__ import annotations

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

import jax
import jax.numpy as jnp

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32, i32

MESH = {"data": 4, "model": 2}


class Config:
    vocab = 64
    embed = 16
    batch = 8
    seq = 8
    candidates = 4
    z_weight = 1e-4


RESOURCES = {"batch": "data", "vocab": "model"}


Table = NamedArray[f32, "vocab@model embed"]
Tokens = NamedArray[i32, "batch@data seq"]
Hidden = NamedArray[f32, "batch@data seq embed"]
Logits = NamedArray[f32, "batch@data seq vocab@model"]


def embed(table: Table, tokens: Tokens) -> Hidden:
    """The input embedding, scaled by sqrt(embed)."""
    return table[{"vocab": tokens}] * (Config.embed**0.5)


def unembed(table: Table, hidden: Hidden) -> Logits:
    """The tied output layer: each position's score for every word of its local slice of the vocabulary."""
    return tnp.einsum("{embed},{vocab,embed}->{vocab}", hidden, table)


def losses(table: Table, hidden: Hidden, targets: Tokens) -> NamedArray[f32, ""]:
    """Cross-entropy of the targets plus a z-loss on the log-partition."""
    logits = unembed(table, hidden)
    log_z = tnp.logsumexp(logits, "vocab")
    target_logits = logits[{"vocab": targets}]
    cross_entropy = (log_z - target_logits).mean(("batch", "seq"))
    return cross_entropy + Config.z_weight * (log_z * log_z).mean(("batch", "seq"))


def greedy(table: Table, hidden: Hidden) -> Tokens:
    """The next token of each position: the argmax over the split vocabulary."""
    return tnp.argmax(unembed(table, hidden), "vocab").astype(jnp.int32)


def candidates(table: Table, hidden: Hidden) -> NamedArray[f32, "batch@data seq cand"]:
    """The probabilities of each position's top candidates, renormalised among them."""
    probs = tnp.softmax(unembed(table, hidden), "vocab")
    top, _ = tnp.top_k(probs, Config.candidates, axis="vocab", new_axis="cand")
    return top / tnp.sum(top, "cand")


def example_arguments() -> dict[str, tuple[object, ...]]:
    """Each jitted function's arguments, placed as its annotations say."""
    c = Config
    k1, k2, k3, k4 = jax.random.split(jax.random.key(4), 4)
    table = tx.shard(tx.random.normal(k1, {"vocab": c.vocab, "embed": c.embed}) / 4, RESOURCES)
    tokens = tx.shard(tx.random.randint(k2, {"batch": c.batch, "seq": c.seq}, 0, c.vocab), RESOURCES)
    targets = tx.shard(tx.random.randint(k3, {"batch": c.batch, "seq": c.seq}, 0, c.vocab), RESOURCES)
    hidden = tx.shard(tx.random.normal(k4, {"batch": c.batch, "seq": c.seq, "embed": c.embed}), RESOURCES)
    return {
        "embed": (table, tokens),
        "unembed": (table, hidden),
        "losses": (table, hidden, targets),
        "greedy": (table, hidden),
        "candidates": (table, hidden),
    }


if __name__ == "__main__":
    from jax.sharding import AxisType

    mesh = jax.make_mesh((4, 2), ("data", "model"), axis_types=(AxisType.Explicit,) * 2)
    with jax.set_mesh(mesh):
        for name, args in example_arguments().items():
            jax.jit(globals()[name])(*args)
