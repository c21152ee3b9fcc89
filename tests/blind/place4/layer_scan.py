"""A stack of sequence-parallel MLP blocks run by ``tx.scan`` over the stacked weights. Between blocks the
activations are split along ``seq`` over ``model`` (the RMS norm runs there, on each device's rows); before the
MLP the sequence is all-gathered and the MLP's hidden axis is split over ``model`` (tensor parallel); the MLP's
output is scattered back to the sequence split. The batch stays split over ``data`` throughout."""

from __future__ import annotations

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

from dataclasses import dataclass
from functools import partial
from typing import Final, TypedDict

import jax
import jax.numpy as jnp

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32

SEQ_PARALLEL: Final = {"batch": "data", "seq": "model"}
TENSOR_PARALLEL: Final = {"batch": "data"}
WEIGHTS: Final = {"mlp": "model"}

Hidden = NamedArray[f32, "batch@data seq@model embed"]


@dataclass(frozen=True)
class StackConfig:
    batch: int = 4
    seq: int = 8
    embed: int = 8
    expansion: int = 2
    layers: int = 3
    lr: float = 0.05

    @property
    def mlp(self) -> int:
        return self.expansion * self.embed


class Layer(TypedDict):
    w1: NamedArray[f32, "embed mlp@model"]
    w2: NamedArray[f32, "mlp@model embed"]
    scale: NamedArray[f32, "embed"]


class Stack(TypedDict):
    w1: NamedArray[f32, "layers embed mlp@model"]
    w2: NamedArray[f32, "layers mlp@model embed"]
    scale: NamedArray[f32, "layers embed"]


def init(cfg: StackConfig, key: jax.Array) -> Stack:
    k1, k2 = jax.random.split(key)
    w1 = tx.random.normal(k1, {"layers": cfg.layers, "embed": cfg.embed, "mlp": cfg.mlp}) * cfg.embed**-0.5
    w2 = tx.random.normal(k2, {"layers": cfg.layers, "mlp": cfg.mlp, "embed": cfg.embed}) * cfg.mlp**-0.5
    return {
        "w1": tx.shard(w1, WEIGHTS),  # plant[t1 resource static]: "w1": tx.shard(w1, {"layers": "model"}),
        "w2": tx.shard(w2, WEIGHTS),
        "scale": tnp.ones({"layers": cfg.layers, "embed": cfg.embed}),
    }


@tx.typed
def rms_norm(h: Hidden, scale: NamedArray[f32, "embed"]) -> Hidden:
    ms = tnp.mean(h * h, "embed")
    return h * tnp.reciprocal(tnp.sqrt(ms + 1e-6)) * scale


@tx.typed
def block(h: Hidden, p: Layer) -> tuple[Hidden, NamedArray[f32, ""]]:
    hn = rms_norm(h, p["scale"])
    full = tx.constrain(hn, TENSOR_PARALLEL)  # plant[t2 resource static]: full = hn
    z = tnp.gelu(tnp.einsum("{batch,seq,embed},{embed,mlp}->{batch,seq,mlp}", full, p["w1"]))
    out = tnp.einsum("{batch,seq,mlp},{mlp,embed}->{batch,seq,embed}", z, p["w2"])
    out = tx.constrain(out, SEQ_PARALLEL)  # plant[t3 resource static]: out = tx.constrain(out, {"batch": "data", "embed": "model"})
    return h + out, tnp.mean(out * out, ("batch", "seq", "embed"))


@tx.typed
def forward(stack: Stack, x: Hidden) -> tuple[Hidden, NamedArray[f32, "layers"]]:
    h, energies = tx.scan(block, x, stack, axis="layers")  # plant[t6 resource static]: h, energies = tx.scan(block, tx.constrain(x, TENSOR_PARALLEL), stack, axis="layers")
    return h, energies  # plant[t4 resource static]: return tx.constrain(h, TENSOR_PARALLEL), energies


def loss(stack: Stack, x: Hidden, target: Hidden) -> jax.Array:
    h, energies = forward(stack, x)
    err = h - target
    return tx.positional(tnp.mean(err * err, ("batch", "seq", "embed")) + 1e-3 * tnp.sum(energies, "layers"), [])


@partial(jax.jit, static_argnames=("lr",))
def train_step(stack: Stack, x: Hidden, target: Hidden, lr: float) -> tuple[Stack, jax.Array]:
    value, grads = jax.value_and_grad(loss)(stack, x, target)
    new: Stack = {
        "w1": stack["w1"] - lr * grads["w1"],
        "w2": stack["w2"] - lr * grads["w2"],
        "scale": stack["scale"] - lr * grads["scale"],
    }
    return new, value


def main() -> None:
    cfg = StackConfig()
    jax.set_mesh(jax.make_mesh((4, 2), ("data", "model")))
    k_p, k_x = jax.random.split(jax.random.key(3))
    stack = init(cfg, k_p)
    raw = tx.random.normal(k_x, {"batch": cfg.batch, "seq": cfg.seq, "embed": cfg.embed})
    x = tx.shard(raw, SEQ_PARALLEL)  # plant[t5 resource static]: x = tx.shard(raw, TENSOR_PARALLEL)
    target = tx.shard(tnp.roll(raw, 1, "seq"), SEQ_PARALLEL)
    for step in range(2):
        stack, value = train_step(stack, x, target, cfg.lr)
        print("step", step, float(value))
    h, energies = forward(stack, x)
    print("energies", energies.named_shape, tx.resources_of(h))


if __name__ == "__main__":
    main()
