"""Indexing by name: what ``x[{...}]``, ``emb[{"vocab": tokens}]``, ``x.at[{...}]`` and the dynamic slices do
to named shapes, and their errors.

A key maps axis names to items:

- an ``int`` drops the axis (numpy's semantics: negative counts from the end, out of bounds raises);
- ``DYNAMIC`` (a 0-d integer array, traced or not) drops the axis, the index read at run time;
- a ``slice`` of ints keeps the axis with its new size (steps allowed);
- a ``Gather`` (an integer NamedArray) replaces the axis by the index's named axes.

The result's named shape is ``x``'s remaining axes (the dropped ones removed, the sliced ones resized) plus
every index's named axes. An index axis that also remains in ``x`` must have the same size there, and then it
is *pointwise*: the gather reads one element along it per index element (xarray's vectorized indexing), so the
result has it once. Two indices share an axis the same way. A size clash is an error naming the axis.

Pure Python: the runtime (``typed_xmap._ops._indexing``) and the mypy plugin call these with the same keys.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ._errors import ErrorKind, NamedShapeError
from ._shapes import NamedShape, Size, describe_named_shape, is_size
from ._structure import carried_axis

__all__ = [
    "DYNAMIC",
    "Gather",
    "IndexPlan",
    "dynamic_slice_operation",
    "dynamic_slice_shape",
    "gather_resources",
    "index_named_shape",
    "index_operation",
    "positional_bounds",
    "positional_key_error",
    "update_named_shape",
]


class _Dynamic:
    """The item of an index read at run time: a 0-d integer array."""

    def __repr__(self) -> str:
        return "DYNAMIC"


DYNAMIC = _Dynamic()


@dataclass(frozen=True)
class Gather:
    """An integer-array index: its named shape, how messages name it, whether its dtype is an integer."""

    named: NamedShape
    label: str = "the index"
    integer: bool = True
    dtype: str = "int32"


@dataclass(frozen=True)
class IndexPlan:
    """What a key does to ``x``: the result's named shape and how each axis was indexed."""

    named: dict[str, Size]
    dropped: tuple[str, ...] = ()
    """Axes an int or a dynamic index removes (gathered axes excluded)."""
    sliced: dict[str, slice] = field(default_factory=dict)
    """Axes a static slice keeps, with the slice normalised to the axis (when its size is known)."""
    gathered: tuple[str, ...] = ()
    """Axes an integer array indexes."""
    index_axes: dict[str, Size] = field(default_factory=dict)
    """The union of the indices' named axes (what the gather's result carries in their place)."""
    pointwise: tuple[str, ...] = ()
    """Axes of ``x`` that remain and that an index also has: read pointwise, one element per index element."""
    ints: dict[str, int] = field(default_factory=dict)
    """The static int indices, made non-negative (when the axis's size is known)."""


def index_operation(key: Mapping[Any, object], operand: str = "x") -> str:
    """How messages name an indexing: ``x[{'seq': slice(0, 4, None)}]``."""
    items = ", ".join(f"{k!r}: {_item_text(v)}" for k, v in key.items())
    return f"{operand}[{{{items}}}]"


def _item_text(item: object) -> str:
    if isinstance(item, Gather):
        return f"<{item.dtype}[{describe_named_shape(item.named)[1:-1]}]>"
    if item is DYNAMIC:
        return "i"
    if isinstance(item, (int, slice)):
        return repr(item)
    return "..."


def dynamic_slice_operation(function: str, starts: Mapping[Any, object], sizes: object = None) -> str:
    """How messages name a dynamic slice: ``tnp.dynamic_slice(x, {'seq': ...}, {'seq': 4})``."""
    keys = "{" + ", ".join(f"{k!r}: ..." for k in starts) + "}"
    return f"tnp.{function}(x, {keys}, {sizes!r})" if sizes is not None else f"tnp.{function}(x, update, {keys})"


def positional_key_error(key: object, rank: int, named: NamedShape, *, operand: str = "x") -> NamedShapeError:
    """``x[0]`` on a value that has fewer positional dims than the key indexes: index by name instead."""
    names = list(named)
    example = repr(names[0]) if names else "'axis'"
    return NamedShapeError(
        f"{operand}[{key!r}] indexes positional dims, but {operand} has {rank} positional dim(s) and named axes "
        f"{describe_named_shape(named)}; a named axis has no position. Fix: index by name, e.g. "
        f"{operand}[{{{example}: i}}]",
        kind=ErrorKind.AXIS_MISSING,
    )


def positional_bounds(key: object, items: Sequence[object], dims: Sequence[int], *, operand: str = "x") -> None:
    """``x[5]`` on positional dims: each int item (``None`` adds a dim, so takes none) is in bounds, as numpy
    says; jax would clamp it silently. ``items`` have ``...`` expanded."""
    dim = 0
    for item in items:
        if item is None:
            continue
        if isinstance(item, int) and not -dims[dim] <= item < dims[dim]:
            raise NamedShapeError(
                f"{operand}[{key!r}]: index {item} is out of bounds for positional dim {dim} of size {dims[dim]}. "
                f"Fix: use an index in [{-dims[dim]}, {dims[dim]}), as numpy does",
                kind=ErrorKind.AXIS_SIZE,
            )
        dim += 1


def _check_axis(named: NamedShape, axis: object, operation: str, operand: str) -> str:
    if not isinstance(axis, str):
        raise NamedShapeError(
            f"{operation}: a key of the index is an axis name (str), got {axis!r}. Fix: key the dict by axis "
            f"name; index positional dims with x[i] or tx.positional(x, ...) first",
            kind=ErrorKind.SYNTAX,
        )
    return carried_axis(named, axis, operation=operation, operand=operand)


def _int_index(axis: str, index: int, size: Size, operation: str) -> int:
    if size is None:
        return index
    if not -size <= index < size:
        raise NamedShapeError(
            f"{operation}: index {index} is out of bounds for axis {axis!r} of size {size}. Fix: use an index "
            f"in [{-size}, {size}), as numpy does",
            kind=ErrorKind.AXIS_SIZE,
        )
    return index % size


def _slice(axis: str, item: slice, size: Size, operation: str) -> tuple[slice, Size]:
    parts = (item.start, item.stop, item.step)
    if not all(p is None or (isinstance(p, int) and not isinstance(p, bool)) for p in parts) or item.step == 0:
        raise NamedShapeError(
            f"{operation}: a slice of axis {axis!r} takes int bounds and a nonzero step, got {item!r}. Fix: for a "
            f"start known only at run time, tnp.dynamic_slice(x, {{{axis!r}: start}}, {{{axis!r}: size}})",
            kind=ErrorKind.INVALID_ARGUMENT,
        )
    if size is None:
        return item, None
    start, stop, step = item.indices(size)
    length = len(range(start, stop, step))
    if length == 0:
        return slice(0, 0, 1), 0
    # a reversed slice that runs to the front normalises its stop to -1, which a slice reads as "the last": None
    return slice(start, stop if stop >= 0 else None, step), length


def _slice_fix(axis: str, a: Size, b: Size) -> str:
    smaller = min(s for s in (a, b) if s is not None) if a is not None or b is not None else 1
    return f"x[{{{axis!r}: slice(0, {smaller})}}]"


def _clash(axis: str, size: Size, where: str, other: Size, other_where: str, operation: str) -> NamedShapeError:
    return NamedShapeError(
        f"{operation}: axis {axis!r} has size {size} in {where} but size {other} in {other_where}; an index axis "
        f"that x keeps is read pointwise, so the sizes must agree. Fix: rename the index's axis (it then adds a "
        f"new axis to the result), or slice the larger to the smaller size: {_slice_fix(axis, size, other)}",
        kind=ErrorKind.AXIS_SIZE,
    )


def _check_gather(axis: str, item: Gather, operation: str) -> None:
    if not item.integer:
        raise NamedShapeError(
            f"{operation}: {item.label} (axis {axis!r}) has dtype {item.dtype}; a gather takes "
            f"integer indices. Fix: cast it (i.astype(jnp.int32)), or select with a mask: tnp.where(mask, x, 0)",
            kind=ErrorKind.DTYPE,
        )


def index_named_shape(named: NamedShape, key: Mapping[Any, object], *, operation: str, operand: str = "x") -> IndexPlan:
    """The result of ``x[key]`` for ``x`` of named shape ``named``; raises on a bad key."""
    dropped: list[str] = []
    gathered: list[str] = []
    sliced: dict[str, slice] = {}
    ints: dict[str, int] = {}
    kept: dict[str, Size] = {}
    gathers: list[tuple[str, Gather]] = []
    for raw, item in key.items():
        axis = _check_axis(named, raw, operation, operand)
        size = named[axis]
        if isinstance(item, Gather):
            _check_gather(axis, item, operation)
            gathered.append(axis)
            gathers.append((axis, item))
        elif isinstance(item, slice):
            sliced[axis], kept[axis] = _slice(axis, item, size, operation)
        elif item is DYNAMIC:
            dropped.append(axis)
        elif isinstance(item, int) and not isinstance(item, bool):
            ints[axis] = _int_index(axis, item, size, operation)
            dropped.append(axis)
        else:
            raise NamedShapeError(
                f"{operation}: the index of axis {axis!r} is {item!r}; an index is an int, a slice, a 0-d integer "
                f"array or an integer NamedArray. Fix: pass one of those",
                kind=ErrorKind.INVALID_ARGUMENT,
            )
    indexed = set(dropped) | set(gathered) | set(sliced)
    remaining = {n: s for n, s in named.items() if n not in indexed}
    remaining.update(kept)
    index_axes: dict[str, Size] = {}
    owner: dict[str, str] = {}
    for _, item in gathers:
        for name, size in item.named.items():
            if name in remaining and not _agree(remaining[name], size):
                raise _clash(name, size, item.label, remaining[name], f"{operand}'s remaining axes", operation)
            if name in index_axes and not _agree(index_axes[name], size):
                raise _clash(name, size, item.label, index_axes[name], owner[name], operation)
            if index_axes.get(name) is None:
                index_axes[name], owner[name] = size, item.label
    pointwise = tuple(n for n in remaining if n in index_axes)
    result = dict(remaining)
    for name, size in index_axes.items():
        result[name] = size if result.get(name) is None else result[name]
    return IndexPlan(result, tuple(dropped), sliced, tuple(gathered), index_axes, pointwise, ints)


def _agree(a: Size, b: Size) -> bool:
    return a is None or b is None or a == b


def update_named_shape(region: NamedShape, update: NamedShape, *, operation: str, operand: str = "v") -> None:
    """An update of ``x.at[key]`` broadcasts by name to the region ``x[key]``: it has no other axes, same sizes."""
    who = "the update" if operand == "update" else f"the update {operand}"
    for name, size in update.items():
        if name not in region:
            raise NamedShapeError(
                f"{operation}: {who} has axis {name!r}, but the indexed region has named axes "
                f"{describe_named_shape(region)}. Fix: reduce or index {name!r} out of {operand} first, or index "
                f"fewer axes of x",
                kind=ErrorKind.AXIS_MISSING,
                axes=[name],
            )
        if not _agree(region[name], size):
            raise NamedShapeError(
                f"{operation}: axis {name!r} has size {size} in {who} but size {region[name]} in the "
                f"indexed region ({describe_named_shape(region)}). Fix: give {operand} size {region[name]} along "
                f"{name!r}, or index a region of {operand}'s size: x.at[{{{name!r}: slice(0, {size})}}]",
                kind=ErrorKind.AXIS_SIZE,
            )


def dynamic_slice_shape(
    named: NamedShape, starts: Mapping[Any, object], sizes: Mapping[Any, object], *, operation: str
) -> dict[str, Size]:
    """``tnp.dynamic_slice(x, starts, sizes)``: the sliced axes get their new sizes (static ints)."""
    if set(starts) != set(sizes):
        raise NamedShapeError(
            f"{operation}: start_indices names axes {sorted(map(str, starts))} but slice_sizes names "
            f"{sorted(map(str, sizes))}. Fix: give one start and one size for each sliced axis",
            kind=ErrorKind.AXIS_MISSING,
            axes=sorted(map(str, set(starts) ^ set(sizes))),
        )
    result = dict(named)
    for raw, size in sizes.items():
        axis = _check_axis(named, raw, operation, "x")
        full = named[axis]
        if not is_size(size) or (full is not None and size > full):
            raise NamedShapeError(
                f"{operation}: slice_sizes[{axis!r}] is {size!r}, but a slice size is a static int in [0, {full}] "
                f"(the axis's size). Fix: pass a Python int no larger than the axis",
                kind=ErrorKind.AXIS_SIZE,
            )
        result[axis] = size
    return result


def gather_resources(
    result_axes: tuple[str, ...], preferred: Mapping[str, tuple[str, ...]], others: Mapping[str, tuple[str, ...]]
) -> dict[str, tuple[str, ...]]:
    """Mesh axes for each axis of a gather's result: the indices' placement first (``preferred``), then the
    operand's (``others``); an axis whose mesh axes another axis of the result already uses is replicated."""
    used: set[str] = set()
    chosen: dict[str, tuple[str, ...]] = {}
    for source in (preferred, others):
        for name in result_axes:
            assigned = source.get(name, ())
            if name in chosen or not assigned:
                continue
            if used.isdisjoint(assigned):
                chosen[name] = assigned
                used.update(assigned)
    return chosen
