"""``tx.scan(f, init, xs, axis="layers")``: ``lax.scan`` over a named axis of the NamedArrays in ``xs``.

Every leaf of ``xs`` must be a NamedArray carrying ``axis`` (an error names the leaf's path otherwise: a
value shared by all steps goes in the body's closure or the carry). The body sees each leaf without the
axis; the ``ys`` it returns are stacked along ``axis`` as a named axis (a positional array becomes a
NamedArray with that one named axis). The carry must keep its named shape from step to step (order-free,
as a named shape is a set); a change raises, naming the carry's path and the axis.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from jax.tree_util import keystr, tree_flatten, tree_flatten_with_path, tree_unflatten

from .._algebra import ErrorKind, NamedShapeError, check_carry, scanned_axis_size
from .._value._named_array import NamedArray, wrap
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
    """
    operation = f"tx.scan(..., axis={axis!r})"
    pairs, xs_tree = tree_flatten_with_path(xs, is_leaf=_is_named)
    leaves = [leaf for _, leaf in pairs]
    shapes = [(keystr(p), x.named_shape if isinstance(x, NamedArray) else None) for p, x in pairs]
    size = scanned_axis_size(axis, shapes, operation=operation)
    carry_pairs, carry_tree = tree_flatten_with_path(init, is_leaf=_is_named)
    carry_shapes = [(keystr(p), _named_shape(c)) for p, c in carry_pairs]
    ys_layouts: list[Any] = []

    def body(carry: Any, parts: list[Any]) -> tuple[Any, list[Any]]:
        sliced = [
            wrap(part, tuple(a for a in leaf.axes if a != axis), leaf.mapped)
            for part, leaf in zip(parts, leaves, strict=True)
        ]
        new_carry, ys = f(carry, tree_unflatten(xs_tree, sliced))
        _check_carry(new_carry, carry_tree, carry_shapes, operation)
        outs, tree = tree_flatten(ys, is_leaf=_is_named)
        ys_layouts[:] = [tree, [(o.axes, o.mapped) if isinstance(o, NamedArray) else None for o in outs]]
        return new_carry, [o.data if isinstance(o, NamedArray) else jnp.asarray(o) for o in outs]

    data = [_to_front(leaf, axis) for leaf in leaves]
    carry, stacked = jax.lax.scan(body, init, data, length=size or length, reverse=reverse, unroll=unroll)
    tree, layouts = ys_layouts
    return carry, tree_unflatten(tree, [_from_front(y, lay, axis) for y, lay in zip(stacked, layouts, strict=True)])


def _named_shape(value: Any) -> dict[str, int] | None:
    return value.named_shape if isinstance(value, NamedArray) else None


def _check_carry(carry: Any, tree: Any, shapes: list[tuple[str, Any]], operation: str) -> None:
    """The carry ``f`` returned keeps the init's structure and each leaf's named shape."""
    pairs, new_tree = tree_flatten_with_path(carry, is_leaf=_is_named)
    if new_tree != tree:
        raise NamedShapeError(
            f"{operation}: the body returns a carry of structure {new_tree}, but init has structure {tree}. "
            f"Fix: return the carry with the structure of init",
            kind=ErrorKind.INVALID_ARGUMENT,
        )
    for (path, before), (_, value) in zip(shapes, pairs, strict=True):
        check_carry(path, before, _named_shape(value), operation)
