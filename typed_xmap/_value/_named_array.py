"""``NamedArray``: a jax array whose trailing dims are named axes, and how one is made (``wrap``).

Layout: ``data.shape == positional dims + named dims``, the named dims in ``axes`` order. Named dims
sit last so that ``jax.vmap`` (which maps dim 0 by default) maps a positional dim and puts its new dim
in front, where it becomes a positional dim of the result.

Inside ``xmap`` a named axis can also be *mapped*: held by an enclosing ``vmap(axis_name=...)`` level
instead of a dim of ``data``. ``mapped`` lists those ``(name, size)`` pairs; they count in
``named_shape`` like the others, and ``jax.lax`` collectives reach them by name.

The value knows no operation and no printing: ``_operators`` installs its operators and conversions,
``_printing`` its ``repr``, ``_pytree`` registers it with JAX (the package's ``__init__`` runs all three).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import numpy as np
from jax.core import Tracer

from .._algebra import ErrorKind, NamedShapeError
from ._flat import SORTED_AUX, flat_of

__all__ = ["NamedArray", "holds_array", "in_order", "is_eager", "wrap"]


class NamedArray:
    """A jax array with named axes (order-free) and positional dims.

    Build one with ``tx.named(array, axes)``; read it back with ``tx.positional(x, axes)``.
    ``NamedArray[f32, "batch features"]`` is the annotation form, checked by ``@tx.typed``.
    A named shape is a set: the named dims keep the order the producing operation laid them out in
    (``x.axes``), and the pytree flatten puts them in sorted order, so the pytree structure never
    depends on the order they came in. ``print(x)`` shows the values (a summary for large arrays).
    ``x.sum('batch')``, ``x[{...}]``, ``x.at[...]`` and the other methods that are operations are bound onto the
    class by ``typed_xmap._ops._methods``; ``NamedArray[...]`` by ``typed_xmap._checking._annotations``.
    """

    __slots__ = ("_flat", "axes", "data", "mapped")
    __hash__ = None  # type: ignore[assignment]  # == is elementwise
    __array_ufunc__ = None  # np.float32(2) * x: numpy defers to our reflected operators

    data: jax.Array
    axes: tuple[str, ...]
    mapped: tuple[tuple[str, int], ...]
    _flat: tuple[Any, tuple[tuple[str, ...], tuple[tuple[str, int], ...]]]  # the pytree flatten's result

    def __init__(self, data: Any, axes: Sequence[str], mapped: Sequence[tuple[str, int]] = ()) -> None:
        axes = tuple(axes)
        mapped = tuple((str(n), int(s)) for n, s in mapped)
        both = [n for n, _ in mapped if n in axes]
        if both:
            raise NamedShapeError(
                f"axis {both[0]!r} cannot be both a dim of the data and mapped. Fix: list it in axes or in "
                f"mapped, not both",
                kind=ErrorKind.AXIS_MISSING,
            )
        ndim = getattr(data, "ndim", None)
        if isinstance(ndim, int) and ndim < len(axes):
            raise NamedShapeError(
                f"a NamedArray with named axes {axes} needs at least {len(axes)} dims, but its data has "
                f"shape {tuple(data.shape)}. This happens when jax.vmap maps a named axis: vmap maps "
                f"positional dims only. Fix: map a positional dim, or use tx.xmap to map a named axis",
                kind=ErrorKind.POSITIONAL,
            )
        if len(set(axes)) != len(axes):
            raise NamedShapeError(
                f"a NamedArray cannot name two dims the same: {axes}. Fix: give each dim its own name",
                kind=ErrorKind.SYNTAX,
            )
        self.data, self.axes = data, axes
        self.mapped = mapped
        self._flat = flat_of(data, axes, mapped)

    # -- shape ------------------------------------------------------------------------------------
    @property
    def named_shape(self) -> dict[str, int]:
        """Axis name -> size, for the axes in ``data`` and the mapped ones."""
        shape = self.data.shape
        named = dict(zip(self.axes, shape[len(shape) - len(self.axes) :], strict=False))
        if self.mapped:
            named.update(self.mapped)
        return named

    @property
    def shape(self) -> tuple[int, ...]:
        """The positional dims (named axes excluded)."""
        shape = self.data.shape
        return tuple(shape[: len(shape) - len(self.axes)])

    @property
    def ndim(self) -> int:
        """The number of positional dims."""
        return self.data.ndim - len(self.axes)

    @property
    def dtype(self) -> Any:
        return self.data.dtype

    @property
    def size(self) -> int:
        return int(np.prod(self.data.shape, dtype=np.int64))

    def astype(self, dtype: Any) -> NamedArray:
        return wrap(self.data.astype(dtype), self.axes, self.mapped)


def holds_array(data: Any) -> bool:
    """Whether ``data`` is an array (or a tracer, or a ``ShapeDtypeStruct``), not a leaf ``jax.tree.map`` made.

    ``jax.tree.map(lambda a: a.shape, params)`` unflattens each NamedArray around a shape (a dtype, a bool,
    a string, ``None``): the tree keeps its structure, as Haliax's and Penzai's do, and the node prints
    and compares by its leaf and names (``shape_repr``, ``_leaf_comparison``)."""
    return isinstance(getattr(data, "ndim", None), int) and hasattr(data, "dtype")


def is_eager(data: Any) -> bool:
    """Whether ``data`` is a concrete value (no trace is running over it)."""
    return not isinstance(data, Tracer)


def in_order(x: NamedArray, axes: tuple[str, ...]) -> NamedArray:
    """``x`` with its named dims laid out in the order ``axes`` (the same set as ``x.axes``)."""
    if x.axes == axes:
        return x
    rank = x.data.ndim - len(axes)
    perm = tuple(range(rank)) + tuple(rank + x.axes.index(a) for a in axes)
    return wrap(jax.lax.transpose(x.data, perm), axes, x.mapped)


def wrap(data: Any, axes: Sequence[str], mapped: tuple[tuple[str, int], ...] = ()) -> NamedArray:
    """Build a NamedArray from data laid out as positional dims + ``axes`` (no checks).

    The named dims keep the order given (the producing operation's layout); only the pytree flatten
    puts them in the canonical order (sorted by name).
    """
    x = _new(NamedArray)
    x.data, x.axes, x.mapped = data, tuple(axes), mapped
    aux = None if mapped else SORTED_AUX.get(x.axes)
    x._flat = ((data,), aux) if aux is not None else flat_of(data, x.axes, mapped)
    return x


_new = object.__new__
