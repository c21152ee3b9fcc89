"""Indexing by name at run time: ``x[{...}]``, ``x.at[{...}]``, ``tnp.take`` and the dynamic slices.

The shape rules (what each key does, every error) are the algebra's (``typed_xmap._algebra._indexing``); this
module carries them out with one ``jnp`` indexing expression. The data is first transposed so that the axes an
int, a dynamic index or an index array reads sit last and together (numpy then puts the gather's dims in their
place): the result is laid out as positional dims, the indices' axes, then the kept axes. A key with pointwise
axes (an index sharing axes with ``x``) is one ``lax.gather``/``lax.scatter`` with those axes as batching dims
instead (``_batched_gather``), so that XLA partitions it along them.

On Explicit meshes JAX asks for the gather's (and scatter's) ``out_sharding``; it is derived from names
(``gather_resources``): the indices' axes keep the indices' placement, the operand's other axes keep theirs, and
an axis whose mesh axes are already used in the result is replicated. A dim sliced or indexed to a size its mesh
axes do not divide is replicated first (JAX does not slice such a dim in place).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.core import Tracer
from jax.sharding import NamedSharding

from .._algebra import (
    DYNAMIC,
    Gather,
    IndexPlan,
    dynamic_slice_operation,
    dynamic_slice_shape,
    gather_resources,
    index_named_shape,
    index_operation,
    positional_bounds,
    positional_key_error,
    update_named_shape,
)
from .._value._layout import index_mapped
from .._value._named_array import NamedArray, in_order, wrap
from .._value._printing import shape_repr
from .._value._tracebacks import entry_point
from ._batched_gather import Pointwise, batched_get, batched_update
from ._lookup_apart import indices_apart
from ._sharding import dim_resources, dividing, on_own_mesh, on_own_mesh_by_dim, partition_spec, split_count
from ._tnp._mapped_axes import gather

__all__ = ["At", "dynamic_slice", "dynamic_update_slice", "getitem", "take"]


class _Described:
    """A value the algebra cannot read, shown in its message by what it is (not its repr)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


def _item(value: Any, label: str) -> Any:
    """The algebra's view of one index value."""
    if isinstance(value, NamedArray):
        if value.shape:
            return _Described(f"{shape_repr(value)}, with positional dims {value.shape}")
        integer = bool(jnp.issubdtype(value.dtype, jnp.integer))
        named = {n: value.named_shape[n] for n in value.axes}
        if not named and integer:
            return DYNAMIC
        return Gather(named, label, integer, str(value.dtype))
    if isinstance(value, slice):
        return slice(*(_as_int(p) for p in (value.start, value.stop, value.step)))
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return operator.index(value)
    if isinstance(value, (jax.Array, np.ndarray)):
        if value.ndim == 0:
            integer = bool(jnp.issubdtype(value.dtype, jnp.integer))
            return DYNAMIC if integer else Gather({}, label, False, str(value.dtype))
        return _Described(f"a positional array of shape {tuple(value.shape)} (name its axes: tx.named(i, [...]))")
    return value


def _as_int(part: Any) -> Any:
    if isinstance(part, (np.integer, jax.Array)) and not isinstance(part, Tracer) and np.ndim(part) == 0:
        return operator.index(part)
    return part


@dataclass
class _Indexing:
    """One key applied to one value: the plan, the transposed data and the ``jnp`` index that carries it out."""

    x: NamedArray
    plan: IndexPlan
    data: Any
    layout: tuple[str, ...]
    index: tuple[Any, ...]
    result_axes: tuple[str, ...]
    mapped: tuple[tuple[str, int], ...]
    index_resources: dict[str, tuple[str, ...]]


@dataclass
class _Keyed:
    """A dict key read against ``x``: the values (vmap-held axes resolved), the algebra's items and its plan."""

    x: NamedArray
    values: dict[Any, Any]
    items: dict[Any, Any]
    plan: IndexPlan

    @property
    def mapped(self) -> tuple[tuple[str, int], ...]:
        mapped = dict(self.x.mapped)
        for v in self.values.values():
            if isinstance(v, NamedArray):
                mapped.update(v.mapped)
        return tuple(mapped.items())

    def indexed(self) -> list[str]:
        """The axes an int, a dynamic index or an index array reads, in ``x``'s order."""
        plan, items = self.plan, self.items
        return [a for a in self.x.axes if a in plan.ints or items.get(a) is DYNAMIC or a in plan.gathered]


def _keyed(x: NamedArray, key: Mapping[Any, Any], operand: str) -> _Keyed:
    values = dict(key)
    held = [k for k in values if k in dict(x.mapped)]  # inside xmap: an indexed axis held by a vmap level
    x = gather(x, held, operation=index_operation(values, operand)) if held else x
    indices = [v for v in values.values() if isinstance(v, NamedArray)]
    mapped_names = {n for v in indices for n, _ in v.mapped}
    x = index_mapped(x, mapped_names)  # an axis an index has mapped is read pointwise: this element's slice
    values = {
        k: index_mapped(v, {n for n, _ in x.mapped}) if isinstance(v, NamedArray) else v for k, v in values.items()
    }
    labels = {k: f"the index of {k!r}" if isinstance(k, str) else "the index" for k in values}
    items = {k: _item(v, labels[k]) for k, v in values.items()}
    named = {n: x.named_shape[n] for n in x.axes}
    plan = index_named_shape(named, items, operation=index_operation(items, operand), operand=operand)
    return _Keyed(x, values, items, plan)


def _numpy_style(k: _Keyed) -> _Indexing:
    """The key as one ``jnp`` index over the data transposed so that the indexed axes lead the named ones."""
    x, plan, values, items = k.x, k.plan, k.values, k.items
    advanced = k.indexed()  # no axis is pointwise here: those keys are _pointwise's
    kept = [a for a in x.axes if a not in advanced]
    layout = (*advanced, *kept)  # the index's dims lead the result, as ``jnp``'s ``emb[tokens]`` (no transpose)
    data = _transposed(x, layout)
    index_axes = tuple(plan.index_axes)
    index: list[Any] = [slice(None)] * x.ndim
    index_resources: dict[str, tuple[str, ...]] = {}
    for axis in layout:
        if axis in plan.sliced:
            index.append(plan.sliced[axis])
        elif axis in plan.ints:
            index.append(plan.ints[axis])
        elif axis in plan.gathered:
            value = values[axis]
            index.append(_laid_out_index(value, index_axes))
            index_resources.update(_resources(value.data, value.axes, value.ndim))
        elif items.get(axis) is DYNAMIC:
            value = values[axis]
            index.append(value.data if isinstance(value, NamedArray) else value)
        else:
            index.append(slice(None))
    result_axes = (*(a for a in index_axes if a not in kept), *kept)
    data = _replicate_sliced(data, index, x.ndim)
    return _Indexing(x, plan, data, layout, tuple(index), result_axes, k.mapped, index_resources)


def _positional(x: NamedArray, key: Any, operand: str) -> _Indexing:
    """A plain key indexes positional dims only, and only when it cannot reach a named axis."""
    items = key if isinstance(key, tuple) else (key,)
    allowed = all(i is None or i is Ellipsis or isinstance(i, (int, np.integer, slice)) for i in items)
    reach = sum(1 for i in items if i is not None and i is not Ellipsis)
    if not allowed or reach > x.ndim or isinstance(key, bool):
        raise positional_key_error(key, x.ndim, x.named_shape, operand=operand)
    if Ellipsis in items:
        at = items.index(Ellipsis)
        items = (*items[:at], *[slice(None)] * (x.ndim - reach), *items[at + 1 :])
        reach = x.ndim
    positional_bounds(key, items, x.shape, operand=operand)
    index = (*items, *[slice(None)] * (x.ndim - reach + len(x.axes)))
    plan = IndexPlan(dict(x.named_shape))
    return _Indexing(x, plan, x.data, x.axes, index, x.axes, x.mapped, {})


def _transposed(x: NamedArray, layout: tuple[str, ...]) -> Any:
    if layout == x.axes:
        return x.data
    perm = tuple(range(x.ndim)) + tuple(x.ndim + x.axes.index(a) for a in layout)
    return jax.lax.transpose(x.data, perm)


def _laid_out_index(value: NamedArray, index_axes: tuple[str, ...]) -> Any:
    """An index array's data over all the indices' axes (size 1 where it lacks one), for numpy broadcasting."""
    own = [a for a in index_axes if a in value.axes]
    data = value.data
    if tuple(own) != value.axes:
        data = jax.lax.transpose(data, tuple(value.axes.index(a) for a in own))
    sizes = value.named_shape
    return jnp.reshape(data, tuple(sizes[a] if a in value.axes else 1 for a in index_axes))


def _resources(data: Any, axes: tuple[str, ...], rank: int) -> dict[str, tuple[str, ...]]:
    entries = dim_resources(data)
    if entries is None:
        return {}
    return {name: entries[rank + i] for i, name in enumerate(axes) if entries[rank + i]}


def _replicate_sliced(data: Any, index: list[Any], rank: int) -> Any:
    """On Explicit meshes: replicate a dim that an int, a dynamic index or a slice reads to a size its mesh axes
    do not divide (JAX refuses to slice such a dim in place)."""
    entries = dim_resources(data)
    if entries is None:
        return data
    spec = list(entries)
    changed = False
    for dim, item in enumerate(index):
        if not spec[dim] or (isinstance(item, slice) and item == slice(None)):
            continue
        parts = split_count(data, spec[dim])
        if isinstance(item, slice) and len(range(*item.indices(data.shape[dim]))) % parts == 0:
            continue
        if isinstance(item, slice) or np.ndim(item) == 0:
            spec[dim], changed = (), True
    if not changed:
        return data
    return jax.reshard(data, on_own_mesh_by_dim(data, spec))


def _gather_spec(
    data: Any, layout: tuple[str, ...], index_resources: dict[str, tuple[str, ...]], result_axes: tuple[str, ...]
) -> NamedSharding | None:
    """The result's sharding on an Explicit mesh, by name (``data``'s named axes are ``layout``, after its
    positional dims); ``None`` elsewhere (the compiler decides)."""
    entries = dim_resources(data)
    if entries is None:
        return None
    rank = data.ndim - len(layout)
    own = {name: entries[rank + i] for i, name in enumerate(layout) if entries[rank + i]}
    own.update({f"#{d}": entries[d] for d in range(rank) if entries[d]})  # positional dims keep theirs
    names = (*(f"#{d}" for d in range(rank)), *result_axes)
    chosen = gather_resources(names, index_resources, own)
    dims = {name: i for i, name in enumerate(names)}
    return on_own_mesh(data, partition_spec(len(names), dims, chosen))


def _has_arrays(index: tuple[Any, ...]) -> bool:
    return any(not isinstance(i, (int, slice)) for i in index)


@dataclass
class _PointwiseKey:
    """A key with pointwise axes, as ``lax.gather``'s batching dims (``_batched_gather``): the gather by name,
    ``x``'s data with the key's static slices applied, each indexed axis's index and the indices' placement."""

    gather: Pointwise
    data: Any
    columns: list[Any]
    index_resources: dict[str, tuple[str, ...]]
    whole: Any
    """``x``'s data before the slices (a dim they cut to a size its mesh axes do not divide replicated)."""
    slices: tuple[Any, ...]


def _pointwise(k: _Keyed) -> _PointwiseKey:
    x, plan, values = k.x, k.plan, k.values
    indexed = k.indexed()
    index_axes = tuple(plan.index_axes)
    columns: list[Any] = []
    index_resources: dict[str, tuple[str, ...]] = {}
    for axis in indexed:
        value = values[axis]
        if axis in plan.ints:
            columns.append(plan.ints[axis])
        elif axis in plan.gathered:
            columns.append(_laid_out_index(value, index_axes))
            index_resources.update(_resources(value.data, value.axes, value.ndim))
        else:  # a dynamic index
            columns.append(value.data if isinstance(value, NamedArray) else value)
    reads = {a: plan.sliced.get(a, columns[indexed.index(a)] if a in indexed else slice(None)) for a in x.axes}
    whole = _replicate_sliced(x.data, [*[slice(None)] * x.ndim, *reads.values()], x.ndim)
    slices = (*[slice(None)] * x.ndim, *(plan.sliced.get(a, slice(None)) for a in x.axes))
    data = whole[slices] if plan.sliced else whole
    pointwise = tuple(a for a in x.axes if a in plan.pointwise)
    index_sizes = {a: s for v in values.values() if isinstance(v, NamedArray) for a, s in v.named_shape.items()}
    index_shape = tuple(index_sizes[a] for a in index_axes)
    gather = Pointwise(x.ndim, x.axes, tuple(data.shape[x.ndim :]), tuple(indexed), pointwise, index_axes, index_shape)
    return _PointwiseKey(gather, data, columns, index_resources, whole, slices)


def getitem(x: NamedArray, key: Any) -> NamedArray:
    """``x[{"batch": 0, "seq": slice(0, 4)}]``, ``emb[{"vocab": tokens}]``, ``x[0]`` (positional dims only)."""
    key, placed_back = indices_apart(x, key)  # a lookup's indices off its rows' mesh axes (_lookup_apart)
    if not isinstance(key, Mapping):
        ix = _positional(x, key, "x")
    else:
        k = _keyed(x, key, "x")
        if k.plan.pointwise:
            p = _pointwise(k)
            spec = _gather_spec(p.data, k.x.axes, p.index_resources, p.gather.result_axes)
            return placed_back(wrap(batched_get(p.gather, p.data, p.columns, spec), p.gather.result_axes, k.mapped))
        ix = _numpy_style(k)
    if not _has_arrays(ix.index):
        return placed_back(wrap(ix.data[ix.index], ix.result_axes, ix.mapped))
    spec = _gather_spec(ix.data, ix.layout, ix.index_resources, ix.result_axes)
    return placed_back(wrap(ix.data.at[ix.index].get(out_sharding=spec), ix.result_axes, ix.mapped))


def take(x: NamedArray, indices: Any, axis: str) -> NamedArray:
    """``tnp.take(emb, tokens, axis="vocab")``: ``emb[{"vocab": tokens}]`` (one rule, one implementation).

    Args:
        x: a NamedArray carrying ``axis``.
        indices: int indices into ``axis``: a NamedArray (its axes replace ``axis``) or a scalar.
        axis: the axis indexed.

    Returns:
        ``x`` gathered along ``axis``.

    Raises:
        NamedShapeError: ``axis`` missing, or indices carrying an axis ``x`` has with another size.

    Examples:
        >>> table = tx.named(jnp.ones((10, 4)), ["vocab", "embed"])
        >>> tokens = tx.named(jnp.array([[1, 2, 3]]), ["batch", "seq"])
        >>> tnp.take(table, tokens, "vocab").named_shape == {"batch": 1, "seq": 3, "embed": 4}
        True
    """
    return getitem(x, {axis: indices})


class At:
    """``x.at[{...}]``: a functional update of the region ``x[{...}]`` (as ``jax.Array.at``), by name."""

    __slots__ = ("x",)

    def __init__(self, x: NamedArray) -> None:
        self.x = x

    def __getitem__(self, key: Any) -> AtRegion:
        return AtRegion(self.x, key)


class AtRegion:
    """The region ``x.at[key]``: ``.get()``, ``.set(v)``, ``.add(v)``, ``.multiply(v)``, ``.min(v)``, ``.max(v)``.

    ``v`` is a scalar or a NamedArray whose axes are among the region's (any order; the others broadcast).
    """

    __slots__ = ("key", "x")

    def __init__(self, x: NamedArray, key: Any) -> None:
        self.x, self.key = x, key

    @entry_point
    def get(self) -> NamedArray:
        return getitem(self.x, self.key)

    @entry_point
    def set(self, v: Any) -> NamedArray:
        return self._update("set", v)

    @entry_point
    def add(self, v: Any) -> NamedArray:
        return self._update("add", v)

    @entry_point
    def multiply(self, v: Any) -> NamedArray:
        return self._update("multiply", v)

    @entry_point
    def min(self, v: Any) -> NamedArray:
        return self._update("min", v)

    @entry_point
    def max(self, v: Any) -> NamedArray:
        return self._update("max", v)

    def _update(self, method: str, v: Any) -> NamedArray:
        k = _keyed(self.x, self.key, "x") if isinstance(self.key, Mapping) else None
        if k is not None and k.plan.pointwise:
            return _pointwise_update(k, self.key, method, v)
        ix = _numpy_style(k) if k is not None else _positional(self.x, self.key, "x")
        region_shape: tuple[Any, ...]
        if k is not None:  # positional dims, then the region's named axes
            region_shape = (*ix.x.shape, *(ix.plan.named[a] for a in ix.result_axes))
        else:
            region_shape = jax.eval_shape(lambda d: d[ix.index], ix.data).shape
        v = _update_value(v, self.key, method, ix.result_axes, region_shape)
        spec = _operand_spec(ix.data)
        fn: Callable[..., Any] = getattr(ix.data.at[ix.index], method)
        data = fn(v) if spec is None else fn(v, out_sharding=spec)
        return _placed_as(wrap(data, ix.layout, ix.mapped), ix.x)


def _update_value(v: Any, key: Any, method: str, axes: tuple[str, ...], region_shape: tuple[Any, ...]) -> Any:
    """An update's data laid out as the region (positional dims, then ``axes``), or the scalar as given."""
    if not isinstance(v, NamedArray):
        return v
    region = dict(zip(axes, region_shape[len(region_shape) - len(axes) :], strict=True))
    operation = f"{index_operation(dict(key) if isinstance(key, Mapping) else {}, 'x.at')}.{method}(v)"
    update_named_shape(region, {n: v.named_shape[n] for n in v.axes}, operation=operation)
    return _laid_out_update(v, axes, region_shape)


def _placed_as(out: NamedArray, x: NamedArray) -> NamedArray:
    """An update's result in ``x``'s layout and placement (a dim replicated for the write goes back)."""
    placed = _operand_spec(x.data)
    if placed is not None and set(out.axes) == set(x.axes):
        out = in_order(out, x.axes)
        if _operand_spec(out.data) != placed:
            out = wrap(jax.reshard(out.data, placed), out.axes, out.mapped)
    return out


def _pointwise_update(k: _Keyed, key: Any, method: str, v: Any) -> NamedArray:
    """``x.at[key].method(v)`` for a key with pointwise axes: a scatter with batching dims into the region the
    key's static slices leave (written back into the whole when it has any)."""
    p = _pointwise(k)
    region_shape = p.gather.result_shape(k.x.shape)
    v = _update_value(v, key, method, p.gather.result_axes, region_shape)
    data = batched_update(p.gather, method, p.data, p.columns, v, _operand_spec(p.data))
    if k.plan.sliced:
        spec = _operand_spec(p.whole)
        write = p.whole.at[p.slices]
        data = write.set(data) if spec is None else write.set(data, out_sharding=spec)
    return _placed_as(wrap(data, k.x.axes, k.mapped), k.x)


def _operand_spec(data: Any) -> NamedSharding | None:
    entries = dim_resources(data)
    return None if entries is None else on_own_mesh_by_dim(data, entries)


def _laid_out_update(v: NamedArray, axes: tuple[str, ...], region_shape: tuple[int, ...]) -> Any:
    """``v``'s data in the region's layout (positional dims, then ``axes``), broadcast to the region's shape."""
    own = [a for a in axes if a in v.axes]
    data = v.data
    if tuple(own) != v.axes:
        data = jax.lax.transpose(data, tuple(range(v.ndim)) + tuple(v.ndim + v.axes.index(a) for a in own))
    sizes = v.named_shape
    data = jnp.reshape(data, (*v.shape, *(sizes[a] if a in v.axes else 1 for a in axes)))
    return jnp.broadcast_to(data, region_shape)


def dynamic_slice(x: NamedArray, start_indices: Mapping[str, Any], slice_sizes: Mapping[str, int]) -> NamedArray:
    """``tnp.dynamic_slice(x, {"seq": start}, {"seq": 4})``: ``slice_sizes`` static, ``start_indices`` may be
    traced; a start is clamped so the slice fits (``jax.lax.dynamic_slice``'s rule). Other axes are kept whole.

    Args:
        x: a NamedArray.
        start_indices: axis name -> start (an int or a traced scalar).
        slice_sizes: axis name -> the slice's size along it (static).

    Returns:
        The slice: ``x`` with those axes shortened to the sizes given.

    Raises:
        NamedShapeError: an axis ``x`` lacks, names that differ between the two mappings, or a size over the
            axis's.

    Examples:
        >>> x = tx.named(jnp.ones((2, 10)), ["batch", "seq"])
        >>> tnp.dynamic_slice(x, {"seq": 3}, {"seq": 4}).named_shape == {"batch": 2, "seq": 4}
        True
    """
    named = {n: x.named_shape[n] for n in x.axes}
    operation = dynamic_slice_operation("dynamic_slice", start_indices, dict(slice_sizes))
    sizes = dynamic_slice_shape(named, start_indices, slice_sizes, operation=operation)
    starts = [0] * x.ndim + [_start(start_indices.get(a, 0)) for a in x.axes]
    shape = [*x.shape, *(sizes[a] for a in x.axes)]
    index = [slice(None)] * x.ndim + [slice(0, sizes[a]) if a in start_indices else slice(None) for a in x.axes]
    data = _replicate_sliced(x.data, index, x.ndim)
    return wrap(jax.lax.dynamic_slice(data, starts, shape), x.axes, x.mapped)


def dynamic_update_slice(x: NamedArray, update: NamedArray, start_indices: Mapping[str, Any]) -> NamedArray:
    """``tnp.dynamic_update_slice(x, update, {"seq": start})``: write ``update`` into ``x`` from ``start``.

    ``update``'s axes are among ``x``'s: a started axis it lacks is written at one position (a row at ``start``),
    an axis it lacks that no start names is broadcast along the whole axis; a started axis's size is the slice's.

    Args:
        x: a NamedArray.
        update: a NamedArray with ``x``'s axes, each at most as long.
        start_indices: axis name -> where the update starts along it.

    Returns:
        ``x`` with ``update`` written from ``start_indices`` on (the same named shape).

    Raises:
        NamedShapeError: axes that differ between ``x`` and ``update``, or an update longer than ``x``.

    Examples:
        >>> cache = tx.named(jnp.zeros((2, 10)), ["batch", "seq"])
        >>> step = tx.named(jnp.ones((2, 1)), ["batch", "seq"])
        >>> tnp.dynamic_update_slice(cache, step, {"seq": 3}).named_shape == {"batch": 2, "seq": 10}
        True
    """
    named = {n: x.named_shape[n] for n in x.axes}
    operation = dynamic_slice_operation("dynamic_update_slice", start_indices)
    sizes = {a: update.named_shape.get(a, 1) for a in start_indices}
    dynamic_slice_shape(named, start_indices, sizes, operation=operation)
    region = {n: (update.named_shape.get(n, 1) if n in start_indices else s) for n, s in named.items()}
    update_named_shape(region, {n: update.named_shape[n] for n in update.axes}, operation=operation, operand="update")
    laid = _laid_out_update(update, x.axes, (*x.shape, *(region[a] for a in x.axes)))
    starts = [0] * x.ndim + [_start(start_indices.get(a, 0)) for a in x.axes]
    laid = laid.astype(x.dtype)
    entries = dim_resources(x.data)
    if entries is None:
        return wrap(jax.lax.dynamic_update_slice(x.data, laid, starts), x.axes, x.mapped)
    # Explicit mesh: JAX wants the update placed as the operand; a dim the update's size does not let its mesh
    # axes divide is replicated in both for the write, and the result goes back to the operand's placement
    shared = dividing(x.data, laid.shape, entries)
    spec = on_own_mesh_by_dim(x.data, shared)
    data = x.data if tuple(shared) == entries else jax.reshard(x.data, spec)
    out = jax.lax.dynamic_update_slice(data, jax.reshard(laid, spec), starts)
    if tuple(shared) != entries:
        out = jax.reshard(out, on_own_mesh_by_dim(out, entries))
    return wrap(out, x.axes, x.mapped)


def _start(value: Any) -> Any:
    return value.data if isinstance(value, NamedArray) else value
