"""A 2-D mesh (data x model) chain of matmuls, Megatron-style: the up-projection splits ``hidden`` over
``model``, the down-projection contracts it away (an all-reduce), and every annotation says where each
axis lives. A jitted SGD step on a squared-error regression target."""

from __future__ import annotations

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

from dataclasses import dataclass
from typing import TypedDict

import jax
import jax.numpy as jnp

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32

ACTS = {"batch": "data"}
PARAMS = {"hidden": "model"}


@dataclass(frozen=True)
class ChainConfig:
    batch: int = 16
    d_in: int = 8
    hidden: int = 32
    d_out: int = 4
    lr: float = 0.05
    steps: int = 3


class Chain(TypedDict):
    w_up: NamedArray[f32, "d_in hidden@model"]
    b_up: NamedArray[f32, "hidden@model"]
    w_down: NamedArray[f32, "hidden@model d_out"]


@tx.typed
def up(
    x: NamedArray[f32, "batch@data d_in"], w: NamedArray[f32, "d_in hidden@model"], b: NamedArray[f32, "hidden@model"]
) -> NamedArray[f32, "batch@data hidden@model"]:
    h = tnp.einsum("{d_in},{d_in,hidden}->{hidden}", x, w)  # plant[p1 resource static]: h = tnp.einsum("{d_in},{d_in,hidden}->{hidden}", tx.constrain(x, {"batch": "model"}), w)
    return tnp.relu(h + b)


@tx.typed
def down(h: NamedArray[f32, "batch@data hidden@model"], w: NamedArray[f32, "hidden@model d_out"]) -> NamedArray[f32, "batch@data d_out"]:  # plant[p2 resource static]: def down(h: NamedArray[f32, "batch@data hidden@model"], w: NamedArray[f32, "hidden@model d_out"]) -> NamedArray[f32, "batch@model d_out"]:
    return tnp.einsum("{hidden},{hidden,d_out}->{d_out}", h, w)


@tx.typed
def forward(params: Chain, x: NamedArray[f32, "batch@data d_in"]) -> NamedArray[f32, "batch@data d_out"]:
    h = up(x, params["w_up"], params["b_up"])
    return down(h, params["w_down"])


def loss(params: Chain, x: NamedArray[f32, "batch@data d_in"], y: NamedArray[f32, "batch@data d_out"]) -> jax.Array:
    err = forward(params, x) - y  # plant[p3 name static]: err = forward(params, x) - y.sum("d_in")
    return tx.positional(tnp.mean(err * err, ("batch", "d_out")), [])


@jax.jit
def sgd_step(params: Chain, x: NamedArray[f32, "batch@data d_in"], y: NamedArray[f32, "batch@data d_out"]) -> tuple[Chain, jax.Array]:
    value, grads = jax.value_and_grad(loss)(params, x, y)
    new: Chain = jax.tree.map(lambda p, g: p - 0.05 * g, params, grads)
    return new, value


def init(cfg: ChainConfig, key: jax.Array) -> Chain:
    k1, k2 = jax.random.split(key)
    params: Chain = {
        "w_up": tx.random.normal(k1, {"d_in": cfg.d_in, "hidden": cfg.hidden}) / cfg.d_in**0.5,
        "b_up": tnp.zeros({"hidden": cfg.hidden}),
        "w_down": tx.random.normal(k2, {"hidden": cfg.hidden, "d_out": cfg.d_out}) / cfg.hidden**0.5,
    }
    return tx.shard(params, PARAMS)  # plant[p4 resource runtime]: return tx.shard(params, {"hidden": "data"})


def main() -> None:
    cfg = ChainConfig()
    mesh = tx.fitting_mesh((2, 4), ("data", "model"))
    jax.set_mesh(mesh)
    kp, kx = jax.random.split(jax.random.key(0))
    params = init(cfg, kp)
    x = tx.shard(tx.random.normal(kx, {"batch": cfg.batch, "d_in": cfg.d_in}), ACTS)
    y = tx.shard(tnp.ones({"batch": cfg.batch, "d_out": cfg.d_out}), ACTS)  # plant[p5 resource static]: y = tx.shard(tnp.ones({"batch": cfg.batch, "d_out": cfg.d_out}), {"batch": "data", "d_out": "data"})
    losses = []
    for _ in range(cfg.steps):
        params, value = sgd_step(params, x, y)
        losses.append(float(value))
    assert tx.resources_of(params["w_up"]) == {"hidden": "model"}
    assert losses[-1] < losses[0], losses
    print("chain2d losses", [round(v, 4) for v in losses])


if __name__ == "__main__":
    main()
