"""Programs whose collectives happen inside a mapped or scanned body, or in a function a transform defines:
``typed-xmap check --comm`` lists them in the body (the lines of the operations that run them), and
tests/test_comm_scope.py compares the list with the compiled HLO of each jitted function on an 8-device
(data=4, model=2) mesh. Every function is jitted alone (the module-level transformed ones too)."""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial

import jax

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32

PLACED = {"batch": "data", "vocab": "model"}
"""A module constant as xmap's axis_resources."""
RING = {"batch": "data", "block": "model"}
BLOCKS = ["batch", "block", ...]


# ---- an annotated xmap body placed by a constant axis_resources -------------------------------------------------


def _entropy(logits: NamedArray[f32, "batch vocab"]) -> NamedArray[f32, "batch"]:
    """Inside: batch@data vocab@model; the softmax's maximum and sum, and the sum over vocab: three all-reduces."""
    log_probs = tnp.log_softmax(logits, "vocab")
    return -(tnp.exp(log_probs) * log_probs).sum("vocab")


entropy = tx.xmap(_entropy, in_axes=(["batch", "vocab", ...],), out_axes=["batch", ...], axis_resources=PLACED)


@partial(tx.xmap, out_axes=["batch", ...], axis_resources=PLACED)
def decorated_entropy(logits: NamedArray[f32, "batch vocab"]) -> NamedArray[f32, "batch"]:
    """The decorator form: the maximum, and the sum of exp(x - max) over the split vocab."""
    return tnp.logsumexp(logits, "vocab")


def _best(logits: NamedArray[f32, "batch vocab"]) -> NamedArray[f32, "batch"]:
    """An index reduction over the split vocab: two all-gathers (values and indices)."""
    return tnp.argmax(logits, "vocab").astype("float32")


best = tx.xmap(_best, in_axes=(["batch", "vocab", ...],), out_axes=["batch", ...], axis_resources=PLACED)


def _spread(logits: NamedArray[f32, "batch vocab"]) -> NamedArray[f32, ""]:
    """The variance over the split vocab (its mean and its second pass), then the sum over the split batch."""
    return tnp.var(logits, "vocab").sum("batch")


spread = tx.xmap(_spread, in_axes=(["batch", "vocab", ...],), out_axes=[...], axis_resources=PLACED)


def _scores(x: NamedArray[f32, "batch vocab"], w: NamedArray[f32, "vocab out"]) -> NamedArray[f32, "batch out"]:
    """A contraction over the split vocab: an all-reduce over model."""
    return tnp.einsum("{batch,vocab},{vocab,out}->{batch,out}", x, w)


scores = tx.xmap(
    _scores,
    in_axes=(["batch", "vocab", ...], ["vocab", "out", ...]),
    out_axes=["batch", "out", ...],
    axis_resources=PLACED,
)


def _running(logits: NamedArray[f32, "batch vocab"]) -> NamedArray[f32, "batch vocab"]:
    """A running sum along the split vocab, returned along it (see UNLISTED in tests/test_comm_scope.py)."""
    return tnp.cumsum(logits, "vocab")


running = tx.xmap(_running, in_axes=(["batch", "vocab", ...],), out_axes=["batch", "vocab", ...], axis_resources=PLACED)


# ---- positional xmap bodies with jax.lax's collectives by axis name --------------------------------------------


def _shift(block: jax.Array) -> jax.Array:
    """Each block's neighbour's: vmap's ppermute rule gathers along the dim, an all-gather over model."""
    out: jax.Array = block + jax.lax.ppermute(block, "block", [(0, 1), (1, 0)])
    return out


shift = tx.xmap(_shift, in_axes=BLOCKS, out_axes=BLOCKS, axis_resources=RING)


def _ring(block: jax.Array) -> jax.Array:
    """Three steps of a ring over batch (on data): each ppermute its own all-gather."""
    perm = [(i, (i + 1) % 8) for i in range(8)]
    message = block.mean(0)
    first = jax.lax.ppermute(message, "batch", perm)
    second = jax.lax.ppermute(first, "batch", perm)
    third = jax.lax.ppermute(second, "batch", perm)
    out: jax.Array = block + message + first + second + third
    return out


ring = tx.xmap(_ring, in_axes=BLOCKS, out_axes=BLOCKS, axis_resources=RING)


def _totals(block: jax.Array) -> jax.Array:
    """A sum over block (model), a maximum over batch (data), a minimum over block."""
    out: jax.Array = (
        jax.lax.psum(block, "block") + jax.lax.pmax(block, "batch") - jax.lax.pmin(block, axis_name="block")
    )
    return out


totals = tx.xmap(_totals, in_axes=BLOCKS, out_axes=BLOCKS, axis_resources=RING)


def _both(block: jax.Array) -> jax.Array:
    """A mean over two axes: one all-reduce per axis (the vmap levels reduce one after the other)."""
    out: jax.Array = block - jax.lax.pmean(block, ("batch", "block"))
    return out


both = tx.xmap(_both, in_axes=BLOCKS, out_axes=BLOCKS, axis_resources=RING)


def _exchange(block: jax.Array) -> jax.Array:
    out: jax.Array = jax.lax.all_to_all(block, "block", 0, 0, tiled=True)
    return out


exchange = tx.xmap(_exchange, in_axes=BLOCKS, out_axes=BLOCKS, axis_resources=RING)


def _whole(block: jax.Array) -> jax.Array:
    """block has no resources here: vectorized on each device, its psum is local."""
    out: jax.Array = jax.lax.psum(block, "block") * 2.0
    return out


whole = tx.xmap(_whole, in_axes=BLOCKS, out_axes=BLOCKS, axis_resources={"batch": "data"})


# ---- tx.vmap'd functions: defined by the transform, stored and called later --------------------------------------


def _example(logits: NamedArray[f32, "vocab@model"]) -> NamedArray[f32, ""]:
    return tnp.logsumexp(logits, "vocab")


per_example = tx.vmap(_example, axis="batch", axis_resources={"batch": "data"})
"""Jitted itself: its body's two all-reduces over model (the logsumexp's maximum and sum)."""


def _row(x: NamedArray[f32, "embed"]) -> NamedArray[f32, "embed"]:
    return x * 2.0


per_row = tx.vmap(_row, axis="batch")
"""Stored without axis_resources: a call's results are placed by its arguments."""


def stored_total(x: NamedArray[f32, "batch@data embed"]) -> NamedArray[f32, "embed"]:
    """per_row(x) is batch@data: its sum over batch an all-reduce over data."""
    return per_row(x).sum("batch")


def local_total(x: NamedArray[f32, "batch@model embed"]) -> NamedArray[f32, "embed"]:
    """A local stored vmap, called below: batch@model, its mean an all-reduce over model."""
    doubled = tx.vmap(_row, axis="batch")
    return doubled(x).mean("batch")


# ---- tx.scan steps whose slice is a dict of NamedArrays ---------------------------------------------------------


def microbatches(
    xs: NamedArray[f32, "micro batch@data embed"],
    w: NamedArray[f32, "embed label"],
    labels: NamedArray[f32, "micro batch@data label"],
) -> NamedArray[f32, ""]:
    """Each step's error summed over the split batch: an all-reduce over data, compiled once in the loop."""

    def step(
        total: NamedArray[f32, ""], mb: dict[str, NamedArray[f32, "batch *rest"]]
    ) -> tuple[NamedArray[f32, ""], None]:
        pred = tnp.einsum("{embed},{embed,label}->{label}", mb["x"], w)
        return total + tnp.sum((pred - mb["y"]) ** 2, ("batch", "label")), None

    total, _ = tx.scan(step, tnp.zeros({}), {"x": xs, "y": labels}, axis="micro")
    return total


def _layer(
    h: NamedArray[f32, "batch embed"], w: Mapping[str, NamedArray[f32, "*weight"]]
) -> tuple[NamedArray[f32, "batch embed"], NamedArray[f32, ""]]:
    """A module-level step whose weights arrive split over model: the second contraction sums the split mlp."""
    z = tnp.einsum("{embed},{embed,mlp}->{mlp}", h, w["up"])
    out = tnp.einsum("{mlp},{mlp,embed}->{embed}", tnp.gelu(z), w["down"])
    return out, tnp.sum(out, "embed").sum("batch")


def layers(
    x: NamedArray[f32, "batch embed"],
    up: NamedArray[f32, "layers embed mlp@model"],
    down: NamedArray[f32, "layers mlp@model embed"],
) -> NamedArray[f32, "batch embed"]:
    out, _ = tx.scan(_layer, x, {"up": up, "down": down}, axis="layers")
    return out
