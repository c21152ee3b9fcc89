"""Small jitted training steps whose backward pass communicates: ``typed-xmap check --comm`` lists, at each
``jax.grad``/``jax.value_and_grad`` call, the collectives the differentiated function's backward pass adds, and
tests/test_comm_hlo.py compares them with the compiled HLO on an 8-device (data=4, model=2) mesh."""

import jax

import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32

Batch = NamedArray[f32, "batch@data embed"]


def linear_loss(w: NamedArray[f32, "embed mlp"], x: Batch) -> jax.Array:
    """A data-parallel linear layer: the batch split over data, the weight whole on every device."""
    y = tnp.einsum("{batch,embed},{embed,mlp}->{batch,mlp}", x, w)
    total: jax.Array = (y * y).sum(("batch", "mlp")).data
    return total


@jax.jit
def linear_grad(w: NamedArray[f32, "embed mlp"], x: Batch) -> NamedArray[f32, "embed mlp"]:
    return jax.grad(linear_loss)(w, x)  # the weight's gradient sums the batch: an all-reduce over data


def mlp_loss(
    w_in: NamedArray[f32, "embed mlp@model"], w_out: NamedArray[f32, "mlp@model embed"], x: Batch
) -> jax.Array:
    """A tensor-parallel MLP (Megatron): mlp split over model, the batch over data."""
    h = tnp.tanh(tnp.einsum("{batch,embed},{embed,mlp}->{batch,mlp}", x, w_in))
    y = tnp.einsum("{batch,mlp},{mlp,embed}->{batch,embed}", h, w_out)
    total: jax.Array = (y * y).sum(("batch", "embed")).data
    return total


@jax.jit
def mlp_grad(
    w_in: NamedArray[f32, "embed mlp@model"], w_out: NamedArray[f32, "mlp@model embed"], x: Batch
) -> tuple[jax.Array, tuple[NamedArray[f32, "embed mlp@model"], NamedArray[f32, "mlp@model embed"]]]:
    return jax.value_and_grad(mlp_loss, argnums=(0, 1))(w_in, w_out, x)


@jax.jit
def mlp_input_grad(
    w_in: NamedArray[f32, "embed mlp@model"], w_out: NamedArray[f32, "mlp@model embed"], x: Batch
) -> tuple[jax.Array, Batch]:
    """The gradient with respect to the input only: the weights' gradients (and their sum over data) are not
    needed, the input's cotangent sums the split mlp (an all-reduce over model)."""
    return jax.value_and_grad(mlp_loss, argnums=2)(w_in, w_out, x)


def scaled_loss(scale: NamedArray[f32, "embed"], x: Batch) -> jax.Array:
    """A broadcast: the scale meets the batch split over data."""
    total: jax.Array = ((x * scale) ** 2).sum(("batch", "embed")).data
    return total


@jax.jit
def scale_grad(scale: NamedArray[f32, "embed"], x: Batch) -> NamedArray[f32, "embed"]:
    return jax.grad(scaled_loss)(scale, x)  # summed over the broadcast batch: an all-reduce over data


def fsdp_loss(w: NamedArray[f32, "embed@data mlp"], x: Batch) -> jax.Array:
    """FSDP: the weight split along embed over data, gathered in the forward pass."""
    y = tnp.einsum("{batch,embed},{embed,mlp}->{batch,mlp}", x, w)
    total: jax.Array = (y * y).sum(("batch", "mlp")).data
    return total


@jax.jit
def fsdp_grad(w: NamedArray[f32, "embed@data mlp"], x: Batch) -> NamedArray[f32, "embed@data mlp"]:
    return jax.grad(fsdp_loss)(w, x)  # the weight's gradient summed over data into its blocks: a reduce-scatter


Split = NamedArray[f32, "batch@data embed@model"]


def softmax_loss(w: NamedArray[f32, "embed vocab@model"], x: Batch) -> jax.Array:
    """A softmax over a vocabulary split over model."""
    z = tnp.softmax(tnp.einsum("{batch,embed},{embed,vocab}->{batch,vocab}", x, w), "vocab")
    total: jax.Array = (z * z).sum(("batch", "vocab")).data
    return total


@jax.jit
def softmax_input_grad(w: NamedArray[f32, "embed vocab@model"], x: Batch) -> tuple[jax.Array, Batch]:
    """The softmax's cotangent sums vocab (an all-reduce over model), then the input's sums it again."""
    return jax.value_and_grad(softmax_loss, argnums=1)(w, x)


def log_softmax_loss(w: NamedArray[f32, "embed vocab@model"], x: Batch) -> jax.Array:
    """A log-softmax over a vocabulary split over model (a cross-entropy's)."""
    z = tnp.log_softmax(tnp.einsum("{batch,embed},{embed,vocab}->{batch,vocab}", x, w), "vocab")
    total: jax.Array = (z * z).sum(("batch", "vocab")).data
    return total


@jax.jit
def log_softmax_weight_grad(
    w: NamedArray[f32, "embed vocab@model"], x: Batch
) -> tuple[jax.Array, NamedArray[f32, "embed vocab@model"]]:
    """The log-softmax's cotangent sums vocab over model, the weight's gradient the batch over data."""
    return jax.value_and_grad(log_softmax_loss)(w, x)


def var_loss(x: Split) -> jax.Array:
    """A variance along an embedding split over model."""
    total: jax.Array = tnp.var(x, "embed").sum("batch").data
    return total


@jax.jit
def var_grad(x: Split) -> tuple[jax.Array, Split]:
    """The mean's cotangent sums the deviations' along embed: an all-reduce over model."""
    return jax.value_and_grad(var_loss)(x)


def spread_loss(x: Split) -> jax.Array:
    """A standard deviation and a logsumexp along an embedding split over model."""
    total: jax.Array = (tnp.std(x, "embed") + tnp.logsumexp(x, "embed")).sum("batch").data
    return total


@jax.jit
def spread_grad(x: Split) -> tuple[jax.Array, Split]:
    """The std's backward sums along embed as the variance's; logsumexp's none: its maximum is held constant, its
    sum's transpose is a broadcast."""
    return jax.value_and_grad(spread_loss)(x)
