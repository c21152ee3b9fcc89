"""Structural ``tnp`` functions along a named axis: ``stack concatenate split roll pad cumsum cumprod``.

The named-shape rule of each is ``typed_xmap._algebra._structure``'s; here it runs on the data. Operands
of one named shape are first laid out alike (in the first operand's order), so stacking or joining them
is one positional ``jnp`` call on their data.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp

from ..._algebra import concatenate_shape, pad_shape, require_axis, same_positional, split_shape, stack_shape
from ..._value._named_array import NamedArray, in_order, wrap
from .._memory import allocatable
from .._sharding import dim_resources, dividing, on_own_mesh_by_dim
from .._structure import as_named, gather_mapped

__all__ = ["Placement", "concatenate", "cumprod", "cumsum", "pad", "placed_back", "roll", "split", "stack", "whole"]


def _aligned(xs: Sequence[NamedArray], operation: str, lead: int = 0) -> list[NamedArray]:
    """The operands with one data layout, operand ``lead``'s: mapped axes gathered where the operands
    disagree on them; on Explicit mesh axes every operand resharded as ``lead`` is."""
    xs = list(xs)
    if len({(frozenset(x.axes), tuple(sorted(x.mapped))) for x in xs}) > 1:
        xs = [gather_mapped(x, [n for n, _ in x.mapped], operation=operation) for x in xs]
    xs = [in_order(x, xs[lead].axes) if set(x.axes) == set(xs[lead].axes) else x for x in xs]
    assigned = dim_resources(xs[lead].data)  # on the lead operand's own mesh, under jax.set_mesh or not
    if assigned is not None:
        placed = on_own_mesh_by_dim(xs[lead].data, assigned)
        xs = [x if dim_resources(x.data) == assigned else _resharded(x, placed) for x in xs]
    return xs


def _resharded(x: NamedArray, sharding: Any) -> NamedArray:
    return wrap(jax.reshard(x.data, sharding), x.axes, x.mapped)


def stack(xs: Sequence[NamedArray], axis: str) -> NamedArray:
    """Stack NamedArrays of one named shape along a new axis ``axis`` (its size: ``len(xs)``).

    Args:
        xs: NamedArrays of one named shape.
        axis: the new axis's name, one they lack.

    Returns:
        ``xs`` stacked along the new axis ``axis`` of size ``len(xs)``.

    Raises:
        NamedShapeError: no value, values of different named shapes, or ``axis`` already one of theirs.

    Examples:
        >>> layers = [tx.named(jnp.ones((4, 8)), ["embed", "mlp"]) for _ in range(3)]
        >>> tnp.stack(layers, axis="layers").named_shape == {"layers": 3, "embed": 4, "mlp": 8}
        True
    """
    operation = f"tnp.stack(xs, axis={axis!r})"
    xs = [as_named(x, operation=operation, argument=f"operand {i}") for i, x in enumerate(xs)]
    stack_shape([x.named_shape for x in xs], axis, len(xs), operation=operation)
    same_positional([x.shape for x in xs], operation=operation)
    xs = _aligned(xs, operation)
    first = xs[0]
    return wrap(jnp.stack([x.data for x in xs], axis=first.ndim), (axis, *first.axes), first.mapped)


def concatenate(xs: Sequence[NamedArray], axis: str) -> NamedArray:
    """Join NamedArrays along their axis ``axis``; their other named axes agree (in any order).

    Args:
        xs: NamedArrays with the same axes, of the same sizes but along ``axis``.
        axis: the axis joined along.

    Returns:
        ``xs`` joined along ``axis`` (its size the sum of theirs).

    Raises:
        NamedShapeError: no value, a value without ``axis``, or other axes that differ.

    Examples:
        >>> a = tx.named(jnp.ones((1, 4)), ["patch", "embed"])
        >>> b = tx.named(jnp.ones((9, 4)), ["patch", "embed"])
        >>> tnp.concatenate([a, b], axis="patch").named_shape == {"patch": 10, "embed": 4}
        True
    """
    operation = f"tnp.concatenate(xs, axis={axis!r})"
    xs = [as_named(x, operation=operation, argument=f"operand {i}") for i, x in enumerate(xs)]
    concatenate_shape([x.named_shape for x in xs], axis, operation=operation)
    same_positional([x.shape for x in xs], operation=operation)
    xs = [gather_mapped(x, [axis], operation=operation) for x in xs]
    # the joined axis whole on every device first (operands of other sizes along it may not split alike)
    placements = [whole(x, [x.ndim + x.axes.index(axis)]) for x in xs]
    # the result keeps the largest operand's layout: the others (a class token before the patches) move
    lead = max(range(len(xs)), key=lambda i: (xs[i].data.size, -i))
    xs = _aligned([x for x, _ in placements], operation, lead)
    first = xs[lead]
    data = jnp.concatenate([x.data for x in xs], axis=first.ndim + first.axes.index(axis))
    return wrap(placed_back(data, placements[lead][1]), first.axes, first.mapped)


def split(x: NamedArray, axis: str, sections: int | Sequence[int]) -> list[NamedArray]:
    """Split ``x`` along ``axis``: ``sections`` equal parts (an int), or parts of the sizes listed.

    Args:
        x: a NamedArray carrying ``axis``.
        axis: the axis split.
        sections: the number of equal parts, or the indices to split at.

    Returns:
        The parts, each with ``axis`` shortened.

    Raises:
        NamedShapeError: ``axis`` missing, or a number of parts that does not divide its size.

    Examples:
        >>> qkv = tx.named(jnp.ones((2, 12)), ["batch", "embed"])
        >>> [part.named_shape["embed"] for part in tnp.split(qkv, "embed", 3)]
        [4, 4, 4]
    """
    operation = f"tnp.split(x, axis={axis!r}, sections={sections!r})"
    x = as_named(x, operation=operation)
    parts = split_shape(x.named_shape, axis, sections, operation=operation)
    x = gather_mapped(x, [axis], operation=operation)
    cuts, total = [], 0
    for part in parts[:-1]:
        total += int(part[axis] or 0)
        cuts.append(total)
    pieces = jnp.split(x.data, cuts, axis=x.ndim + x.axes.index(axis))
    return [wrap(piece, x.axes, x.mapped) for piece in pieces]


def _along(x: NamedArray, axis: str, operation: str) -> tuple[NamedArray, int, Placement]:
    """``x`` with ``axis`` in its data and whole on every device (``whole``), that dim's index, and how ``x``
    was placed (for ``placed_back``)."""
    x = as_named(x, operation=operation)
    require_axis(x.named_shape, axis, operation=operation)
    x = gather_mapped(x, [axis], operation=operation)
    dim = x.ndim + x.axes.index(axis)
    x, placement = whole(x, [dim])
    return x, dim, placement


Placement = tuple[tuple[str, ...], ...] | None
"""The mesh axes each dim of an operand was split over before ``whole`` gathered some; ``None``: nothing
was gathered."""


def whole(x: NamedArray, dims: Sequence[int]) -> tuple[NamedArray, Placement]:
    """``x`` with ``dims`` whole on every device, and how it was placed. JAX's Explicit mesh axes refuse to
    roll, pad or scan along a split dim, so such a dim is gathered first (the one communication these
    operations add, documented), and ``placed_back`` splits the result again."""
    assigned = dim_resources(x.data)
    if assigned is None or not any(assigned[d] for d in dims):
        return x, None
    whole = tuple(() if d in dims else e for d, e in enumerate(assigned))
    return _resharded(x, on_own_mesh_by_dim(x.data, whole)), assigned


def placed_back(data: Any, placement: Placement) -> Any:
    """``data`` split over the mesh axes its operand's dims were, each where its size still divides evenly
    (a local slice of each device's copy)."""
    if placement is None:
        return data
    return jax.reshard(data, on_own_mesh_by_dim(data, dividing(data, data.shape, placement)))


def roll(x: NamedArray, shift: int, axis: str) -> NamedArray:
    """Roll ``x`` by ``shift`` along ``axis`` (elements pushed off one end come back at the other).

    Args:
        x: a NamedArray carrying ``axis``.
        shift: how many places to move the elements.
        axis: the axis rolled along.

    Returns:
        ``x`` rolled, of the same named shape.

    Raises:
        NamedShapeError: ``axis`` missing.

    Examples:
        >>> x = tx.named(jnp.arange(5.0), ["seq"])
        >>> tnp.roll(x, 1, "seq").named_shape == {"seq": 5}
        True
    """
    x, dim, placement = _along(x, axis, "tnp.roll")
    return wrap(placed_back(jnp.roll(x.data, shift, axis=dim), placement), x.axes, x.mapped)


def pad(x: NamedArray, pad_width: Mapping[str, tuple[int, int]], *, value: Any = 0) -> NamedArray:
    """Pad named axes with ``value``: ``{'seq': (1, 0)}`` adds one element before ``seq``'s first.

    Args:
        x: a NamedArray.
        pad_width: axis name -> (before, after) counts.
        value: the value padded with.

    Returns:
        ``x`` with those axes lengthened.

    Raises:
        NamedShapeError: an axis ``x`` lacks, or widths that are not pairs of non-negative ints.

    Examples:
        >>> x = tx.named(jnp.ones((2, 5)), ["batch", "seq"])
        >>> tnp.pad(x, {"seq": (1, 0)}).named_shape == {"batch": 2, "seq": 6}
        True
    """
    operation = "tnp.pad"
    x = as_named(x, operation=operation)
    allocatable(
        pad_shape(x.named_shape, pad_width, operation=operation), x.dtype, operation=operation, positional=x.shape
    )
    x = gather_mapped(x, pad_width, operation=operation)
    x, placement = whole(x, [x.ndim + x.axes.index(a) for a in pad_width])
    widths = [(0, 0)] * x.ndim + [tuple(pad_width.get(a, (0, 0))) for a in x.axes]
    return wrap(placed_back(jnp.pad(x.data, widths, constant_values=value), placement), x.axes, x.mapped)


def cumsum(x: NamedArray, axis: str, *, dtype: Any = None) -> NamedArray:
    """Cumulative sum along ``axis``; the result has ``x``'s named shape.

    Args:
        x: a NamedArray carrying ``axis``.
        axis: the axis accumulated along.
        dtype: the accumulation's dtype.

    Returns:
        The running sums, of ``x``'s named shape.

    Raises:
        NamedShapeError: ``axis`` missing.

    Examples:
        >>> x = tx.named(jnp.ones((2, 5)), ["batch", "time"])
        >>> tnp.cumsum(x, "time").named_shape == {"batch": 2, "time": 5}
        True
    """
    x, dim, placement = _along(x, axis, "tnp.cumsum")
    return wrap(placed_back(jnp.cumsum(x.data, axis=dim, dtype=dtype), placement), x.axes, x.mapped)


def cumprod(x: NamedArray, axis: str, *, dtype: Any = None) -> NamedArray:
    """Cumulative product along ``axis``; the result has ``x``'s named shape.

    Args:
        x: a NamedArray carrying ``axis``.
        axis: the axis accumulated along.
        dtype: the accumulation's dtype.

    Returns:
        The running products, of ``x``'s named shape.

    Raises:
        NamedShapeError: ``axis`` missing.

    Examples:
        >>> x = tx.named(jnp.ones((2, 5)), ["batch", "time"])
        >>> tnp.cumprod(x, "time").named_shape == {"batch": 2, "time": 5}
        True
    """
    x, dim, placement = _along(x, axis, "tnp.cumprod")
    return wrap(placed_back(jnp.cumprod(x.data, axis=dim, dtype=dtype), placement), x.axes, x.mapped)
