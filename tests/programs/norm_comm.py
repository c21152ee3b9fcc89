"""Global norms, label-smoothed losses over a split vocabulary and values met with a ``jax.Array`` operand:
``typed-xmap check --comm`` lists one collective per value it reduces; tests/test_comm_norms.py compares the
list with the compiled HLO on an 8-device (data=4, model=2) mesh, each operand of a tuple all-reduce XLA's
combiner makes counted as one."""

import jax

import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32

WeightIn = NamedArray[f32, "embed@data mlp@model"]
WeightOut = NamedArray[f32, "mlp@model embed@data"]
Logits = NamedArray[f32, "batch@data vocab@model"]
Cache = NamedArray[f32, "batch@data kv heads@model"]


def norm_on_one_line(w_in: WeightIn, w_out: WeightOut) -> NamedArray[f32, ""]:
    """Two sums over both mesh axes on one line: four all-reduces (XLA packs the independent ones)."""
    return tnp.sqrt(tnp.sum(w_in * w_in, ("embed", "mlp")) + tnp.sum(w_out * w_out, ("mlp", "embed")))


def norm_of_leaves(w_in: WeightIn, b: NamedArray[f32, "mlp@model"], scale: NamedArray[f32, "embed@data"]) -> jax.Array:
    """A global norm over leaves placed three ways, summed by methods: one all-reduce per leaf and mesh axis."""
    total = (w_in * w_in).sum(("embed", "mlp")) + (b * b).sum("mlp") + (scale * scale).sum("embed")
    norm: jax.Array = tnp.sqrt(total).data
    return norm


def smoothed(logits: Logits) -> jax.Array:
    """A log-softmax over the split vocabulary (its maximum and its sum of exponentials) and the mean of the
    log-probabilities along it, then the batch mean."""
    log_probs = tnp.log_softmax(logits, "vocab")
    loss: jax.Array = (-log_probs.mean("vocab")).mean("batch").data
    return loss


def tempered(logits: Logits, temperature: jax.Array) -> jax.Array:
    """Logits divided by a ``jax.Array`` keep their placement: the softmax's two all-reduces over ``model``,
    the batch sum's over ``data``."""
    probs = tnp.softmax(logits / temperature, "vocab")
    best: jax.Array = (probs * probs).sum(("batch", "vocab")).data
    return best


def masked_heads(scores: Cache, length: jax.Array) -> NamedArray[f32, "batch@data"]:
    """A mask by a ``jax.Array`` length keeps the scores' placement: the sum over the split ``heads``."""
    seen = tnp.arange("kv", scores.named_shape["kv"]) < length
    return tnp.where(seen, scores, 0.0).sum(("kv", "heads"))


def standardised(x: NamedArray[f32, "batch@data embed@model"]) -> NamedArray[f32, "batch@data embed@model"]:
    """The mean's sum is the variance's own: listed once (XLA all-reduces it twice, the repeat packed with the
    squared deviations' sum), then the squared deviations' sum."""
    return (x - tnp.mean(x, "embed")) / tnp.sqrt(tnp.var(x, "embed") + 1e-5)
