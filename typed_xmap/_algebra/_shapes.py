"""Named shapes and their algebra: broadcast by name (union), reduce by name, match an annotation.

A named shape is a mapping ``axis name -> size``; order never matters. A size of ``None`` means
"unknown" (the mypy plugin meets those): it agrees with every size and never raises.

Pure Python, shared by the runtime checker, ``typed_xmap.numpy``, ``xmap`` and the mypy plugin.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import TypeGuard, final

from ._errors import ErrorKind, NamedShapeError
from ._spec import ANY_DIM, MANY_DIMS, MAX_SIZE, ShapeSpec, format_named_shape

__all__ = [
    "Binding",
    "Mismatch",
    "NamedShape",
    "Size",
    "broadcast_positional",
    "describe_named_shape",
    "group_members",
    "is_size",
    "match_shape_spec",
    "merge_bindings",
    "reduce_named_shape",
    "union_named_shapes",
]

Size = int | None
NamedShape = Mapping[str, Size]
Binding = int | Mapping[str, Size]
"""What a name binds in one call: a size, or for a group (key ``"*rest"``) a frozen mapping axis -> size."""


def is_size(value: object) -> TypeGuard[int]:
    """Whether ``value`` can be an axis's size: a non-negative int (a bool is not one) an array dim can hold."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_SIZE


def describe_named_shape(shape: NamedShape) -> str:
    """``{"batch": 8, "in": None}`` -> ``"'batch=8 in'"`` (quoted, unknown sizes left bare)."""
    return repr(" ".join(n if s is None else f"{n}={s}" for n, s in shape.items()))


def union_named_shapes(
    shapes: Sequence[NamedShape], *, operation: str, operands: Sequence[str] | None = None
) -> dict[str, Size]:
    """Broadcast by name: the union of the named axes; one name must have one size.

    ``operation`` and ``operands`` only word the error (``"x + y"``, ``["x", "y"]``).
    """
    labels = operands or [f"operand {i}" for i in range(len(shapes))]
    result: dict[str, Size] = {}
    first_seen: dict[str, int] = {}
    for index, shape in enumerate(shapes):
        for name, size in shape.items():
            if name not in result:
                result[name] = size
                first_seen[name] = index
                continue
            known = result[name]
            if known is None:
                result[name] = size
                first_seen[name] = index
            elif size is not None and size != known:
                other = first_seen[name]
                raise NamedShapeError(
                    f"axis {name!r} has size {known} in {labels[other]} ({describe_named_shape(shapes[other])}) "
                    f"but size {size} in {labels[index]} ({describe_named_shape(shape)}) in {operation}; "
                    f"values broadcast by name, so one axis name must have one size. "
                    f"Fix: rename one of the axes, or slice the larger to the smaller size: "
                    f"x[{{{name!r}: slice(0, {min(known, size)})}}]",
                    kind=ErrorKind.AXIS_SIZE,
                    axes=[name],
                )
    return result


def reduce_named_shape(
    shape: NamedShape, names: Iterable[str], *, operation: str, operand: str = "the operand"
) -> dict[str, Size]:
    """Remove ``names`` from ``shape``; every name must be present."""
    names = list(names)
    missing = [n for n in names if n not in shape]
    if missing:
        plural = "axes" if len(missing) > 1 else "axis"
        listed = ", ".join(repr(n) for n in missing)
        raise NamedShapeError(
            f"{operation} reduces over {plural} {listed}, but {operand} has named axes "
            f"{describe_named_shape(shape)}. Fix: reduce over axes the value has, or check the axis name's spelling",
            kind=ErrorKind.AXIS_MISSING,
            axes=missing,
        )
    dropped = set(names)
    return {n: s for n, s in shape.items() if n not in dropped}


def broadcast_positional(
    shapes: Sequence[Sequence[Size]], *, operation: str, operands: Sequence[str] | None = None
) -> tuple[Size, ...]:
    """NumPy broadcasting of positional dims (right-aligned; a dim of 1 stretches)."""
    labels = operands or [f"operand {i}" for i in range(len(shapes))]
    rank = max((len(s) for s in shapes), default=0)
    result: list[Size] = []
    for axis in range(-rank, 0):
        size: Size = 1
        owner = 0
        for index, shape in enumerate(shapes):
            if len(shape) < -axis:
                continue
            dim = shape[axis]
            if dim == 1:
                continue
            if size == 1 or size is None:
                if size is None and dim is None:
                    continue
                size, owner = dim, index
            elif dim is not None and dim != size:
                raise NamedShapeError(
                    f"positional dims do not broadcast in {operation}: {labels[owner]} has shape "
                    f"{tuple(shapes[owner])} and {labels[index]} has shape {tuple(shape)} "
                    f"(dim {axis}: {size} vs {dim}). Fix: make the positional shapes broadcastable, "
                    f"or name the axes so they broadcast by name",
                    kind=ErrorKind.POSITIONAL,
                )
        result.append(size)
    return tuple(result)


@final  # matched with `type(x) is Mismatch` on the hot path; final lets type checkers narrow that
@dataclass(frozen=True, slots=True)
class Mismatch:
    """Why a value does not fit an annotation; ``axis`` names the offending axis or dim, if one; ``fix``, where
    the algebra knows it, how to make the value fit (the runtime's message names it, as the checker's does)."""

    reason: str
    kind: ErrorKind
    axis: str | None = None
    fix: str | None = None


def match_shape_spec(
    spec: ShapeSpec,
    named_shape: NamedShape,
    positional_shape: Sequence[Size],
    bindings: Mapping[str, Binding],
) -> dict[str, Binding] | Mismatch:
    """Match a value's shape against an annotation.

    Returns the new bindings (symbol -> size) the match adds to ``bindings``, or a ``Mismatch``.
    Axis names and positional symbols share one namespace: one name, one size per call. A group
    (``"*rest embed"``) binds ``"*rest"`` to the value's other named axes, a frozen mapping; each of them
    is also bound by name.
    """
    new: dict[str, Binding] = {}
    axes = spec.axes
    group = spec.group_key
    if group is None:
        if len(named_shape) != len(axes) or not all(a.name in named_shape for a in axes):
            return _axes_mismatch(spec, named_shape)
    elif not all(a.name in named_shape for a in axes):
        return _axes_mismatch(spec, named_shape)
    for axis in axes:
        size = named_shape[axis.name]
        if size is None:
            continue
        if axis.size is not None and size != axis.size:
            return Mismatch(
                f"axis {axis.name!r} has size {size} but the annotation says {axis.size}",
                ErrorKind.AXIS_SIZE,
                axis.name,
            )
        bound = bindings.get(axis.name)
        if bound is None:
            new[axis.name] = size
        elif bound != size:
            return _rebound(f"axis {axis.name!r}", axis.name, size, bound)
    if group is not None:
        members = group_members(spec, named_shape)
        bound = bindings.get(group)
        if isinstance(bound, Mapping):
            clash = _group_clash(group, members, bound)
            if clash is not None:
                return clash
        else:
            new[group] = members
        for name, size in members.items():
            if size is None:
                continue
            known = bindings.get(name)
            if known is None:
                new[name] = size
            elif known != size:
                return _rebound(f"axis {name!r} (in {group})", name, size, known)
    if spec.positional is not None:
        problem = _match_positional(spec.positional, tuple(positional_shape), bindings, new)
        if problem:
            return problem
    return new


def group_members(spec: ShapeSpec, named_shape: NamedShape) -> Mapping[str, Size]:
    """The axes of ``named_shape`` a spec's group stands for: those the spec does not list (a frozen mapping)."""
    listed = spec.axis_names
    return MappingProxyType({n: s for n, s in named_shape.items() if n not in listed})


def _group_clash(group: str, members: Mapping[str, Size], bound: Mapping[str, Size]) -> Mismatch | None:
    """Two uses of one group in a call must bind the same axes (an unknown size agrees with any)."""
    if members.keys() != bound.keys():
        missing = [n for n in bound if n not in members]
        extra = [n for n in members if n not in bound]
        return Mismatch(
            f"group {group!r} stands for {format_named_shape(_known(members))!r} here but was bound to "
            f"{format_named_shape(_known(bound))!r} earlier in this call: the value "
            f"{_lacks_and_carries(missing, extra, 'carries')}",
            ErrorKind.AXIS_MISSING,
            (missing or extra)[0],
        )
    for name, size in members.items():
        known = bound[name]
        if size is not None and known is not None and size != known:
            return _rebound(f"axis {name!r} (in {group})", name, size, known)
    return None


def merge_bindings(
    spec: ShapeSpec, found: Mapping[str, Binding], bindings: Mapping[str, Binding]
) -> dict[str, Binding] | Mismatch:
    """The bindings ``found`` (a match against no bindings) adds to ``bindings``, or the clash.

    ``match_shape_spec(spec, ..., bindings)`` equals ``merge_bindings(spec, match_shape_spec(spec, ..., {}),
    bindings)``; the runtime checker caches the inner match per shape and merges per call.
    """
    if found.items() <= {**found, **bindings}.items():  # fast path, all in C: no clash
        return found  # type: ignore[return-value]
    new: dict[str, Binding] = {}
    for name, size in found.items():
        bound = bindings.get(name)
        if bound is None:
            new[name] = size
        elif isinstance(size, Mapping) or isinstance(bound, Mapping):
            both = isinstance(size, Mapping) and isinstance(bound, Mapping)
            clash = _group_clash(name, size, bound) if both else None  # type: ignore[arg-type]
            if clash is not None:
                return clash
        elif bound != size:
            if name in spec.axis_names:
                what = f"axis {name!r}"
            elif spec.positional is not None and name in spec.positional:
                what = f"positional dim {name!r}"
            else:
                what = f"axis {name!r} (in {spec.group_key})"
            return _rebound(what, name, size, bound)
    return new


def _rebound(what: str, name: str, size: Binding, bound: Binding) -> Mismatch:
    """``what`` ("axis 'batch'" or "positional dim 'n'") met with a second size in one call."""
    kind = ErrorKind.POSITIONAL if what.startswith("positional") else ErrorKind.AXIS_SIZE
    return Mismatch(f"{what} has size {size} but was bound to {bound} earlier in this call", kind, name)


def _axes_mismatch(spec: ShapeSpec, named_shape: NamedShape) -> Mismatch:
    declared = spec.axis_names
    missing = [a.name for a in spec.axes if a.name not in named_shape]
    extra = [] if spec.group is not None else [n for n in named_shape if n not in declared]
    return Mismatch(
        f"expected named axes {spec.named_text()!r} but the value has "
        f"{format_named_shape(_known(named_shape))!r}: it {_lacks_and_carries(missing, extra, 'carries undeclared')}",
        ErrorKind.AXIS_MISSING,
        (missing or extra)[0],
    )


def _lacks_and_carries(missing: Sequence[str], extra: Sequence[str], carries: str) -> str:
    """``"lacks 'a' and carries 'b'"``: what a value lacks and has beyond what was expected."""
    parts = []
    if missing:
        parts.append("lacks " + ", ".join(repr(n) for n in missing))
    if extra:
        parts.append(f"{carries} " + ", ".join(repr(n) for n in extra))
    return " and ".join(parts)


def _known(shape: NamedShape) -> dict[str, int]:
    return {n: (s if s is not None else "?") for n, s in shape.items()}  # type: ignore[misc]


def _match_positional(
    dims: tuple[object, ...], shape: tuple[Size, ...], bindings: Mapping[str, Binding], new: dict[str, Binding]
) -> Mismatch | None:
    expected = " ".join(str(d) for d in dims)
    if MANY_DIMS in dims:
        cut = dims.index(MANY_DIMS)
        head, tail = dims[:cut], dims[cut + 1 :]
        if len(shape) < len(head) + len(tail):
            return Mismatch(
                f"expected positional dims {expected!r} but the value has shape {shape}", ErrorKind.POSITIONAL
            )
        offset = len(shape) - len(tail)
        pairs = [*zip(range(len(head)), head, strict=True), *zip(range(offset, len(shape)), tail, strict=True)]
    else:
        if len(shape) != len(dims):
            return Mismatch(
                f"expected {len(dims)} positional dims {expected!r} but the value has {len(shape)}: shape {shape}",
                ErrorKind.POSITIONAL,
            )
        pairs = list(enumerate(dims))
    for index, dim in pairs:
        size = shape[index]
        if dim == ANY_DIM or size is None:
            continue
        if isinstance(dim, int):
            if dim != size:
                return Mismatch(
                    f"positional dim {index} has size {size} but the annotation says {dim} "
                    f"(expected {expected!r}, got shape {shape})",
                    ErrorKind.POSITIONAL,
                )
            continue
        bound = new.get(dim, bindings.get(dim))  # type: ignore[call-overload]
        if bound is None:
            new[dim] = size  # type: ignore[index]
        elif bound != size:
            return _rebound(f"positional dim {dim!r}", dim, size, bound)  # type: ignore[arg-type]
    return None
