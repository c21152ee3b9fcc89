"""Jitted training steps whose backward pass runs through gathers, placement moves, pools, convs and selections:
``typed-xmap check --comm`` lists, at each ``jax.value_and_grad`` call, the collectives of the differentiated
function's backward pass, and tests/test_backward_layout_hlo.py compares them with the compiled HLO on an 8-device
(data=4, model=2) mesh, Explicit and Auto."""

import functools

import jax

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32, i32

Tokens = NamedArray[i32, "batch@data seq"]
Batch = NamedArray[f32, "batch@data embed"]
Image = NamedArray[f32, "batch@data height@model width chan"]
Kernel = NamedArray[f32, "kh kw chan out"]


def square(x: NamedArray) -> jax.Array:
    total: jax.Array = (x * x).data.sum()
    return total


# ---- gathers: the transpose scatter-adds the cotangent into a value placed as the table ----


def lookup_loss(table: NamedArray[f32, "vocab@model embed"], tokens: Tokens) -> jax.Array:
    return square(table[{"vocab": tokens}])


@jax.jit
def lookup_grad(
    table: NamedArray[f32, "vocab@model embed"], tokens: Tokens
) -> tuple[jax.Array, NamedArray[f32, "vocab@model embed"]]:
    """The table split over vocab: each device adds the rows of its block (masked), and the gradient sums the
    tokens' batch, split over data: an all-reduce over data."""
    return jax.value_and_grad(lookup_loss)(table, tokens)


def wide_lookup_loss(table: NamedArray[f32, "vocab embed@model"], tokens: Tokens) -> jax.Array:
    return square(tnp.take(table, tokens, "vocab"))


@jax.jit
def wide_lookup_grad(
    table: NamedArray[f32, "vocab embed@model"], tokens: Tokens
) -> tuple[jax.Array, NamedArray[f32, "vocab embed@model"]]:
    """The table split over embed (kept by the lookup): its gradient sums the batch over data."""
    return jax.value_and_grad(wide_lookup_loss)(table, tokens)


def pick_loss(logits: NamedArray[f32, "batch@data vocab@model"], targets: NamedArray[i32, "batch@data"]) -> jax.Array:
    return square(logits[{"vocab": targets}])


@jax.jit
def pick_grad(
    logits: NamedArray[f32, "batch@data vocab@model"], targets: NamedArray[i32, "batch@data"]
) -> tuple[jax.Array, NamedArray[f32, "batch@data vocab@model"]]:
    """A pointwise gather (targets share batch): the cotangent goes back into each device's block: none."""
    return jax.value_and_grad(pick_loss)(logits, targets)


# ---- moves: the cotangent moves back ----


def gather_move_loss(x: Batch) -> jax.Array:
    return square(tx.constrain(x * 2.0, {"embed": "model"}))


@jax.jit
def gather_move_grad(x: Batch) -> tuple[jax.Array, Batch]:
    """Forward: batch gathered over data, embed split over model; backward: embed's cotangent gathered over
    model (batch split again: a slice, nothing)."""
    return jax.value_and_grad(gather_move_loss)(x)


def swap_move_loss(x: Batch) -> jax.Array:
    return square(tx.constrain(x * 2.0, {"embed": "data"}))


@jax.jit
def swap_move_grad(x: Batch) -> tuple[jax.Array, Batch]:
    """data moves from batch to embed (an all-to-all) and back in the backward pass."""
    return jax.value_and_grad(swap_move_loss)(x)


# ---- pools and convs ----


def halo_loss(x: Image) -> jax.Array:
    return square(tnp.max_pool(x, {"height": 3, "width": 3}, strides=1, padding="SAME"))


@jax.jit
def halo_grad(x: Image) -> tuple[jax.Array, Image]:
    """Overlapping windows over height split over model: the cotangent's edges go back (permutes)."""
    return jax.value_and_grad(halo_loss)(x)


def blocks_loss(x: Image) -> jax.Array:
    return square(tnp.max_pool(x, {"height": 2, "width": 2}))


@jax.jit
def blocks_grad(x: Image) -> tuple[jax.Array, Image]:
    """Windows within each block: nothing moves back."""
    return jax.value_and_grad(blocks_loss)(x)


def conv_loss(k: Kernel, x: Image) -> jax.Array:
    return square(tnp.conv(x, k, {"height": "kh", "width": "kw"}, "chan"))


@jax.jit
def conv_kernel_grad(k: Kernel, x: Image) -> tuple[jax.Array, Kernel]:
    """The kernel's gradient sums the batch over data; the operand's height blocks are moved again."""
    return jax.value_and_grad(conv_loss)(k, x)


def conv_input_loss(x: Image, k: Kernel) -> jax.Array:
    return square(tnp.conv(x, k, {"height": "kh", "width": "kw"}, "chan"))


@jax.jit
def conv_input_grad(x: Image, k: Kernel) -> tuple[jax.Array, Image]:
    """The operand's cotangent is moved back into its height blocks (a halo exchange)."""
    return jax.value_and_grad(conv_input_loss)(x, k)


def features_loss(
    x: NamedArray[f32, "batch@data height width chan"], k: NamedArray[f32, "kh kw chan out@model"]
) -> jax.Array:
    return square(tnp.conv(x, k, {"height": "kh", "width": "kw"}, "chan"))


@jax.jit
def features_grad(
    x: NamedArray[f32, "batch@data height width chan"], k: NamedArray[f32, "kh kw chan out@model"]
) -> tuple[jax.Array, NamedArray[f32, "batch@data height width chan"]]:
    """Output features split over model: the operand's cotangent sums them (an all-reduce over model)."""
    return jax.value_and_grad(features_loss)(x, k)


Channels = NamedArray[f32, "batch@data height width chan@model"]
ChannelKernel = NamedArray[f32, "kh kw chan@model out"]


def channels_loss(k: ChannelKernel, x: Channels) -> jax.Array:
    return square(tnp.conv(x, k, {"height": "kh", "width": "kw"}, "chan"))


@jax.jit
def channels_grad(k: ChannelKernel, x: Channels) -> tuple[jax.Array, ChannelKernel]:
    """Input channels split over model (the forward sums them): the kernel's gradient, split as the kernel,
    sums the batch over data only."""
    return jax.value_and_grad(channels_loss)(k, x)


# ---- selections ----


def where_loss(w: NamedArray[f32, "embed"], x: Batch) -> jax.Array:
    return square(tnp.where(x > 0, w, x))


@jax.jit
def where_grad(w: NamedArray[f32, "embed"], x: Batch) -> tuple[jax.Array, NamedArray[f32, "embed"]]:
    """w broadcast along the batch split over data: its cotangent sums it."""
    return jax.value_and_grad(where_loss)(w, x)


Sequence = NamedArray[f32, "batch@data seq@model embed"]


def first_loss(x: Sequence) -> jax.Array:
    return square(x[{"seq": 0}])


@jax.jit
def first_grad(x: Sequence) -> tuple[jax.Array, Sequence]:
    """One index of the split seq: its cotangent is written into the owning block: none."""
    return jax.value_and_grad(first_loss)(x)


def top_loss(x: NamedArray[f32, "batch@data embed@model"]) -> jax.Array:
    return square(tnp.top_k(x, 2, "embed", "k")[0])


@jax.jit
def top_grad(
    x: NamedArray[f32, "batch@data embed@model"],
) -> tuple[jax.Array, NamedArray[f32, "batch@data embed@model"]]:
    """top_k along the split embed: the values' cotangent is scattered into each device's block: none."""
    return jax.value_and_grad(top_loss)(x)


def head_loss(x: Sequence) -> jax.Array:
    return square(x[{"seq": slice(0, 4)}])


@jax.jit
def head_grad(x: Sequence) -> tuple[jax.Array, Sequence]:
    """A slice along the split seq: no backward rule, the listing says it is partial."""
    return jax.value_and_grad(head_loss)(x)


def sorted_loss(x: NamedArray[f32, "batch@data embed@model"]) -> jax.Array:
    return square(tnp.sort(x, "embed"))


@jax.jit
def sorted_grad(
    x: NamedArray[f32, "batch@data embed@model"],
) -> tuple[jax.Array, NamedArray[f32, "batch@data embed@model"]]:
    """A sort along the split embed (gathered in the forward pass): its cotangent is scattered back into each
    device's block: none."""
    return jax.value_and_grad(sorted_loss)(x)


def reshard_loss(x: Batch) -> jax.Array:
    return square(tx.constrain(x * 2.0, {"batch": "model"}))


@jax.jit
def reshard_grad(x: Batch) -> tuple[jax.Array, Batch]:
    """model put where data split batch: a reshard, and one back."""
    return jax.value_and_grad(reshard_loss)(x)


# ---- what a grad call differentiates: a partial of a loss, a lambda calling one ----


@jax.jit
def partial_grad(
    table: NamedArray[f32, "vocab@model embed"], tokens: Tokens
) -> tuple[jax.Array, NamedArray[f32, "vocab@model embed"]]:
    """``functools.partial`` binding the tokens by keyword: the table's gradient, as in lookup_grad."""
    found: tuple[jax.Array, NamedArray[f32, "vocab@model embed"]]
    found = jax.value_and_grad(functools.partial(lookup_loss, tokens=tokens))(table)
    return found


@jax.jit
def lambda_grad(
    table: NamedArray[f32, "vocab@model embed"], tokens: Tokens
) -> tuple[jax.Array, NamedArray[f32, "vocab@model embed"]]:
    """A lambda calling the loss: the table's gradient, as in lookup_grad."""
    return jax.value_and_grad(lambda t: lookup_loss(t, tokens))(table)


@jax.jit
def nested_grad(
    table: NamedArray[f32, "vocab@model embed"], tokens: Tokens
) -> tuple[jax.Array, NamedArray[f32, "vocab@model embed"]]:
    """A loss defined inside the step (closing over the tokens, calling a module function): the table's
    gradient, as in lookup_grad."""

    def loss_fn(t: NamedArray[f32, "vocab@model embed"]) -> jax.Array:
        return lookup_loss(t * 1.0, tokens)

    return jax.value_and_grad(loss_fn)(table)


# ---- gradients the listing does not read: it says so ----

LOSSES = {"lookup": lookup_loss}


@jax.jit
def unread_grad(
    table: NamedArray[f32, "vocab@model embed"], tokens: Tokens
) -> tuple[jax.Array, NamedArray[f32, "vocab@model embed"]]:
    """A loss taken from a dict: not read, the listing says it is partial."""
    return jax.value_and_grad(LOSSES["lookup"])(table, tokens)


@jax.jit
def early_grad(
    table: NamedArray[f32, "vocab@model embed"], tokens: Tokens
) -> tuple[jax.Array, NamedArray[f32, "vocab@model embed"]]:
    """A loss defined below: not yet checked where its gradient is taken, the listing says so."""
    return jax.value_and_grad(late_loss)(table, tokens)


def late_loss(table: NamedArray[f32, "vocab@model embed"], tokens: Tokens) -> jax.Array:
    return square(table[{"vocab": tokens}])
