"""A data + tensor parallel transformer MLP block (Megatron style): the batch split over ``data``, the
hidden ``mlp`` axis of both weight matrices over ``model``; the second matmul contracts the split axis
(an all-reduce). A jitted SGD step on an Explicit 4x2 mesh."""

from __future__ import annotations

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

from typing import TypedDict

import jax
import jax.numpy as jnp

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32

BATCH, SEQ, EMBED, MLP = 8, 4, 16, 32

RESOURCES = {"batch": "data", "mlp": "model"}
"""One model-wide mapping: activations by batch, weights by their hidden axis."""


class Block(TypedDict):
    w_in: NamedArray[f32, "embed mlp"]
    b_in: NamedArray[f32, "mlp"]
    w_out: NamedArray[f32, "mlp embed"]
    scale: NamedArray[f32, "embed"]


def init(key: jax.Array) -> Block:
    k1, k2 = jax.random.split(key)
    return {
        "w_in": tx.random.normal(k1, {"embed": EMBED, "mlp": MLP}) * 0.1,
        "b_in": tnp.zeros({"mlp": MLP}),
        "w_out": tx.random.normal(k2, {"mlp": MLP, "embed": EMBED}) * 0.1,
        "scale": tnp.ones({"embed": EMBED}),
    }


def layer_norm(x: NamedArray[f32, "batch@data seq embed"], scale: NamedArray[f32, "embed"]) -> NamedArray[f32, "batch@data seq embed"]:
    mean = tnp.mean(x, "embed")
    var = tnp.mean((x - mean) ** 2, "embed")
    return (x - mean) / tnp.sqrt(var + 1e-5) * scale


@tx.typed
def mlp(
    x: NamedArray[f32, "batch@data seq embed"],
    w_in: NamedArray[f32, "embed mlp@model"],
    b_in: NamedArray[f32, "mlp@model"],
    w_out: NamedArray[f32, "mlp@model embed"],
) -> NamedArray[f32, "batch@data seq embed"]:  # plant[p1 resource static]: ) -> NamedArray[f32, "batch@model seq embed"]:
    h = tnp.einsum("{embed},{embed,mlp}->{mlp}", x, w_in) + b_in  # plant[p2 name static]: h = tnp.einsum("{embed},{embed,mlp}->{mlp}", x, b_in) + b_in
    h = tnp.gelu(h)
    h = tx.constrain(h, {"batch": "data", "mlp": "model"})  # plant[p3 resource static]: h = tx.constrain(h, {"batch": "data", "mlp": "data"})
    return tnp.einsum("{mlp},{mlp,embed}->{embed}", h, w_out)


def forward(p: Block, x: NamedArray[f32, "batch@data seq embed"]) -> NamedArray[f32, "batch@data seq embed"]:
    w_in = tx.constrain(p["w_in"], {"mlp": "model"})  # plant[p4 resource static]: w_in = tx.constrain(p["w_in"], {"mlp": "data"})
    w_out = tx.constrain(p["w_out"], {"mlp": "model"})
    b_in = tx.constrain(p["b_in"], {"mlp": "model"})
    return x + mlp(layer_norm(x, p["scale"]), w_in, b_in, w_out)


def loss(p: Block, x: NamedArray[f32, "batch@data seq embed"], y: NamedArray[f32, "batch@data seq embed"]) -> jax.Array:
    err = forward(p, x) - y
    return tx.positional(tnp.mean(err * err, ("batch", "seq", "embed")), [])


@jax.jit
def step(p: Block, x: NamedArray[f32, "batch@data seq embed"], y: NamedArray[f32, "batch@data seq embed"]) -> tuple[Block, jax.Array]:
    value, grads = jax.value_and_grad(loss)(p, x, y)
    new = jax.tree.map(lambda w, g: w - 0.1 * g, p, grads)
    return new, value


if __name__ == "__main__":
    mesh = tx.fitting_mesh((4, 2), ("data", "model"))
    jax.set_mesh(mesh)
    k_p, k_x, k_y = jax.random.split(jax.random.key(0), 3)
    params = tx.shard(init(k_p), RESOURCES)
    x = tx.shard(tx.random.normal(k_x, {"batch": BATCH, "seq": SEQ, "embed": EMBED}), RESOURCES)  # plant[p5 size static]: x = tx.shard(tx.random.normal(k_x, {"batch": BATCH, "seq": SEQ, "embed": MLP}), RESOURCES)
    y = tx.shard(tx.random.normal(k_y, {"batch": BATCH, "seq": SEQ, "embed": EMBED}), {"batch": "data"})
    assert tx.resources_of(params["w_in"]) == {"mlp": "model"}
    for _ in range(3):
        params, value = step(params, x, y)
        print("loss", float(value))
    out = jax.jit(forward)(params, x)
    assert tx.resources_of(out) == {"batch": "data"}, tx.resources_of(out)
    print("ok")
