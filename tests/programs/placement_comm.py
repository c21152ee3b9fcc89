"""Small jitted programs whose placement forces collectives (or none): ``typed-xmap check --comm`` lists them,
and tests/test_comm_hlo.py compares the list with the compiled HLO on an 8-device (data=4, model=2) mesh."""

from functools import partial

import jax

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32, i32


@jax.jit
@tx.typed
def project(
    x: NamedArray[f32, "batch embed@model"], w: NamedArray[f32, "embed@model mlp"]
) -> NamedArray[f32, "batch mlp"]:
    return tnp.einsum("{batch,embed},{embed,mlp}->{batch,mlp}", x, w)


@jax.jit
@tx.typed
def pool(x: NamedArray[f32, "batch@data embed"]) -> NamedArray[f32, "embed"]:
    return tnp.sum(x * 2.0, "batch")


@jax.jit
@tx.typed
def scale(
    x: NamedArray[f32, "batch@data embed@model"], b: NamedArray[f32, "embed@model"]
) -> NamedArray[f32, "batch embed"]:
    return tnp.exp(x) + b


@jax.jit
@tx.typed
def fsdp_matmul(
    x: NamedArray[f32, "batch@data embed"], w: NamedArray[f32, "embed@data mlp"]
) -> NamedArray[f32, "batch@data mlp"]:
    return tnp.einsum("{batch,embed},{embed,mlp}->{batch,mlp}", x, w)


@jax.jit
@tx.typed
def local_matmul(
    x: NamedArray[f32, "batch@data embed"], w: NamedArray[f32, "embed mlp@model"]
) -> NamedArray[f32, "batch mlp"]:
    return tnp.einsum("{batch,embed},{embed,mlp}->{batch,mlp}", x, w)


@jax.jit
@tx.typed
def pool_windows(x: NamedArray[f32, "batch height@model width chan"]) -> NamedArray[f32, "batch height width chan"]:
    return tnp.max_pool(x, {"height": 3, "width": 3}, strides=1, padding="SAME")


@jax.jit
def pool_blocks(x: NamedArray[f32, "batch height@model width chan"]) -> NamedArray:
    return tnp.avg_pool(x, {"height": 2}, strides=2)


@jax.jit
def conv_windows(
    x: NamedArray[f32, "batch@data height@model width chan"], k: NamedArray[f32, "kh=3 kw=3 chan out"]
) -> NamedArray:
    return tnp.conv(x, k, {"height": "kh", "width": "kw"}, "chan")


@partial(tx.xmap, out_axes=["batch", "mlp", ...], axis_resources={"batch": "data", "embed": "model"})
def xmapped_project(x: NamedArray[f32, "batch embed"], w: NamedArray[f32, "embed mlp"]) -> NamedArray[f32, "batch mlp"]:
    """Placed by xmap's axis_resources: inside the body x is batch@data embed@model, w embed@model."""
    return tnp.einsum("{batch,embed},{embed,mlp}->{batch,mlp}", x, w)


@jax.jit
@tx.typed
def standardise(x: NamedArray[f32, "batch@data embed@model"]) -> NamedArray[f32, "batch@data embed@model"]:
    """The mean is computed once (tnp.var's first pass is the same sum): two all-reduces, not three."""
    return (x - tnp.mean(x, "embed")) / tnp.sqrt(tnp.var(x, "embed") + 1e-5)


@jax.jit
def log_probs(x: NamedArray[f32, "batch@data vocab@model"]) -> NamedArray:
    return tnp.log_softmax(x, "vocab")


@jax.jit
@tx.typed
def lookup(
    emb: NamedArray[f32, "vocab@model embed"], tokens: NamedArray[i32, "batch@data seq"]
) -> NamedArray[f32, "batch@data seq embed"]:
    return emb[{"vocab": tokens}]


@jax.jit
def best(x: NamedArray[f32, "batch@data vocab@model"]) -> NamedArray:
    return tnp.argmax(x, "vocab")


@jax.jit
def running_total(x: NamedArray[f32, "batch@data vocab@model"]) -> NamedArray:
    return tnp.cumsum(x, "vocab")


@jax.jit
def regather(x: NamedArray[f32, "batch@data seq@model embed"]) -> NamedArray:
    return tx.constrain(x, {"batch": "data"})
