"""``typed_xmap.random``: random NamedArrays by named shape, ``tx.random.normal(key, {'in': 4, 'out': 3})``.

The values are drawn over the axes sorted by name, so a shape's values never depend on the order its
dict lists the axes in (nor, for ``categorical``, on the order
the logits' data holds them). ``sharding=`` (``{'in': 'model'}``) places the result by axis name.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

import jax
import jax.numpy as jnp

from ._algebra import ErrorKind, NamedShapeError, axis_sizes, float_logits, integer_dtype, sampled_shape
from ._ops import _methods  # noqa: F401  # binds x.sum, x[...], x.at onto NamedArray
from ._ops._memory import allocatable
from ._ops._structure import as_named
from ._ops._tnp._constructors import place
from ._ops._tnp._selection import along
from ._ops._tnp._structure import placed_back
from ._value._named_array import NamedArray, in_order, wrap
from ._value._tracebacks import entry_point

__all__ = ["bernoulli", "categorical", "normal", "permutation", "randint", "uniform"]


def _shape(shape: Mapping[str, int], operation: str) -> tuple[tuple[str, ...], tuple[int, ...]]:
    sizes = axis_sizes(shape, operation=operation)
    axes = tuple(sorted(sizes))
    return axes, tuple(sizes[a] for a in axes)


def _check_key(key: Any, operation: str) -> None:
    """One PRNG key, new-style (``jax.random.key``) or raw (``jax.random.PRNGKey``): JAX's own errors for
    anything else name no argument."""
    dtype, shape = getattr(key, "dtype", None), getattr(key, "shape", None)
    if dtype is not None and jnp.issubdtype(dtype, jax.dtypes.prng_key):
        if shape == ():
            return
    elif dtype == jnp.uint32 and shape == _raw_key_shape(str(getattr(jax.config, "jax_default_prng_impl", ""))):
        return
    what = f"{dtype}{list(shape)}" if dtype is not None and shape is not None else f"{type(key).__name__} {key!r:.40}"
    raise NamedShapeError(
        f"{operation}: key is {what}, not a PRNG key. Fix: pass jax.random.key(0) (jax.random.split it for more keys)",
        kind=ErrorKind.INVALID_ARGUMENT,
    )


def _drawn(
    operation: str,
    key: Any,
    shape: Mapping[str, int],
    sharding: Mapping[str, Any] | None,
    sample: Callable[[tuple[int, ...]], Any],
) -> NamedArray:
    """``sample(dims)`` of named shape ``shape``, placed by ``sharding``, once the key and shape are checked."""
    _check_key(key, operation)
    axes, dims = _shape(shape, operation)
    allocatable(dict(zip(axes, dims, strict=True)), jnp.float32, operation=operation)
    return place(wrap(sample(dims), axes), sharding)


@functools.cache
def _raw_key_shape(impl: str) -> tuple[int, ...]:
    """The shape of a raw key of the default implementation (``(2,)`` for threefry)."""
    return tuple(jax.eval_shape(lambda: jax.random.key_data(jax.random.key(0))).shape)


@entry_point
def normal(
    key: Any, shape: Mapping[str, int], dtype: Any = jnp.float32, *, sharding: Mapping[str, Any] | None = None
) -> NamedArray:
    """Standard normal values of named shape ``shape``.

    Args:
        key: a ``jax.random`` key.
        shape: axis name -> size.
        dtype: a float dtype.
        sharding: axis name -> mesh axis, to draw the value already split.

    Returns:
        Standard normal samples of that named shape.

    Raises:
        NamedShapeError: a size that is not a non-negative int, or a ``sharding`` that does not normalise.
        AxisResourceConflict: a ``sharding`` putting two axes on one mesh axis (a key naming no axis of
            ``shape`` is ignored, as ``tx.shard`` ignores it).

    Examples:
        >>> w = tx.random.normal(jax.random.key(0), {"embed": 4, "mlp": 8})
        >>> w.named_shape == {"embed": 4, "mlp": 8}
        True
    """
    return _drawn("tx.random.normal", key, shape, sharding, lambda dims: jax.random.normal(key, dims, dtype))


@entry_point
def uniform(
    key: Any,
    shape: Mapping[str, int],
    dtype: Any = jnp.float32,
    minval: Any = 0.0,
    maxval: Any = 1.0,
    *,
    sharding: Mapping[str, Any] | None = None,
) -> NamedArray:
    """Uniform values in ``[minval, maxval)`` of named shape ``shape``.

    Args:
        key: a ``jax.random`` key.
        shape: axis name -> size.
        dtype: a float dtype.
        minval: the lower bound (included).
        maxval: the upper bound (excluded).
        sharding: axis name -> mesh axis, to draw the value already split.

    Returns:
        Uniform samples of that named shape.

    Raises:
        NamedShapeError: a size that is not a non-negative int, or a ``sharding`` that does not normalise.
        AxisResourceConflict: a ``sharding`` putting two axes on one mesh axis (a key naming no axis of
            ``shape`` is ignored, as ``tx.shard`` ignores it).

    Examples:
        >>> u = tx.random.uniform(jax.random.key(0), {"batch": 3})
        >>> u.named_shape == {"batch": 3}
        True
    """
    return _drawn(
        "tx.random.uniform", key, shape, sharding, lambda dims: jax.random.uniform(key, dims, dtype, minval, maxval)
    )


@entry_point
def bernoulli(key: Any, p: Any, shape: Mapping[str, int], *, sharding: Mapping[str, Any] | None = None) -> NamedArray:
    """Booleans, true with probability ``p``, of named shape ``shape`` (dropout masks).

    Args:
        key: a ``jax.random`` key.
        p: the probability of ``True`` (a scalar or a NamedArray that broadcasts to ``shape``).
        shape: axis name -> size.
        sharding: axis name -> mesh axis, to draw the value already split.

    Returns:
        Boolean samples of that named shape.

    Raises:
        NamedShapeError: a size that is not a non-negative int, or ``p`` with axes ``shape`` lacks.

    Examples:
        >>> keep = tx.random.bernoulli(jax.random.key(0), 0.9, {"batch": 2, "embed": 3})
        >>> keep.named_shape == {"batch": 2, "embed": 3}
        True
    """
    return _drawn("tx.random.bernoulli", key, shape, sharding, lambda dims: jax.random.bernoulli(key, p, dims))


@entry_point
def randint(
    key: Any,
    shape: Mapping[str, int],
    minval: Any,
    maxval: Any,
    dtype: Any = jnp.int32,
    *,
    sharding: Mapping[str, Any] | None = None,
) -> NamedArray:
    """Integers in ``[minval, maxval)`` of named shape ``shape``.

    Args:
        key: a ``jax.random`` key.
        shape: axis name -> size.
        minval: the lowest value (included).
        maxval: the upper bound (excluded).
        dtype: an int dtype.
        sharding: axis name -> mesh axis, to draw the value already split.

    Returns:
        Integer samples of that named shape.

    Raises:
        NamedShapeError: a size that is not a non-negative int, or a dtype that is not an integer one.

    Examples:
        >>> tokens = tx.random.randint(jax.random.key(0), {"batch": 2, "seq": 5}, 0, 100)
        >>> tokens.named_shape == {"batch": 2, "seq": 5}
        True
    """
    integer_dtype(str(jnp.dtype(dtype)), operation="tx.random.randint")
    return _drawn(
        "tx.random.randint", key, shape, sharding, lambda dims: jax.random.randint(key, dims, minval, maxval, dtype)
    )


@entry_point
def categorical(key: Any, logits: NamedArray, axis: str) -> NamedArray:
    """One int32 index along ``axis`` per element of the other axes, drawn with probabilities
    ``softmax(logits, axis)`` (the logits' other axes are the result's).

    Args:
        key: a ``jax.random`` key.
        logits: a NamedArray carrying ``axis``.
        axis: the axis of the classes.

    Returns:
        One int32 class per element of ``logits``' other axes.

    Raises:
        NamedShapeError: ``axis`` missing.

    Examples:
        >>> logits = tx.named(jnp.zeros((2, 10)), ["batch", "vocab"])
        >>> tx.random.categorical(jax.random.key(0), logits, "vocab").named_shape == {"batch": 2}
        True
    """
    operation = "tx.random.categorical"
    _check_key(key, operation)
    named = as_named(logits, operation=operation, argument="logits")
    sampled_shape(named.named_shape, axis, operation=operation)
    float_logits(str(named.dtype), operation=operation)
    value, _, _ = along(named, axis, operation=operation)  # axis is drawn from: no placement to restore
    ordered = in_order(value, tuple(sorted(value.axes)))
    dim = ordered.ndim + ordered.axes.index(axis)
    drawn = jax.random.categorical(key, ordered.data, axis=dim).astype(jnp.int32)
    return wrap(drawn, tuple(a for a in ordered.axes if a != axis), ordered.mapped)


@entry_point
def permutation(key: Any, x: NamedArray, axis: str) -> NamedArray:
    """``x`` with its elements along ``axis`` shuffled (the same shuffle for every element of the other axes).

    Args:
        key: a ``jax.random`` key.
        x: a NamedArray carrying ``axis``.
        axis: the axis shuffled.

    Returns:
        ``x`` with its elements along ``axis`` in a random order (the same named shape).

    Raises:
        NamedShapeError: ``axis`` missing.

    Examples:
        >>> x = tx.named(jnp.arange(5.0), ["batch"])
        >>> tx.random.permutation(jax.random.key(0), x, "batch").named_shape == {"batch": 5}
        True
    """
    operation = "tx.random.permutation"
    _check_key(key, operation)
    value, dim, placement = along(as_named(x, operation=operation), axis, operation=operation)
    return wrap(placed_back(jax.random.permutation(key, value.data, axis=dim), placement), value.axes, value.mapped)
