"""A two-tower retrieval model (users and items embedded into one space, trained with in-batch negatives).
The large ID embedding tables are split by row over every device (``(data, model)``); the user batch is
split over ``data``; the towers' hidden layer is split over ``model``; at serving time the candidate items
are split over ``model`` and each user's best items are selected from all of them."""

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

import jax
import jax.numpy as jnp
from jax.sharding import AxisType

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32, i32

MESH = {"data": 4, "model": 2}
TABLES = {"user": ("data", "model"), "item": ("data", "model")}
BATCH = {"batch": "data"}

Table = NamedArray[f32, "user@(data,model) embed"]
ItemTable = NamedArray[f32, "item@(data,model) embed"]
Users = NamedArray[f32, "batch@data out"]


def _normalise(v: NamedArray[f32, "*rest out"]) -> NamedArray[f32, "*rest out"]:
    return v / tnp.sqrt((v * v).sum("out") + 1e-6)


def user_tower(
    history: NamedArray[i32, "batch@data recent"],
    table: Table,
    w1: NamedArray[f32, "embed hidden@model"],
    w2: NamedArray[f32, "hidden@model out"],
) -> Users:
    """Average the embeddings of each user's recent IDs, then a two-layer MLP, normalised."""
    pooled = table[{"user": history}].mean("recent")
    hidden = tnp.relu(tnp.einsum("{embed},{embed,hidden}->{hidden}", pooled, w1))
    return _normalise(tnp.einsum("{hidden},{hidden,out}->{out}", hidden, w2))


def item_tower(ids: NamedArray[i32, "batch@data"], table: ItemTable, w: NamedArray[f32, "embed out"]) -> Users:
    """Each positive item's embedding, projected and normalised."""
    return _normalise(tnp.dot(tnp.take(table, ids, "item"), w, axis="embed"))


def in_batch_loss(users: Users, items: Users, temperature: jax.Array) -> jax.Array:
    """Softmax over every item of the batch (the others are the negatives); the positive is the diagonal."""
    candidates = tx.constrain(items, {"batch": None}).rename({"batch": "cand"})  # every device scores all items
    scores = tnp.einsum("{out},{cand,out}->{cand}", users, candidates) / temperature
    log_probs = tnp.log_softmax(scores, "cand")
    positives = log_probs * tnp.one_hot(
        tnp.arange("batch", users.named_shape["batch"]), "cand", users.named_shape["batch"]
    )
    loss: jax.Array = -positives.sum(("batch", "cand")).data / users.named_shape["batch"]
    return loss


def retrieve(users: Users, catalogue: NamedArray[f32, "cand@model out"]) -> NamedArray[i32, "batch@data top"]:
    """Each user's ten best catalogue items (by inner product)."""
    scores = tnp.einsum("{out},{cand,out}->{cand}", users, catalogue)
    _, best = tnp.top_k(scores, 10, axis="cand", new_axis="top")
    return best


def example_arguments() -> dict[str, tuple[object, ...]]:
    key = iter(jax.random.split(jax.random.key(4), 12))
    batch, recent, rows, embed, hidden, out, cand = 16, 8, 64, 16, 32, 16, 32
    history = tx.shard(tx.random.randint(next(key), {"batch": batch, "recent": recent}, 0, rows), BATCH)
    ids = tx.shard(tx.random.randint(next(key), {"batch": batch}, 0, rows), BATCH)
    users_t = tx.shard(tx.random.normal(next(key), {"user": rows, "embed": embed}), TABLES)
    items_t = tx.shard(tx.random.normal(next(key), {"item": rows, "embed": embed}), TABLES)
    w1 = tx.shard(tx.random.normal(next(key), {"embed": embed, "hidden": hidden}), {"hidden": "model"})
    w2 = tx.shard(tx.random.normal(next(key), {"hidden": hidden, "out": out}), {"hidden": "model"})
    w = tx.random.normal(next(key), {"embed": embed, "out": out})
    users = tx.shard(tx.random.normal(next(key), {"batch": batch, "out": out}), BATCH)
    items = tx.shard(tx.random.normal(next(key), {"batch": batch, "out": out}), BATCH)
    catalogue = tx.shard(tx.random.normal(next(key), {"cand": cand, "out": out}), {"cand": "model"})
    return {
        "user_tower": (history, users_t, w1, w2),
        "item_tower": (ids, items_t, w),
        "in_batch_loss": (users, items, jnp.float32(0.1)),
        "retrieve": (users, catalogue),
    }


if __name__ == "__main__":
    mesh = jax.make_mesh((4, 2), ("data", "model"), axis_types=(AxisType.Explicit,) * 2)
    with jax.set_mesh(mesh):
        for name, args in example_arguments().items():
            jax.jit(globals()[name])(*args)
