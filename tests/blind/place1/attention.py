"""Multi-head self-attention with the heads split over the mesh axis ``model`` and the batch over ``data``
(Megatron-style tensor parallelism for attention): each device computes its heads' scores for its
examples, and the output projection contracts ``heads`` (an all-reduce over ``model``)."""

from __future__ import annotations

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

import math
from dataclasses import dataclass

import jax
import jax.numpy as jnp

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32


@dataclass(frozen=True)
class AttnConfig:
    batch: int = 4
    seq: int = 6
    embed: int = 16
    heads: int = 4
    head_dim: int = 8


ACTIVATIONS = {"batch": "data"}
WEIGHTS = {"heads": "model"}

Hidden = NamedArray[f32, "batch@data seq embed"]
Proj = NamedArray[f32, "embed heads@model head_dim"]


def init(cfg: AttnConfig, key: jax.Array) -> dict[str, NamedArray[f32, "embed heads head_dim"]]:
    keys = jax.random.split(key, 4)
    shape = {"embed": cfg.embed, "heads": cfg.heads, "head_dim": cfg.head_dim}
    scale = 1.0 / math.sqrt(cfg.embed)
    return {name: tx.random.normal(k, shape) * scale for name, k in zip(("q", "k", "v", "o"), keys)}


def split_heads(x: Hidden, w: Proj) -> NamedArray[f32, "batch@data seq heads@model head_dim"]:  # plant[p5 resource static]: def split_heads(x: Hidden, w: Proj) -> NamedArray[f32, "batch@data seq heads@data head_dim"]:
    return tnp.einsum("{embed},{embed,heads,head_dim}->{heads,head_dim}", x, w)


@tx.typed
def attention(x: Hidden, wq: Proj, wk: Proj, wv: Proj, wo: Proj) -> Hidden:  # plant[p1 resource static]: def attention(x: Hidden, wq: Proj, wk: Proj, wv: Proj, wo: Proj) -> NamedArray[f32, "batch@model seq embed"]:
    q = split_heads(x, wq)
    k = split_heads(x, wk).rename({"seq": "kseq"})
    v = split_heads(x, wv).rename({"seq": "kseq"})
    q = tx.constrain(q, {"batch": "data", "heads": "model"})  # plant[p2 resource static]: q = tx.constrain(q, {"batch": "data", "seq": "model"})
    scores = tnp.einsum("{head_dim},{head_dim}->{}", q, k) / math.sqrt(q.named_shape["head_dim"])
    mask = tnp.greater_equal(tnp.arange("seq", scores.named_shape["seq"]), tnp.arange("kseq", scores.named_shape["kseq"]))
    scores = tnp.where(mask, scores, -1e9)
    probs = tnp.softmax(scores, "kseq")
    mixed = tnp.einsum("{kseq},{kseq,head_dim}->{head_dim}", probs, v)  # plant[p3 name static]: mixed = tnp.einsum("{kseq},{kseq,head_dim}->{head_dim}", probs, q)
    return tnp.einsum("{heads,head_dim},{embed,heads,head_dim}->{embed}", mixed, wo)


@jax.jit
def block(params: dict[str, NamedArray[f32, "embed heads head_dim"]], x: Hidden) -> Hidden:
    w = tx.constrain(params, WEIGHTS)  # plant[p4 resource runtime]: w = tx.constrain(params, {"heads": "data"})
    x = tx.constrain(x, ACTIVATIONS)
    return x + attention(x, w["q"], w["k"], w["v"], w["o"])


if __name__ == "__main__":
    cfg = AttnConfig()
    jax.set_mesh(tx.fitting_mesh((2, 4), ("data", "model")))
    k_p, k_x = jax.random.split(jax.random.key(1))
    params = tx.shard(init(cfg, k_p), WEIGHTS)
    x = tx.random.normal(k_x, {"batch": cfg.batch, "seq": cfg.seq, "embed": cfg.embed})
    x = tx.shard(x, ACTIVATIONS)
    y = block(params, x)
    assert y.named_shape == {"batch": cfg.batch, "seq": cfg.seq, "embed": cfg.embed}
    assert tx.resources_of(y) == {"batch": "data"}, tx.resources_of(y)
    print("ok", float(jnp.abs(tx.positional(y, ["batch", "seq", "embed"])).mean()))
