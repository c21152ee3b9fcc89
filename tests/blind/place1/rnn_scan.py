"""An Elman RNN over time with ``tx.scan``: the carry is placed by batch over ``data`` (and keeps that placement
from step to step), the input projection is done for every step at once before the scan, and the final state
is scored by a per-class readout mapped with ``tx.xmap`` (``batch`` over ``data``, ``classes`` over ``model``)."""

from __future__ import annotations

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

from typing import NamedTuple

import jax
import jax.numpy as jnp

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32

TIME, BATCH, EMBED, HIDDEN, CLASSES = 5, 8, 6, 16, 8
DATA = {"batch": "data"}
READOUT = {"batch": "data", "classes": "model"}

Carry = NamedArray[f32, "batch@data hidden"]


class RNN(NamedTuple):
    w_x: NamedArray[f32, "embed hidden"]
    w_h: NamedArray[f32, "hidden out"]
    w_y: NamedArray[f32, "hidden classes"]


def init(key: jax.Array) -> RNN:
    k1, k2, k3 = jax.random.split(key, 3)
    return RNN(
        tx.random.normal(k1, {"embed": EMBED, "hidden": HIDDEN}) * 0.3,
        tx.random.normal(k2, {"hidden": HIDDEN, "out": HIDDEN}) * 0.2,
        tx.random.normal(k3, {"hidden": HIDDEN, "classes": CLASSES}) * 0.3,
    )


@tx.typed
def encode(p: RNN, xs: NamedArray[f32, "time batch@data embed"]) -> Carry:
    inputs = tnp.einsum("{embed},{embed,hidden}->{hidden}", xs, p.w_x)
    inputs = tx.constrain(inputs, {"batch": "data"})  # plant[p1 resource static]: inputs = tx.constrain(inputs, {"batch": "data", "time": "data"})

    def step(h: Carry, u: NamedArray[f32, "batch@data hidden"]) -> tuple[Carry, NamedArray[f32, "batch@data"]]:
        recur = tnp.einsum("{hidden},{hidden,out}->{out}", h, p.w_h).rename({"out": "hidden"})
        new = tnp.tanh(recur + u)  # plant[p2 name static]: new = tnp.tanh(recur + u.rename({"hidden": "out"}))
        return new, tnp.mean(new, "hidden")

    h0 = tx.constrain(tnp.zeros({"batch": xs.named_shape["batch"], "hidden": HIDDEN}, jnp.float32), DATA)  # plant[p3 resource static]: h0 = tx.constrain(tnp.zeros({"batch": xs.named_shape["batch"], "hidden": HIDDEN}, jnp.float32), {"batch": "data", "hidden": "data"})
    h, means = tx.scan(step, h0, inputs, axis="time")
    assert means.named_shape["time"] == xs.named_shape["time"]
    return h


def score(h: NamedArray[f32, "batch hidden"], w_y: NamedArray[f32, "hidden classes"]) -> NamedArray[f32, "batch classes"]:
    return tnp.einsum("{hidden},{hidden,classes}->{classes}", h, w_y)


readout = tx.xmap(score, out_axes=["batch", "classes", ...], axis_resources={"batch": "data", "classes": "model"})  # plant[p4 resource static]: readout = tx.xmap(score, out_axes=["batch", "classes", ...], axis_resources={"batch": "data", "classes": "data"})


@jax.jit
def forward(p: RNN, xs: NamedArray[f32, "time batch@data embed"]) -> Carry:
    return encode(p, xs)


if __name__ == "__main__":
    jax.set_mesh(tx.fitting_mesh((4, 2), ("data", "model")))
    k_p, k_x = jax.random.split(jax.random.key(5))
    params = init(k_p)
    xs = tx.shard(tx.random.normal(k_x, {"time": TIME, "batch": BATCH, "embed": EMBED}), DATA)  # plant[p5 resource runtime]: xs = tx.shard(tx.random.normal(k_x, {"time": TIME, "batch": BATCH, "embed": EMBED}), {"embed": "data"})
    h = forward(params, xs)
    assert tx.resources_of(h) == {"batch": "data"}, tx.resources_of(h)
    logits = readout(h, tx.shard(params.w_y, {"classes": "model"}))
    assert logits.shape == (BATCH, CLASSES)
    print("ok", float(jnp.abs(logits).mean()))
