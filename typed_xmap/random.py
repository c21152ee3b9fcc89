"""``typed_xmap.random``: random NamedArrays by named shape, ``tx.random.normal(key, {'in': 4, 'out': 3})``.

The values are drawn over the axes sorted by name, so a shape's values never depend on the order its
dict lists the axes in. ``sharding=`` (``{'in': 'model'}``) places the result by axis name.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jax
import jax.numpy as jnp

from ._algebra import axis_sizes
from ._ops import _methods  # noqa: F401  # binds x.sum, x[...], x.at onto NamedArray
from ._ops._tnp._constructors import place
from ._value._named_array import NamedArray, wrap

__all__ = ["bernoulli", "normal", "uniform"]


def _shape(shape: Mapping[str, int], operation: str) -> tuple[tuple[str, ...], tuple[int, ...]]:
    sizes = axis_sizes(shape, operation=operation)
    axes = tuple(sorted(sizes))
    return axes, tuple(sizes[a] for a in axes)


def normal(
    key: Any, shape: Mapping[str, int], dtype: Any = jnp.float32, *, sharding: Mapping[str, Any] | None = None
) -> NamedArray:
    """Standard normal values of named shape ``shape``."""
    axes, dims = _shape(shape, "tx.random.normal")
    return place(wrap(jax.random.normal(key, dims, dtype), axes), sharding)


def uniform(
    key: Any,
    shape: Mapping[str, int],
    dtype: Any = jnp.float32,
    minval: Any = 0.0,
    maxval: Any = 1.0,
    *,
    sharding: Mapping[str, Any] | None = None,
) -> NamedArray:
    """Uniform values in ``[minval, maxval)`` of named shape ``shape``."""
    axes, dims = _shape(shape, "tx.random.uniform")
    return place(wrap(jax.random.uniform(key, dims, dtype, minval, maxval), axes), sharding)


def bernoulli(key: Any, p: Any, shape: Mapping[str, int], *, sharding: Mapping[str, Any] | None = None) -> NamedArray:
    """Booleans, true with probability ``p``, of named shape ``shape`` (dropout masks)."""
    axes, dims = _shape(shape, "tx.random.bernoulli")
    return place(wrap(jax.random.bernoulli(key, p, dims), axes), sharding)
