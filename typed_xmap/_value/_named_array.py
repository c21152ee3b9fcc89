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

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import jax
import numpy as np
from jax.core import Tracer

from .._algebra import ErrorKind, NamedShapeError
from ._flat import SORTED_AUX, ArrayImpl, Aux, canonical_order, flat_of

__all__ = ["NamedArray", "empty", "holds_array", "in_name_order", "in_order", "is_eager", "laid_out", "wrap"]


class _Checked(type):
    """NamedArray's metaclass: ``NamedArray(data, axes, mapped=())`` checks its arguments here, so the class
    has no ``__init__`` and an empty value is made in C, with no Python frame (``type.__call__`` bound to the
    class: what the pytree unflatten, run per leaf of every ``jit`` call's results, allocates with; about half
    the cost of ``object.__new__``)."""

    def __call__(cls, data: Any, axes: Sequence[str], mapped: Sequence[tuple[str, int]] = ()) -> NamedArray:
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
        if not mapped and isinstance(data, _CONCRETE):
            data, axes = in_name_order(data, axes)
        x: NamedArray = type.__call__(cls)  # an empty value (the class has no __init__)
        x.data, x.axes, x.mapped = data, axes, mapped
        x._flat = flat_of(data, axes, mapped)
        return x


class NamedArray(metaclass=_Checked):
    """A jax array with named axes (order-free) and positional dims.

    Build one with ``tx.named(array, axes)``; read it back with ``tx.positional(x, axes)``.
    ``NamedArray[f32, "batch features"]`` is the annotation form, checked by ``@tx.typed``.
    A named shape is a set: ``x.data`` holds the positional dims, then the named dims in the order ``x.axes``
    lists, and that order is an implementation detail. A concrete value (made outside any trace) is laid
    out in name order (its named dims sorted by name), so a ``jit`` call it is passed to costs the same
    whatever order the operation that made it produced; under a trace a value keeps its operation's layout
    (what XLA compiles best), and its pytree flatten puts it in name order, so the pytree structure never
    depends on the order (``lax.scan``/``cond``/``while_loop`` carries and branches match). To hand the data
    to another library, say the order: ``tx.positional(x, ["batch", "features"])``. ``print(x)`` shows the
    values (a summary for large arrays). ``x.sum('batch')``, ``x[{...}]``, ``x.at[...]`` and the other methods
    that are operations are bound onto the class by ``typed_xmap._ops._methods``; ``NamedArray[...]`` by
    ``typed_xmap._checking._annotations``.
    """

    __slots__ = {  # noqa: RUF023  # the docs list them in this order
        "data": (
            "The array: the positional dims, then one dim per name of ``axes``, in that order. Which order that "
            "is is an implementation detail (name order for a value made outside any trace): read ``axes`` with "
            "it, or take ``tx.positional(x, order)``, which lays the data out in the order you give, to hand it "
            "to another library."
        ),
        "axes": "The names of the trailing dims of ``data``, in the order ``data`` holds them.",
        "mapped": (
            "``(name, size)`` of the named axes an enclosing ``tx.xmap``/``tx.vmap`` level maps (no dim of ``data``)."
        ),
        "_flat": "The pytree flatten's result, made with the value.",
    }
    __hash__ = None  # type: ignore[assignment]  # == is elementwise
    __array_ufunc__ = None  # np.float32(2) * x: numpy defers to our reflected operators

    data: jax.Array
    axes: tuple[str, ...]
    mapped: tuple[tuple[str, int], ...]
    _flat: tuple[Any, Aux]  # the pytree flatten's result

    if TYPE_CHECKING:  # the metaclass's __call__ at run time: the class has no __init__ (``empty``)

        def __init__(self, data: Any, axes: Sequence[str], mapped: Sequence[tuple[str, int]] = ()) -> None: ...

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """A subclass is made by NamedArray's checks alone (its metaclass): an ``__init__`` of its own could not
        run, so it is refused where the class is defined rather than failing at its first value."""
        super().__init_subclass__(**kwargs)
        if "__init__" in vars(cls):
            raise NamedShapeError(
                f"class {cls.__name__}(NamedArray) defines __init__, but a NamedArray is made by its checks alone "
                f"(NamedArray has no __init__ to extend). Fix: drop {cls.__name__}.__init__ and keep extra data "
                f"beside the value (a dataclass or an equinox Module holding the NamedArray)",
                kind=ErrorKind.INVALID_ARGUMENT,
            )

    # -- pickling ---------------------------------------------------------------------------------
    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        """A pickle holds the constructor's arguments, never the pytree flatten's result (``_flat``, whose aux
        changes between versions): an unpickled value is made by this version's checks and layout."""
        return (type(self), (self.data, self.axes, self.mapped))

    def __setstate__(self, state: Any) -> None:
        """A value pickled by a typed_xmap before ``__reduce__`` (its slots, ``(None, {"data": ..., "axes": ...,
        "mapped": ..., "_flat": ...})``, the flatten's aux of that version included): rebuilt by the constructor,
        so its aux is this version's (an old 2-entry aux made ``jax.jit`` fail with a bare ``IndexError``)."""
        slots = state[1] if isinstance(state, tuple) and len(state) == 2 else None
        if not isinstance(slots, dict) or "data" not in slots or "axes" not in slots:
            raise NamedShapeError(
                f"this pickle holds a NamedArray state typed_xmap cannot read ({type(state).__name__}, not the "
                f"(None, {{'data': ..., 'axes': ..., 'mapped': ...}}) slots of an older version). Fix: pickle the "
                f"value again with this version, or pickle tx.positional(x, axes) and rebuild it with "
                f"tx.named(array, axes)",
                kind=ErrorKind.INVALID_ARGUMENT,
            )
        value = type(self)(slots["data"], slots["axes"], slots.get("mapped", ()))
        self.data, self.axes, self.mapped, self._flat = value.data, value.axes, value.mapped, value._flat

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
    """``x`` with its named dims laid out in the order ``axes`` (the same set as ``x.axes``), concrete or traced:
    for an operation that reads the data by position (``laid_out``); not a value to hand back to users."""
    if x.axes == axes:
        return x
    rank = x.data.ndim - len(axes)
    perm = tuple(range(rank)) + tuple(rank + x.axes.index(a) for a in axes)
    return laid_out(jax.lax.transpose(x.data, perm), axes, x.mapped)


def wrap(data: Any, axes: Sequence[str], mapped: tuple[tuple[str, int], ...] = ()) -> NamedArray:
    """Build a NamedArray from data laid out as positional dims + ``axes`` (no checks): an operation's result.

    A concrete value (a jax or numpy array: made eagerly, outside any trace) is laid out in name order (its
    named dims sorted by name; a transpose when they are not): the layout the pytree flatten gives, so a
    ``jit`` call it is passed to does no device work at its boundary, on its first call as on every other.
    A traced value keeps the order given (the producing operation's layout, which XLA lays out best); only
    its pytree flatten, inside the trace, puts it in name order.
    """
    x = empty()
    axes = tuple(axes)
    if not mapped:
        aux = SORTED_AUX.get(axes)
        if aux is not None:  # in name order already
            x.data, x.axes, x.mapped, x._flat = data, axes, (), ((data,), aux)
            return x
        if isinstance(data, _CONCRETE):
            data, axes = in_name_order(data, axes)
    x.data, x.axes, x.mapped = data, axes, mapped
    x._flat = flat_of(data, axes, mapped)
    return x


def laid_out(data: Any, axes: Sequence[str], mapped: tuple[tuple[str, int], ...] = ()) -> NamedArray:
    """A NamedArray whose data keeps the layout ``axes`` even when it is concrete: an operation's intermediate
    value that it reads back by position (``in_order``). Its flatten would transpose: never return it."""
    x = empty()
    x.data, x.axes, x.mapped = data, tuple(axes), mapped
    x._flat = flat_of(data, x.axes, mapped)
    return x


def in_name_order(data: Any, axes: tuple[str, ...]) -> tuple[Any, tuple[str, ...]]:
    """Concrete ``data`` laid out as ``axes`` -> the same values with the named dims sorted by name, and those axes."""
    order = canonical_order(axes) if len(axes) > 1 else None
    if order is None or data.ndim < len(axes):  # in order, or not a NamedArray's data (the constructor says why)
        return data, axes
    rank = data.ndim - len(axes)
    perm = (*range(rank), *(rank + p for p in order[1]))
    return (np.transpose(data, perm) if isinstance(data, np.ndarray) else jax.lax.transpose(data, perm)), order[0]


empty: Callable[[], NamedArray] = type.__call__.__get__(NamedArray)
"""``empty()``: a NamedArray with no slot set, made in C (the class has no ``__init__``); the caller sets all four."""
_CONCRETE = (ArrayImpl, np.ndarray)
