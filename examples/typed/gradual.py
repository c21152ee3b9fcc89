"""Masked attention scores with values the checker cannot type: gradual typing in practice.

``/ np.sqrt(head_dim)`` and a batch from an untyped loader are ``Any`` to mypy. An ``Any`` operand never
causes an error and never a wrong closed type: ``tnp.where(causal, scores, -1e9)`` with ``scores: Any`` is
not given ``causal``'s axes alone, and checking resumes at the annotated boundary (the return type).

typed-xmap check examples/typed/gradual.py
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32

Queries = NamedArray[f32, "batch seq head_dim"]
Keys = NamedArray[f32, "batch kv head_dim"]
Weights = NamedArray[f32, "batch seq kv"]


def causal_mask(seq: int) -> NamedArray[tx.bool_, "seq kv"]:
    """True where key position <= query position."""
    return tx.named(jnp.tril(jnp.ones((seq, seq), dtype=bool)), ["seq", "kv"])


def attention_weights(q: Queries, k: Keys, causal: NamedArray[tx.bool_, "seq kv"]) -> Weights:
    scores = tnp.einsum("{seq,head_dim},{kv,head_dim}->{seq,kv}", q, k) / np.sqrt(8.0)
    masked = tnp.where(causal, scores, -1e9)  # scores is Any (numpy's sqrt): so is masked, no false error
    weights: Weights = tnp.softmax(masked, "kv")  # an annotation resumes checking from here
    return weights


def load_batch(seed: int) -> Any:
    """An untyped data loader, as most are."""
    return tx.named(
        jnp.asarray(np.random.default_rng(seed).normal(size=(2, 4, 8)), jnp.float32), ["batch", "seq", "head_dim"]
    )


def weights_for_batch(seed: int, k: Keys) -> Weights:
    q = load_batch(seed)
    return attention_weights(q, k, causal_mask(4))
