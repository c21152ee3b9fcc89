"""One decoder-only transformer written three ways: plain ``jnp``, Haliax, and typed_xmap (NamedArray + tnp).

All three are the same program: token embeddings + learned positions; per layer (a Python loop over
per-layer params) pre-layer-norm, causal multi-head attention, pre-layer-norm, MLP with gelu; a final layer
norm; tied output (``logits = h . embedding^T``); cross-entropy against one-hot targets; the loss is the mean
over batch and positions. ``init_params`` draws one set of NumPy arrays; each version converts it to its own
layout, so the three give the same loss from the same initial values.

The typed_xmap version is ``named_loss`` and its helpers (``_named_*``): the named vocabulary throughout (a
gather for the embeddings, ``rename``, ``causal_mask``, ``one_hot``), no positional escape.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

import typed_xmap as tx
import typed_xmap.numpy as tnp

EPS = 1e-5
MASKED = -1e9  # the logit a masked-out key gets (Haliax's value)


@dataclasses.dataclass(frozen=True)
class Config:
    vocab: int = 256
    batch: int = 8
    seq: int = 64
    embed: int = 128
    heads: int = 4
    head_dim: int = 32
    mlp: int = 512
    layers: int = 12


# name -> (axes); the jnp version uses these dims in this order, the named versions these names
LAYER_AXES = {
    "ln1_g": ("embed",),
    "ln1_b": ("embed",),
    "wq": ("embed", "heads", "head_dim"),
    "wk": ("embed", "heads", "head_dim"),
    "wv": ("embed", "heads", "head_dim"),
    "wo": ("heads", "head_dim", "embed"),
    "ln2_g": ("embed",),
    "ln2_b": ("embed",),
    "w1": ("embed", "mlp"),
    "b1": ("mlp",),
    "w2": ("mlp", "embed"),
    "b2": ("embed",),
}
TOP_AXES = {"emb": ("vocab", "embed"), "pos": ("seq", "embed"), "lnf_g": ("embed",), "lnf_b": ("embed",)}


def init_params(cfg: Config, seed: int = 0) -> dict[str, Any]:
    """NumPy float32 params: ``{"emb", "pos", "lnf_g", "lnf_b", "layers": [per-layer dicts]}``."""
    return draw_params(dataclasses.asdict(cfg), TOP_AXES, cfg.layers, seed)


def draw_params(size: dict[str, int], top_axes: dict[str, tuple[str, ...]], layers: int, seed: int) -> dict[str, Any]:
    """``top_axes``' params and ``layers`` dicts of ``LAYER_AXES``' (sizes by axis name in ``size``): norm
    gains ones, biases zeros, weights normal over the square root of their first dim (both heads' dims: wo)."""
    rng = np.random.default_rng(seed)

    def draw(name: str, axes: tuple[str, ...]) -> np.ndarray:
        shape = tuple(size[a] for a in axes)
        if name.endswith("_g"):
            return np.ones(shape, np.float32)
        if name.endswith("_b") or name in ("b1", "b2"):
            return np.zeros(shape, np.float32)
        fan_in = shape[0] if name not in ("wo",) else shape[0] * shape[1]
        return (rng.normal(size=shape) / np.sqrt(fan_in)).astype(np.float32)

    params: dict[str, Any] = {k: draw(k, a) for k, a in top_axes.items()}
    params["layers"] = [{k: draw(k, a) for k, a in LAYER_AXES.items()} for _ in range(layers)]
    return params


def batch(cfg: Config, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Tokens and next-token targets, int32 [batch, seq]."""
    rng = np.random.default_rng(seed)
    tokens = rng.integers(0, cfg.vocab, size=(cfg.batch, cfg.seq + 1), dtype=np.int32)
    return tokens[:, :-1], tokens[:, 1:]


# -- plain jnp ------------------------------------------------------------------------------------------


def _jnp_norm(x: Any, g: Any, b: Any) -> Any:
    mu = jnp.mean(x, axis=-1, keepdims=True)
    xc = x - mu
    var = jnp.mean(xc * xc, axis=-1, keepdims=True)
    return xc / jnp.sqrt(var + EPS) * g + b


def _jnp_layer(x: Any, p: dict[str, Any], mask: Any, scale: float) -> Any:
    """One pre-norm layer; ``mask`` ``None``: bidirectional attention (the ViT's)."""
    h = _jnp_norm(x, p["ln1_g"], p["ln1_b"])
    q = jnp.einsum("bse,ehd->bshd", h, p["wq"])
    k = jnp.einsum("bse,ehd->bshd", h, p["wk"])
    v = jnp.einsum("bse,ehd->bshd", h, p["wv"])
    scores = jnp.einsum("bshd,bthd->bhst", q, k) * scale
    weights = jax.nn.softmax(scores if mask is None else jnp.where(mask, scores, MASKED), axis=-1)
    mixed = jnp.einsum("bhst,bthd->bshd", weights, v)
    x = x + jnp.einsum("bshd,hde->bse", mixed, p["wo"])
    h = _jnp_norm(x, p["ln2_g"], p["ln2_b"])
    m = jax.nn.gelu(jnp.einsum("bse,em->bsm", h, p["w1"]) + p["b1"])
    return x + jnp.einsum("bsm,me->bse", m, p["w2"]) + p["b2"]


def jnp_loss(params: dict[str, Any], tokens: Any, targets: Any) -> Any:
    seq = tokens.shape[1]
    x = jnp.take(params["emb"], tokens, axis=0) + params["pos"]
    mask = jnp.arange(seq)[:, None] >= jnp.arange(seq)[None, :]
    scale = params["layers"][0]["wq"].shape[-1] ** -0.5
    for p in params["layers"]:
        x = _jnp_layer(x, p, mask, scale)
    h = _jnp_norm(x, params["lnf_g"], params["lnf_b"])
    logits = jnp.einsum("bse,ve->bsv", h, params["emb"])
    logp = jax.nn.log_softmax(logits, axis=-1)
    onehot = jax.nn.one_hot(targets, logits.shape[-1], dtype=logp.dtype)
    return -jnp.mean(jnp.sum(logp * onehot, axis=-1))


def jnp_params(params: dict[str, Any]) -> dict[str, Any]:
    return jax.tree.map(jnp.asarray, params)


# -- typed_xmap -----------------------------------------------------------------------------------------


def _named_norm(x: Any, g: Any, b: Any) -> Any:
    mu = tnp.mean(x, "embed")
    xc = x - mu
    var = tnp.mean(xc * xc, "embed")
    return xc / tnp.sqrt(var + EPS) * g + b


def _named_layer(x: Any, p: dict[str, Any], mask: Any, scale: float) -> Any:
    """One pre-norm layer; ``mask`` ``None``: bidirectional attention (the ViT's)."""
    h = _named_norm(x, p["ln1_g"], p["ln1_b"])
    q = tnp.einsum("{embed},{embed,heads,head_dim}->{heads,head_dim}", h, p["wq"])
    k = tnp.einsum("{embed},{embed,heads,head_dim}->{heads,head_dim}", h, p["wk"]).rename({"seq": "kv"})
    v = tnp.einsum("{embed},{embed,heads,head_dim}->{heads,head_dim}", h, p["wv"]).rename({"seq": "kv"})
    scores = tnp.einsum("{seq,head_dim},{kv,head_dim}->{seq,kv}", q, k) * scale
    weights = tnp.softmax(scores if mask is None else tnp.where(mask, scores, MASKED), "kv")
    mixed = tnp.einsum("{seq,kv},{kv,head_dim}->{seq,head_dim}", weights, v)
    x = x + tnp.einsum("{heads,head_dim},{heads,head_dim,embed}->{embed}", mixed, p["wo"])
    h = _named_norm(x, p["ln2_g"], p["ln2_b"])
    m = tnp.gelu(tnp.einsum("{embed},{embed,mlp}->{mlp}", h, p["w1"]) + p["b1"])
    return x + tnp.einsum("{mlp},{mlp,embed}->{embed}", m, p["w2"]) + p["b2"]


def named_loss(params: dict[str, Any], tokens: Any, targets: Any) -> Any:
    """``tokens``, ``targets``: NamedArrays {batch, seq} of int32; returns a plain scalar."""
    seq, vocab = tokens.named_shape["seq"], params["emb"].named_shape["vocab"]
    x = params["emb"][{"vocab": tokens}] + params["pos"]
    mask = tnp.causal_mask("seq", "kv", seq)
    scale = params["layers"][0]["wq"].named_shape["head_dim"] ** -0.5
    for p in params["layers"]:
        x = _named_layer(x, p, mask, scale)
    h = _named_norm(x, params["lnf_g"], params["lnf_b"])
    logits = tnp.einsum("{embed},{vocab,embed}->{vocab}", h, params["emb"])
    logp = tnp.log_softmax(logits, "vocab")
    onehot = tnp.one_hot(targets, "vocab", vocab, dtype=logp.dtype)
    return -tnp.mean(tnp.sum(logp * onehot, "vocab"), ("batch", "seq")).data


def named_params(params: dict[str, Any]) -> dict[str, Any]:
    top = {k: tx.named(jnp.asarray(params[k]), list(a)) for k, a in TOP_AXES.items()}
    top["layers"] = [{k: tx.named(jnp.asarray(p[k]), list(a)) for k, a in LAYER_AXES.items()} for p in params["layers"]]
    return top


def named_batch(tokens: np.ndarray, targets: np.ndarray) -> tuple[Any, Any]:
    return tx.named(jnp.asarray(tokens), ["batch", "seq"]), tx.named(jnp.asarray(targets), ["batch", "seq"])


# -- Haliax ---------------------------------------------------------------------------------------------


def haliax_available() -> bool:
    try:
        import haliax  # noqa: F401
    except ImportError:
        return False
    return True


def _hax_axes(cfg: Config) -> dict[str, Any]:
    import haliax as hax

    size = dataclasses.asdict(cfg)
    axes = {name: hax.Axis(name, size[name]) for name in ("vocab", "batch", "seq", "embed", "heads", "head_dim", "mlp")}
    axes["kv"] = hax.Axis("kv", cfg.seq)
    return axes


def haliax_params(params: dict[str, Any], cfg: Config) -> dict[str, Any]:
    import haliax as hax

    ax = _hax_axes(cfg)

    def conv(array: np.ndarray, names: tuple[str, ...]) -> Any:
        return hax.named(jnp.asarray(array), tuple(ax[n] for n in names))

    top = {k: conv(params[k], a) for k, a in TOP_AXES.items()}
    top["layers"] = [{k: conv(p[k], a) for k, a in LAYER_AXES.items()} for p in params["layers"]]
    return top


def haliax_batch(tokens: np.ndarray, targets: np.ndarray, cfg: Config) -> tuple[Any, Any]:
    import haliax as hax

    ax = _hax_axes(cfg)
    return hax.named(jnp.asarray(tokens), (ax["batch"], ax["seq"])), hax.named(
        jnp.asarray(targets), (ax["batch"], ax["seq"])
    )


def _hax_norm(x: Any, g: Any, b: Any, embed: Any) -> Any:
    import haliax as hax

    mu = hax.mean(x, embed)
    xc = x - mu
    var = hax.mean(xc * xc, embed)
    return xc / hax.sqrt(var + EPS) * g + b


def _hax_layer(x: Any, p: dict[str, Any], mask: Any, scale: float, ax: dict[str, Any]) -> Any:
    import haliax as hax

    embed, head_dim = ax["embed"], ax["head_dim"]
    h = _hax_norm(x, p["ln1_g"], p["ln1_b"], embed)
    q = hax.dot(h, p["wq"], axis=embed)
    k = hax.dot(h, p["wk"], axis=embed).rename({"seq": "kv"})
    v = hax.dot(h, p["wv"], axis=embed).rename({"seq": "kv"})
    scores = hax.dot(q, k, axis=head_dim) * scale
    weights = hax.nn.softmax(hax.where(mask, scores, MASKED), axis=ax["kv"])
    mixed = hax.dot(weights, v, axis=ax["kv"])
    x = x + hax.dot(mixed, p["wo"], axis=(ax["heads"], head_dim))
    h = _hax_norm(x, p["ln2_g"], p["ln2_b"], embed)
    m = hax.nn.gelu(hax.dot(h, p["w1"], axis=embed) + p["b1"])
    return x + hax.dot(m, p["w2"], axis=ax["mlp"]) + p["b2"]


def haliax_loss_fn(cfg: Config) -> Any:
    import haliax as hax

    ax = _hax_axes(cfg)

    def loss(params: dict[str, Any], tokens: Any, targets: Any) -> Any:
        x = params["emb"].take(ax["vocab"], tokens) + params["pos"]
        mask = hax.arange(ax["seq"]) >= hax.arange(ax["kv"]).broadcast_axis(ax["seq"])
        scale = cfg.head_dim**-0.5
        for p in params["layers"]:
            x = _hax_layer(x, p, mask, scale, ax)
        h = _hax_norm(x, params["lnf_g"], params["lnf_b"], ax["embed"])
        logits = hax.dot(h, params["emb"], axis=ax["embed"])
        logp = hax.nn.log_softmax(logits, axis=ax["vocab"])
        onehot = hax.nn.one_hot(targets, ax["vocab"], dtype=logp.dtype)
        return -hax.mean(hax.sum(logp * onehot, ax["vocab"])).scalar()

    return loss
