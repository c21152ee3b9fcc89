"""A top-2 mixture-of-experts feed-forward block with expert parallelism: tokens are split by ``batch`` over
``data``; each of the 4 experts lives on its own slice of ``model``, its dispatched slots placed with
``expert`` on ``model``. A small regression target and one jitted SGD step with the balance loss added."""

from __future__ import annotations

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

from typing import TypedDict

import jax
import jax.numpy as jnp

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32

N_BATCH, N_SEQ, N_EMBED, N_MLP, N_EXPERT, CAPACITY = 4, 8, 8, 16, 4, 4

TOKENS = {"batch": "data"}
SLOTS = {"batch": "data", "expert": "model"}
PARAMS = {"expert": "model"}

Tokens = NamedArray[f32, "batch@data seq embed"]


class Experts(TypedDict):
    router: NamedArray[f32, "embed expert"]
    w_in: NamedArray[f32, "expert@model embed mlp"]
    w_out: NamedArray[f32, "expert@model mlp embed"]


def init(key: jax.Array) -> Experts:
    k1, k2, k3 = jax.random.split(key, 3)
    return {
        "router": tx.random.normal(k1, {"embed": N_EMBED, "expert": N_EXPERT}) * 0.3,
        "w_in": tx.random.normal(k2, {"expert": N_EXPERT, "embed": N_EMBED, "mlp": N_MLP}) * 0.3,
        "w_out": tx.random.normal(k3, {"expert": N_EXPERT, "mlp": N_MLP, "embed": N_EMBED}) * 0.3,
    }


def place(p: Experts) -> Experts:
    router = tx.shard(p["router"], {"expert": None})
    w_in = tx.shard(p["w_in"], PARAMS)
    w_out = tx.shard(p["w_out"], PARAMS)  # plant[p1 resource static]: w_out = tx.shard(p["w_out"], {"expert": "data"})
    return {"router": router, "w_in": w_in, "w_out": w_out}


@tx.typed
def moe_ffn(x: Tokens, p: Experts) -> tuple[Tokens, NamedArray[f32, ""]]:
    logits = tnp.einsum("{embed},{embed,expert}->{expert}", x, p["router"])  # plant[p2 resource static]: logits = tnp.einsum("{embed},{embed,expert}->{expert}", x, tx.constrain(p["router"], {"expert": "data"}))
    dispatch, combine, balance = tx.moe_route(logits, 2, CAPACITY, expert="expert", tokens="seq")  # plant[p3 name static]: dispatch, combine, balance = tx.moe_route(logits, 2, CAPACITY, expert="experts", tokens="seq")
    slots = tx.moe_dispatch(x, dispatch, tokens="seq", resources=SLOTS, from_resources=TOKENS)  # plant[p4 resource static]: slots = tx.moe_dispatch(x, dispatch, tokens="seq", resources={"batch": "model", "expert": "model"}, from_resources=TOKENS)
    hidden = tnp.relu(tnp.einsum("{expert,embed},{expert,embed,mlp}->{expert,mlp}", slots, p["w_in"]))
    outputs = tnp.einsum("{expert,mlp},{expert,mlp,embed}->{expert,embed}", hidden, p["w_out"])
    mixed = tx.moe_combine(outputs, combine, resources=TOKENS, from_resources=SLOTS)  # plant[p5 resource static]: mixed = tx.moe_combine(outputs, combine, resources={"batch": "model"}, from_resources=SLOTS)
    return x + mixed, balance


def loss(p: Experts, x: Tokens, target: Tokens) -> jax.Array:
    y, balance = moe_ffn(x, p)
    err = y - target
    total: jax.Array = (tnp.mean(err * err, ("batch", "seq", "embed")) + 0.01 * balance).data
    return total


@jax.jit
def sgd(p: Experts, x: Tokens, target: Tokens) -> tuple[Experts, jax.Array]:
    value, grads = jax.value_and_grad(loss)(p, x, target)
    return jax.tree.map(lambda w, g: w - 0.1 * g, p, grads), value


if __name__ == "__main__":
    mesh = tx.fitting_mesh((2, 4), ("data", "model"))
    jax.set_mesh(mesh)
    params = place(init(jax.random.key(0)))
    raw = tx.random.normal(jax.random.key(1), {"batch": N_BATCH, "seq": N_SEQ, "embed": N_EMBED})
    x = tx.shard(raw, TOKENS)  # plant[p6 resource static]: x = tx.shard(raw, {"seq": None})
    target = tx.shard(tnp.sin(raw), TOKENS)
    params, before = sgd(params, x, target)
    for _ in range(3):
        params, after = sgd(params, x, target)
    print("loss", float(before), "->", float(after))
    assert float(after) < float(before)
    assert tx.resources_of(params["w_in"]) == PARAMS
    print("ok")
