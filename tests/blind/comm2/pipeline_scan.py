"""Scans on a mesh. A stack of residual MLP layers is run with ``tx.scan`` over ``layers`` (each layer's
weights tensor-parallel over ``model``, the batch over ``data``); a recurrent cell is scanned over ``time`` with
its hidden state split over ``model``, so each step contracts the split state (the state is gathered); and a
pipeline-style loop accumulates a loss over micro-batches scanned along ``micro``. Per-example errors of a
head whose labels are split over ``model`` are mapped over the batch with ``tx.vmap`` on ``data``."""

from __future__ import annotations

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

from typing import TypedDict

import jax

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32

MESH = {"data": 4, "model": 2}

RESOURCES = {"batch": "data", "mlp": "model", "hidden": "model"}

Hidden = NamedArray[f32, "batch@data embed"]
State = NamedArray[f32, "batch@data hidden@model"]


class LayerWeights(TypedDict):
    """One layer of the stack, as ``tx.scan`` hands it to the body (without ``layers``)."""

    w_in: NamedArray[f32, "embed mlp@model"]
    w_out: NamedArray[f32, "mlp@model embed"]


def _layer(h: Hidden, w: LayerWeights) -> tuple[Hidden, NamedArray[f32, ""]]:
    z = tnp.gelu(tnp.einsum("{embed},{embed,mlp}->{mlp}", h, w["w_in"]))
    out = h + tnp.einsum("{mlp},{mlp,embed}->{embed}", z, w["w_out"])
    return out, tnp.mean(out * out, ("batch", "embed"))


def deep_stack(
    x: Hidden,
    w_in: NamedArray[f32, "layers embed mlp@model"],
    w_out: NamedArray[f32, "layers mlp@model embed"],
) -> tuple[Hidden, NamedArray[f32, "layers"]]:
    """All layers in one scan; each step's mean square is stacked along ``layers``."""
    out, energies = tx.scan(_layer, x, {"w_in": w_in, "w_out": w_out}, axis="layers")
    return out, energies


def _cell(h: State, x_t: State, w_hh: NamedArray[f32, "prev hidden@model"]) -> State:
    previous = h.rename({"hidden": "prev"})
    recurrent = tnp.einsum("{prev},{prev,hidden}->{hidden}", previous, w_hh)
    return tnp.tanh(recurrent + x_t)


def rnn(
    xs: NamedArray[f32, "time batch@data hidden@model"], w_hh: NamedArray[f32, "prev hidden@model"]
) -> NamedArray[f32, "time batch@data hidden@model"]:
    """An Elman RNN over ``time``; the step closes over the weight."""
    h0 = tnp.zeros_like(xs[{"time": 0}])

    def step(h: State, x_t: NamedArray[f32, "batch@data hidden@model"]) -> tuple[State, State]:
        new = _cell(h, x_t, w_hh)
        return new, new

    _, states = tx.scan(step, h0, xs, axis="time")
    return states


def microbatch_loss(
    xs: NamedArray[f32, "micro batch@data embed"],
    w: NamedArray[f32, "embed label"],
    labels: NamedArray[f32, "micro batch@data label"],
) -> NamedArray[f32, ""]:
    """Gradient-accumulation style: a squared error summed over micro-batches, one per scan step."""

    def step(
        total: NamedArray[f32, ""], mb: dict[str, NamedArray[f32, "batch@data *rest"]]
    ) -> tuple[NamedArray[f32, ""], None]:
        pred = tnp.einsum("{embed},{embed,label}->{label}", mb["x"], w)
        err = tnp.sum((pred - mb["y"]) ** 2, ("batch", "label"))
        return total + err, None

    total, _ = tx.scan(step, tnp.zeros({}), {"x": xs, "y": labels}, axis="micro")
    return total / xs.named_shape["micro"]


def _example_error(
    x: NamedArray[f32, "embed"], w: NamedArray[f32, "embed label@model"], y: NamedArray[f32, "label@model"]
) -> NamedArray[f32, ""]:
    """One example's squared error; the labels are split over ``model``."""
    pred = tnp.einsum("{embed},{embed,label}->{label}", x, w)
    return tnp.sum((pred - y) ** 2, "label")


def per_example_errors(
    x: Hidden, w: NamedArray[f32, "embed label@model"], y: NamedArray[f32, "batch@data label@model"]
) -> NamedArray[f32, "batch@data"]:
    """Each example's error, mapped over the batch and kept on ``data``."""
    errors: NamedArray[f32, "batch@data"] = tx.vmap(_example_error, axis="batch", axis_resources={"batch": "data"})(
        x, w, y
    )
    return errors


def example_arguments() -> dict[str, tuple[object, ...]]:
    """Each jitted function's arguments, placed as its annotations say."""
    k = iter(jax.random.split(jax.random.key(5), 10))
    x = tx.shard(tx.random.normal(next(k), {"batch": 8, "embed": 16}), RESOURCES)
    w_in = tx.shard(tx.random.normal(next(k), {"layers": 3, "embed": 16, "mlp": 32}) / 4, RESOURCES)
    w_out = tx.shard(tx.random.normal(next(k), {"layers": 3, "mlp": 32, "embed": 16}) / 6, RESOURCES)
    xs = tx.shard(tx.random.normal(next(k), {"time": 8, "batch": 8, "hidden": 16}), RESOURCES)
    w_hh = tx.shard(tx.random.normal(next(k), {"prev": 16, "hidden": 16}) / 4, RESOURCES)
    micro = tx.shard(tx.random.normal(next(k), {"micro": 4, "batch": 8, "embed": 16}), RESOURCES)
    w = tx.random.normal(next(k), {"embed": 16, "label": 8}) / 4
    labels = tx.shard(tx.random.normal(next(k), {"micro": 4, "batch": 8, "label": 8}), RESOURCES)
    w_head = tx.shard(tx.random.normal(next(k), {"embed": 16, "label": 8}) / 4, {"label": "model"})
    y = tx.shard(tx.random.normal(next(k), {"batch": 8, "label": 8}), {"batch": "data", "label": "model"})
    return {
        "deep_stack": (x, w_in, w_out),
        "rnn": (xs, w_hh),
        "microbatch_loss": (micro, w, labels),
        "per_example_errors": (x, w_head, y),
    }


if __name__ == "__main__":
    from jax.sharding import AxisType

    mesh = jax.make_mesh((4, 2), ("data", "model"), axis_types=(AxisType.Explicit,) * 2)
    with jax.set_mesh(mesh):
        for name, args in example_arguments().items():
            jax.jit(globals()[name])(*args)
