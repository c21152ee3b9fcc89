"""Shape-generic helpers with a variadic group: ``"*rest embed"`` is ``embed`` and whatever other axes.

``layer_norm`` normalises over ``embed`` for any leading axes, ``attend`` is attention over ``kv`` for any
batch-like axes (``batch``, ``heads``, ...). Each call's ``*rest`` is its argument's, so ``block`` keeps
``batch seq embed`` through both, and the checker sees the helper's result with the caller's axes.
"""

from __future__ import annotations

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32


@tx.typed
def layer_norm(x: NamedArray[f32, "*rest embed"], scale: NamedArray[f32, "embed"]) -> NamedArray[f32, "*rest embed"]:
    centered = x - tnp.mean(x, "embed")
    variance = tnp.mean(centered * centered, "embed")
    return centered / tnp.sqrt(variance + 1e-5) * scale


@tx.typed
def attend(
    q: NamedArray[f32, "*rest seq head_dim"],
    k: NamedArray[f32, "*rest kv head_dim"],
    v: NamedArray[f32, "*rest kv head_dim"],
) -> NamedArray[f32, "*rest seq head_dim"]:
    scores = tnp.einsum("{seq,head_dim},{kv,head_dim}->{seq,kv}", q, k) / 8.0
    weights = tnp.softmax(scores, "kv")
    return tnp.einsum("{seq,kv},{kv,head_dim}->{seq,head_dim}", weights, v)


def block(
    x: NamedArray[f32, "batch seq embed"],
    scale: NamedArray[f32, "embed"],
    wq: NamedArray[f32, "embed heads head_dim"],
    wo: NamedArray[f32, "heads head_dim embed"],
) -> NamedArray[f32, "batch seq embed"]:
    h = layer_norm(x, scale)
    q = tnp.einsum("{embed},{embed,heads,head_dim}->{heads,head_dim}", h, wq)
    kv = tx.named(tx.positional(q, ["batch", "seq", "heads", "head_dim"]), ["batch", "kv", "heads", "head_dim"])
    mixed = attend(q, kv, kv)
    return x + tnp.einsum("{heads,head_dim},{heads,head_dim,embed}->{embed}", mixed, wo)
