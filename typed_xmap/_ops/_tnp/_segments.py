"""Segment reductions by name for ``typed_xmap.numpy``: ``segment_sum`` and ``segment_max``.

The rule is ``_algebra/_segments.py``'s: ``axis`` of ``data`` is replaced by ``new_axis`` of size
``num_segments``. A mapped axis (an enclosing ``vmap`` level, inside ``xmap``) is gathered into the data first,
and so are the ids'. On a mesh the value is gathered whole first (XLA's scatter takes no operand split over
Explicit mesh axes) and the result has no placement. The work is one ``jax.ops.segment_sum``/``segment_max``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import jax
import jax.numpy as jnp

from ..._algebra import ErrorKind, NamedShapeError, segment_shape
from ..._value._named_array import NamedArray, wrap
from ._selection import along
from ._structure import whole

__all__ = ["segment_max", "segment_sum"]


def segment_sum(
    data: Any, segment_ids: Any, num_segments: int, axis: str, new_axis: str, *, indices_are_sorted: bool = False
) -> Any:
    """Sum ``data`` along ``axis`` into ``num_segments`` segments along ``new_axis``: element ``i`` of ``axis``
    goes to segment ``segment_ids[i]`` (``segment_ids`` carries ``axis`` alone; ids out of range are dropped).

    ``tnp.segment_sum(messages, dst, nodes, axis="edge", new_axis="node")`` sums a graph's edge messages into
    their destination nodes; the other axes of ``data`` are kept.

    Args:
        data: a NamedArray carrying ``axis`` (or a per-element array inside ``xmap``).
        segment_ids: the segment of each element of ``axis``: a NamedArray carrying ``axis`` alone, or a 1-d int
            array along it.
        num_segments: how many segments, the size of ``new_axis``.
        axis: the axis reduced into segments.
        new_axis: the name of the segments' axis, one ``data`` lacks.
        indices_are_sorted: the ids are sorted (a faster scatter).

    Returns:
        ``data`` with ``axis`` replaced by ``new_axis`` of size ``num_segments``.

    Raises:
        NamedShapeError: ``axis`` missing, ids that carry other axes or another size, ids not integers, or a
            ``num_segments`` that is not a positive int.

    Examples:
        >>> messages = tx.named(jnp.ones((4, 3)), ["edge", "feature"])
        >>> dst = tx.named(jnp.array([0, 2, 0, 1]), ["edge"])
        >>> nodes = tnp.segment_sum(messages, dst, 3, axis="edge", new_axis="node")
        >>> nodes.named_shape == {"node": 3, "feature": 3}
        True
    """
    return _segment(
        jax.ops.segment_sum, "segment_sum", data, segment_ids, num_segments, axis, new_axis, indices_are_sorted
    )


def segment_max(
    data: Any, segment_ids: Any, num_segments: int, axis: str, new_axis: str, *, indices_are_sorted: bool = False
) -> Any:
    """The maximum of ``data`` along ``axis`` in each of ``num_segments`` segments along ``new_axis``, as
    ``segment_sum`` groups them; an empty segment holds the dtype's lowest value (``-inf`` for floats).

    Args:
        data: a NamedArray carrying ``axis`` (or a per-element array inside ``xmap``).
        segment_ids: the segment of each element of ``axis``: a NamedArray carrying ``axis`` alone, or a 1-d int
            array along it.
        num_segments: how many segments, the size of ``new_axis``.
        axis: the axis reduced into segments.
        new_axis: the name of the segments' axis, one ``data`` lacks.
        indices_are_sorted: the ids are sorted (a faster scatter).

    Returns:
        ``data`` with ``axis`` replaced by ``new_axis`` of size ``num_segments``.

    Raises:
        NamedShapeError: ``axis`` missing, ids that carry other axes or another size, ids not integers, or a
            ``num_segments`` that is not a positive int.

    Examples:
        >>> messages = tx.named(jnp.ones((4, 3)), ["edge", "feature"])
        >>> dst = tx.named(jnp.array([0, 2, 0, 1]), ["edge"])
        >>> nodes = tnp.segment_max(messages, dst, 3, axis="edge", new_axis="node")
        >>> nodes.named_shape == {"node": 3, "feature": 3}
        True
    """
    return _segment(
        jax.ops.segment_max, "segment_max", data, segment_ids, num_segments, axis, new_axis, indices_are_sorted
    )


def _segment(
    reduce: Callable[..., Any],
    name: str,
    data: Any,
    segment_ids: Any,
    num_segments: int,
    axis: str,
    new_axis: str,
    indices_are_sorted: bool,
) -> Any:
    operation = f"tnp.{name}(data, segment_ids, {num_segments!r}, axis={axis!r}, new_axis={new_axis!r})"
    value, dim, _ = along(data, axis, operation=operation)  # new_axis takes no placement from axis
    value, _ = whole(value, range(value.data.ndim))  # XLA's scatter takes no operand split over Explicit axes
    ids, ids_shape = _ids(segment_ids, axis, operation)
    segment_shape(value.named_shape, ids_shape, num_segments, axis, new_axis, operation=operation)
    summed = reduce(
        jnp.moveaxis(value.data, dim, 0), ids, num_segments=num_segments, indices_are_sorted=indices_are_sorted
    )
    axes = (*(a for a in value.axes if a != axis), new_axis)
    result = jnp.moveaxis(summed, 0, -1)
    return wrap(result, axes, value.mapped) if isinstance(data, NamedArray) else result


def _ids(segment_ids: Any, axis: str, operation: str) -> tuple[Any, Mapping[str, int | None]]:
    """The ids as a 1-d int array along ``axis``, and their named shape for the rule."""
    if isinstance(segment_ids, NamedArray):
        if segment_ids.ndim:
            raise NamedShapeError(
                f"{operation}: segment_ids has positional dims {segment_ids.shape}; it must carry only the axis "
                f"{axis!r}. Fix: name or index away the other dims",
                kind=ErrorKind.POSITIONAL,
            )
        if axis not in segment_ids.named_shape:
            return None, dict(segment_ids.named_shape)
        segment_ids, _, _ = along(segment_ids, axis, operation=operation)
        ids, shape = segment_ids.data, dict(segment_ids.named_shape)
    else:
        ids = jnp.asarray(segment_ids)
        if ids.ndim == 0:  # per element inside xmap: one id per element of the mapped axis
            ids = along(ids, axis, operation=operation)[0].data
        if ids.ndim != 1:
            raise NamedShapeError(
                f"{operation}: segment_ids is an array of shape {ids.shape}; it must be 1-d along {axis!r}. Fix: "
                f"pass one id per element of {axis!r}, or tx.named(ids, [{axis!r}])",
                kind=ErrorKind.POSITIONAL,
            )
        shape = {axis: ids.shape[0]}
    if not jnp.issubdtype(ids.dtype, jnp.integer):
        raise NamedShapeError(
            f"{operation}: segment_ids has dtype {ids.dtype}; segment ids are integers. Fix: pass int32 ids "
            "(ids.astype(jnp.int32))",
            kind=ErrorKind.DTYPE,
        )
    return ids, shape
