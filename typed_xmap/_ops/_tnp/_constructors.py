"""Constructors by name: ``zeros ones full zeros_like ones_like arange one_hot causal_mask``.

A shape is a dict ``{'batch': 2, 'embed': 3}`` (checked by ``_algebra``'s ``axis_sizes``). ``sharding=``
(``{'batch': 'data'}``, as ``tx.shard`` takes) places the result by axis name on the current mesh; without
it the result is placed as ``jnp`` places it (replicated under a mesh).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jax
import jax.numpy as jnp

from ..._algebra import arange_shape, axis_sizes, new_axis, two_axes
from ..._value._named_array import NamedArray, wrap
from .._structure import as_named

__all__ = ["arange", "causal_mask", "full", "one_hot", "ones", "ones_like", "place", "zeros", "zeros_like"]

Sharding = Mapping[str, Any] | None


def place(x: NamedArray, sharding: Sharding) -> NamedArray:
    """``x`` placed by axis name (``tx.constrain``'s rule) when ``sharding`` is given."""
    if sharding is None:
        return x
    from .._sharding import constrain

    return constrain(x, sharding)  # type: ignore[no-any-return]  # constrain returns what it is given


def full(shape: Mapping[str, int], fill_value: Any, dtype: Any = None, *, sharding: Sharding = None) -> NamedArray:
    """A NamedArray of named shape ``shape`` filled with ``fill_value``."""
    return _full(shape, fill_value, dtype, sharding, "tnp.full")


def _full(shape: Mapping[str, int], fill_value: Any, dtype: Any, sharding: Sharding, operation: str) -> NamedArray:
    sizes = axis_sizes(shape, operation=operation)
    axes = tuple(sorted(sizes))
    return place(wrap(jnp.full(tuple(sizes[a] for a in axes), fill_value, dtype), axes), sharding)


def zeros(shape: Mapping[str, int], dtype: Any = jnp.float32, *, sharding: Sharding = None) -> NamedArray:
    """Zeros of named shape ``shape``: ``tnp.zeros({'batch': 2, 'embed': 3})``."""
    return _full(shape, 0, dtype, sharding, "tnp.zeros")


def ones(shape: Mapping[str, int], dtype: Any = jnp.float32, *, sharding: Sharding = None) -> NamedArray:
    """Ones of named shape ``shape``."""
    return _full(shape, 1, dtype, sharding, "tnp.ones")


def zeros_like(x: NamedArray, dtype: Any = None) -> NamedArray:
    """Zeros of ``x``'s named shape (and positional dims, sharding and dtype unless ``dtype`` is given)."""
    x = as_named(x, operation="tnp.zeros_like")
    return wrap(jnp.zeros_like(x.data, dtype=dtype), x.axes, x.mapped)


def ones_like(x: NamedArray, dtype: Any = None) -> NamedArray:
    """Ones of ``x``'s named shape."""
    x = as_named(x, operation="tnp.ones_like")
    return wrap(jnp.ones_like(x.data, dtype=dtype), x.axes, x.mapped)


def arange(
    axis: str, start: int, stop: int | None = None, step: int = 1, *, dtype: Any = None, sharding: Sharding = None
) -> NamedArray:
    """``jnp.arange`` along one named axis: ``tnp.arange('seq', 8)`` is ``0..7`` over ``seq=8``."""
    (name,) = arange_shape(axis, start, stop, step, operation="tnp.arange")
    return place(wrap(jnp.arange(start, stop, step, dtype=dtype), (name,)), sharding)


def one_hot(tokens: Any, axis: str, size: int, *, dtype: Any = jnp.float32) -> NamedArray:
    """One-hot vectors along a new axis ``axis`` of ``size``: the result has ``tokens``' axes and ``axis``."""
    if not isinstance(tokens, NamedArray):
        tokens = wrap(jnp.asarray(tokens), ())
    operation = "tnp.one_hot"
    name = new_axis(tokens.named_shape, axis, operation=operation, operand="tokens")
    return wrap(jax.nn.one_hot(tokens.data, size, dtype=dtype), (*tokens.axes, name), tokens.mapped)


def causal_mask(row: str, column: str, size: int, *, sharding: Sharding = None) -> NamedArray:
    """A boolean mask over ``row`` and ``column`` (both of ``size``): ``mask[row=i, column=j] = j <= i``.

    ``tnp.causal_mask('q_seq', 'k_seq', n)``: query ``i`` sees keys ``0..i``; the row axis comes first.
    """
    first, second = two_axes(row, column, operation="tnp.causal_mask")
    index = jnp.arange(size)
    return place(wrap(index[None, :] <= index[:, None], (first, second)), sharding)
