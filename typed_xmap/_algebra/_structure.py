"""Structural operations on named shapes: rename, stack, concatenate, split, merge and split axes,
broadcast to a shape, and the shapes constructors build (``tnp.zeros({...})``, ``one_hot``, masks).

Each function takes the operands' named shapes (an unknown size is ``None``: it agrees with every size)
and returns the result's, raising ``NamedShapeError`` with the axis, the operand and a ``Fix:``. The
runtime (``typed_xmap._ops._structure``, ``typed_xmap._ops._tnp._structure``) and the mypy plugin
(``typed_xmap.plugin._hooks._structure``) call the same functions.

Pure Python.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ._errors import ErrorKind, NamedShapeError
from ._shapes import Size, describe_named_shape, is_size
from ._spec import is_axis_name

__all__ = [
    "arange_shape",
    "axis_sizes",
    "broadcast_to_shape",
    "check_size",
    "concatenate_shape",
    "merge_axes_shape",
    "new_axis",
    "pad_shape",
    "rename_shape",
    "require_axis",
    "same_positional",
    "split_axis_shape",
    "split_shape",
    "stack_shape",
    "token_ids",
    "two_axes",
]

Shape = Mapping[str, Size]


def _axes(named: Shape) -> str:
    return "(" + ", ".join(repr(a) for a in named) + ")" if named else "() (none)"


def _name(axis: object, *, operation: str, argument: str) -> str:
    if not isinstance(axis, str) or not is_axis_name(axis):
        raise NamedShapeError(
            f"{operation}: {argument} must be an axis name (an identifier), got {axis!r}. Fix: pass a name such "
            f"as 'seq'",
            kind=ErrorKind.SYNTAX,
        )
    return axis


def require_axis(named: Shape, axis: object, *, operation: str, operand: str = "x") -> str:
    """``axis`` is a name ``named`` carries (roll, cumsum, split, ...); the name."""
    name = _name(axis, operation=operation, argument="axis")
    return carried_axis(named, name, operation=operation, operand=operand)


def carried_axis(named: Shape, axis: str, *, operation: str, operand: str = "x") -> str:
    """``axis`` is an axis ``named`` carries: the one rule for every operation that names an existing axis
    (indexing, roll, cumsum, split, ...)."""
    if axis not in named:
        raise NamedShapeError(
            f"{operation} names axis {axis!r}, but {operand} has named axes {describe_named_shape(named)}. "
            f"Fix: name an axis the value has, or check the axis name's spelling",
            kind=ErrorKind.AXIS_MISSING,
            axes=[axis],
        )
    return axis


def new_axis(named: Shape, axis: object, *, operation: str, operand: str = "x") -> str:
    """``axis`` is a name ``named`` does not carry yet (stack, one_hot, merge_axes' result)."""
    name = _name(axis, operation=operation, argument="the new axis")
    if name in named:
        raise NamedShapeError(
            f"{operation}: {operand} already has an axis {name!r}; a new axis needs a name of its own. Fix: pick "
            f"another name, or tx.rename(x, {{{name!r}: ...}}) first",
            kind=ErrorKind.AXIS_MISSING,
            axes=[name],
        )
    return name


def axis_sizes(sizes: object, *, operation: str) -> dict[str, int]:
    """A constructor's shape ``{'batch': 2, 'embed': 3}``: names to non-negative ints."""
    if not isinstance(sizes, Mapping):
        raise NamedShapeError(
            f"{operation}: a named shape is a dict from axis names to sizes, got {type(sizes).__name__} "
            f"{sizes!r}. Fix: write {{'batch': 2, 'embed': 3}}",
            kind=ErrorKind.INVALID_ARGUMENT,
        )
    result: dict[str, int] = {}
    for axis, size in sizes.items():
        name = _name(axis, operation=operation, argument="a key")
        if not is_size(size):
            raise _size_error(name, size, operation)
        result[name] = size
    return result


def _size_error(name: str, size: object, operation: str) -> NamedShapeError:
    return NamedShapeError(
        f"{operation}: the size of axis {name!r} is {size!r}; sizes are non-negative ints. Fix: give its length, "
        f"e.g. {{{name!r}: 8}}",
        kind=ErrorKind.INVALID_ARGUMENT,
    )


def check_size(size: object, *, operation: str, argument: str = "size") -> int:
    """A constructor's size argument (``one_hot``'s, ``causal_mask``'s): a non-negative int, not a bool."""
    if not is_size(size):
        raise NamedShapeError(
            f"{operation}: {argument}={size!r}; a size is a non-negative int (not a bool or a float). Fix: pass "
            f"the axis's length as an int, e.g. {argument}=8",
            kind=ErrorKind.INVALID_ARGUMENT,
        )
    return size


def token_ids(dtype: str, *, operation: str, operand: str = "tokens") -> None:
    """``one_hot``'s tokens are integer ids: a float id matches no position and gives all zeros, silently."""
    if not dtype.startswith(("int", "uint")):
        raise NamedShapeError(
            f"{operation}: {operand} have dtype {dtype}, but one-hot vectors are made from integer ids (a "
            f"{dtype} id would match no position and give zeros). Fix: {operand}.astype(jnp.int32)",
            kind=ErrorKind.DTYPE,
        )


def rename_shape(named: Shape, renames: object, *, operation: str = "tx.rename") -> dict[str, Size]:
    """``{'seq': 'kv_seq'}`` applied to ``named``: each old name must be there, no new name may clash."""
    if not isinstance(renames, Mapping):
        raise NamedShapeError(
            f"{operation}: renames are a dict from old axis names to new ones, got {renames!r}. Fix: write "
            f"{{'seq': 'kv_seq'}}",
            kind=ErrorKind.INVALID_ARGUMENT,
        )
    for old, new in renames.items():
        require_axis(named, old, operation=operation)
        _name(new, operation=operation, argument=f"the new name of {old!r}")
    result: dict[str, Size] = {}
    for axis, size in named.items():
        target = renames.get(axis, axis)
        if target in result:
            other = next(a for a in named if renames.get(a, a) == target and a != axis)
            raise NamedShapeError(
                f"{operation}: renaming {(axis if axis in renames else other)!r} to {target!r} clashes with "
                f"axis {(other if axis in renames else axis)!r}, which is (or becomes) {target!r} too. Fix: pick "
                f"a name the value does not have, or rename {target!r} as well",
                kind=ErrorKind.AXIS_MISSING,
                axes=[target],
            )
        result[target] = size
    return result


def _same_axes(shapes: Sequence[Shape], *, operation: str, except_axis: str | None = None) -> dict[str, Size]:
    """The operands' common named shape (``except_axis`` aside): the same names, each with one size."""
    first = {a: s for a, s in shapes[0].items() if a != except_axis}
    for index, named in enumerate(shapes[1:], start=1):
        other = {a: s for a, s in named.items() if a != except_axis}
        extra = [a for a in other if a not in first] + [a for a in first if a not in other]
        if extra:
            axis = extra[0]
            holder, lacker = (index, 0) if axis in other else (0, index)
            raise NamedShapeError(
                f"{operation}: operand {holder} has axis {axis!r} but operand {lacker} does not; every operand "
                f"needs the same named axes. Fix: tx.broadcast_to the operands to one shape first",
                kind=ErrorKind.AXIS_MISSING,
                axes=[axis],
            )
        for axis, size in other.items():
            known = first[axis]
            if known is not None and size is not None and known != size:
                raise NamedShapeError(
                    f"{operation}: axis {axis!r} has size {known} in operand 0 but {size} in operand {index}. "
                    f"Fix: make the sizes of {axis!r} agree",
                    kind=ErrorKind.AXIS_SIZE,
                    axes=[axis],
                )
            if known is None:
                first[axis] = size
    return first


def _some(shapes: Sequence[Shape], operation: str) -> None:
    if not shapes:
        raise NamedShapeError(
            f"{operation}: needs at least one operand, got none. Fix: pass a non-empty list of NamedArrays",
            kind=ErrorKind.INVALID_ARGUMENT,
        )


def stack_shape(shapes: Sequence[Shape], axis: object, count: int | None, *, operation: str) -> dict[str, Size]:
    """Stack operands of one named shape along a new axis of size ``count`` (the number of operands)."""
    _some(shapes, operation)
    common = _same_axes(shapes, operation=operation)
    name = new_axis(common, axis, operation=operation, operand="every operand")
    return {**common, name: count}


def concatenate_shape(shapes: Sequence[Shape], axis: object, *, operation: str) -> dict[str, Size]:
    """Join operands along ``axis`` (each has it); their other axes agree. The result's size is the sum."""
    _some(shapes, operation)
    name = ""
    for index, named in enumerate(shapes):
        name = require_axis(named, axis, operation=operation, operand=f"operand {index}")
    common = _same_axes(shapes, operation=operation, except_axis=name)
    sizes = [named[name] for named in shapes]
    total = None if any(s is None for s in sizes) else sum(s for s in sizes if s is not None)
    return {**common, name: total}


def split_shape(named: Shape, axis: object, sections: object, *, operation: str) -> list[dict[str, Size]]:
    """Split ``axis`` into parts: ``sections`` an int (that many equal parts) or a list of sizes (summing to it)."""
    name = require_axis(named, axis, operation=operation)
    size = named[name]
    if isinstance(sections, int) and not isinstance(sections, bool):
        if sections <= 0 or (size is not None and size % sections):
            raise NamedShapeError(
                f"{operation}: axis {name!r} has size {size}, which does not split into {sections} equal parts. "
                f"Fix: pass a number of parts that divides {size}, or a list of sizes",
                kind=ErrorKind.AXIS_SIZE,
            )
        part: Size = None if size is None else size // sections
        return [{**named, name: part} for _ in range(sections)]
    if not isinstance(sections, (list, tuple)) or not all(isinstance(s, int) and s >= 0 for s in sections):
        raise NamedShapeError(
            f"{operation}: sections is an int (equal parts) or a list of sizes, got {sections!r}. Fix: write "
            f"sections=2 or sections=[3, 5]",
            kind=ErrorKind.INVALID_ARGUMENT,
        )
    if size is not None and sum(sections) != size:
        raise NamedShapeError(
            f"{operation}: the sizes {list(sections)} add up to {sum(sections)}, but axis {name!r} has size "
            f"{size}. Fix: give sizes that add up to {size}",
            kind=ErrorKind.AXIS_SIZE,
        )
    return [{**named, name: s} for s in sections]


def merge_axes_shape(named: Shape, axes: object, into: object, *, operation: str) -> dict[str, Size]:
    """Merge ``axes`` (the first is the major one) into one axis ``into`` whose size is their product."""
    if isinstance(axes, str) or not isinstance(axes, (list, tuple)) or len(axes) < 1:
        raise NamedShapeError(
            f"{operation}: axes is a tuple of the axis names to merge, got {axes!r}. Fix: write ('heads', 'head_dim')",
            kind=ErrorKind.INVALID_ARGUMENT,
        )
    names = [require_axis(named, a, operation=operation) for a in axes]
    if len(set(names)) != len(names):
        raise NamedShapeError(
            f"{operation}: an axis is listed twice in {tuple(names)!r}. Fix: list each axis once",
            kind=ErrorKind.SYNTAX,
        )
    rest = {a: s for a, s in named.items() if a not in names}
    name = new_axis(rest, into, operation=operation)
    sizes = [named[a] for a in names]
    product: Size = 1
    for s in sizes:
        product = None if product is None or s is None else product * s
    return {**rest, name: product}


def split_axis_shape(named: Shape, axis: object, parts: object, *, operation: str) -> dict[str, Size]:
    """Split ``axis`` into ``parts`` (``{'heads': 4, 'head_dim': 8}``, major first), whose product is its size."""
    name = require_axis(named, axis, operation=operation)
    sizes = axis_sizes(parts, operation=operation)
    if not sizes:
        raise NamedShapeError(
            f"{operation}: parts is empty; axis {name!r} must split into at least one axis. Fix: write "
            f"{{'heads': 4, 'head_dim': 8}}",
            kind=ErrorKind.INVALID_ARGUMENT,
        )
    rest = {a: s for a, s in named.items() if a != name}
    for part in sizes:
        new_axis(rest, part, operation=operation)
    product = 1
    for s in sizes.values():
        product *= s
    size = named[name]
    if size is not None and product != size:
        raise NamedShapeError(
            f"{operation}: axis {name!r} has size {size}, but the parts {sizes} multiply to {product}. Fix: give "
            f"parts whose sizes multiply to {size}",
            kind=ErrorKind.AXIS_SIZE,
        )
    return {**rest, **sizes}


def broadcast_to_shape(named: Shape, target: Shape, *, operation: str) -> dict[str, Size]:
    """``named`` broadcast to ``target``: each of its axes is in ``target`` with the same size."""
    for axis, wanted in target.items():
        if wanted is not None and not is_size(wanted):
            raise _size_error(axis, wanted, operation)
    for axis, size in named.items():
        if axis not in target:
            raise NamedShapeError(
                f"{operation}: x has axis {axis!r}, which the target shape {dict(target)} lacks; broadcasting "
                f"adds axes, never drops them. Fix: add {axis!r} to the target, or reduce it first",
                kind=ErrorKind.AXIS_MISSING,
                axes=[axis],
            )
        wanted = target[axis]
        if size is not None and wanted is not None and size != wanted:
            raise NamedShapeError(
                f"{operation}: axis {axis!r} has size {size} in x but {wanted} in the target shape. Fix: make "
                f"the sizes agree",
                kind=ErrorKind.AXIS_SIZE,
            )
    return dict(target)


def pad_shape(named: Shape, widths: object, *, operation: str) -> dict[str, Size]:
    """``{'seq': (1, 0)}``: each named axis grows by its (before, after) widths."""
    if not isinstance(widths, Mapping):
        raise NamedShapeError(
            f"{operation}: pad widths are a dict from axis names to (before, after), got {widths!r}. Fix: "
            f"write {{'seq': (1, 0)}}",
            kind=ErrorKind.INVALID_ARGUMENT,
        )
    result = dict(named)
    for axis, width in widths.items():
        name = require_axis(named, axis, operation=operation)
        if not (
            isinstance(width, (tuple, list)) and len(width) == 2 and all(isinstance(w, int) and w >= 0 for w in width)
        ):
            raise NamedShapeError(
                f"{operation}: the pad width of {name!r} is {width!r}; it is (before, after), two non-negative "
                f"ints. Fix: write {{{name!r}: (1, 0)}}",
                kind=ErrorKind.INVALID_ARGUMENT,
            )
        size = named[name]
        result[name] = None if size is None else size + width[0] + width[1]
    return result


def two_axes(first: object, second: object, *, operation: str) -> tuple[str, str]:
    """The row and column axes of a mask: two different names."""
    row = _name(first, operation=operation, argument="the row axis")
    column = _name(second, operation=operation, argument="the column axis")
    if row == column:
        raise NamedShapeError(
            f"{operation}: the row and column axes are both {row!r}; a mask over two axes needs two names. Fix: "
            f"name them apart, e.g. 'q_seq' and 'k_seq'",
            kind=ErrorKind.AXIS_MISSING,
            axes=[row],
        )
    return row, column


def arange_shape(axis: object, start: object, stop: object, step: object, *, operation: str) -> dict[str, Size]:
    """``arange(axis, start, stop, step)``: one axis, as long as ``range`` (unknown unless the bounds are ints)."""
    name = _name(axis, operation=operation, argument="the axis")
    bounds = (0, start) if stop is None else (start, stop)
    if isinstance(step, (int, float)) and not isinstance(step, bool) and step == 0:
        raise NamedShapeError(
            f"{operation}: step is {step!r}; a range needs a nonzero step. Fix: pass step=1 (or any nonzero step)",
            kind=ErrorKind.INVALID_ARGUMENT,
        )
    ints = [b for b in (*bounds, step) if isinstance(b, int) and not isinstance(b, bool)]
    if len(ints) != 3:
        return {name: None}
    return {name: len(range(ints[0], ints[1], ints[2]))}


def same_positional(shapes: Sequence[Sequence[Size] | None], *, operation: str) -> None:
    """Stacked or joined operands have the same positional dims (``None``: unknown, agrees with all)."""
    known = [(i, tuple(s)) for i, s in enumerate(shapes) if s is not None]
    for index, shape in known[1:]:
        first_index, first = known[0]
        clash = len(shape) != len(first) or any(
            a is not None and b is not None and a != b for a, b in zip(shape, first, strict=False)
        )
        if clash:
            raise NamedShapeError(
                f"{operation}: operand {first_index} has positional dims {first} but operand {index} has {shape}; "
                f"stacked or joined values need the same positional dims. Fix: name the dims that differ, or "
                f"reshape the operands alike",
                kind=ErrorKind.POSITIONAL,
            )
