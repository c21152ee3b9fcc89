"""Keyword spotting: two 1-D convolutions over time on log-mel frames, max pooling, a mean over time, a head."""

from __future__ import annotations

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

from dataclasses import dataclass
from functools import partial
from typing import TypedDict

import jax
import jax.numpy as jnp

import typed_xmap as tx
import typed_xmap.numpy as tnp
from _sizes import BATCH, HIDDEN, LEARNING_RATE
from typed_xmap import NamedArray, f32, i32


@dataclass(frozen=True)
class Config:
    batch: int = BATCH
    frames: int = 32
    mels: int = 10
    channels: int = HIDDEN
    half_width: int = 1  # kernel width 2 * half_width + 1
    pool: int = 2
    classes: int = 5

    @property
    def width(self) -> int:
        return 2 * self.half_width + 1

    @property
    def wide(self) -> int:
        return self.channels * 2


class Params(TypedDict):
    conv1: NamedArray[f32, "kt mels channels"]
    conv2: NamedArray[f32, "kt channels wide"]
    bias2: NamedArray[f32, "wide"]
    head: NamedArray[f32, "wide classes"]


RESOURCES = {"batch": "data", "wide": "model"}


def init(cfg: Config, key: jax.Array) -> Params:
    k1, k2, k3 = jax.random.split(key, 3)
    return {
        "conv1": tx.random.normal(k1, {"kt": cfg.width, "mels": cfg.mels, "channels": cfg.channels}) * 0.3,
        "conv2": tx.random.normal(k2, {"kt": cfg.width, "channels": cfg.channels, "wide": cfg.wide}) * 0.2,  # plant[k1 size static]: "conv2": tx.random.normal(k2, {"kt": cfg.width, "channels": cfg.channels // 2, "wide": cfg.wide}) * 0.2,
        "bias2": tnp.zeros({"wide": cfg.wide}, jnp.float32),  # plant[k2 size static]: "bias2": tnp.zeros({"wide": cfg.channels * 2 + 1}, jnp.float32),
        "head": tx.random.normal(k3, {"wide": cfg.wide, "classes": cfg.classes}) * 0.1,
    }


@tx.typed
def features(p: Params, mel: NamedArray[f32, "batch frames mels"], cfg: Config) -> NamedArray[f32, "batch wide"]:
    """Conv (same padding) in bf16, conv (valid), max pool over frames, then the mean over the pooled frames."""
    x = mel.astype(jnp.bfloat16)
    h = tnp.conv(x, p["conv1"].astype(jnp.bfloat16), {"frames": "kt"}, "mels", padding="SAME")  # plant[k3 name static]: h = tnp.conv(x, p["conv1"].astype(jnp.bfloat16), {"frames": "kt"}, "channels", padding="SAME")
    h = tnp.relu(h).astype(jnp.float32)
    h = tnp.conv(h, p["conv2"], {"frames": "kt"}, "channels") + p["bias2"]
    h = tx.constrain(tnp.relu(h), {"batch": "data", "wide": "model"})  # plant[k4 resource static]: h = tx.constrain(tnp.relu(h), {"batch": "data", "wide": "data"})
    pooled = tnp.max_pool(h, {"frames": cfg.pool}, strides={"frames": cfg.pool})
    return tnp.mean(pooled, "frames")  # plant[k5 return static]: return tnp.max(pooled, "wide")


@tx.typed
def logits(p: Params, mel: NamedArray[f32, "batch frames mels"], cfg: Config) -> NamedArray[f32, "batch classes"]:
    return tnp.einsum("{batch,wide},{wide,classes}->{batch,classes}", features(p, mel, cfg), p["head"])


@tx.typed
def loss(p: Params, mel: NamedArray[f32, "batch frames mels"], labels: NamedArray[i32, "batch"], cfg: Config) -> jax.Array:
    logp = tnp.log_softmax(logits(p, mel, cfg), "classes")
    target = tnp.one_hot(labels, "classes", cfg.classes, dtype=jnp.float32)  # plant[k6 name static]: target = tnp.one_hot(labels, "class", cfg.classes, dtype=jnp.float32)
    nll = -tnp.sum(logp * target, "classes")
    return tx.positional(tnp.mean(nll, "batch"), [])


@partial(jax.jit, static_argnames="cfg")
def train_step(
    p: Params, mel: NamedArray[f32, "batch frames mels"], labels: NamedArray[i32, "batch"], cfg: Config
) -> tuple[Params, jax.Array]:
    value, grads = jax.value_and_grad(loss)(p, mel, labels, cfg)
    new: Params = jax.tree.map(lambda w, g: w - LEARNING_RATE * g, p, grads)
    return new, value


if __name__ == "__main__":
    cfg = Config()
    params = init(cfg, jax.random.key(0))
    km, kl = jax.random.split(jax.random.key(1))
    mel = tx.random.normal(km, {"batch": cfg.batch, "frames": cfg.frames, "mels": cfg.mels})
    labels = tx.random.randint(kl, {"batch": cfg.batch}, 0, cfg.classes)
    with jax.set_mesh(jax.make_mesh((2, 4), ("data", "model"))):
        params, mel, labels = tx.shard(params, RESOURCES), tx.shard(mel, RESOURCES), tx.shard(labels, RESOURCES)
        print("logits", logits(params, mel, cfg).named_shape)
        for _ in range(2):
            params, value = train_step(params, mel, labels, cfg)
            print("loss", float(value))
