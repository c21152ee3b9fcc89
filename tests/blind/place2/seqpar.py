"""Sequence parallelism (Korthikanti et al.): the layer norm and the residual stream keep ``seq`` split over
``model``; attention gathers the sequence and splits ``heads`` over ``model`` instead, and its output
projection is moved back to the sequence split before the residual add. One pre-norm attention block, jitted."""

from __future__ import annotations

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

from dataclasses import dataclass
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32

SEQ_PAR = {"batch": "data", "seq": "model"}  # plant[p1 resource static]: SEQ_PAR = {"batch": "model", "seq": "model"}
HEAD_PAR = {"batch": "data", "heads": "model"}
GATHERED = {"batch": "data"}

Stream = NamedArray[f32, "batch@data seq@model embed"]


@dataclass(frozen=True)
class BlockConfig:
    batch: int = 4
    seq: int = 8
    embed: int = 16
    heads: int = 4
    head_dim: int = 4
    split_axes: tuple[str, str] = ("batch", "seq")
    mesh_axes: tuple[str, str] = ("data", "model")  # plant[p2 resource runtime]: mesh_axes: tuple[str, str] = ("model", "data")


class AttnParams(NamedTuple):
    scale: NamedArray[f32, "embed"]
    wq: NamedArray[f32, "embed heads@model head_dim"]
    wk: NamedArray[f32, "embed heads@model head_dim"]
    wv: NamedArray[f32, "embed heads@model head_dim"]
    wo: NamedArray[f32, "heads@model head_dim embed"]


@tx.typed
def layer_norm(x: Stream, scale: NamedArray[f32, "embed"]) -> Stream:  # plant[p3 resource static]: def layer_norm(x: Stream, scale: NamedArray[f32, "embed"]) -> NamedArray[f32, "batch@data seq embed@model"]:
    mu = tnp.mean(x, "embed")
    centred = x - mu
    var = tnp.mean(centred * centred, "embed")
    return centred / tnp.sqrt(var + 1e-5) * scale


def attention(x: Stream, p: AttnParams) -> Stream:
    h = layer_norm(x, p.scale)
    full = tx.constrain(h, GATHERED)  # all-gather of seq before the heads take model
    q = tnp.einsum("{embed},{embed,heads,head_dim}->{heads,head_dim}", full, p.wq)  # plant[p4 resource static]: q = tnp.einsum("{embed},{embed,heads,head_dim}->{heads,head_dim}", h, p.wq)
    k = tnp.einsum("{embed},{embed,heads,head_dim}->{heads,head_dim}", full, p.wk)
    v = tnp.einsum("{embed},{embed,heads,head_dim}->{heads,head_dim}", full, p.wv)
    k = tx.rename(k, {"seq": "key"})
    v = tx.rename(v, {"seq": "key"})
    scores = tnp.einsum("{seq,head_dim},{key,head_dim}->{seq,key}", q, k) / np.sqrt(q.named_shape["head_dim"])
    weights = tnp.softmax(scores, "key")  # plant[p5 name static]: weights = tnp.softmax(scores, "keys")
    mixed = tnp.einsum("{seq,key},{key,head_dim}->{seq,head_dim}", weights, v)
    out = tnp.einsum("{heads,head_dim},{heads,head_dim,embed}->{embed}", mixed, p.wo)  # reduce-scatter target
    return x + tx.constrain(out, SEQ_PAR)


def init(cfg: BlockConfig, key: jax.Array) -> AttnParams:
    ks = jax.random.split(key, 4)
    qkv = {"embed": cfg.embed, "heads": cfg.heads, "head_dim": cfg.head_dim}
    wo = {"heads": cfg.heads, "head_dim": cfg.head_dim, "embed": cfg.embed}
    params = AttnParams(
        scale=tnp.ones({"embed": cfg.embed}),
        wq=tx.random.normal(ks[0], qkv) / cfg.embed**0.5,
        wk=tx.random.normal(ks[1], qkv) / cfg.embed**0.5,
        wv=tx.random.normal(ks[2], qkv) / cfg.embed**0.5,
        wo=tx.random.normal(ks[3], wo) / cfg.embed**0.5,
    )
    return tx.shard(params, HEAD_PAR)


def main() -> None:
    cfg = BlockConfig()
    jax.set_mesh(tx.fitting_mesh((2, 4), ("data", "model")))
    kp, kx = jax.random.split(jax.random.key(1))
    params = init(cfg, kp)
    placement = dict(zip(cfg.split_axes, cfg.mesh_axes))
    x = tx.random.normal(kx, {"batch": cfg.batch, "seq": cfg.seq, "embed": cfg.embed})
    x = tx.shard(x, placement)
    block = jax.jit(attention)
    y = block(x, params)
    y = block(y, params)
    assert tx.resources_of(y) == {"batch": "data", "seq": "model"}, tx.resources_of(y)
    assert y.named_shape == {"batch": cfg.batch, "seq": cfg.seq, "embed": cfg.embed}
    assert bool(jnp.all(jnp.isfinite(y.data)))
    print("seqpar ok", tx.resources_of(y))


if __name__ == "__main__":
    main()
