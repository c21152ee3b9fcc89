"""A top-2 mixture-of-experts feed-forward layer with expert parallelism: tokens split by batch over every
device, the experts (and their weights) over ``model``; dispatch and combine move the tokens between the two
placements (two all-to-alls). Explicit 2x4 mesh, a jitted loss and gradient."""

from __future__ import annotations

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

from typing import TypedDict

import jax
import jax.numpy as jnp

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32

BATCH, SEQ, EMBED, MLP, EXPERTS, CAPACITY = 8, 6, 8, 16, 4, 4

TOKENS = {"batch": ("data", "model")}
EXPERT_SLOTS = {"batch": "data", "expert": "model"}  # plant[p1 resource static]: EXPERT_SLOTS = {"batch": "model", "expert": "model"}
PARAMS = {"expert": "model"}

Tokens = NamedArray[f32, "batch@(data,model) seq embed"]


class MoEParams(TypedDict):
    router: NamedArray[f32, "embed expert"]
    w_in: NamedArray[f32, "expert embed mlp"]
    w_out: NamedArray[f32, "expert mlp embed"]


def init(key: jax.Array) -> MoEParams:
    k1, k2, k3 = jax.random.split(key, 3)
    return {
        "router": tx.random.normal(k1, {"embed": EMBED, "expert": EXPERTS}) * 0.3,
        "w_in": tx.random.normal(k2, {"expert": EXPERTS, "embed": EMBED, "mlp": MLP}) * 0.3,
        "w_out": tx.random.normal(k3, {"expert": EXPERTS, "mlp": MLP, "embed": EMBED}) * 0.3,
    }


def expert_mlp(
    inputs: NamedArray[f32, "batch@data expert@model slot embed"],
    w_in: NamedArray[f32, "expert@model embed mlp"],
    w_out: NamedArray[f32, "expert@model mlp embed"],
) -> NamedArray[f32, "batch@data expert@model slot embed"]:  # plant[p2 resource static]: ) -> NamedArray[f32, "batch@data expert@data slot embed"]:
    hidden = tnp.gelu(tnp.einsum("{expert,embed},{expert,embed,mlp}->{expert,mlp}", inputs, w_in))
    return tnp.einsum("{expert,mlp},{expert,mlp,embed}->{expert,embed}", hidden, w_out)


def moe_layer(x: Tokens, p: MoEParams) -> tuple[Tokens, NamedArray[f32, ""]]:
    logits = tnp.einsum("{embed},{embed,expert}->{expert}", x, p["router"])  # plant[p3 name static]: logits = tnp.einsum("{embed},{embed,expert}->{expert}", x, p["w_in"])
    dispatch, combine, balance = tx.moe_route(logits, 2, CAPACITY, expert="expert", tokens="seq")
    inputs = tx.moe_dispatch(x, dispatch, tokens="seq", resources=EXPERT_SLOTS, from_resources=TOKENS)
    w_in = tx.constrain(p["w_in"], PARAMS)
    w_out = tx.constrain(p["w_out"], PARAMS)  # plant[p4 resource static]: w_out = tx.constrain(p["w_out"], {"expert": "model", "embed": "model"})
    outputs = expert_mlp(inputs, w_in, w_out)
    mixed = tx.moe_combine(outputs, combine, resources=TOKENS, from_resources=EXPERT_SLOTS)  # plant[p5 resource static]: mixed = tx.moe_combine(outputs, combine, resources={"batch": "data", "embed": "data"}, from_resources=EXPERT_SLOTS)
    return x + mixed, balance


def loss(p: MoEParams, x: Tokens, target: Tokens) -> jax.Array:
    y, balance = moe_layer(x, p)
    mse = tnp.mean(tnp.square(y - target), ("batch", "seq", "embed"))
    return tx.positional(mse + 0.01 * balance, [])


if __name__ == "__main__":
    jax.set_mesh(tx.fitting_mesh((2, 4), ("data", "model")))
    k_p, k_x, k_t = jax.random.split(jax.random.key(3), 3)
    params = tx.shard(init(k_p), PARAMS)
    x = tx.shard(tx.random.normal(k_x, {"batch": BATCH, "seq": SEQ, "embed": EMBED}), TOKENS)
    target = tx.shard(tx.random.normal(k_t, {"batch": BATCH, "seq": SEQ, "embed": EMBED}), TOKENS)
    value, grads = jax.jit(jax.value_and_grad(loss))(params, x, target)
    assert tx.resources_of(grads["w_in"]) == {"expert": "model"}, tx.resources_of(grads["w_in"])
    y, _ = jax.jit(moe_layer)(x, params)
    assert tx.resources_of(y) == {"batch": ("data", "model")}, tx.resources_of(y)
    print("loss", float(value), "ok")
