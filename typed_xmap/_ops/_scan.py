"""``tx.scan(f, init, xs, axis="layers")``: ``lax.scan`` over a named axis of the NamedArrays in ``xs``.

Every leaf of ``xs`` must be a NamedArray carrying ``axis`` (an error names the leaf's path otherwise: a
value shared by all steps goes in the body's closure or the carry). The body sees each leaf without the
axis; the ``ys`` it returns are stacked along ``axis`` as a named axis (a positional array becomes a
NamedArray with that one named axis). The carry must keep its named shape from step to step (order-free,
as a named shape is a set), its dtype and, on an Explicit mesh, its placement (a positional leaf's too, by
dim); a change raises, naming the carry's path and the axis or dim.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from jax.tree_util import keystr, tree_flatten, tree_flatten_with_path, tree_unflatten

from .._algebra import (
    ErrorKind,
    NamedShapeError,
    check_carry,
    check_carry_dtype,
    check_carry_placement,
    check_positional_carry_placement,
    scan_length,
    scan_pair_error,
    scanned_axis_size,
)
from .._value._named_array import NamedArray, wrap
from ._sharding import dim_resources
from ._vmap import _from_front, _is_named, _to_front

__all__ = ["scan"]


def scan(
    f: Callable[[Any, Any], tuple[Any, Any]],
    init: Any,
    xs: Any,
    *,
    axis: str,
    length: int | None = None,
    reverse: bool = False,
    unroll: int | bool = 1,
) -> tuple[Any, Any]:
    """``(carry, ys)``: ``f(carry, x)`` for each slice ``x`` of ``xs`` along the named axis ``axis``.

    ``length`` is needed only when ``xs`` has no leaves; ``reverse`` and ``unroll`` are ``lax.scan``'s.

    Args:
        f: ``f(carry, x) -> (carry, y)``; ``x`` is one slice of ``xs`` (without ``axis``).
        init: the first carry (a pytree).
        xs: the pytree scanned over; its NamedArrays carry ``axis``.
        axis: the named axis to scan along.
        length: the number of steps, when ``xs`` has no leaves.
        reverse: scan from the last slice to the first.
        unroll: ``lax.scan``'s unrolling.

    Returns:
        ``(carry, ys)``: the last carry, and the ``y``s stacked along ``axis``.

    Raises:
        NamedShapeError: a leaf of ``xs`` without ``axis``, two sizes for it, or a carry whose named shape
            changes between steps.

    Examples:
        >>> xs = tx.named(jnp.ones((5, 3)), ["time", "embed"])
        >>> total, steps = tx.scan(lambda c, x: (c + x, c), tnp.zeros({"embed": 3}), xs, axis="time")
        >>> steps.named_shape == {"time": 5, "embed": 3}
        True
    """
    operation = f"tx.scan(..., axis={axis!r})"
    pairs, xs_tree = tree_flatten_with_path(xs, is_leaf=_is_named)
    leaves = [leaf for _, leaf in pairs]
    shapes = [(keystr(p), x.named_shape if isinstance(x, NamedArray) else None) for p, x in pairs]
    steps = scan_length(axis, scanned_axis_size(axis, shapes, operation=operation), length, operation=operation)
    data = [_to_front(leaf, axis) for leaf in leaves]
    try:
        return _scan(f, init, leaves, xs_tree, data, steps, axis, operation, reverse=reverse, unroll=unroll)
    except _Varying as varying:  # inside tx.vmap: the carry varies along the enclosing mapped axes from step 1
        leaves_of_init, tree = tree_flatten(init, is_leaf=_is_named)
        init = tree_unflatten(tree, [_varying(c, g) for c, g in zip(leaves_of_init, varying.gained, strict=True)])
    return _scan(f, init, leaves, xs_tree, data, steps, axis, operation, reverse=reverse, unroll=unroll)


class _Varying(Exception):
    """The body's carry varies along axes of enclosing ``tx.vmap`` levels that init does not: ``gained``, per
    carry leaf, those axes. The scan runs again with init declared to vary along them too (its data stays the
    same: the ``jax.vmap`` levels batch it)."""

    def __init__(self, gained: list[tuple[tuple[str, int], ...]]) -> None:
        self.gained = gained


def _scan(
    f: Callable[[Any, Any], tuple[Any, Any]],
    init: Any,
    leaves: list[Any],
    xs_tree: Any,
    data: list[Any],
    steps: int,
    axis: str,
    operation: str,
    **options: Any,
) -> tuple[Any, Any]:
    carry_pairs, carry_tree = tree_flatten_with_path(init, is_leaf=_is_named)
    carry_shapes = [(keystr(p), _named_shape(c)) for p, c in carry_pairs]
    ys_layouts: list[Any] = []

    def body(carry: Any, parts: list[Any]) -> tuple[Any, list[Any]]:
        sliced = [
            wrap(part, tuple(a for a in leaf.axes if a != axis), leaf.mapped)
            for part, leaf in zip(parts, leaves, strict=True)
        ]
        returned: Any = f(carry, tree_unflatten(xs_tree, sliced))
        if not isinstance(returned, (tuple, list)) or len(returned) != 2:
            raise scan_pair_error(_described(returned), operation=operation)
        new_carry, ys = returned
        _check_carry(carry, new_carry, carry_tree, carry_shapes, operation)
        outs, tree = tree_flatten(ys, is_leaf=_is_named)
        ys_layouts[:] = [tree, [(o.axes, o.mapped) if isinstance(o, NamedArray) else None for o in outs]]
        return new_carry, [o.data if isinstance(o, NamedArray) else jnp.asarray(o) for o in outs]

    carry, stacked = jax.lax.scan(body, init, data, length=steps, **options)
    tree, layouts = ys_layouts
    return carry, tree_unflatten(tree, [_from_front(y, lay, axis) for y, lay in zip(stacked, layouts, strict=True)])


def _named_shape(value: Any) -> dict[str, int] | None:
    return value.named_shape if isinstance(value, NamedArray) else None


def _described(value: Any) -> str:
    """What a scan body returned instead of a pair, in words."""
    if isinstance(value, NamedArray):
        return "a NamedArray"
    if isinstance(value, (tuple, list)):
        return f"a {type(value).__name__} of {len(value)}"
    return "an array" if hasattr(value, "shape") else type(value).__name__


def _check_carry(carry: Any, new_carry: Any, tree: Any, shapes: list[tuple[str, Any]], operation: str) -> None:
    """The carry ``f`` returned keeps the init's structure and each leaf's named shape, dtype and placement."""
    pairs, new_tree = tree_flatten_with_path(new_carry, is_leaf=_is_named)
    if new_tree != tree:
        raise NamedShapeError(
            f"{operation}: the body returns a carry of structure {new_tree}, but init has structure {tree}. "
            f"Fix: return the carry with the structure of init",
            kind=ErrorKind.INVALID_ARGUMENT,
        )
    old = tree_flatten(carry, is_leaf=_is_named)[0]
    varying = [_gained_mapped(before, value) for before, value in zip(old, (v for _, v in pairs), strict=True)]
    if any(varying):
        raise _Varying(varying)
    for (path, before), (_, value), was in zip(shapes, pairs, old, strict=True):
        check_carry(path, before, _named_shape(value), operation)
        check_carry_dtype(path, _dtype(was), _dtype(value), operation)
        if isinstance(value, NamedArray):
            check_carry_placement(path, _placement(was), _placement(value), operation)
        elif (placements := _dim_placements(was, value)) is not None:
            check_positional_carry_placement(path, *placements, operation)


def _gained_mapped(before: Any, after: Any) -> tuple[tuple[str, int], ...]:
    """The enclosing mapped axes ``after`` (a new carry leaf) varies along and ``before`` does not."""
    if not isinstance(before, NamedArray) or not isinstance(after, NamedArray):
        return ()
    known = before.named_shape
    return tuple((n, s) for n, s in after.mapped if n not in known)


def _varying(leaf: Any, gained: tuple[tuple[str, int], ...]) -> Any:
    return wrap(leaf.data, leaf.axes, (*leaf.mapped, *gained)) if gained else leaf


def _dtype(value: Any) -> str:
    return str(jax.typeof(value.data if isinstance(value, NamedArray) else value).dtype)


def _dim_placements(was: Any, value: Any) -> tuple[Any, Any] | None:
    """The mesh axes of each dim of a positional carry leaf going in and coming out, when both are on an
    Explicit mesh with one shape (a shape change is ``lax.scan``'s to report)."""
    if isinstance(was, NamedArray) or jnp.shape(was) != jnp.shape(value):
        return None
    before, after = dim_resources(was), dim_resources(value)
    return None if before is None or after is None else (before, after)


def _placement(value: Any) -> dict[str, tuple[str, ...]]:
    """Named axis -> the mesh axes it is split over, on an Explicit mesh (a traced value's type says it)."""
    if not isinstance(value, NamedArray):
        return {}
    assigned = dim_resources(value.data)
    if assigned is None:
        return {}
    return {name: assigned[value.ndim + i] for i, name in enumerate(value.axes) if assigned[value.ndim + i]}
