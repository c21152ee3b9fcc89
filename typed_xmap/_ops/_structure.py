"""Structural operations by name: ``tx.rename``, ``tx.merge_axes``, ``tx.split_axis``, ``tx.broadcast_to``.

What each does to named shapes is ``typed_xmap._algebra._structure``'s rule; here it is carried out on
the data (positional dims first, then the named dims in ``x.axes`` order). On a mesh with Explicit axes a
reshape that merges or splits a sharded dim needs its output sharding: ``reshape`` derives it from the
names (the merged axis keeps its major part's mesh axes), so callers never write a ``PartitionSpec``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp

from .._algebra import (
    ErrorKind,
    NamedShapeError,
    broadcast_to_shape,
    merge_axes_shape,
    rename_shape,
    split_axis_shape,
)
from .._value._named_array import NamedArray, in_order, wrap
from ._memory import allocatable
from ._sharding import dim_resources, dividing, on_own_mesh_by_dim

__all__ = ["as_named", "broadcast_to", "gather_mapped", "merge_axes", "rename", "reshape_named", "split_axis"]


def as_named(x: Any, *, operation: str, argument: str = "x") -> NamedArray:
    """``x`` if it is a NamedArray; a structural operation on a positional array is an error."""
    if isinstance(x, NamedArray):
        return x
    raise NamedShapeError(
        f"{operation}: {argument} is not a NamedArray (got {type(x).__name__}), so it has no named axes to work on "
        f"(inside xmap a named axis is an enclosing level, not a dim of the per-element value). Fix: "
        f"tx.named(array, axes) first, or use jax.numpy on positional dims",
        kind=ErrorKind.INVALID_ARGUMENT,
    )


def gather_mapped(x: NamedArray, names: Iterable[str], *, operation: str) -> NamedArray:
    """``x`` with those of ``names`` that are mapped (inside ``xmap``) brought into its data."""
    mapped = {n for n, _ in x.mapped}
    wanted = [n for n in names if n in mapped]
    if not wanted:
        return x
    from ._tnp._mapped_axes import gather

    return gather(x, wanted, operation=operation)


def reshape_named(
    x: NamedArray,
    before: Sequence[str],
    reshaped: Sequence[str],
    after: Sequence[str],
    new_axes: Sequence[str],
    new_sizes: Sequence[int],
) -> NamedArray:
    """Lay ``x``'s named dims out as ``before + reshaped + after`` and reshape the ``reshaped`` ones into
    ``new_axes`` of ``new_sizes`` (a merge: many into one; a split: one into many), which take their place.

    Callers pick ``before``/``after`` so that the layout is ``x``'s own when they can: a split in place, or
    a merge of dims already side by side in that order, is a reshape with no transpose. On Explicit mesh axes
    the result keeps the other dims' shardings, and the first new dim the first reshaped dim's when its size
    divides evenly (merging or splitting a major part keeps it local); a reshaped dim that cannot keep its
    sharding is gathered first.
    """
    p = x.ndim
    order = (*before, *reshaped, *after)
    perm = tuple(range(p)) + tuple(p + x.axes.index(a) for a in order)
    data: Any = x.data  # a jax array, or a NumPy one (tx.named of NumPy data)
    if perm != tuple(range(len(perm))):
        data = jax.lax.transpose(data, perm) if isinstance(data, jax.Array) else jnp.transpose(data, perm)
    head_end, tail_start = p + len(before), p + len(before) + len(reshaped)
    shape = (*data.shape[:head_end], *new_sizes, *data.shape[tail_start:])
    axes = (*before, *new_axes, *after)
    assigned = dim_resources(data)  # on the value's own mesh, under jax.set_mesh or not
    if assigned is None:  # lax's reshape for a jax array: jnp's checks and its newshape arithmetic cost as much
        flat = jax.lax.reshape(data, shape) if isinstance(data, jax.Array) else jnp.reshape(data, shape)
        return wrap(flat, axes, x.mapped)
    head, moved, tail = assigned[:head_end], assigned[head_end:tail_start], assigned[tail_start:]
    placed = dividing(data, shape, (*head, *moved[:1], *[()] * (len(new_sizes) - 1), *tail))
    wanted = (*head, *placed[head_end:][:1], *[()] * (len(moved) - 1), *tail)
    if wanted != assigned:
        data = jax.reshard(data, on_own_mesh_by_dim(data, wanted))
    out = on_own_mesh_by_dim(data, placed)
    return wrap(jnp.reshape(data, shape, out_sharding=out), axes, x.mapped)


def rename(x: NamedArray, renames: Mapping[str, str]) -> NamedArray:
    """``x`` with axes renamed, ``{'seq': 'kv_seq'}``; renaming to a name ``x`` already has is an error.

    Args:
        x: the NamedArray.
        renames: old name -> new name, for axes ``x`` has.

    Returns:
        ``x``'s values with those axes renamed (the same data).

    Raises:
        NamedShapeError: a name ``x`` lacks, or a new name ``x`` already has.

    Examples:
        >>> k = tx.named(jnp.ones((2, 5)), ["batch", "seq"])
        >>> tx.rename(k, {"seq": "kv_seq"}).named_shape == {'batch': 2, 'kv_seq': 5}
        True
    """
    operation = "tx.rename"
    x = as_named(x, operation=operation)
    rename_shape(x.named_shape, renames, operation=operation)
    x = gather_mapped(x, renames, operation=operation)
    return wrap(x.data, tuple(renames.get(a, a) for a in x.axes), x.mapped)


def merge_axes(x: NamedArray, axes: Sequence[str], into: str) -> NamedArray:
    """Merge ``axes`` into one axis ``into``, the first given the major (slowest-varying) one.

    ``merge_axes(x, ('heads', 'head_dim'), 'embed')``: ``embed = heads * head_dim + head_dim_index``, as
    ``reshape`` of ``(heads, head_dim)`` to ``(heads * head_dim,)`` lays it out. ``split_axis`` undoes it.

    Args:
        x: the NamedArray.
        axes: the axes to merge, major first.
        into: the merged axis's name (one of ``axes`` or a name ``x`` lacks).

    Returns:
        ``x`` with ``axes`` replaced by ``into``, of their sizes' product.

    Raises:
        NamedShapeError: an axis ``x`` lacks, fewer than one axis, or ``into`` already an axis of ``x``.

    Examples:
        >>> h = tx.named(jnp.ones((2, 4, 8)), ["batch", "heads", "head_dim"])
        >>> tx.merge_axes(h, ("heads", "head_dim"), "embed").named_shape == {'batch': 2, 'embed': 32}
        True
    """
    operation = "tx.merge_axes"
    x = as_named(x, operation=operation)
    named = merge_axes_shape(x.named_shape, axes, into, operation=operation)
    x = gather_mapped(x, axes, operation=operation)
    at = min(x.axes.index(a) for a in axes)  # the merged axis takes the place of the first of them
    before = x.axes[:at]
    after = [a for a in x.axes[at:] if a not in axes]
    return reshape_named(x, before, axes, after, (into,), (int(named[into] or 0),))


def split_axis(x: NamedArray, axis: str, parts: Mapping[str, int]) -> NamedArray:
    """Split ``axis`` into ``parts`` (``{'heads': 4, 'head_dim': 8}``, the first the major one); the
    sizes multiply to ``axis``'s size. It undoes ``merge_axes(x, ('heads', 'head_dim'), axis)``.

    Args:
        x: the NamedArray.
        axis: the axis to split.
        parts: the new axes and their sizes, major first.

    Returns:
        ``x`` with ``axis`` replaced by ``parts``.

    Raises:
        NamedShapeError: ``axis`` missing, a part already an axis of ``x``, or sizes whose product is not
            ``axis``'s size.

    Examples:
        >>> e = tx.named(jnp.ones((2, 32)), ["batch", "embed"])
        >>> split = tx.split_axis(e, "embed", {"heads": 4, "head_dim": 8})
        >>> split.named_shape == {"batch": 2, "heads": 4, "head_dim": 8}
        True
    """
    operation = "tx.split_axis"
    x = as_named(x, operation=operation)
    split_axis_shape(x.named_shape, axis, parts, operation=operation)
    x = gather_mapped(x, [axis], operation=operation)
    at = x.axes.index(axis)  # in place: a reshape, no transpose
    return reshape_named(x, x.axes[:at], (axis,), x.axes[at + 1 :], tuple(parts), tuple(parts.values()))


def broadcast_to(x: NamedArray, shape: Mapping[str, int]) -> NamedArray:
    """``x`` broadcast to the named shape ``shape`` (``{'batch': 2, 'embed': 3}``): axes it lacks are added,
    constant along them; the ones it has must have the sizes ``shape`` gives.

    Args:
        x: the NamedArray.
        shape: the named shape to broadcast to, a superset of ``x``'s axes.

    Returns:
        ``x`` with the axes of ``shape`` it lacked added.

    Raises:
        NamedShapeError: an axis of ``x`` missing from ``shape``, or given another size there.

    Examples:
        >>> b = tx.named(jnp.zeros(3), ["embed"])
        >>> tx.broadcast_to(b, {"batch": 2, "embed": 3}).named_shape == {'batch': 2, 'embed': 3}
        True
    """
    x = as_named(x, operation="tx.broadcast_to")
    allocatable(
        broadcast_to_shape(x.named_shape, shape, operation="tx.broadcast_to"),
        x.dtype,
        operation="tx.broadcast_to",
        positional=x.shape,
    )
    held = x.named_shape
    if all(a in held for a in shape):
        return x
    # laid out in the order ``shape`` lists (x's own axes moved into that order first: a small transpose, if any)
    axes = tuple(a for a in shape if a in x.axes or a not in held)
    x = in_order(x, tuple(a for a in axes if a in x.axes))
    p = x.ndim
    dims = tuple(range(p)) + tuple(p + axes.index(a) for a in x.axes)
    out = (*x.shape, *(shape[a] for a in axes))
    return wrap(jax.lax.broadcast_in_dim(x.data, out, dims), axes, x.mapped)
