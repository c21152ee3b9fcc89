"""``tx.named`` and ``tx.positional``: between positional arrays and NamedArrays, by xmap spec leaf."""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp

from ._algebra import AxisMap, ErrorKind, NamedShapeError, check_fits, format_axis_list, parse_axis_map
from ._named_array import NamedArray, wrap

__all__ = ["named", "positional", "to_named", "to_positional"]


def to_named(array: Any, spec: AxisMap, *, where: str) -> NamedArray:
    """Name the dims of ``array`` (a positional array or a NamedArray's positional dims)."""
    base_axes: tuple[str, ...] = ()
    mapped: tuple[tuple[str, int], ...] = ()
    if isinstance(array, NamedArray):
        base_axes, mapped, data = array.axes, array.mapped, array.data
    else:
        data = jnp.asarray(array)
    rank = len(data.shape) - len(base_axes)
    check_fits(spec, tuple(data.shape[:rank]), where=where)
    clash = [n for n in spec.names if n in base_axes or n in dict(mapped)]
    if clash:
        raise NamedShapeError(
            f"{where} = {spec}: the value already has named axis {clash[0]!r}. Fix: pick a new name",
            kind=ErrorKind.AXIS_SIZE,
        )
    named_dims = [d for d, _ in spec.dims]
    kept = [d for d in range(rank) if d not in named_dims]
    perm = kept + named_dims + list(range(rank, len(data.shape)))
    if perm != list(range(len(perm))):
        data = jnp.transpose(data, perm)
    return wrap(data, spec.names + base_axes, mapped)


def to_positional(x: NamedArray, spec: AxisMap, *, where: str) -> Any:
    """Put ``x``'s named axes at the dims ``spec`` gives; ``x`` must carry exactly the listed names."""
    if not isinstance(x, NamedArray):
        raise NamedShapeError(
            f"tx.positional takes a NamedArray, got {type(x).__name__}. Fix: tx.named(array, axes) first; "
            f"a positional array needs no conversion",
            kind=ErrorKind.INVALID_ARGUMENT,
        )
    listed = set(spec.names)
    unlisted = [a for a in x.axes if a not in listed]
    if unlisted:
        raise NamedShapeError(
            f"{where} = {spec} does not list axis {', '.join(repr(a) for a in unlisted)}, which the value "
            f"{x!r} carries. Fix: list every named axis, e.g. {format_axis_list(list(spec.names) + unlisted)}",
            kind=ErrorKind.AXIS_MISSING,
        )
    lacking = [n for n in spec.names if n not in x.axes]
    if lacking:
        raise NamedShapeError(
            f"{where} = {spec} lists axis {', '.join(repr(n) for n in lacking)}, but the value {x!r} does "
            f"not carry it, so its size is unknown. Fix: drop it from the spec, or broadcast x first",
            kind=ErrorKind.AXIS_MISSING,
        )
    rank = x.data.ndim
    needed = max((d for d, _ in spec.dims), default=-1) + 1 - len(spec.dims)
    if needed > x.ndim:
        raise NamedShapeError(
            f"{where} = {spec} requires the value to have at least {needed} positional dims, but "
            f"{x!r} has {x.ndim}. Fix: put the named axes at lower dims",
            kind=ErrorKind.POSITIONAL,
        )
    if spec.rank is not None and spec.rank != rank:
        raise NamedShapeError(
            f"{where} = {spec}: a list spec without '...' asserts rank {spec.rank}, but the result has "
            f"rank {rank}. Fix: end the list with ... to allow more dims",
            kind=ErrorKind.POSITIONAL,
        )
    p = x.ndim
    source = [p + x.axes.index(name) for _, name in spec.dims]
    destination = [d for d, _ in spec.dims]
    return jnp.moveaxis(x.data, source, destination) if source != destination else x.data


def named(array: Any, axes: Any) -> NamedArray:
    """Name the dims of ``array`` with an xmap spec leaf: ``['batch', 'feat', ...]`` or ``{0: 'batch'}``."""
    return to_named(array, parse_axis_map(axes, where="axes"), where="axes")


def positional(x: NamedArray, axes: Any) -> Any:
    """A positional array with ``x``'s named axes at the dims ``axes`` gives (an xmap spec leaf)."""
    return to_positional(x, parse_axis_map(axes, where="axes"), where="axes")
