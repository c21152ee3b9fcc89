"""Constructors by name: ``zeros ones full zeros_like ones_like full_like arange one_hot causal_mask``.

A shape is a dict ``{'batch': 2, 'embed': 3}`` (checked by ``_algebra``'s ``axis_sizes``). ``sharding=``
(``{'batch': 'data'}``, as ``tx.shard`` takes) places the result by axis name on the current mesh; without
it the result is placed as ``jnp`` places it (replicated under a mesh).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jax
import jax.numpy as jnp

from ..._algebra import arange_shape, axis_sizes, check_size, like_shape, new_axis, token_ids, two_axes
from ..._value._named_array import NamedArray, wrap
from .._memory import allocatable
from .._structure import as_named

__all__ = ["arange", "causal_mask", "full", "full_like", "one_hot", "ones", "ones_like", "place", "zeros", "zeros_like"]

Sharding = Mapping[str, Any] | None


def place(x: NamedArray, sharding: Sharding) -> NamedArray:
    """``x`` placed by axis name (``tx.constrain``'s rule) when ``sharding`` is given."""
    if sharding is None:
        return x
    from .._sharding import constrain

    return constrain(x, sharding)  # type: ignore[no-any-return]  # constrain returns what it is given


def full(shape: Mapping[str, int], fill_value: Any, dtype: Any = None, *, sharding: Sharding = None) -> NamedArray:
    """A NamedArray of named shape ``shape`` filled with ``fill_value``.

    Args:
        shape: axis name -> size.
        fill_value: the value of every element.
        dtype: the dtype (``fill_value``'s by default).
        sharding: a placement for the value.

    Returns:
        A NamedArray of that named shape holding ``fill_value``.

    Raises:
        NamedShapeError: a size that is not a non-negative int, or an axis name that is not a string.

    Examples:
        >>> tnp.full({"batch": 2}, 7.0).named_shape == {"batch": 2}
        True
    """
    return _full(shape, fill_value, dtype, sharding, "tnp.full")


def _full(shape: Mapping[str, int], fill_value: Any, dtype: Any, sharding: Sharding, operation: str) -> NamedArray:
    sizes = axis_sizes(shape, operation=operation)
    allocatable(sizes, dtype if dtype is not None else jnp.result_type(fill_value), operation=operation)
    axes = tuple(sorted(sizes))
    return place(wrap(jnp.full(tuple(sizes[a] for a in axes), fill_value, dtype), axes), sharding)


def zeros(shape: Mapping[str, int], dtype: Any = jnp.float32, *, sharding: Sharding = None) -> NamedArray:
    """Zeros of named shape ``shape``: ``tnp.zeros({'batch': 2, 'embed': 3})``.

    Args:
        shape: axis name -> size.
        dtype: the dtype.
        sharding: a placement for the value.

    Returns:
        A NamedArray of zeros of that named shape.

    Raises:
        NamedShapeError: a size that is not a non-negative int, or an axis name that is not a string.

    Examples:
        >>> tnp.zeros({"batch": 2, "embed": 3}).named_shape == {"batch": 2, "embed": 3}
        True
    """
    return _full(shape, 0, dtype, sharding, "tnp.zeros")


def ones(shape: Mapping[str, int], dtype: Any = jnp.float32, *, sharding: Sharding = None) -> NamedArray:
    """Ones of named shape ``shape``.

    Args:
        shape: axis name -> size.
        dtype: the dtype.
        sharding: a placement for the value.

    Returns:
        A NamedArray of ones of that named shape.

    Raises:
        NamedShapeError: a size that is not a non-negative int, or an axis name that is not a string.

    Examples:
        >>> tnp.ones({"batch": 2, "embed": 3}).named_shape == {"batch": 2, "embed": 3}
        True
    """
    return _full(shape, 1, dtype, sharding, "tnp.ones")


def _like(x: Any, fill_value: Any, dtype: Any, new_axes: Mapping[str, int] | None, operation: str) -> NamedArray:
    """``x``'s named shape, positional dims and placement (plus ``new_axes``, in front of its named dims)."""
    x = as_named(x, operation=operation)
    sizes = like_shape(x.named_shape, new_axes, operation=operation)
    allocatable(sizes, x.dtype if dtype is None else dtype, operation=operation, positional=x.shape)
    data = jnp.full_like(x.data, fill_value, dtype=dtype)
    if new_axes is None:
        return wrap(data, x.axes, x.mapped)
    added = tuple(a for a in sizes if a not in x.named_shape)
    rank = x.ndim
    shape = (*x.shape, *(sizes[a] for a in added), *data.shape[rank:])
    dims = (*range(rank), *range(rank + len(added), len(shape)))
    return wrap(jax.lax.broadcast_in_dim(data, shape, dims), (*added, *x.axes), x.mapped)


def zeros_like(x: NamedArray, dtype: Any = None, *, new_axes: Mapping[str, int] | None = None) -> NamedArray:
    """Zeros of ``x``'s named shape (and positional dims, sharding and dtype unless ``dtype`` is given);
    ``new_axes={'layers': 4}`` adds axes: a carry shaped like ``x`` with more axes in one call.

    Args:
        x: a NamedArray whose named shape (and dtype, unless ``dtype``) the result takes.
        dtype: the dtype.
        new_axes: axis name -> size for axes to add (names ``x`` lacks).

    Returns:
        A NamedArray of zeros, ``x``'s named shape and ``new_axes``.

    Raises:
        NamedShapeError: a new axis ``x`` already has, or a size that is not a non-negative int.

    Examples:
        >>> x = tx.named(jnp.ones(3), ["embed"])
        >>> tnp.zeros_like(x, new_axes={"layers": 2}).named_shape == {"embed": 3, "layers": 2}
        True
    """
    return _like(x, 0, dtype, new_axes, "tnp.zeros_like")


def ones_like(x: NamedArray, dtype: Any = None, *, new_axes: Mapping[str, int] | None = None) -> NamedArray:
    """Ones of ``x``'s named shape (``new_axes`` as ``zeros_like``'s).

    Args:
        x: a NamedArray whose named shape (and dtype, unless ``dtype``) the result takes.
        dtype: the dtype.
        new_axes: axis name -> size for axes to add (names ``x`` lacks).

    Returns:
        A NamedArray of ones, ``x``'s named shape and ``new_axes``.

    Raises:
        NamedShapeError: a new axis ``x`` already has, or a size that is not a non-negative int.

    Examples:
        >>> x = tx.named(jnp.ones(3), ["embed"])
        >>> tnp.ones_like(x, new_axes={"layers": 2}).named_shape == {"embed": 3, "layers": 2}
        True
    """
    return _like(x, 1, dtype, new_axes, "tnp.ones_like")


def full_like(
    x: NamedArray, fill_value: Any, dtype: Any = None, *, new_axes: Mapping[str, int] | None = None
) -> NamedArray:
    """``fill_value`` in ``x``'s named shape (``new_axes`` as ``zeros_like``'s).

    Args:
        x: a NamedArray whose named shape (and dtype, unless ``dtype``) the result takes.
        fill_value: the value of every element.
        dtype: the dtype.
        new_axes: axis name -> size for axes to add (names ``x`` lacks).

    Returns:
        A NamedArray of ``fill_value``, ``x``'s named shape and ``new_axes``.

    Raises:
        NamedShapeError: a new axis ``x`` already has, or a size that is not a non-negative int.

    Examples:
        >>> x = tx.named(jnp.ones(3), ["embed"])
        >>> tnp.full_like(x, 7.0, new_axes={"layers": 2}).named_shape == {"embed": 3, "layers": 2}
        True
    """
    return _like(x, fill_value, dtype, new_axes, "tnp.full_like")


def arange(
    axis: str, start: int, stop: int | None = None, step: int = 1, *, dtype: Any = None, sharding: Sharding = None
) -> NamedArray:
    """``jnp.arange`` along one named axis: ``tnp.arange('seq', 8)`` is ``0..7`` over ``seq=8``.

    Args:
        axis: the axis's name.
        start: the first value (the stop, when ``stop`` is ``None``).
        stop: the end (not included).
        step: the step.
        dtype: the dtype (an int one by default).
        sharding: a placement for the value.

    Returns:
        A one-axis NamedArray of the values.

    Raises:
        NamedShapeError: an axis name that is not a string, or bounds that are not ints.

    Examples:
        >>> tnp.arange("seq", 5).named_shape == {"seq": 5}
        True
    """
    named = arange_shape(axis, start, stop, step, operation="tnp.arange")
    allocatable(named, jnp.int32 if dtype is None else dtype, operation="tnp.arange")
    (name,) = named
    return place(wrap(jnp.arange(start, stop, step, dtype=dtype), (name,)), sharding)


def one_hot(tokens: Any, axis: str, size: int, *, dtype: Any = jnp.float32) -> NamedArray:
    """One-hot vectors along a new axis ``axis`` of ``size``: the result has ``tokens``' axes and ``axis``.

    Args:
        tokens: int NamedArray (or array) of class indices.
        axis: the new axis's name, one ``tokens`` lacks.
        size: the number of classes.
        dtype: the result's dtype.

    Returns:
        ``tokens``' named shape and ``axis`` of size ``size``: 1 at each token's class, 0 elsewhere.

    Raises:
        NamedShapeError: ``axis`` already an axis of ``tokens``, tokens that are not integers, or a size that is
            not a positive int.

    Examples:
        >>> tokens = tx.named(jnp.array([1, 0, 2]), ["seq"])
        >>> tnp.one_hot(tokens, "vocab", 4).named_shape == {"seq": 3, "vocab": 4}
        True
    """
    if not isinstance(tokens, NamedArray):
        tokens = wrap(jnp.asarray(tokens), ())
    operation = "tnp.one_hot"
    name = new_axis(tokens.named_shape, axis, operation=operation, operand="tokens")
    check_size(size, operation=operation)
    token_ids(str(tokens.dtype), operation=operation)
    allocatable({**tokens.named_shape, name: size}, dtype, operation=operation, positional=tokens.shape)
    return wrap(jax.nn.one_hot(tokens.data, size, dtype=dtype), (*tokens.axes, name), tokens.mapped)


def causal_mask(row: str, column: str, size: int, *, sharding: Sharding = None) -> NamedArray:
    """A boolean mask over ``row`` and ``column`` (both of ``size``): ``mask[row=i, column=j] = j <= i``.

    ``tnp.causal_mask('q_seq', 'k_seq', n)``: query ``i`` sees keys ``0..i``; the row axis comes first.

    Args:
        row: the queries' axis.
        column: the keys' axis.
        size: both axes' size.
        sharding: a placement for the value.

    Returns:
        A boolean NamedArray, true where ``column <= row``.

    Raises:
        NamedShapeError: ``row`` and ``column`` the same name, or a size that is not a positive int.

    Examples:
        >>> tnp.causal_mask("query", "key", 4).named_shape == {"query": 4, "key": 4}
        True
    """
    first, second = two_axes(row, column, operation="tnp.causal_mask")
    check_size(size, operation="tnp.causal_mask")
    allocatable({first: size, second: size}, jnp.bool_, operation="tnp.causal_mask")
    index = jnp.arange(size)
    return place(wrap(index[None, :] <= index[:, None], (first, second)), sharding)
