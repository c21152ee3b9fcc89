"""A two-tower recommender: a user tower (id embedding plus the mean of the recently seen items) and an item
tower (id plus genre embedding), trained with in-batch negatives (a softmax over the batch's items), then
top-k retrieval over the whole item table with the seen items masked out. Parameters and batches are
placed on a 2x4 mesh: the batch split over ``data``, the rows of the embedding tables over ``model``."""

from __future__ import annotations

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

from dataclasses import dataclass
from functools import partial
from typing import Final, NamedTuple, TypedDict, TypeVar

import jax
import jax.numpy as jnp

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, bool_, f32, i32

from _sizes import N_ITEMS, N_USERS, TINY_BATCH, TOWER_EMBED


@dataclass(frozen=True)
class TowerConfig:
    n_users: int = N_USERS
    n_items: int = N_ITEMS
    n_genres: int = 4
    embed: int = TOWER_EMBED
    hidden_mult: int = 2
    proj: int = 8
    history: int = 3
    batch: int = TINY_BATCH
    k: int = 5
    temperature: float = 0.1
    lr: float = 0.05

    @property
    def hidden(self) -> int:
        return self.hidden_mult * self.embed


class Tower(TypedDict):
    w1: NamedArray[f32, "embed hidden"]
    b1: NamedArray[f32, "hidden"]
    w2: NamedArray[f32, "hidden proj"]


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class Params:
    user_emb: NamedArray[f32, "users embed"]
    item_emb: NamedArray[f32, "items embed"]
    genre_emb: NamedArray[f32, "genres embed"]
    user_tower: Tower
    item_tower: Tower


class Batch(NamedTuple):
    users: NamedArray[i32, "batch"]
    items: NamedArray[i32, "batch"]
    history: NamedArray[i32, "batch hist"]


# the tables split by rows over ``model`` (the towers are small: replicated), the batch over ``data``
RESOURCES: Final = {"batch": "data", "users": "model", "items": "model"}  # plant[r1 resource static]: RESOURCES: Final = {"batch": "data", "users": "model", "items": "model", "embed": "model"}

A = TypeVar("A", bound=tx.AnyNamedArray)


def init_tower(cfg: TowerConfig, key: jax.Array) -> Tower:
    k1, k2 = jax.random.split(key)
    return {
        "w1": tx.random.normal(k1, {"embed": cfg.embed, "hidden": cfg.hidden}) * cfg.embed**-0.5,  # plant[t1 size static]: "w1": tx.random.normal(k1, {"embed": cfg.embed, "hidden": cfg.hidden // 2}) * cfg.embed**-0.5,
        "b1": tnp.zeros({"hidden": cfg.hidden}, dtype=jnp.float32),
        "w2": tx.random.normal(k2, {"hidden": cfg.hidden, "proj": cfg.proj}) * cfg.hidden**-0.5,
    }


def init(cfg: TowerConfig, key: jax.Array) -> Params:
    k_u, k_i, k_g, k_ut, k_it = jax.random.split(key, 5)
    return Params(
        user_emb=tx.random.normal(k_u, {"users": cfg.n_users, "embed": cfg.embed}) * 0.1,
        item_emb=tx.random.normal(k_i, {"items": cfg.n_items, "embed": cfg.embed}) * 0.1,
        genre_emb=tx.random.normal(k_g, {"genres": cfg.n_genres, "embed": cfg.embed}) * 0.1,
        user_tower=init_tower(cfg, k_ut),
        item_tower=init_tower(cfg, k_it),
    )


@tx.typed
def tower(p: Tower, x: NamedArray[f32, "*rest embed"]) -> NamedArray[f32, "*rest proj"]:
    """Two layers, bfloat16 matmuls accumulated in float32; the output on the unit sphere."""
    h = tnp.einsum(
        "{embed},{embed,hidden}->{hidden}",
        x.astype(jnp.bfloat16),
        p["w1"].astype(jnp.bfloat16),
        preferred_element_type=jnp.float32,
    )
    h = tnp.relu(h + p["b1"])
    out = tnp.einsum("{hidden},{hidden,proj}->{proj}", h, p["w2"])
    return out / tnp.sqrt(tnp.sum(out * out, "proj") + 1e-6)


@tx.typed
def user_vectors(
    params: Params, users: NamedArray[i32, "batch"], history: NamedArray[i32, "batch hist"]
) -> NamedArray[f32, "batch proj"]:
    own = params.user_emb[{"users": users}]
    seen = tnp.mean(params.item_emb[{"items": history}], "hist")  # plant[t2 name static]: seen = tnp.mean(params.item_emb[{"items": history}], "batch")
    return tower(params.user_tower, own + seen)  # plant[t3 dtype static]: return tower(params.user_tower, own + seen).astype(jnp.bfloat16)


@tx.typed
def item_vectors(
    params: Params, items: NamedArray[i32, "*rest"], item_genre: NamedArray[i32, "items"]
) -> NamedArray[f32, "*rest proj"]:
    genre = item_genre[{"items": items}]
    return tower(params.item_tower, params.item_emb[{"items": items}] + params.genre_emb[{"genres": genre}])


def in_batch_loss(params: Params, batch: Batch, item_genre: NamedArray[i32, "items"], cfg: TowerConfig) -> jax.Array:
    u = user_vectors(params, batch.users, batch.history)
    # the batch's items as candidates: a new axis, moved from ``data`` to ``model``
    v = item_vectors(params, batch.items, item_genre).rename({"batch": "cand"})  # plant[t4 name static]: v = item_vectors(params, batch.items, item_genre).rename({"batch": "cands"})
    v = tx.constrain(v, {"cand": "model"})
    cand_items = tx.constrain(batch.items.rename({"batch": "cand"}), {"cand": "model"})
    logits = tnp.einsum("{batch,proj},{cand,proj}->{batch,cand}", u, v) / cfg.temperature
    logits = tx.constrain(logits, {"batch": "data", "cand": "model"})  # plant[r2 resource static]: logits = tx.constrain(logits, {"batch": "data", "cand": "data"})
    # the same item twice in a batch is not a negative for itself
    rows = tnp.arange("batch", cfg.batch)
    diagonal = rows == tnp.arange("cand", cfg.batch)
    duplicate = tnp.logical_and(batch.items == cand_items, tnp.logical_not(diagonal))
    logp = tnp.log_softmax(tnp.where(duplicate, -1e9, logits), "cand")
    positive = logp[{"cand": rows}]  # pointwise: row b reads column b
    return tx.positional(-tnp.mean(positive, "batch"), [])


def sgd(p: A, g: A, lr: float) -> A:
    return p - lr * g


@partial(jax.jit, static_argnames=("cfg",))
def train_step(
    params: Params, batch: Batch, item_genre: NamedArray[i32, "items"], cfg: TowerConfig
) -> tuple[Params, jax.Array]:
    value, grads = jax.value_and_grad(in_batch_loss)(params, batch, item_genre, cfg)
    new = jax.tree.map(lambda p, g: sgd(p, g, cfg.lr), params, grads, is_leaf=lambda v: isinstance(v, tx.AnyNamedArray))
    return new, value


@partial(jax.jit, static_argnames=("cfg",))
def retrieve(
    params: Params, batch: Batch, item_genre: NamedArray[i32, "items"], cfg: TowerConfig
) -> tuple[NamedArray[f32, "batch rank"], NamedArray[i32, "batch rank"]]:
    u = user_vectors(params, batch.users, batch.history)
    all_items = item_vectors(params, tnp.arange("items", cfg.n_items), item_genre)
    scores = tnp.einsum("{batch,proj},{items,proj}->{batch,items}", u, all_items)
    scores = tx.constrain(scores, {"batch": "data", "items": "model"})  # plant[r3 resource static]: scores = tx.constrain(scores, {"batch": "model", "items": "model"})
    already_seen = tnp.max(tnp.one_hot(batch.history, "items", cfg.n_items), "hist") > 0.5
    scores = tnp.where(already_seen, -jnp.inf, scores)
    values, ids = tnp.top_k(scores, cfg.k, axis="items", new_axis="rank")  # plant[t5 name static]: values, ids = tnp.top_k(scores, cfg.k, axis="cand", new_axis="rank")
    return values, ids


def make_batch(cfg: TowerConfig, key: jax.Array, size: int) -> Batch:
    k_u, k_i, k_h = jax.random.split(key, 3)
    return Batch(
        users=tx.random.randint(k_u, {"batch": size}, 0, cfg.n_users),
        items=tx.random.randint(k_i, {"batch": size}, 0, cfg.n_items),
        history=tx.random.randint(k_h, {"batch": size, "hist": cfg.history}, 0, cfg.n_items),
    )


if __name__ == "__main__":
    cfg = TowerConfig()
    mesh = tx.fitting_mesh((2, 4), ("data", "model"), emulate=True)
    with jax.set_mesh(mesh):
        key = jax.random.key(0)
        k_init, k_batch, k_genre, k_eval = jax.random.split(key, 4)
        params = tx.shard(init(cfg, k_init), RESOURCES)
        item_genre = tx.random.randint(k_genre, {"items": cfg.n_items}, 0, cfg.n_genres)
        batch = tx.shard(make_batch(cfg, k_batch, cfg.batch), RESOURCES)
        print("user tower w1 on", tx.resources_of(params.user_tower["w1"]))
        for _ in range(2):
            params, value = train_step(params, batch, item_genre, cfg)
            print("in-batch loss", float(value))
        eval_batch = tx.shard(make_batch(cfg, k_eval, cfg.batch), RESOURCES)  # plant[t6 size runtime]: eval_batch = tx.shard(make_batch(cfg, k_eval, cfg.batch - 1), RESOURCES)
        values, ids = retrieve(params, eval_batch, item_genre, cfg)
        assert ids.named_shape == {"batch": cfg.batch, "rank": cfg.k}
        print("top items", jax.device_get(tx.positional(ids, ["batch", "rank"]))[0], "on", tx.resources_of(ids))
