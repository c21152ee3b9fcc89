"""The ends of a language model with a vocabulary-parallel embedding: the table is split along `vocab` over
`model`, the tokens along the batch over `data`. An embedding lookup (a gather by an index array), tied output
logits, a cross-entropy over the split vocabulary and a greedy-decoding score."""

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
import jax

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32, i32

MESH = {"data": 4, "model": 2}
RESOURCES = {"batch": "data", "vocab": "model"}

Tokens = NamedArray[i32, "batch@data seq"]
Table = NamedArray[f32, "vocab@model embed"]
Logits = NamedArray[f32, "batch@data seq vocab@model"]


def embed(
    table: Table, positions: NamedArray[f32, "seq embed"], tokens: Tokens
) -> NamedArray[f32, "batch@data seq embed"]:
    return table[{"vocab": tokens}] + positions


def logits(h: NamedArray[f32, "batch@data seq embed"], table: Table) -> Logits:
    """Tied output projection: `embed` is whole, each device scores its own slice of the vocabulary."""
    return tnp.einsum("{embed},{vocab,embed}->{vocab}", h, table)


def cross_entropy(scores: Logits, targets: Tokens) -> jax.Array:
    log_probs = tnp.log_softmax(scores, "vocab")
    token_losses = -log_probs[{"vocab": targets}]
    mean: jax.Array = token_losses.mean(("batch", "seq")).data
    return mean


def best_score(scores: Logits) -> NamedArray[f32, "batch@data seq"]:
    """The greedy choice's logit: a max over the split vocabulary."""
    return tnp.max(scores, "vocab")


def example_arguments() -> dict[str, tuple[object, ...]]:
    keys = iter(jax.random.split(jax.random.key(2), 8))
    table = tx.shard(tx.random.normal(next(keys), {"vocab": 32, "embed": 16}), RESOURCES)
    positions = tx.random.normal(next(keys), {"seq": 8, "embed": 16})
    tokens = tx.shard(tx.random.randint(next(keys), {"batch": 8, "seq": 8}, 0, 32), RESOURCES)
    targets = tx.shard(tx.random.randint(next(keys), {"batch": 8, "seq": 8}, 0, 32), RESOURCES)
    h = tx.shard(tx.random.normal(next(keys), {"batch": 8, "seq": 8, "embed": 16}), RESOURCES)
    scores = tx.shard(tx.random.normal(next(keys), {"batch": 8, "seq": 8, "vocab": 32}), RESOURCES)
    return {
        "embed": (table, positions, tokens),
        "logits": (h, table),
        "cross_entropy": (scores, targets),
        "best_score": (scores,),
    }


if __name__ == "__main__":
    from jax.sharding import AxisType

    mesh = jax.make_mesh((4, 2), ("data", "model"), axis_types=(AxisType.Explicit,) * 2)
    with jax.set_mesh(mesh):
        for name, args in example_arguments().items():
            jax.jit(globals()[name])(*args)
