"""Named transforms (``tx.vmap``, ``tx.scan``): which leaves a named axis maps, and their one size.

A named transform maps (or scans) the named axis ``axis`` of every NamedArray leaf that carries it: the
body sees each leaf without that axis, and every output leaf gets the axis back as a named axis. The
leaves are given as ``(path, named shape or None)``: ``None`` for a leaf that is not a NamedArray.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ._errors import ErrorKind, NamedShapeError

__all__ = ["check_carry", "mapped_axis_size", "scanned_axis_size"]

Leaf = tuple[str, Mapping[str, int] | None]


def _check_name(axis: object, operation: str) -> None:
    if not isinstance(axis, str) or not axis:
        raise NamedShapeError(
            f"{operation}: axis names are non-empty strings, got {axis!r}. Fix: pass the axis name as a str, "
            f'e.g. axis="batch"',
            kind=ErrorKind.INVALID_ARGUMENT,
        )


def _one_size(axis: str, leaves: Sequence[Leaf], operation: str) -> dict[str, int]:
    """Path -> size of ``axis`` for the leaves that carry it; a size clash raises, naming both paths."""
    sizes: dict[str, int] = {}
    for path, shape in leaves:
        if shape is None or axis not in shape:
            continue
        size = shape[axis]
        for other, seen in sizes.items():
            if seen != size:
                raise NamedShapeError(
                    f"{operation}: axis {axis!r} has size {seen} in {other} but {size} in {path}. "
                    f"Fix: give every argument the same {axis!r} size",
                    kind=ErrorKind.AXIS_SIZE,
                )
            break
        sizes[path] = size
    return sizes


def mapped_axis_size(axis: str, leaves: Sequence[Leaf], *, operation: str) -> int:
    """The size of ``axis`` that ``tx.vmap`` maps: leaves that carry it are mapped, the others broadcast."""
    _check_name(axis, operation)
    sizes = _one_size(axis, leaves, operation)
    if not sizes:
        carried = sorted({name for _, shape in leaves if shape for name in shape})
        raise NamedShapeError(
            f"{operation}: no argument is a NamedArray carrying axis {axis!r} (the arguments' named axes: "
            f"{', '.join(carried) or 'none'}), so there is nothing to map. Fix: map an axis an argument "
            f"carries, or name it first with tx.named(array, axes)",
            kind=ErrorKind.AXIS_MISSING,
        )
    return next(iter(sizes.values()))


def scanned_axis_size(axis: str, leaves: Sequence[Leaf], *, operation: str) -> int | None:
    """The length of a scan over ``axis``: every leaf of ``xs`` must carry it (``None``: ``xs`` has no leaves)."""
    _check_name(axis, operation)
    for path, shape in leaves:
        if shape is None or axis not in shape:
            what = "a positional array" if shape is None else "a NamedArray with axes " + ", ".join(shape)
            raise NamedShapeError(
                f"{operation}: xs{path} is {what}, without the scanned axis {axis!r}; every leaf of xs is "
                f"sliced along it. Fix: give xs{path} the axis {axis!r} (tx.named), or pass it to the body "
                f"through its closure or the carry instead",
                kind=ErrorKind.AXIS_MISSING,
            )
    sizes = _one_size(axis, leaves, operation)
    return next(iter(sizes.values()), None)


def check_carry(path: str, before: Mapping[str, int] | None, after: Mapping[str, int] | None, operation: str) -> None:
    """A carry leaf must keep its named shape (axes and sizes, order-free) from one step to the next."""
    if before == after:
        return
    if before is None or after is None:
        was = "a positional array" if before is None else f"a NamedArray {_shape(before)}"
        now = "a positional array" if after is None else f"a NamedArray {_shape(after)}"
        raise NamedShapeError(
            f"{operation}: the carry{path} goes in as {was} but comes out as {now}. Fix: return the carry "
            f"with the kind of value it came in as",
            kind=ErrorKind.INVALID_ARGUMENT,
        )
    lost = sorted(set(before) - set(after))
    gained = sorted(set(after) - set(before))
    resized = sorted(n for n in set(before) & set(after) if before[n] != after[n])
    if resized:
        name = resized[0]
        raise NamedShapeError(
            f"{operation}: axis {name!r} of the carry{path} has size {before[name]} going in but "
            f"{after[name]} coming out. Fix: keep the carry's named shape {_shape(before)} from step to step",
            kind=ErrorKind.AXIS_SIZE,
        )
    parts = ([f"loses {', '.join(map(repr, lost))}"] if lost else []) + (
        [f"gains {', '.join(map(repr, gained))}"] if gained else []
    )
    raise NamedShapeError(
        f"{operation}: the carry{path} {' and '.join(parts)} in one step (in: {_shape(before)}, out: "
        f"{_shape(after)}). Fix: keep the carry's named shape from step to step (reduce or broadcast it back)",
        kind=ErrorKind.AXIS_MISSING,
    )


def _shape(shape: Mapping[str, int]) -> str:
    return "[" + ", ".join(f"{n}={s}" for n, s in sorted(shape.items())) + "]"
