"""An MLP-Mixer block on a 2-D (data x model) mesh: images are cut into patches by splitting and merging named
axes, projected to ``channel``; the token-mixing MLP's hidden units are split over ``model`` (contracting them
is an all-reduce over model), the channel-mixing MLP's hidden units too, the batch is split over ``data``.
Layer norms run over the whole ``channel`` axis. Training is Adam with a global-norm clip over the dict of
parameters; a separate function reports the global norm of the gradients alone."""

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

from typing import Final, TypedDict

import jax

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32, i32

MESH = {"data": 4, "model": 2}

BATCH: Final = 8
IMAGE: Final = 16
PATCH: Final = 4
GRID: Final = IMAGE // PATCH
CHANNELS_IN: Final = 8
CHANNEL: Final = 16
TOKEN_MLP: Final = 16
CHANNEL_MLP: Final = 32
CLASSES: Final = 8
CLIP: Final = 1.0


class Params(TypedDict):
    stem: NamedArray[f32, "pixels channel"]
    token_in: NamedArray[f32, "patch token_mlp@model"]
    token_out: NamedArray[f32, "token_mlp@model patch"]
    channel_in: NamedArray[f32, "channel channel_mlp@model"]
    channel_out: NamedArray[f32, "channel_mlp@model channel"]
    head: NamedArray[f32, "channel klass"]


Images = NamedArray[f32, "batch@data height width rgb"]
Tokens = NamedArray[f32, "batch@data patch channel"]

RESOURCES: Final = {"batch": "data", "token_mlp": "model", "channel_mlp": "model"}


def layer_norm(x: NamedArray[f32, "*rest channel"]) -> NamedArray[f32, "*rest channel"]:
    mean = tnp.mean(x, "channel")
    return (x - mean) / tnp.sqrt(tnp.var(x, "channel") + 1e-5)


def patchify(images: Images, stem: NamedArray[f32, "pixels channel"]) -> Tokens:
    """height -> (gh, ph), width -> (gw, pw); the grid becomes ``patch``, each patch's pixels ``pixels``."""
    x = tx.split_axis(images, "height", {"gh": GRID, "ph": PATCH})
    x = tx.split_axis(x, "width", {"gw": GRID, "pw": PATCH})
    x = tx.merge_axes(x, ("gh", "gw"), "patch")
    x = tx.merge_axes(x, ("ph", "pw", "rgb"), "pixels")
    x = tx.constrain(x, {"batch": "data"})
    return tnp.einsum("{batch,patch,pixels},{pixels,channel}->{batch,patch,channel}", x, stem)


def mixer_block(x: Tokens, p: Params) -> Tokens:
    y = layer_norm(x)
    t = tnp.gelu(tnp.einsum("{batch,patch,channel},{patch,token_mlp}->{batch,token_mlp,channel}", y, p["token_in"]))
    x = x + tnp.einsum("{batch,token_mlp,channel},{token_mlp,patch}->{batch,patch,channel}", t, p["token_out"])
    y = layer_norm(x)
    c = tnp.gelu(
        tnp.einsum("{batch,patch,channel},{channel,channel_mlp}->{batch,patch,channel_mlp}", y, p["channel_in"])
    )
    return x + tnp.einsum("{batch,patch,channel_mlp},{channel_mlp,channel}->{batch,patch,channel}", c, p["channel_out"])


def classify(p: Params, images: Images) -> NamedArray[f32, "batch@data klass"]:
    x = mixer_block(patchify(images, p["stem"]), p)
    pooled = tnp.mean(layer_norm(x), "patch")
    return tnp.einsum("{batch,channel},{channel,klass}->{batch,klass}", pooled, p["head"])


def loss(p: Params, images: Images, labels: NamedArray[i32, "batch@data"]) -> jax.Array:
    log_probs = tnp.log_softmax(classify(p, images), "klass")
    return tx.positional(-tnp.mean(log_probs[{"klass": labels}], "batch"), [])


def global_norm(tree: Params) -> NamedArray[f32, ""]:
    """sqrt of the sum of every parameter's squares."""
    total = tnp.zeros({})
    for g in jax.tree.leaves(tree, is_leaf=lambda v: isinstance(v, tx.AnyNamedArray)):
        total = total + tnp.sum(g * g, tuple(g.named_shape))
    return tnp.sqrt(total)


def grad_norm(p: Params, images: Images, labels: NamedArray[i32, "batch@data"]) -> NamedArray[f32, ""]:
    return global_norm(jax.grad(loss)(p, images, labels))


def adam_step(
    p: Params, m: Params, v: Params, images: Images, labels: NamedArray[i32, "batch@data"]
) -> tuple[jax.Array, Params, Params, Params]:
    value, grads = jax.value_and_grad(loss)(p, images, labels)
    scale = tnp.minimum(1.0, CLIP / (global_norm(grads) + 1e-6))
    grads = jax.tree.map(lambda g: g * scale, grads)
    m = jax.tree.map(lambda a, g: 0.9 * a + 0.1 * g, m, grads)
    v = jax.tree.map(lambda a, g: 0.99 * a + 0.01 * g * g, v, grads)
    p = jax.tree.map(lambda w, a, b: w - 1e-3 * a / (tnp.sqrt(b) + 1e-8), p, m, v)
    return value, p, m, v


def init(key: jax.Array) -> Params:
    k = jax.random.split(key, 6)
    patches, pixels = GRID * GRID, PATCH * PATCH * CHANNELS_IN
    return {
        "stem": tx.random.normal(k[0], {"pixels": pixels, "channel": CHANNEL}) / 8,
        "token_in": tx.random.normal(k[1], {"patch": patches, "token_mlp": TOKEN_MLP}) / 4,
        "token_out": tx.random.normal(k[2], {"token_mlp": TOKEN_MLP, "patch": patches}) / 4,
        "channel_in": tx.random.normal(k[3], {"channel": CHANNEL, "channel_mlp": CHANNEL_MLP}) / 4,
        "channel_out": tx.random.normal(k[4], {"channel_mlp": CHANNEL_MLP, "channel": CHANNEL}) / 6,
        "head": tx.random.normal(k[5], {"channel": CHANNEL, "klass": CLASSES}) / 4,
    }


def example_arguments() -> dict[str, tuple[object, ...]]:
    p = tx.shard(init(jax.random.key(0)), RESOURCES)
    zeros = jax.tree.map(lambda w: w * 0.0, p)
    images = tx.shard(
        tx.random.normal(jax.random.key(1), {"batch": BATCH, "height": IMAGE, "width": IMAGE, "rgb": CHANNELS_IN}),
        RESOURCES,
    )
    labels = tx.shard(tx.random.randint(jax.random.key(2), {"batch": BATCH}, 0, CLASSES), RESOURCES)
    tokens = tx.shard(
        tx.random.normal(jax.random.key(3), {"batch": BATCH, "patch": GRID * GRID, "channel": CHANNEL}), RESOURCES
    )
    return {
        "patchify": (images, p["stem"]),
        "mixer_block": (tokens, p),
        "classify": (p, images),
        "grad_norm": (p, images, labels),
        "adam_step": (p, zeros, zeros, images, labels),
    }


if __name__ == "__main__":
    from jax.sharding import AxisType

    mesh = jax.make_mesh((4, 2), ("data", "model"), axis_types=(AxisType.Explicit,) * 2)
    with jax.set_mesh(mesh):
        for name, args in example_arguments().items():
            jax.jit(globals()[name])(*args)
