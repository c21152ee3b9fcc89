"""A training step through JAX transforms: the plugin sees through ``jax.jit``, ``jax.grad``,
``jax.value_and_grad``, ``jax.checkpoint`` and ``functools.partial``, so a gradient has its parameter's
named type and a jitted function keeps its signature.

typed-xmap check examples/typed/train_step.py
"""

from __future__ import annotations

from functools import partial

import jax

import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32

Weights = NamedArray[f32, "embed out"]
Bias = NamedArray[f32, "out"]
Inputs = NamedArray[f32, "batch embed"]


@jax.checkpoint
def forward(w: Weights, b: Bias, x: Inputs) -> NamedArray[f32, "batch out"]:
    return tnp.einsum("{embed},{embed,out}->{out}", x, w) + b


def loss(w: Weights, b: Bias, x: Inputs, y: NamedArray[f32, "batch out"]) -> jax.Array:
    error = forward(w, b, x) - y
    value: jax.Array = tnp.mean(error * error, ("batch", "out")).data
    return value


def loss_and_error(w: Weights, b: Bias, x: Inputs, y: NamedArray[f32, "batch out"]) -> tuple[jax.Array, Bias]:
    error = forward(w, b, x) - y
    value: jax.Array = tnp.mean(error * error, ("batch", "out")).data
    return value, tnp.mean(error, "batch")


@partial(jax.jit, static_argnames=("lr",))
def sgd_step(w: Weights, b: Bias, x: Inputs, y: NamedArray[f32, "batch out"], lr: float) -> tuple[Weights, Bias]:
    gw, gb = jax.grad(loss, argnums=(0, 1))(w, b, x, y)
    return w - lr * gw, b - lr * gb


@jax.jit
def step_with_report(
    w: Weights, b: Bias, x: Inputs, y: NamedArray[f32, "batch out"]
) -> tuple[Weights, Bias, jax.Array, Bias]:
    (value, mean_error), (gw, gb) = jax.value_and_grad(loss_and_error, argnums=(0, 1), has_aux=True)(w, b, x, y)
    return w - 0.1 * gw, b - 0.1 * gb, value, mean_error


def train(w: Weights, b: Bias, x: Inputs, y: NamedArray[f32, "batch out"], steps: int) -> tuple[Weights, Bias]:
    step = partial(sgd_step, lr=0.1)
    for _ in range(steps):
        w, b = step(w, b, x, y)
    return w, b
