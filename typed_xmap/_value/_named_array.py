"""``NamedArray``: a jax array whose trailing dims are named axes, broadcasting by name.

Layout: ``data.shape == positional dims + named dims``, the named dims in ``axes`` order. Named dims
sit last so that ``jax.vmap`` (which maps dim 0 by default) maps a positional dim and puts its new dim
in front, where it becomes a positional dim of the result.

Inside ``xmap`` a named axis can also be *mapped*: held by an enclosing ``vmap(axis_name=...)`` level
instead of a dim of ``data``. ``mapped`` lists those ``(name, size)`` pairs; they count in
``named_shape`` like the others, and ``jax.lax`` collectives reach them by name.
"""

from __future__ import annotations

import functools
import json
import operator
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import jax
import jax.export
import jax.numpy as jnp
import numpy as np
from jax.core import Tracer
from jax.tree_util import GetAttrKey, register_pytree_with_keys

from .._algebra import (
    OPERATORS,
    ErrorKind,
    NamedShapeError,
    OperatorKind,
    broadcast_positional,
    different_meshes,
    format_axis_list,
    union_named_shapes,
)
from ._compat import array_impl, on_abstractify
from ._tracebacks import entry_point

__all__ = [
    "NamedArray",
    "align",
    "apply_elementwise",
    "fused",
    "holds_array",
    "in_order",
    "index_mapped",
    "is_eager",
    "readable",
    "shape_repr",
    "summary",
    "summary_line",
    "wrap",
]


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
        self._flat = _flat_of(data, axes, mapped)

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

    def __repr__(self) -> str:
        """The named shape, and the values of a concrete array: all of them when small, a summary when large.

        ``NamedArray(float32[batch=2, embed=3], [[0., 1., 2.], [3., 4., 5.]])``: the values are laid out as
        the data holds them: positional dims first, then the named axes in the order the header lists. A traced
        value shows its named shape only.
        """
        header = shape_repr(self)
        if not readable(self):
            return header
        values = np.asarray(self.data)
        if values.size <= REPR_MAX_VALUES:
            prefix = header[:-1] + ", "
            return prefix + np.array2string(values, separator=", ", prefix=prefix, suffix=")") + ")"
        return header[:-1] + ", " + summary(values) + ")"

    __str__ = __repr__

    # -- conversions that would lose the names ------------------------------------------------------
    def __array__(self, *args: Any, **kwargs: Any) -> Any:
        if not self.axes and not self.mapped:  # positional dims only: nothing to lose
            return np.asarray(self.data, *args, **kwargs)
        raise TypeError(
            f"cannot convert {shape_repr(self)} to a positional array implicitly: the order of its named axes is "
            f"not part of its value. Fix: tx.positional(x, {format_axis_list(self.axes)})"
        )

    def __jax_array__(self) -> Any:
        """``jnp.exp(x)``, ``jnp.asarray(x)``: a clear error pointing at ``tnp`` (jnp would drop the names).

        jax's own operators call this too before deferring (``jnp.ones(3) * x``); for them this returns the
        NamedArray itself, which they do not accept, so Python calls our reflected operator."""
        if not self.axes and not self.mapped:  # positional dims only (a loss reduced over every axis)
            return self.data
        caller = sys._getframe(1).f_code
        if caller.co_name.startswith(("_operator_", "deferring")) and caller.co_filename.endswith("array_methods.py"):
            return self
        raise NamedShapeError(
            f"a jax.numpy function got {shape_repr(self)}: jnp works on positional arrays and would drop its "
            f"named axes. Fix: use typed_xmap.numpy (tnp.exp(x), tnp.sum(x, 'batch'), ...), or "
            f"tx.positional(x, {format_axis_list(self.axes + tuple(n for n, _ in self.mapped))}) for a "
            f"positional array",
            kind=ErrorKind.INVALID_ARGUMENT,
        )

    def __iter__(self):  # type: ignore[no-untyped-def]
        raise TypeError(f"cannot iterate over {shape_repr(self)}. Fix: tx.positional(x, ...) first")

    def __matmul__(self, other: Any) -> Any:
        raise TypeError(
            "`@` is ambiguous for NamedArrays: say which axes to contract. "
            "Fix: tnp.einsum('{in},{in,out}->{out}', x, w) or tnp.dot(x, w, axis='in')"
        )

    __rmatmul__ = __matmul__


REPR_MAX_VALUES = 100
"""``repr`` shows every value of an array with at most this many elements, a summary of larger ones."""


def shape_repr(x: NamedArray) -> str:
    """``NamedArray(float32[batch=2, embed=3])``: the dtype and named shape, never the values (for messages).

    A NamedArray holding a leaf that is no array shows the leaf: ``NamedArray((3, 4), axes=('in', 'out'))``."""
    if not holds_array(x.data):
        mapped = f", mapped={x.mapped!r}" if x.mapped else ""
        return f"NamedArray({x.data!r}, axes={x.axes!r}{mapped})"
    dtype = getattr(x.data, "dtype", "?")
    named = ", ".join(f"{n}={s}" for n, s in x.named_shape.items())
    positional = ",".join(str(s) for s in x.shape)
    inner = f"{named}; {positional}" if x.shape else named
    mapped = f", mapped: {' '.join(n for n, _ in x.mapped)}" if x.mapped else ""
    return f"NamedArray({dtype}[{inner}]{mapped})"


def summary_line(x: NamedArray) -> str:
    """The named shape and, for a value readable here, what it holds: ``min=.. max=.. mean=..`` (no values).

    The one line notebooks, rich and treescope show (``typed_xmap._ops._display``)."""
    header = shape_repr(x)
    if not readable(x):
        return header
    return f"{header} {summary(np.asarray(x.data)).replace(', ', ' ')}"


def holds_array(data: Any) -> bool:
    """Whether ``data`` is an array (or a tracer, or a ``ShapeDtypeStruct``), not a leaf ``jax.tree.map`` made.

    ``jax.tree.map(lambda a: a.shape, params)`` unflattens each NamedArray around a shape (a dtype, a bool,
    a string, ``None``): the tree keeps its structure, as Haliax's and Penzai's do, and the node prints
    and compares by its leaf and names (``shape_repr``, ``_leaf_comparison``)."""
    return isinstance(getattr(data, "ndim", None), int) and hasattr(data, "dtype")


def readable(x: NamedArray) -> bool:
    """Whether ``x``'s values can be read here: an array, not traced, not mapped, all its shards on this process."""
    data: Any = x.data  # an array, or a leaf jax.tree.map made
    if isinstance(data, Tracer) or x.mapped or not holds_array(data):
        return False
    return isinstance(data, np.ndarray | np.generic) or bool(getattr(data, "is_fully_addressable", False))


def summary(values: np.ndarray) -> str:
    """``min=-1.2, max=3.4, mean=0.01, nan=2``: what a large array holds, in one line."""
    if values.dtype == np.bool_:
        return f"true={int(values.sum())}"
    if not np.issubdtype(values.dtype, np.number):
        try:
            values = values.astype(np.float32)  # bfloat16 and the other ml_dtypes
        except (TypeError, ValueError):
            return "..."
    if np.issubdtype(values.dtype, np.complexfloating):
        return f"mean={values.mean():.4g}"
    nan = int(np.isnan(values).sum()) if np.issubdtype(values.dtype, np.floating) else 0
    if nan == values.size:
        return f"nan={nan}"
    parts = [f"min={np.nanmin(values):.4g}", f"max={np.nanmax(values):.4g}", f"mean={np.nanmean(values):.4g}"]
    return ", ".join(parts + ([f"nan={nan}"] if nan else []))


Aux = tuple[tuple[str, ...], tuple[tuple[str, int], ...]]


def _flat_of(data: Any, axes: tuple[str, ...], mapped: tuple[tuple[str, int], ...]) -> tuple[Any, Aux]:
    """What the pytree flatten of this value returns, made with the value: ``((leaf,), aux)``.

    A named shape is a set, so the structure must not depend on the order an operation produced
    (``lax.scan``/``cond``/``while_loop`` carries and branches match): the aux holds the axes sorted by name
    (and the mapped axes, sorted), and the leaf is the data with its named dims in that order. Data laid out in
    another order gets a leaf that transposes when the flatten reads it (``_Sorted``), so under ``jit`` the
    transpose sits at the boundary only and making the value costs none. A placeholder (data with no dims)
    keeps its axes as they came.

    Every ``jit`` call flattens its arguments and unflattens its results, a few hundred NamedArrays for a
    model and its optimizer state; storing this result lets the flatten be a C attribute read
    (``_FLATTEN``), with no Python frame per NamedArray."""
    if not mapped:
        aux = _SORTED_AUX.get(axes)
        if aux is not None:
            return (data,), aux
        unsorted = _UNSORTED.get(axes)
        if unsorted is not None and isinstance(data, _ARRAY_TYPES):
            return _Sorted(data, unsorted[0]), unsorted[1]
    order = canonical_order(axes) if len(axes) > 1 else None
    if order is not None and not isinstance(getattr(data, "ndim", None), int):
        order = None  # a placeholder: no named dims to sort
    sorted_axes = axes if order is None else order[0]
    aux = (sorted_axes, tuple(sorted(mapped)) if len(mapped) > 1 else mapped)
    shared = not mapped and len(_SORTED_AUX) < _CACHE_SIZE
    if shared and (order is not None or canonical_order(axes) is None):  # not a placeholder's unsorted axes
        aux = _SORTED_AUX.setdefault(sorted_axes, _SharedAux(aux))
    if order is None:
        return (data,), aux
    if shared:
        _UNSORTED[axes] = (order[1], aux)
    return _Sorted(data, order[1]), aux


class _SharedAux(tuple):  # type: ignore[type-arg]  # an Aux
    """The one aux of every unmapped NamedArray with these sorted axes (``_SORTED_AUX``): jit's comparison of a
    call's pytree structure with its cache's is then an identity check, and its type tells the unflatten that
    the axes are sorted and nothing is mapped."""

    __slots__ = ()


# sorted axes -> (axes, ()), a _SharedAux
_SORTED_AUX: dict[tuple[str, ...], Aux] = {}
# unsorted axes -> (the permutation that sorts them, the sorted axes' shared aux)
_UNSORTED: dict[tuple[str, ...], tuple[tuple[int, ...], Aux]] = {}
ArrayImpl = array_impl()  # a concrete jax array's type
_ARRAY_TYPES = (Tracer, ArrayImpl, np.ndarray)


class _Sorted:
    """The flatten's leaf of data whose named dims are not in sorted order: the data transposed to sorted order
    when the flatten reads it, not when the value is made (most values inside a trace are never flattened)."""

    __slots__ = ("data", "perm")

    def __init__(self, data: Any, perm: tuple[int, ...]) -> None:
        self.data, self.perm = data, perm

    def __iter__(self) -> Iterator[Any]:
        data, perm = self.data, self.perm
        rank = data.ndim - len(perm)
        yield jax.lax.transpose(data, (*range(rank), *(rank + p for p in perm)))

    def __len__(self) -> int:
        return 1


_FLATTEN = operator.attrgetter("_flat")


def _flatten_with_keys(x: NamedArray) -> tuple[tuple[tuple[Any, Any]], Aux]:
    """The leaf's key names its axes, ``.data[batch,embed]`` (sorted, as the leaf's dims are): checkpointers
    that store leaves by key path (orbax) keep the names, and a restore into a target whose names differ
    finds no such leaf instead of reading the dims in another order."""
    children, aux = x._flat
    (data,) = children
    key = _DATA_KEYS.get(aux[0])
    if key is None:
        key = GetAttrKey(f"data[{','.join(aux[0])}]") if aux[0] else GetAttrKey("data")
        if len(_DATA_KEYS) < _CACHE_SIZE:
            _DATA_KEYS[aux[0]] = key
    return ((key, data),), aux


_DATA_KEYS: dict[tuple[str, ...], Any] = {}  # sorted axes -> the GetAttrKey naming them


def _unflatten(aux: Aux, children: Iterable[Any]) -> Any:
    (data,) = children
    if type(aux) is _SharedAux and (
        len(data.aval.shape) >= len(aux[0])
        if type(data) is ArrayImpl
        else isinstance(data, Tracer) and len(data.shape) >= len(aux[0])
    ):  # the common case (a jit call's results, a tree.map in a trace): sorted axes, nothing mapped, all dims
        x = _new(NamedArray)
        x.data = data
        x.axes = aux[0]
        x.mapped = ()
        x._flat = (children if type(children) is tuple else (data,), aux)
        return x
    return _unflatten_checked(data, aux)


def _unflatten_checked(data: Any, aux: Aux) -> Any:
    axes, mapped = aux
    if axes and len(getattr(data, "shape", ())) < len(axes) and holds_array(data):
        if data.ndim == 0:  # a leaf reduced to a scalar (jax.tree.map(jnp.sum, params),
            return data  # optax's norms): no axis is left to name, so it stays a plain scalar
        NamedArray(data, *aux)  # raises the explanatory error (jax.vmap mapped a named dim away)
    if mapped and holds_array(data):  # new leaves (jax.lax.psum(x, 'i')): keep the axes the data still varies along
        from ._frames import varying_mapped

        mapped = varying_mapped(data, mapped)
    return wrap(data, axes, mapped)


register_pytree_with_keys(NamedArray, _flatten_with_keys, _unflatten, flatten_func=_FLATTEN)


def _serialize_aux(aux: Aux) -> bytes:
    return json.dumps([list(aux[0]), [list(m) for m in aux[1]]]).encode()


def _deserialize_aux(data: bytes) -> Aux:
    axes, mapped = json.loads(data)
    return tuple(axes), tuple((str(n), int(s)) for n, s in mapped)


# jax.export: functions taking or returning NamedArrays serialize (their in/out trees name this node)
jax.export.register_pytree_node_serialization(
    NamedArray,
    serialized_name="typed_xmap.NamedArray",
    serialize_auxdata=_serialize_aux,
    deserialize_auxdata=_deserialize_aux,
)


@functools.lru_cache(maxsize=4096)
def canonical_order(axes: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[int, ...]] | None:
    """``None`` when ``axes`` are in the canonical order (sorted by name), else (sorted axes, permutation)."""
    ordered = tuple(sorted(axes))
    return None if ordered == axes else (ordered, tuple(axes.index(a) for a in ordered))


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
    aux = None if mapped else _SORTED_AUX.get(x.axes)
    x._flat = ((data,), aux) if aux is not None else _flat_of(data, x.axes, mapped)
    return x


_new = object.__new__


Step = tuple[tuple[int, ...] | None, tuple[int, ...]] | None
"""How one operand is laid out: ``None`` (as it is), or (a transpose's permutation or ``None``, a reshape)."""
Plan = tuple[tuple[Step, ...], tuple[str, ...]]
"""A layout plan: each operand's step, and the result's axes in data."""

_PLANS: dict[Any, Plan] = {}
_FUSED: dict[Any, Callable[..., Any]] = {}
_CACHE_SIZE = 4096
_SCALARS = (int, float, complex, bool)
_ARRAYS = (jax.Array, np.ndarray, np.generic)


def is_eager(data: Any) -> bool:
    """Whether ``data`` is a concrete value (no trace is running over it)."""
    return not isinstance(data, Tracer)


def _layout_key(values: Sequence[Any]) -> tuple[Any, ...] | None:
    """What a layout plan depends on: axes and shapes. ``None``: no NamedArray among ``values``, or one with
    mapped axes, or a value planned per call (lists and other array-likes)."""
    key: list[Any] = []
    named = False
    for v in values:
        if type(v) is NamedArray:
            if v.mapped:
                return None
            key.append((v.axes, v.data.shape))
            named = True
        elif isinstance(v, _SCALARS):
            key.append(None)
        elif isinstance(v, _ARRAYS):
            key.append(v.shape)
        else:
            return None
    return tuple(key) if named else None


def _plan(values: Sequence[Any], operation: str, operands: Sequence[str] | None) -> Plan:
    """The layout plan of ``values`` (none of them with mapped axes), checking that they broadcast."""
    named = [v for v in values if isinstance(v, NamedArray)]
    labels = None
    if operands is not None:
        labels = [label for v, label in zip(values, operands, strict=False) if isinstance(v, NamedArray)]
    # The result's axes: the order of the operand with the most named dims (it needs no transpose), then
    # the other axes in first-seen order.
    union = union_named_shapes([v.named_shape for v in named], operation=operation, operands=labels)
    widest = max(named, key=lambda v: len(v.axes)).axes if named else ()
    result_axes = (*widest, *(a for a in union if a not in widest))
    positional = [v.shape if isinstance(v, NamedArray) else np.shape(v) for v in values]
    broadcast_positional(positional, operation=operation, operands=operands)
    rank = max((len(p) for p in positional), default=0)
    steps: list[Step] = []
    for value, pos in zip(values, positional, strict=False):
        if not isinstance(value, NamedArray):
            steps.append((None, tuple(pos) + (1,) * len(result_axes)) if result_axes and len(pos) else None)
            continue
        if value.axes == result_axes and len(pos) == rank:
            steps.append(None)
            continue
        own = [a for a in result_axes if a in value.axes]
        p = len(pos)
        perm = tuple(range(p)) + tuple(p + value.axes.index(a) for a in own)
        sizes = value.named_shape
        target = (1,) * (rank - p) + tuple(pos) + tuple(sizes.get(a, 1) for a in result_axes)
        steps.append((None if perm == tuple(range(len(perm))) else perm, target))
    return tuple(steps), result_axes


def _cached_plan(key: Any, values: Sequence[Any], operation: str, operands: Sequence[str] | None) -> Plan:
    plan = _PLANS.get(key)
    if plan is None:
        plan = _plan(values, operation, operands)  # raises if they do not broadcast: nothing is cached
        if len(_PLANS) > _CACHE_SIZE:
            _PLANS.clear()
        _PLANS[key] = plan
    return plan


def _lay_out(steps: tuple[Step, ...], data: Sequence[Any]) -> list[Any]:
    """Carry out a plan's steps on the operands' data."""
    out = []
    for step, d in zip(steps, data, strict=True):
        if step is None:
            out.append(d)
            continue
        perm, target = step
        moved = d if perm is None else jax.lax.transpose(d, perm)
        out.append(jax.lax.reshape(moved, target) if isinstance(moved, jax.Array) else jnp.reshape(moved, target))
    return out


def fused(key: Any, build: Callable[[], Callable[..., Any]]) -> Callable[..., Any]:
    """One cached ``jax.jit`` per ``key`` (an operation and the layouts it was planned for), built on a miss."""
    fn = _FUSED.get(key)
    if fn is None:
        if len(_FUSED) > _CACHE_SIZE:
            _FUSED.clear()
        fn = _FUSED[key] = jax.jit(build(), inline=True)
    return fn


def align(
    values: Sequence[Any], *, operation: str, operands: Sequence[str] | None = None
) -> tuple[list[Any], tuple[str, ...], tuple[tuple[str, int], ...]]:
    """Lay operands out for NumPy broadcasting by name.

    Every NamedArray becomes ``[1]*pad + positional + [size or 1 per result axis]``; other values
    (arrays, scalars) are positional-only and broadcast as usual. Returns the laid-out data, the
    result's axes in data (the union, first-seen order) and its mapped axes. An axis that one operand
    holds in its data and another has mapped is indexed at this map element (``lax.axis_index``).
    """
    key = _layout_key(values)
    if key is not None:  # no mapped axes: a plan cached per layout
        steps, axes = _cached_plan(key, values, operation, operands)
        data = [v.data if isinstance(v, NamedArray) else v for v in values]
        return _lay_out(steps, data), axes, ()
    named = [v for v in values if isinstance(v, NamedArray)]
    labels = None
    if operands is not None:
        labels = [label for v, label in zip(values, operands, strict=False) if isinstance(v, NamedArray)]
    union = union_named_shapes([v.named_shape for v in named], operation=operation, operands=labels)
    mapped_names = {n for v in named for n, _ in v.mapped}
    result_mapped = tuple((n, s) for n, s in union.items() if n in mapped_names and s is not None)  # sizes known
    values = [index_mapped(v, mapped_names) if isinstance(v, NamedArray) else v for v in values]
    unmapped = [wrap(v.data, v.axes) if isinstance(v, NamedArray) else v for v in values]
    steps, axes = _plan(unmapped, operation, operands)
    return _lay_out(steps, [v.data if isinstance(v, NamedArray) else v for v in values]), axes, result_mapped


def index_mapped(value: NamedArray, mapped_names: set[str]) -> NamedArray:
    """Turn dims of ``value`` that are mapped elsewhere into this map element's slice."""
    to_index = [a for a in value.axes if a in mapped_names]
    if not to_index:
        return value
    data, axes, mapped = value.data, list(value.axes), list(value.mapped)
    sizes = value.named_shape
    for name in to_index:
        dim = value.ndim + axes.index(name)
        data = jnp.take(data, jax.lax.axis_index(name), axis=dim)
        axes.remove(name)
        mapped.append((name, sizes[name]))
    return wrap(data, axes, tuple(mapped))


def apply_elementwise(
    fn: Callable[..., Any],
    values: Sequence[Any],
    *,
    operation: str,
    operands: Sequence[str] | None = None,
    fuse: bool = True,
) -> Any:
    """Apply a NumPy-broadcasting function to values that broadcast by name.

    With a stable ``fn`` (``fuse``: the same object each call), the layout and ``fn`` run as one cached
    ``jax.jit`` per (``fn``, layouts): eagerly one dispatch; under a trace one cached trace, inlined (the
    reshape that broadcasts an operand is traced once, as inside ``jnp``'s own jitted ufuncs).
    """
    try:
        key = _layout_key(values)
        if key is None:
            if not any(isinstance(v, NamedArray) for v in values):
                return fn(*values)
            laid_out, axes, mapped = align(values, operation=operation, operands=operands)
            return wrap(fn(*laid_out), axes, mapped)
        steps, axes = _cached_plan(key, values, operation, operands)
        data = [v.data if isinstance(v, NamedArray) else v for v in values]
        if not any(steps):  # laid out already: the operation itself
            return wrap(fn(*data), axes)
        if fuse:
            jitted = _FUSED.get((fn, key))
            if jitted is None:
                jitted = fused((fn, key), lambda: lambda *args: fn(*_lay_out(steps, args)))
            return wrap(jitted(*data), axes)
        return wrap(fn(*_lay_out(steps, data)), axes)
    except ValueError as error:  # values on different meshes: JAX's error names neither operand nor axis
        apart = _meshes_apart(values, operation, operands)
        if apart is None:
            raise
        raise apart from error


def _meshes_apart(values: Sequence[Any], operation: str, operands: Sequence[str] | None) -> NamedShapeError | None:
    """The error for operands on different meshes (or on another mesh than ``jax.set_mesh``'s), or ``None``."""
    labels = operands or [f"operand {i}" for i in range(len(values))]
    meshes = []
    for label, value in zip(labels, values, strict=False):
        data = value.data if isinstance(value, NamedArray) else value
        mesh = getattr(getattr(jax.typeof(data), "sharding", None), "mesh", None) if hasattr(data, "shape") else None
        if mesh is not None and not mesh.empty:
            meshes.append((label, _mesh_words(mesh)))
    context = jax.sharding.get_abstract_mesh()
    if meshes and not context.empty:
        meshes.append(("jax.set_mesh", _mesh_words(context)))
    return different_meshes(operation, meshes)


def _mesh_words(mesh: Any) -> str:
    """``mesh(x=4 Explicit, y=2 Explicit)``."""
    kinds = getattr(mesh, "axis_types", None) or ("",) * len(mesh.axis_names)
    parts = [
        f"{n}={s} {getattr(k, 'name', '')}".rstrip()
        for n, s, k in zip(mesh.axis_names, mesh.axis_sizes, kinds, strict=False)
    ]
    return "mesh(" + ", ".join(parts) + ")"


_LABELS = ("the left operand", "the right operand")


def _python_operator(name: str) -> Callable[..., Any]:
    """``operator.add`` for ``add``, ``operator.and_`` for ``and``."""
    return getattr(operator, name if hasattr(operator, name) else name + "_")  # type: ignore[no-any-return]  # operator's functions


def _binary(fn: Callable[[Any, Any], Any], symbol: str, reflected: bool) -> Callable[[Any, Any], Any]:
    operation = f"`x {symbol} y`"

    def method(self: NamedArray, other: Any) -> Any:
        if reflected:
            return apply_elementwise(fn, (other, self), operation=operation, operands=_LABELS)
        return apply_elementwise(fn, (self, other), operation=operation, operands=_LABELS)

    return method


def _unary(fn: Callable[[Any], Any]) -> Callable[[NamedArray], NamedArray]:
    def method(self: NamedArray) -> NamedArray:
        return wrap(fn(self.data), self.axes, self.mapped)

    return method


def _leaf_comparison(array_method: Callable[[Any, Any], Any], equal: bool) -> Callable[[Any, Any], Any]:
    """``==``/``!=`` by name for arrays; for a NamedArray holding a leaf (``holds_array``), by its leaf and names."""

    def method(self: NamedArray, other: Any) -> Any:
        other_leaf = type(other) is NamedArray and not holds_array(other.data)
        if holds_array(self.data):
            return array_method(self, other) if not other_leaf else not equal
        if type(other) is NamedArray:
            same = other_leaf and set(self.axes) == set(other.axes) and set(self.mapped) == set(other.mapped)
            return bool(same and self.data == other.data) == equal
        return self.data == other if equal else self.data != other

    return method


def _install_operators() -> None:
    """Every operator of the table of operations (``typed_xmap._algebra``), broadcasting by name."""
    for op in OPERATORS.values():
        fn = _python_operator(op.name)
        if op.kind is OperatorKind.UNARY:
            setattr(NamedArray, f"__{op.name}__", entry_point(_unary(fn)))
            continue
        method = _binary(fn, op.symbol, reflected=False)
        if op.name in ("eq", "ne"):
            method = _leaf_comparison(method, equal=op.name == "eq")
        setattr(NamedArray, f"__{op.name}__", entry_point(method))
        if op.kind is OperatorKind.BINARY:
            setattr(NamedArray, f"__r{op.name}__", entry_point(_binary(fn, op.symbol, reflected=True)))


_install_operators()


def _scalar_data(x: NamedArray, conversion: str, reduction: str) -> Any:
    """The data, for Python's conversions to a scalar: a value with named axes has no one scalar."""
    names = x.axes + tuple(name for name, _ in x.mapped)
    if names and holds_array(x.data):
        raise NamedShapeError(
            f"{conversion} of {shape_repr(x)} is ambiguous: it has named axes. "
            f"Fix: reduce them first, e.g. tnp.{reduction}(x, {names!r})",
            kind=ErrorKind.AXIS_MISSING,
        )
    return x.data


def _conversion(to: Callable[[Any], Any], conversion: str, reduction: str) -> Callable[[NamedArray], Any]:
    def method(self: NamedArray) -> Any:
        return to(_scalar_data(self, conversion, reduction))

    method.__name__ = f"__{to.__name__}__"
    return method


def _format(self: NamedArray, spec: str) -> str:
    """``f"{loss:.3f}"`` formats the scalar (no named axes); ``f"{x}"`` is ``str(x)``, as for any object."""
    if not spec:
        return str(self)
    return format(_scalar_data(self, f"format(x, {spec!r})", "sum"), spec)


def _install_conversions() -> None:
    """``bool``, ``float``, ``int``, ``complex`` and ``format`` of a value with no named axes (a reduced loss)."""
    for to, conversion, reduction in (
        (bool, "the truth value", "all"),
        (float, "float()", "sum"),
        (int, "int()", "sum"),
        (complex, "complex()", "sum"),
    ):
        setattr(NamedArray, f"__{to.__name__}__", _conversion(to, conversion, reduction))
    setattr(NamedArray, "__format__", _format)  # noqa: B010  # assigning a method mypy would reject


_install_conversions()


def _abstractify(x: NamedArray, caller: str) -> Any:
    """What JAX gets when it takes ``x`` for a positional array: our error, saying what to give it instead.

    ``jax.grad`` checks its output in ``_check_scalar``, which turns any error into its own ``TypeError``: that
    check is answered with a scalar, so the error comes when grad builds the output's cotangent (``_one_vjp``)."""
    names = x.axes + tuple(n for n, _ in x.mapped)
    if caller == "_check_scalar":
        return jax.typeof(jax.ShapeDtypeStruct((), x.dtype))
    if caller == "_one_vjp" and not names:
        raise NamedShapeError(
            f"jax.grad (and value_and_grad) differentiates a function that returns a positional scalar, and this "
            f"one returned {shape_repr(x)}. Fix: return tx.positional(loss, []) (a NamedArray with no named axes "
            f"as a positional scalar)",
            kind=ErrorKind.INVALID_ARGUMENT,
        )
    if caller == "_one_vjp":
        raise NamedShapeError(
            f"jax.grad (and value_and_grad) differentiates a function that returns a positional scalar, and this "
            f"one returned {shape_repr(x)}, which still has named axes {names!r}. Fix: reduce them "
            f"(tnp.sum(loss, {names!r})), then return tx.positional(loss, [])",
            kind=ErrorKind.INVALID_ARGUMENT,
        )
    raise NamedShapeError(
        f"JAX took {shape_repr(x)} for a positional array (a jax.lax function, or a JAX function that reads its "
        f"argument's shape and dtype) and would drop its named axes. Fix: pass "
        f"tx.positional(x, {format_axis_list(names)}) for a positional array, or use a typed_xmap.numpy function",
        kind=ErrorKind.INVALID_ARGUMENT,
    )


on_abstractify(NamedArray, _abstractify)
