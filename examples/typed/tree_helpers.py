"""Helpers generic over any NamedArray type: a TypeVar bound to ``tx.AnyNamedArray`` keeps the caller's exact
type through shape-preserving operations, and ``tx.AnyNamedArray`` is what ``isinstance`` takes (the leaf
test of ``jax.tree.map`` over a dict of parameters)."""

from __future__ import annotations

from typing import TypeVar

import jax

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32

A = TypeVar("A", bound=tx.AnyNamedArray)

Params = dict[str, NamedArray[f32, "embed out"]]


def scale(x: A, s: float) -> A:
    return x * s


def smooth(x: A, momentum: A, beta: float) -> A:
    return beta * momentum + (1.0 - beta) * x


def gelu(x: A) -> A:
    return x * tnp.sigmoid(1.702 * x)


def is_named(value: object) -> bool:
    return isinstance(value, tx.AnyNamedArray)


def sgd(params: Params, grads: Params, lr: float) -> Params:
    scaled: Params = jax.tree.map(lambda g: scale(g, -lr), grads, is_leaf=is_named)
    return {name: w + scaled[name] for name, w in params.items()}


def head(w: NamedArray[f32, "embed out"], x: NamedArray[f32, "batch embed"]) -> NamedArray[f32, "batch out"]:
    out = tnp.einsum("{embed},{embed,out}->{out}", gelu(x), scale(w, 0.5))
    return smooth(out, out, 0.9)
