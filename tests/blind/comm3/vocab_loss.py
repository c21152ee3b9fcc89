"""The losses of a language model whose vocabulary is split over ``model`` (a vocab-parallel output layer):
cross-entropy with label smoothing, PaLM's z-loss on the softmax normaliser, each example's own loss mapped
with ``tx.vmap`` over a batch kept on ``data``, and the per-token entropy of the predictions computed in an
``xmap`` whose ``axis_resources`` place the batch on ``data`` and the vocabulary on ``model``."""

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

import jax
import jax.numpy as jnp
from jax.sharding import AxisType

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32, i32

MESH = {"data": 4, "model": 2}
SMOOTHING = 0.1
Z_WEIGHT = 1e-4
LOSS_PLACEMENT = {"batch": "data", "vocab": "model"}

Logits = NamedArray[f32, "batch@data seq vocab@model"]
Targets = NamedArray[i32, "batch@data seq"]


def smoothed_loss(logits: Logits, targets: Targets) -> jax.Array:
    """(1 - eps) * the target's negative log-probability + eps * the mean over the vocabulary, averaged."""
    log_probs = tnp.log_softmax(logits, "vocab")
    nll = -log_probs[{"vocab": targets}]
    uniform = -log_probs.mean("vocab")
    loss: jax.Array = ((1 - SMOOTHING) * nll + SMOOTHING * uniform).mean(("batch", "seq")).data
    return loss


def z_loss(logits: Logits) -> jax.Array:
    """The mean squared log of the softmax normaliser (keeps the logits from drifting)."""
    log_z = tnp.logsumexp(logits, "vocab")
    loss: jax.Array = (Z_WEIGHT * log_z * log_z).mean(("batch", "seq")).data
    return loss


def _example_loss(logits: NamedArray[f32, "seq vocab@model"], targets: NamedArray[i32, "seq"]) -> NamedArray[f32, ""]:
    """One example's smoothed loss (``tx.vmap`` adds the batch)."""
    log_probs = tnp.log_softmax(logits, "vocab")
    return ((1 - SMOOTHING) * -log_probs[{"vocab": targets}] - SMOOTHING * log_probs.mean("vocab")).mean("seq")


per_example_loss = tx.vmap(_example_loss, axis="batch", axis_resources={"batch": "data"})


def _entropy_body(logits: NamedArray[f32, "batch seq vocab"]) -> NamedArray[f32, "batch seq"]:
    log_probs = tnp.log_softmax(logits, "vocab")
    return -(tnp.exp(log_probs) * log_probs).sum("vocab")


token_entropy = tx.xmap(
    _entropy_body,
    in_axes=(["batch", "seq", "vocab", ...],),
    out_axes=["batch", "seq", ...],
    axis_resources=LOSS_PLACEMENT,
)
"""Per token: the entropy of the predicted distribution (``seq`` is mapped too, on no mesh axis)."""


def example_arguments() -> dict[str, tuple[object, ...]]:
    k1, k2 = jax.random.split(jax.random.key(10))
    batch, seq, vocab = 8, 8, 64
    logits = tx.shard(tx.random.normal(k1, {"batch": batch, "seq": seq, "vocab": vocab}), LOSS_PLACEMENT)
    targets = tx.shard(tx.random.randint(k2, {"batch": batch, "seq": seq}, 0, vocab), LOSS_PLACEMENT)
    positional = tx.shard(
        jax.random.normal(k1, (batch, seq, vocab), jnp.float32), LOSS_PLACEMENT, axes=["batch", "seq", "vocab"]
    )
    return {
        "smoothed_loss": (logits, targets),
        "z_loss": (logits,),
        "per_example_loss": (logits, targets),
        "token_entropy": (positional,),
    }


if __name__ == "__main__":
    mesh = jax.make_mesh((4, 2), ("data", "model"), axis_types=(AxisType.Explicit,) * 2)
    with jax.set_mesh(mesh):
        for name, args in example_arguments().items():
            jax.jit(globals()[name])(*args)
