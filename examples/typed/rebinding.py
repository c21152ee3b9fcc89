"""Rebinding a name to a new shape, as model code does, and a loop accumulator.

``h`` is rebound from ``batch embed`` to ``batch mlp`` and back; ``total`` accumulates per-example losses
over micro-batches. ``typed-xmap check`` turns on mypy's ``--allow-redefinition`` (the recommended config
does too), so rebinding is no error, while a bug that flows through the rebound value or the accumulator is
still reported: were ``batch`` not reduced, ``total`` would carry it and the return would be a
``return-value`` error.

typed-xmap check examples/typed/rebinding.py
"""

from __future__ import annotations

import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32

Hidden = NamedArray[f32, "batch embed"]


def mlp(x: Hidden, w_in: NamedArray[f32, "embed mlp"], w_out: NamedArray[f32, "mlp embed"]) -> Hidden:
    h = tnp.relu(x)
    h = tnp.einsum("{embed},{embed,mlp}->{mlp}", h, w_in)  # h: batch mlp
    h = tnp.gelu(h)
    h = tnp.einsum("{mlp},{mlp,embed}->{embed}", h, w_out)  # h: batch embed again
    return x + h


def per_example_loss(
    x: Hidden, target: Hidden, w_in: NamedArray[f32, "embed mlp"], w_out: NamedArray[f32, "mlp embed"]
) -> NamedArray[f32, "batch"]:
    error = mlp(x, w_in, w_out) - target
    return tnp.mean(error * error, "embed")


def mean_loss(
    micro_batches: list[Hidden],
    targets: list[Hidden],
    w_in: NamedArray[f32, "embed mlp"],
    w_out: NamedArray[f32, "mlp embed"],
) -> NamedArray[f32, ""]:
    """The mean of every example's loss over all micro-batches (each of the same batch size)."""
    total = tnp.sum(per_example_loss(micro_batches[0], targets[0], w_in, w_out), "batch")
    for x, target in zip(micro_batches[1:], targets[1:], strict=True):
        total = total + tnp.sum(per_example_loss(x, target, w_in, w_out), "batch")
    return total / (len(micro_batches) * micro_batches[0].named_shape["batch"])
