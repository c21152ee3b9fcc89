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

from .._algebra import concatenate_shape, pad_shape, require_axis, same_positional, split_shape, stack_shape
from .._named_array import NamedArray, in_order, wrap
from .._structure import as_named, explicit_spec, gather_mapped

__all__ = ["concatenate", "cumprod", "cumsum", "pad", "roll", "split", "stack"]


def _aligned(xs: Sequence[NamedArray], operation: str) -> list[NamedArray]:
    """The operands with one data layout: mapped axes gathered where the operands disagree on them; on
    Explicit mesh axes every operand resharded as the first one is."""
    xs = list(xs)
    if len({(frozenset(x.axes), tuple(sorted(x.mapped))) for x in xs}) > 1:
        xs = [gather_mapped(x, [n for n, _ in x.mapped], operation=operation) for x in xs]
    xs = [in_order(x, xs[0].axes) if set(x.axes) == set(xs[0].axes) else x for x in xs]
    spec = explicit_spec(xs[0].data)
    if spec is not None:
        xs = [
            x if explicit_spec(x.data) == spec else wrap(jax.reshard(x.data, jax.P(*spec)), x.axes, x.mapped)
            for x in xs
        ]
    return xs


def stack(xs: Sequence[NamedArray], axis: str) -> NamedArray:
    """Stack NamedArrays of one named shape along a new axis ``axis`` (its size: ``len(xs)``)."""
    operation = f"tnp.stack(xs, axis={axis!r})"
    xs = [as_named(x, operation=operation, argument=f"operand {i}") for i, x in enumerate(xs)]
    stack_shape([x.named_shape for x in xs], axis, len(xs), operation=operation)
    same_positional([x.shape for x in xs], operation=operation)
    xs = _aligned(xs, operation)
    first = xs[0]
    return wrap(jnp.stack([x.data for x in xs], axis=first.ndim), (axis, *first.axes), first.mapped)


def concatenate(xs: Sequence[NamedArray], axis: str) -> NamedArray:
    """Join NamedArrays along their axis ``axis``; their other named axes agree (in any order)."""
    operation = f"tnp.concatenate(xs, axis={axis!r})"
    xs = [as_named(x, operation=operation, argument=f"operand {i}") for i, x in enumerate(xs)]
    concatenate_shape([x.named_shape for x in xs], axis, operation=operation)
    same_positional([x.shape for x in xs], operation=operation)
    xs = _aligned([gather_mapped(x, [axis], operation=operation) for x in xs], operation)
    first = xs[0]
    data = jnp.concatenate([x.data for x in xs], axis=first.ndim + first.axes.index(axis))
    return wrap(data, first.axes, first.mapped)


def split(x: NamedArray, axis: str, sections: int | Sequence[int]) -> list[NamedArray]:
    """Split ``x`` along ``axis``: ``sections`` equal parts (an int), or parts of the sizes listed."""
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


def _along(x: NamedArray, axis: str, operation: str) -> tuple[NamedArray, int]:
    """``x`` with ``axis`` in its data, and that dim's index."""
    x = as_named(x, operation=operation)
    require_axis(x.named_shape, axis, operation=operation)
    x = gather_mapped(x, [axis], operation=operation)
    return x, x.ndim + x.axes.index(axis)


def roll(x: NamedArray, shift: int, axis: str) -> NamedArray:
    """Roll ``x`` by ``shift`` along ``axis`` (elements pushed off one end come back at the other)."""
    x, dim = _along(x, axis, "tnp.roll")
    return wrap(jnp.roll(x.data, shift, axis=dim), x.axes, x.mapped)


def pad(x: NamedArray, pad_width: Mapping[str, tuple[int, int]], *, value: Any = 0) -> NamedArray:
    """Pad named axes with ``value``: ``{'seq': (1, 0)}`` adds one element before ``seq``'s first."""
    operation = "tnp.pad"
    x = as_named(x, operation=operation)
    pad_shape(x.named_shape, pad_width, operation=operation)
    x = gather_mapped(x, pad_width, operation=operation)
    widths = [(0, 0)] * x.ndim + [tuple(pad_width.get(a, (0, 0))) for a in x.axes]
    return wrap(jnp.pad(x.data, widths, constant_values=value), x.axes, x.mapped)


def cumsum(x: NamedArray, axis: str, *, dtype: Any = None) -> NamedArray:
    """Cumulative sum along ``axis``; the result has ``x``'s named shape."""
    x, dim = _along(x, axis, "tnp.cumsum")
    return wrap(jnp.cumsum(x.data, axis=dim, dtype=dtype), x.axes, x.mapped)


def cumprod(x: NamedArray, axis: str, *, dtype: Any = None) -> NamedArray:
    """Cumulative product along ``axis``; the result has ``x``'s named shape."""
    x, dim = _along(x, axis, "tnp.cumprod")
    return wrap(jnp.cumprod(x.data, axis=dim, dtype=dtype), x.axes, x.mapped)
