"""Segment reductions by name for ``typed_xmap.numpy``: ``segment_sum`` and ``segment_max``.

The rule is ``_algebra/_segments.py``'s: ``axis`` of ``data`` is replaced by ``new_axis`` of size
``num_segments``. A mapped axis (an enclosing ``vmap`` level, inside ``xmap``) is gathered into the data first,
and so are the ids'. On a mesh the data stay where they are: each device reduces its block of ``axis`` into
every segment and the partial results are combined (one all-reduce over the mesh axes ``axis`` is split over,
as XLA compiles a scatter on Auto mesh axes). On Explicit mesh axes, where JAX's scatter takes no operand split
along its scattered dim, the reduction runs with them made Auto (``jax.sharding.auto_axes``); the other axes of
``data`` keep their placement and ``new_axis`` is whole. The work is one ``jax.ops.segment_sum``/``segment_max``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding, PartitionSpec

from ..._algebra import ErrorKind, NamedShapeError, partition_entry, segment_shape, sorted_shape
from ..._value._named_array import NamedArray, wrap
from ..._value._placement import dim_resources
from .._sharding import on_auto_axes
from ._mapped_axes import as_mapped, gather

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
    value, dim = _located(data, axis, operation)
    ids, ids_shape = _ids(segment_ids, axis, operation)
    segment_shape(value.named_shape, ids_shape, num_segments, axis, new_axis, operation=operation)

    def run(values: Any, ids: Any) -> Any:
        summed = reduce(
            jnp.moveaxis(values, dim, 0), ids, num_segments=num_segments, indices_are_sorted=indices_are_sorted
        )
        return jnp.moveaxis(summed, 0, -1)

    result = _on_auto_axes(run, value.data, ids, dim)
    axes = (*(a for a in value.axes if a != axis), new_axis)
    return wrap(result, axes, value.mapped) if isinstance(data, NamedArray) else result


def _located(x: Any, axis: str, operation: str) -> tuple[NamedArray, int]:
    """``x`` with ``axis`` (checked to be there) a dim of its data, left where it is placed, and that dim."""
    value = x if isinstance(x, NamedArray) else as_mapped(x, [axis], operation=operation)
    sorted_shape(value.named_shape, axis, operation=operation)  # the check along() makes
    value = gather(value, [n for n, _ in value.mapped if n == axis], operation=operation)
    return value, value.ndim + value.axes.index(axis)


def _on_auto_axes(run: Callable[[Any, Any], Any], values: Any, ids: Any, dim: int) -> Any:
    """``run(values, ids)``; where either is split over Explicit mesh axes, run with them made Auto (XLA reduces
    each block and combines them), the result placed as ``values``'s dims other than ``dim`` and whole along
    the segments' last dim."""
    assigned, by_ids = dim_resources(values), dim_resources(ids) if ids is not None else None
    if not any(assigned or ()) and not any(by_ids or ()):
        return run(values, ids)
    kept = [partition_entry(a) for d, a in enumerate(assigned or ((),) * values.ndim) if d != dim]
    mesh = jax.typeof(values if assigned is not None else ids).sharding.mesh
    with jax.sharding.use_abstract_mesh(mesh):
        return on_auto_axes(lambda both: run(*both), NamedSharding(mesh, PartitionSpec(*kept, None)))((values, ids))


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
        segment_ids = gather(segment_ids, [n for n, _ in segment_ids.mapped if n == axis], operation=operation)
        ids, shape = (
            jnp.moveaxis(segment_ids.data, segment_ids.ndim + segment_ids.axes.index(axis), 0),
            dict(segment_ids.named_shape),
        )
    else:
        ids = jnp.asarray(segment_ids)
        if ids.ndim == 0:  # per element inside xmap: one id per element of the mapped axis
            ids = _located(ids, axis, operation)[0].data
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
