"""A ViT-like classifier written twice: plain ``jnp`` and typed_xmap (NamedArray + tnp), the same program.

Patch embedding (the image cut into ``patch`` x ``patch`` tiles, each projected to ``embed``), a learned class
token put before the patches, learned positions; per layer (a Python loop over per-layer params)
pre-layer-norm, bidirectional multi-head attention, pre-layer-norm, MLP with gelu; a final layer norm; the
pooled features are the class token's output plus the mean over the patches' outputs; a linear head;
cross-entropy against the labels, averaged over the batch. ``init_params`` draws one set of NumPy arrays that
both versions convert, so they give the same loss. The layers are the transformer's
(``_transformer_models``), without a mask.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from _transformer_models import LAYER_AXES, _jnp_layer, _jnp_norm, _named_layer, _named_norm, draw_params

import typed_xmap as tx
import typed_xmap.numpy as tnp


@dataclasses.dataclass(frozen=True)
class Config:
    batch: int = 8
    height: int = 32
    width: int = 32
    channels: int = 3
    patch: int = 4
    embed: int = 128
    heads: int = 4
    head_dim: int = 32
    mlp: int = 512
    layers: int = 6
    classes: int = 10

    @property
    def seq(self) -> int:
        """Patches plus the class token."""
        return (self.height // self.patch) * (self.width // self.patch) + 1


TOP_AXES = {
    "patch_w": ("ph", "pw", "channels", "embed"),
    "patch_b": ("embed",),
    "cls": ("embed",),
    "pos": ("seq", "embed"),
    "lnf_g": ("embed",),
    "lnf_b": ("embed",),
    "head_w": ("embed", "classes"),
    "head_b": ("classes",),
}


def init_params(cfg: Config, seed: int = 0) -> dict[str, Any]:
    size = dataclasses.asdict(cfg) | {"ph": cfg.patch, "pw": cfg.patch, "seq": cfg.seq}
    return draw_params(size, TOP_AXES, cfg.layers, seed)


def batch(cfg: Config, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Images float32 [batch, height, width, channels] and int32 labels [batch]."""
    rng = np.random.default_rng(seed)
    images = rng.normal(size=(cfg.batch, cfg.height, cfg.width, cfg.channels)).astype(np.float32)
    return images, rng.integers(0, cfg.classes, size=(cfg.batch,), dtype=np.int32)


# -- plain jnp ------------------------------------------------------------------------------------------


def _jnp_patches(params: dict[str, Any], images: Any) -> Any:
    """The patch stem as tiles and an einsum: [batch, seq - 1, embed]."""
    b, height, width, channels = images.shape
    patch = params["patch_w"].shape[0]
    tiles = images.reshape(b, height // patch, patch, width // patch, patch, channels)
    x = jnp.einsum("bhpwqc,pqce->bhwe", tiles, params["patch_w"]) + params["patch_b"]
    return x.reshape(b, -1, x.shape[-1])


def _jnp_conv_patches(params: dict[str, Any], images: Any) -> Any:
    """The patch stem as a convolution with the patch as window and stride."""
    patch = params["patch_w"].shape[0]
    dims = ("NHWC", "HWIO", "NHWC")
    x = jax.lax.conv_general_dilated(images, params["patch_w"], (patch, patch), "VALID", dimension_numbers=dims)
    x = x + params["patch_b"]
    return x.reshape(x.shape[0], -1, x.shape[-1])


def jnp_loss(params: dict[str, Any], images: Any, labels: Any, stem: Any = _jnp_patches) -> Any:
    x = stem(params, images)
    b = x.shape[0]
    cls = jnp.broadcast_to(params["cls"], (b, 1, x.shape[-1]))
    x = jnp.concatenate([cls, x], axis=1) + params["pos"]
    scale = params["layers"][0]["wq"].shape[-1] ** -0.5
    for p in params["layers"]:
        x = _jnp_layer(x, p, None, scale)
    h = _jnp_norm(x, params["lnf_g"], params["lnf_b"])
    pooled = h[:, 0] + jnp.mean(h[:, 1:], axis=1)
    logits = jnp.einsum("be,ec->bc", pooled, params["head_w"]) + params["head_b"]
    logp = jax.nn.log_softmax(logits, axis=-1)
    onehot = jax.nn.one_hot(labels, logits.shape[-1], dtype=logp.dtype)
    return -jnp.mean(jnp.sum(logp * onehot, axis=-1))


def jnp_conv_loss(params: dict[str, Any], images: Any, labels: Any) -> Any:
    return jnp_loss(params, images, labels, _jnp_conv_patches)


def jnp_params(params: dict[str, Any]) -> dict[str, Any]:
    return jax.tree.map(jnp.asarray, params)


# -- typed_xmap -----------------------------------------------------------------------------------------


def _named_patches(params: dict[str, Any], images: Any) -> Any:
    """The patch stem by name, as tiles and an einsum: {batch, seq, embed} (the patches)."""
    patch, size = params["patch_w"].named_shape["ph"], images.named_shape
    tiles = tx.split_axis(images, "height", {"grid_h": size["height"] // patch, "ph": patch})
    tiles = tx.split_axis(tiles, "width", {"grid_w": size["width"] // patch, "pw": patch})
    x = tnp.einsum("{ph,pw,channels},{ph,pw,channels,embed}->{embed}", tiles, params["patch_w"]) + params["patch_b"]
    return tx.merge_axes(x, ("grid_h", "grid_w"), "seq")


def _named_conv_patches(params: dict[str, Any], images: Any) -> Any:
    """The patch stem as users write it: ``tnp.conv`` with the patch as window and stride."""
    patch = params["patch_w"].named_shape["ph"]
    x = tnp.conv(images, params["patch_w"], {"height": "ph", "width": "pw"}, "channels", strides=patch)
    return tx.merge_axes(x + params["patch_b"], ("height", "width"), "seq")


def named_loss(params: dict[str, Any], images: Any, labels: Any, stem: Any = _named_patches) -> Any:
    """``images``: {batch, height, width, channels}; ``labels``: {batch} int32; returns a plain scalar."""
    x, size = stem(params, images), images.named_shape
    cls = tx.broadcast_to(params["cls"], {"batch": size["batch"], "seq": 1} | params["cls"].named_shape)
    x = tnp.concatenate([cls, x], "seq") + params["pos"]
    scale = params["layers"][0]["wq"].named_shape["head_dim"] ** -0.5
    for p in params["layers"]:
        x = _named_layer(x, p, None, scale)
    h = _named_norm(x, params["lnf_g"], params["lnf_b"])
    pooled = h[{"seq": 0}] + tnp.mean(h[{"seq": slice(1, None)}], "seq")
    logits = tnp.einsum("{embed},{embed,classes}->{classes}", pooled, params["head_w"]) + params["head_b"]
    logp = tnp.log_softmax(logits, "classes")
    onehot = tnp.one_hot(labels, "classes", logits.named_shape["classes"], dtype=logp.dtype)
    return -tnp.mean(tnp.sum(logp * onehot, "classes"), "batch").data


def named_conv_loss(params: dict[str, Any], images: Any, labels: Any) -> Any:
    return named_loss(params, images, labels, _named_conv_patches)


def named_params(params: dict[str, Any]) -> dict[str, Any]:
    top = {k: tx.named(jnp.asarray(params[k]), list(a)) for k, a in TOP_AXES.items()}
    top["layers"] = [{k: tx.named(jnp.asarray(p[k]), list(a)) for k, a in LAYER_AXES.items()} for p in params["layers"]]
    return top


def named_batch(images: np.ndarray, labels: np.ndarray) -> tuple[Any, Any]:
    return (
        tx.named(jnp.asarray(images), ["batch", "height", "width", "channels"]),
        tx.named(jnp.asarray(labels), ["batch"]),
    )
