"""Ordering and selection along a named axis for ``typed_xmap.numpy``: ``sort``, ``argsort``, ``top_k``.

The rules are ``_algebra/_selection.py``'s. A mapped axis (an enclosing ``vmap`` level, inside ``xmap``) is
gathered into the data first; the work is one ``jnp.sort``/``jnp.argsort`` (stable) or ``lax.top_k``. On a
mesh the sorted dim is made whole on every device first (Explicit axes refuse to sort along a split dim) and
sorted values are gathered at a stable argsort's indices: JAX's own sort rule differentiates through an
unplaced ``iota``, which Explicit axes refuse beside a placed operand.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from jax import lax

from ..._algebra import sorted_shape, top_k_shape
from ..._value._named_array import NamedArray, wrap
from ._mapped_axes import as_mapped, gather
from ._structure import Placement, placed_back, whole

__all__ = ["along", "argsort", "sort", "top_k"]


def along(x: Any, axis: Any, *, operation: str) -> tuple[NamedArray, int, Placement]:
    """``x`` with ``axis`` (checked to be there) a dim of its data, whole on every device, that dim, and how
    ``x`` was placed (for ``placed_back``)."""
    value = (
        x if isinstance(x, NamedArray) else as_mapped(x, [axis] if isinstance(axis, str) else [], operation=operation)
    )
    sorted_shape(value.named_shape, axis, operation=operation)
    value = gather(value, [n for n, _ in value.mapped if n == axis], operation=operation)
    dim = value.ndim + value.axes.index(axis)
    value, placement = whole(value, [dim])
    return value, dim, placement


def _result(x: Any, value: NamedArray, data: Any, axes: tuple[str, ...]) -> Any:
    return wrap(data, axes, value.mapped) if isinstance(x, NamedArray) else data


def sort(x: Any, axis: str) -> Any:
    """``x`` sorted along the named axis ``axis`` (ascending; stable).

    Args:
        x: a NamedArray carrying ``axis`` (or a per-element array inside ``xmap``).
        axis: the axis sorted along.

    Returns:
        ``x`` sorted along ``axis`` (ascending, stable), of the same named shape.

    Raises:
        NamedShapeError: ``axis`` missing.

    Examples:
        >>> x = tx.named(jnp.array([3.0, 1.0, 2.0]), ["seq"])
        >>> tx.positional(tnp.sort(x, "seq"), ["seq"]).tolist()
        [1.0, 2.0, 3.0]
    """
    value, dim, placement = along(x, axis, operation="tnp.sort")
    data = value.data
    if _on_mesh(data):
        data = jnp.take_along_axis(data, _order(data, dim), axis=dim)
    else:
        data = jnp.sort(data, axis=dim, stable=True)
    return _result(x, value, placed_back(data, placement), value.axes)


def argsort(x: Any, axis: str) -> Any:
    """The int32 indices that sort ``x`` along ``axis`` (stable: ties keep their order).

    Args:
        x: a NamedArray carrying ``axis`` (or a per-element array inside ``xmap``).
        axis: the axis sorted along.

    Returns:
        The int32 indices that sort ``x`` along ``axis``, of ``x``'s named shape.

    Raises:
        NamedShapeError: ``axis`` missing.

    Examples:
        >>> x = tx.named(jnp.array([3.0, 1.0, 2.0]), ["seq"])
        >>> tx.positional(tnp.argsort(x, "seq"), ["seq"]).tolist()
        [1, 2, 0]
    """
    value, dim, placement = along(x, axis, operation="tnp.argsort")
    return _result(x, value, placed_back(_order(value.data, dim), placement), value.axes)


def _order(data: Any, dim: int, *, descending: bool = False) -> Any:
    """The int32 stable argsort of ``data`` along ``dim``; indices have no gradient, so none is traced.
    ``descending``: largest first, ties by lower index, NaN before every number (``lax.top_k``'s order); the
    values are never negated, which would wrap unsigned ints and the int minimum and move NaN last."""
    return jnp.argsort(lax.stop_gradient(data), axis=dim, stable=True, descending=descending).astype(jnp.int32)


def top_k(x: Any, k: int, axis: str, new_axis: str) -> tuple[Any, Any]:
    """The ``k`` largest values along ``axis`` and their int32 indices along it, both along ``new_axis``
    (size ``k``, largest first) in place of ``axis``: ``top_k(probs, 2, axis='expert', new_axis='choice')``.

    Args:
        x: a NamedArray carrying ``axis`` (or a per-element array inside ``xmap``).
        k: how many to keep, at most ``axis``'s size.
        axis: the axis selected along.
        new_axis: the name of the kept values' axis, one ``x`` lacks.

    Returns:
        ``(values, indices)``, both with ``axis`` replaced by ``new_axis`` of size ``k``; the indices int32.

    Raises:
        NamedShapeError: ``axis`` missing, ``k`` not a positive int or over ``axis``'s size, or ``new_axis``
            already an axis of ``x``.

    Examples:
        >>> probs = tx.named(jnp.ones((2, 8)), ["token", "expert"])
        >>> values, indices = tnp.top_k(probs, 2, axis="expert", new_axis="choice")
        >>> indices.named_shape == {"token": 2, "choice": 2}
        True
    """
    operation = f"tnp.top_k(x, {k!r}, axis={axis!r}, new_axis={new_axis!r})"
    value, dim, _ = along(x, axis, operation=operation)  # new_axis takes no placement from axis
    top_k_shape(value.named_shape, k, axis, new_axis, operation=operation)
    axes = (*(a for a in value.axes if a != axis), new_axis)
    data = jnp.moveaxis(value.data, dim, -1) if dim != value.data.ndim - 1 else value.data
    values, indices = _sorted_top_k(data, k) if _on_mesh(data) else lax.top_k(data, k)
    return _result(x, value, values, axes), _result(x, value, indices.astype(jnp.int32), axes)


def _on_mesh(data: Any) -> bool:
    """Whether ``data`` is (or is traced as) split over several devices: XLA's TopK is not partitioned (it
    gathers the operand on every device), a sort is."""
    meshes = [jax.sharding.get_abstract_mesh(), getattr(getattr(jax.typeof(data), "sharding", None), "mesh", None)]
    return any(m is not None and not m.empty and m.size > 1 for m in meshes)


def _sorted_top_k(data: Any, k: int) -> tuple[Any, Any]:
    """``lax.top_k`` (largest first, ties by lower index) from a stable argsort along the last dim, which XLA
    partitions along the other dims; the values are gathered at those indices (their gradient too)."""
    order = _order(data, -1, descending=True)[..., :k]
    return jnp.take_along_axis(data, order, axis=-1), order
