"""Multi-head self-attention with named axes batch, seq, heads, head_dim and embed."""

from __future__ import annotations

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32

Tokens = NamedArray[f32, "batch seq embed"]
Heads = NamedArray[f32, "batch seq heads head_dim"]
Proj = NamedArray[f32, "embed heads head_dim"]


def project(x: Tokens, w: Proj) -> Heads:
    return tnp.einsum("{embed},{embed,heads,head_dim}->{heads,head_dim}", x, w)


def attention(x: Tokens, wq: Proj, wk: Proj, wv: Proj, wo: Proj) -> Tokens:
    q, k, v = project(x, wq), project(x, wk), project(x, wv)
    # keys and values run over their own sequence axis, kv, contracted against the queries' seq
    k2, v2 = rename_seq(k), rename_seq(v)
    scores = tnp.einsum("{seq,heads,head_dim},{kv,heads,head_dim}->{seq,heads,kv}", q, k2) / 8.0
    weights = tnp.softmax(scores, "kv")
    mixed = tnp.einsum("{seq,heads,kv},{kv,heads,head_dim}->{seq,heads,head_dim}", weights, v2)
    return tnp.einsum("{heads,head_dim},{embed,heads,head_dim}->{embed}", mixed, wo)


def rename_seq(x: Heads) -> NamedArray[f32, "batch kv heads head_dim"]:
    """The same values with axis seq renamed kv (a positional round trip)."""
    return tx.named(
        tx.positional(x, ["batch", "seq", "heads", "head_dim", ...]), ["batch", "kv", "heads", "head_dim", ...]
    )
