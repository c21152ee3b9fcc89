"""Gradient accumulation for a tensor-parallel two-layer MLP regressor: a batch of micro-batches
(``micro batch feat``, the batch split over ``data``) is scanned with ``tx.scan``, each step adding the
micro-batch's gradients (FSDP-style: the first weight's ``feat`` rows are split over ``data`` as well as its
hidden units over ``model``) to a dict carry; the summed gradients are clipped by their global norm and applied.
A module-level per-example helper made with ``tx.vmap`` scores each example's squared error, and an exponential
moving average of the loss runs as a scan with a tuple carry."""

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

from typing import Final, TypedDict

import jax
import jax.numpy as jnp

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32

MESH = {"data": 4, "model": 2}

MICRO: Final = 2
BATCH: Final = 8
FEAT: Final = 16
HIDDEN: Final = 16
OUT: Final = 8
MAX_NORM: Final = 1.0


class MLP(TypedDict):
    w1: NamedArray[f32, "feat@data hidden@model"]
    b1: NamedArray[f32, "hidden@model"]
    w2: NamedArray[f32, "hidden@model out"]


class Accumulated(TypedDict):
    grads: MLP
    loss: jax.Array


Inputs = NamedArray[f32, "micro batch@data feat"]
Targets = NamedArray[f32, "micro batch@data out"]

RESOURCES: Final = {"batch": "data", "hidden": "model"}
PARAM_RESOURCES: Final = {"feat": "data", "hidden": "model"}


def predict(p: MLP, x: NamedArray[f32, "batch@data feat"]) -> NamedArray[f32, "batch@data out"]:
    h = tnp.relu(tnp.einsum("{batch,feat},{feat,hidden}->{batch,hidden}", x, p["w1"]) + p["b1"])
    return tnp.einsum("{batch,hidden},{hidden,out}->{batch,out}", h, p["w2"])


def micro_loss(p: MLP, x: NamedArray[f32, "batch@data feat"], y: NamedArray[f32, "batch@data out"]) -> jax.Array:
    err = predict(p, x) - y
    return tx.positional(tnp.mean(tnp.sum(err * err, "out"), "batch"), [])


def example_error(prediction: NamedArray[f32, "out"], target: NamedArray[f32, "out"]) -> NamedArray[f32, ""]:
    """One example's squared error (written per example; mapped over ``batch`` below)."""
    return tnp.sum(tnp.square(prediction - target), "out")


per_example_error = tx.vmap(example_error, axis="batch")


def accumulate(p: MLP, xs: Inputs, ys: Targets) -> tuple[jax.Array, MLP]:
    """The mean loss and gradients over the micro-batches, summed in a dict carry."""

    def step(
        carry: Accumulated, batch: tuple[NamedArray[f32, "batch@data feat"], NamedArray[f32, "batch@data out"]]
    ) -> tuple[Accumulated, None]:
        x, y = batch
        value, grads = jax.value_and_grad(micro_loss)(p, x, y)
        total: MLP = jax.tree.map(lambda a, g: a + g, carry["grads"], grads)
        return {"grads": total, "loss": carry["loss"] + value}, None

    zeros: MLP = jax.tree.map(lambda w: w * 0.0, p)
    start: Accumulated = {"grads": zeros, "loss": jnp.zeros(())}
    carry, _ = tx.scan(step, start, (xs, ys), axis="micro")
    grads: MLP = jax.tree.map(lambda g: g / MICRO, carry["grads"])
    return carry["loss"] / MICRO, grads


def clip_by_global_norm(grads: MLP) -> MLP:
    total = (
        tnp.sum(grads["w1"] * grads["w1"], ("feat", "hidden"))
        + tnp.sum(grads["b1"] * grads["b1"], "hidden")
        + tnp.sum(grads["w2"] * grads["w2"], ("hidden", "out"))
    )
    scale = tnp.minimum(1.0, MAX_NORM / (tnp.sqrt(total) + 1e-6))
    return {"w1": grads["w1"] * scale, "b1": grads["b1"] * scale, "w2": grads["w2"] * scale}


def train_step(p: MLP, xs: Inputs, ys: Targets) -> tuple[jax.Array, MLP]:
    value, grads = accumulate(p, xs, ys)
    grads = clip_by_global_norm(grads)
    return value, jax.tree.map(lambda w, g: w - 0.1 * g, p, grads)


def errors(
    p: MLP, x: NamedArray[f32, "batch@data feat"], y: NamedArray[f32, "batch@data out"]
) -> NamedArray[f32, "batch"]:
    """Each example's squared error, through the module-level vmapped helper."""
    return per_example_error(predict(p, x), y)


def smoothed_losses(
    losses: NamedArray[f32, "step batch@data"],
) -> tuple[NamedArray[f32, "batch@data"], NamedArray[f32, "step batch@data"]]:
    """An exponential moving average of each example's loss over the steps (tuple carry: average, count)."""

    def step(
        carry: tuple[NamedArray[f32, "batch@data"], NamedArray[f32, ""]], loss: NamedArray[f32, "batch@data"]
    ) -> tuple[tuple[NamedArray[f32, "batch@data"], NamedArray[f32, ""]], NamedArray[f32, "batch@data"]]:
        average, count = carry
        average = 0.9 * average + 0.1 * loss
        count = count + 1.0
        return (average, count), average / (1.0 - 0.9**count)

    (final, _), trace = tx.scan(step, (losses[{"step": 0}] * 0.0, tnp.zeros({})), losses, axis="step")
    return final, trace


def init(key: jax.Array) -> MLP:
    k1, k2 = jax.random.split(key)
    return {
        "w1": tx.random.normal(k1, {"feat": FEAT, "hidden": HIDDEN}) / 4,
        "b1": tnp.zeros({"hidden": HIDDEN}),
        "w2": tx.random.normal(k2, {"hidden": HIDDEN, "out": OUT}) / 4,
    }


def example_arguments() -> dict[str, tuple[object, ...]]:
    p = tx.shard(init(jax.random.key(0)), PARAM_RESOURCES)
    xs = tx.shard(tx.random.normal(jax.random.key(1), {"micro": MICRO, "batch": BATCH, "feat": FEAT}), RESOURCES)
    ys = tx.shard(tx.random.normal(jax.random.key(2), {"micro": MICRO, "batch": BATCH, "out": OUT}), RESOURCES)
    x = tx.shard(tx.random.normal(jax.random.key(3), {"batch": BATCH, "feat": FEAT}), RESOURCES)
    y = tx.shard(tx.random.normal(jax.random.key(4), {"batch": BATCH, "out": OUT}), RESOURCES)
    losses = tx.shard(tx.random.uniform(jax.random.key(5), {"step": 8, "batch": BATCH}), RESOURCES)
    return {
        "micro_loss": (p, x, y),
        "accumulate": (p, xs, ys),
        "train_step": (p, xs, ys),
        "errors": (p, x, y),
        "smoothed_losses": (losses,),
    }


if __name__ == "__main__":
    from jax.sharding import AxisType

    mesh = jax.make_mesh((4, 2), ("data", "model"), axis_types=(AxisType.Explicit,) * 2)
    with jax.set_mesh(mesh):
        for name, args in example_arguments().items():
            jax.jit(globals()[name])(*args)
