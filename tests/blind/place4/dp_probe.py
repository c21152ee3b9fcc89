"""A linear probe trained with DP-SGD: per-example gradients from ``tx.vmap`` with the mapped batch kept split
over ``data``, each example's gradient clipped to a norm, averaged, and noised. The classes are split over
``model``. Evaluation scores every (example, class) pair with a ``tx.xmap`` over both mesh axes."""

from __future__ import annotations

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

from dataclasses import dataclass
from functools import partial
from typing import Final, TypedDict

import jax
import jax.numpy as jnp
import numpy as np

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32, i32

PER_EXAMPLE: Final = {"batch": "data"}
CLASSES: Final = {"cls": "model"}


@dataclass(frozen=True)
class ProbeConfig:
    batch: int = 8
    feat: int = 6
    classes: int = 4
    clip: float = 1.0
    noise: float = 0.01
    lr: float = 0.5


class Probe(TypedDict):
    w: NamedArray[f32, "feat cls@model"]
    b: NamedArray[f32, "cls@model"]


def init(cfg: ProbeConfig, key: jax.Array) -> Probe:
    w = tx.random.normal(key, {"feat": cfg.feat, "cls": cfg.classes}, sharding=CLASSES) * cfg.feat**-0.5
    return {"w": w, "b": tx.shard(tnp.zeros({"cls": cfg.classes}), CLASSES)}


@tx.typed
def example_loss(p: Probe, x: NamedArray[f32, "feat"], y: NamedArray[i32, ""]) -> jax.Array:
    logits = tnp.einsum("{feat},{feat,cls}->{cls}", x, p["w"]) + p["b"]
    logp = tnp.log_softmax(logits, "cls")
    return tx.positional(-logp[{"cls": y}], [])  # plant[v1 name static]: return tx.positional(-logp[{"feat": y}], [])


per_example_grads = tx.vmap(jax.grad(example_loss), axis="batch", axis_resources=PER_EXAMPLE)  # plant[v2 resource static]: per_example_grads = tx.vmap(jax.grad(example_loss), axis="batch", axis_resources={"batch": "model"})


@tx.typed
def clipped_mean(
    gw: NamedArray[f32, "batch@data feat cls@model"], gb: NamedArray[f32, "batch@data cls@model"], clip: float
) -> tuple[NamedArray[f32, "feat cls@model"], NamedArray[f32, "cls@model"]]:
    norms = tnp.sqrt(tnp.sum(gw * gw, ("feat", "cls")) + tnp.sum(gb * gb, "cls"))
    factor = tnp.minimum(1.0, clip / (norms + 1e-6))
    return tnp.mean(gw * factor, "batch"), tnp.mean(gb * factor, "batch")


@partial(jax.jit, static_argnames=("cfg",))
def train_step(
    p: Probe, x: NamedArray[f32, "batch@data feat"], y: NamedArray[i32, "batch@data"], key: jax.Array, cfg: ProbeConfig
) -> Probe:
    grads = per_example_grads(p, x, y)
    gw, gb = clipped_mean(grads["w"], grads["b"], cfg.clip)
    noise = tx.random.normal(key, {"feat": cfg.feat, "cls": cfg.classes}, sharding=CLASSES)  # plant[v3 resource static]: noise = tx.random.normal(key, {"feat": cfg.feat, "cls": cfg.classes}, sharding={"feat": "model"})
    gw = gw + cfg.noise * cfg.clip / cfg.batch * noise
    return {
        "w": p["w"] - cfg.lr * gw,  # plant[v4 resource static]: "w": tx.constrain(p["w"] - cfg.lr * gw, {"feat": "model"}),
        "b": p["b"] - cfg.lr * gb,
    }


def pair_score(x: jax.Array, w: jax.Array) -> jax.Array:
    return jnp.dot(x, w)


score_all = tx.xmap(
    pair_score,
    in_axes=({0: "batch"}, {1: "cls"}),
    out_axes=["batch", "cls", ...],
    axis_resources={"batch": "data", "cls": "model"},  # plant[v5 resource static]: axis_resources={"batch": "data", "cls": "data"},
)


def main() -> None:
    cfg = ProbeConfig()
    jax.set_mesh(jax.make_mesh((4, 2), ("data", "model")))
    k_p, k_x, k_y, k_n = jax.random.split(jax.random.key(5), 4)
    params = init(cfg, k_p)
    x = tx.shard(tx.random.normal(k_x, {"batch": cfg.batch, "feat": cfg.feat}), PER_EXAMPLE)
    y = tx.shard(tx.random.randint(k_y, {"batch": cfg.batch}, 0, cfg.classes), PER_EXAMPLE)
    for key in jax.random.split(k_n, 2):
        params = train_step(params, x, y, key, cfg)
    scores = score_all(tx.positional(x, ["batch", "feat"]), tx.positional(params["w"], ["feat", "cls"]))
    accuracy = np.mean(np.argmax(np.asarray(scores), axis=1) == np.asarray(tx.positional(y, ["batch"])))
    print("scores", scores.shape, "accuracy", accuracy)


if __name__ == "__main__":
    main()
