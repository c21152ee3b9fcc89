"""Named transforms (``tx.vmap``, ``tx.scan``): which leaves a named axis maps, and their one size.

A named transform maps (or scans) the named axis ``axis`` of every NamedArray leaf that carries it: the
body sees each leaf without that axis, and every output leaf gets the axis back as a named axis. The
leaves are given as ``(path, named shape or None)``: ``None`` for a leaf that is not a NamedArray.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ._errors import ErrorKind, NamedShapeError
from ._shapes import is_size
from ._spec import partition_entry

__all__ = [
    "check_carry",
    "check_carry_dtype",
    "check_carry_placement",
    "check_positional_carry_placement",
    "mapped_axes",
    "mapped_axis_size",
    "scan_length",
    "scan_pair_error",
    "scanned_axis_size",
]

Leaf = tuple[str, Mapping[str, int] | None]


def _check_name(axis: object, operation: str) -> None:
    if not isinstance(axis, str) or not axis:
        raise NamedShapeError(
            f"{operation}: axis names are non-empty strings, got {axis!r}. Fix: pass the axis name as a str, "
            f'e.g. axis="batch"',
            kind=ErrorKind.INVALID_ARGUMENT,
        )


def mapped_axes(axis: object) -> tuple[str, ...]:
    """``tx.vmap``'s ``axis=``: one name or a sequence of them, each once (the first is mapped outermost)."""
    names: tuple[object, ...] = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    if not names:
        raise NamedShapeError(
            'tx.vmap: no axis given. Fix: name the axis to map, e.g. tx.vmap(f, axis="batch")',
            kind=ErrorKind.INVALID_ARGUMENT,
        )
    for name in names:
        _check_name(name, f"tx.vmap(..., axis={axis!r})")
    twice = next((n for i, n in enumerate(names) if n in names[:i]), None)
    if twice is not None:
        raise NamedShapeError(
            f"tx.vmap(..., axis={axis!r}): axis {twice!r} is listed twice; an axis is mapped once, and mapping "
            f"it again would map a dim it no longer has. Fix: list each axis once, e.g. "
            f"axis={tuple(dict.fromkeys(names))!r}",
            kind=ErrorKind.INVALID_ARGUMENT,
        )
    return names  # type: ignore[return-value]  # each one checked by _check_name


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


def scan_length(axis: str, size: int | None, length: object, *, operation: str) -> int:
    """How many steps a scan runs: the size of ``axis`` in ``xs``; ``length`` may only repeat it, or give it
    when ``xs`` has no leaves."""
    if length is not None and not is_size(length):
        raise NamedShapeError(
            f"{operation}: length={length!r}; a scan's length is a non-negative int. Fix: drop length= (the size "
            f"of {axis!r} in xs sets it), or pass an int",
            kind=ErrorKind.INVALID_ARGUMENT,
        )
    if size is None:
        if length is None:
            raise NamedShapeError(
                f"{operation}: xs has no leaves, so nothing says how many steps to run. Fix: pass length=, or "
                f"give xs a NamedArray with axis {axis!r}",
                kind=ErrorKind.INVALID_ARGUMENT,
            )
        return length
    if length is not None and length != size:
        raise NamedShapeError(
            f"{operation}: length={length}, but the scanned axis {axis!r} has size {size} in xs. Fix: drop "
            f"length= (the size of {axis!r} sets it), or pass length={size}",
            kind=ErrorKind.AXIS_SIZE,
        )
    return size


def scan_pair_error(returned: str, *, operation: str) -> NamedShapeError:
    """A scan body returns ``(carry, ys)``; ``returned`` says what it returned instead."""
    return NamedShapeError(
        f"{operation}: the body returns {returned}, not a pair (carry, ys). Fix: return (new_carry, ys), or "
        f"(new_carry, None) when there is nothing to stack",
        kind=ErrorKind.INVALID_ARGUMENT,
    )


def check_carry_dtype(path: str, before: str, after: str, operation: str) -> None:
    """A carry leaf keeps its dtype from one step to the next (``lax.scan``'s rule, said by path)."""
    if before != after:
        raise NamedShapeError(
            f"{operation}: the carry{path} goes in as {before} but comes out as {after}; a carry keeps its dtype "
            f"from step to step. Fix: cast it back in the body (.astype(jnp.{before})), or start init as {after}",
            kind=ErrorKind.DTYPE,
        )


def check_carry_placement(
    path: str, before: Mapping[str, tuple[str, ...]], after: Mapping[str, tuple[str, ...]], operation: str
) -> None:
    """On an Explicit mesh a carry leaf keeps its placement (each axis's mesh axes) from step to step."""
    for name in sorted(set(before) | set(after)):
        was, now = before.get(name, ()), after.get(name, ())
        if was != now:
            target = {name: partition_entry(now)} if now else {}
            raise NamedShapeError(
                f"{operation}: axis {name!r} of the carry{path} goes in {_placed(was)} but comes out "
                f"{_placed(now)}; on an Explicit mesh a carry keeps its placement from step to step. Fix: place "
                f"init as the body places its result (tx.shard(init, {target})), or tx.constrain the new carry "
                f"back to init's placement",
                kind=ErrorKind.INVALID_ARGUMENT,
            )


def check_positional_carry_placement(
    path: str, before: Sequence[tuple[str, ...]], after: Sequence[tuple[str, ...]], operation: str
) -> None:
    """``check_carry_placement`` for a positional carry leaf: each dim keeps its mesh axes from step to step."""
    for dim, (was, now) in enumerate(zip(before, after, strict=True)):
        if was != now:
            raise NamedShapeError(
                f"{operation}: dim {dim} of the positional carry{path} goes in {_placed(was)} but comes out "
                f"{_placed(now)}; on an Explicit mesh a carry keeps its placement from step to step. Fix: place "
                f"init{path} as the body places its result (jax.sharding.reshard(init{path}, {_spec(after)})), or "
                f"jax.sharding.reshard the new carry back to init's placement, {_spec(before)}",
                kind=ErrorKind.INVALID_ARGUMENT,
            )


def _spec(dims: Sequence[tuple[str, ...]]) -> str:
    """Each dim's mesh axes as the ``PartitionSpec`` a user writes: ``P('x', None)``."""
    entries = ["None" if not d else repr(d[0]) if len(d) == 1 else repr(d) for d in dims]
    return f"P({', '.join(entries)})"


def _placed(resources: tuple[str, ...]) -> str:
    if not resources:
        return "unsplit"
    return f"split over {resources[0]!r}" if len(resources) == 1 else f"split over {resources!r}"


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
