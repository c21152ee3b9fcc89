"""The parts of a value that ``_declared`` holds to a declared type one by one, and the placement a value's type
gives when mypy wrote it as a union.

- A dict literal that meets a ``TypedDict`` (``return {"emb": tx.shard(emb, {"vocab": "data"}), ...}`` from a
  function declared ``-> Model``): mypy types the literal as the ``TypedDict`` itself, its fields' declared types,
  so each item's own type is compared with its field's (``dict_fields``), as a tuple's items are.
- A ``TypedDict`` value that meets another ``TypedDict`` type: field by field (``typed_dict_fields``).
- ``tx.scan(f, init, xs, axis=...)``: ``init`` meets ``f``'s carry parameter, each slice of ``xs`` (``xs``
  without ``axis``) ``f``'s slice parameter (``scan_arguments``), as at a call ``f(init, slice)``.
- A union of NamedArrays with the same names (a variable's type where branches or a loop's iterations meet) is
  placed as all its members agree (``known_shape``): the gradual rule of ``_merges``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import TYPE_CHECKING, Any, NamedTuple

from mypy.nodes import ARG_NAMED, ARG_POS, DictExpr, RefExpr, StrExpr
from mypy.types import Instance, LiteralType, TupleType, Type, TypedDictType, UnionType, get_proper_type

from .._core._callables import SCAN, scanned_body
from .._core._encoding import Shape, carries_placement, decode
from .._core._support import label

if TYPE_CHECKING:
    from mypy.nodes import CallExpr, Expression

__all__ = [
    "ScanArgument",
    "declares_placement",
    "dict_fields",
    "known_shape",
    "scan_arguments",
    "scan_call_arguments",
    "typed_dict_fields",
    "without_axis",
]

DEPTH = 4
"""How deep ``declares_placement`` looks into nested ``TypedDict``s and tuples."""


def declares_placement(typ: Type, depth: int = DEPTH) -> bool:
    """Whether ``typ`` is a NamedArray with a placement, or a ``TypedDict`` or tuple holding one."""
    if carries_placement(typ):
        return True
    proper = get_proper_type(typ)
    items = proper.items.values() if isinstance(proper, TypedDictType) else []
    items = proper.items if isinstance(proper, TupleType) else items
    return depth > 0 and any(declares_placement(item, depth - 1) for item in items)


def dict_fields(expr: Expression | None, wanted: Type) -> Iterator[tuple[str, Expression, Type]]:
    """Each item of the dict literal ``expr`` whose key is a string literal naming a field of the ``TypedDict``
    ``wanted``: the key, the item's value and the field's declared type; nothing for anything else."""
    proper = get_proper_type(wanted)
    if not isinstance(expr, DictExpr) or not isinstance(proper, TypedDictType):
        return
    for key, value in expr.items:
        if isinstance(key, StrExpr) and key.value in proper.items:
            yield key.value, value, proper.items[key.value]


def typed_dict_fields(found: Type, wanted: Type) -> Iterator[tuple[str, Type, Type]]:
    """Each field the two ``TypedDict`` types ``found`` and ``wanted`` share: its name and its two types."""
    actual, declared = get_proper_type(found), get_proper_type(wanted)
    if isinstance(actual, TypedDictType) and isinstance(declared, TypedDictType) and actual != declared:
        for name, typ in declared.items.items():
            if name in actual.items:
                yield name, actual.items[name], typ


def known_shape(typ: Type) -> Shape | None:
    """``typ``'s shape (``decode``); for a union whose members are NamedArrays with the same names, the first
    member's shape placed only where every member agrees (a member whose shape is unknown agrees on nothing)."""
    proper = get_proper_type(typ)
    if not isinstance(proper, UnionType):
        return decode(typ)
    shapes = [decode(member) for member in proper.items]
    first = shapes[0]
    if first is None or first.named is None:
        return None
    placement = dict(first.placement)
    for shape in shapes[1:]:
        if shape is None or shape.named is None or set(shape.named) != set(first.named):
            return None
        placement = {n: m for n, m in placement.items() if shape.placement.get(n) == m}
    return replace(first, placement=placement)


def without_axis(shape: Shape | None, axis: str | None) -> Shape | None:
    """``shape`` without the axis ``axis`` (a slice of a scanned value), its placement with it."""
    if axis is None or shape is None or shape.named is None or axis not in shape.named:
        return shape
    named = {n: s for n, s in shape.named.items() if n != axis}
    placement = {n: m for n, m in shape.placement.items() if n != axis}
    return replace(shape, named=named, placement=placement)


class ScanArgument(NamedTuple):
    """An argument of ``tx.scan`` and the parameter of ``f`` it meets (``axis``: the scanned axis that each
    slice lacks, for ``xs``)."""

    argument: Expression
    declared: Type
    where: str
    axis: str | None


def scan_arguments(api: Any, call: CallExpr) -> list[ScanArgument]:
    """``init`` with ``f``'s carry parameter and ``xs`` with its slice parameter, for a call of ``tx.scan`` whose
    ``f`` is a function of (at least) two positional parameters and whose ``axis`` is a literal."""
    if not isinstance(call.callee, RefExpr) or call.callee.fullname not in SCAN:
        return []
    arguments = scan_call_arguments(call)
    f, axis = arguments.get("f"), _literal_str(api, arguments.get("axis"))
    body = scanned_body(api.lookup_type_or_none(f)) if f is not None else None
    if body is None or not isinstance(axis, str):
        return []
    name = label(f, "f") if f is not None else "f"
    found: list[ScanArgument] = []
    for index, (parameter, dropped) in enumerate((("init", None), ("xs", axis))):
        argument = arguments.get(parameter)
        if argument is not None and body.arg_kinds[index] == ARG_POS:
            where = f"tx.scan's {parameter} (parameter {body.arg_names[index] or index + 1!r} of {name})"
            found.append(ScanArgument(argument, body.arg_types[index], where, dropped))
    return found


def scan_call_arguments(call: CallExpr) -> dict[str, Expression]:
    """The arguments of a ``tx.scan`` call by parameter name (``f, init, xs`` by position or name)."""
    named: dict[str, Expression] = {}
    for position, (kind, name, argument) in enumerate(zip(call.arg_kinds, call.arg_names, call.args, strict=True)):
        if kind == ARG_POS and position < 3:
            named[("f", "init", "xs")[position]] = argument
        elif kind == ARG_NAMED and name is not None:
            named[name] = argument
    return named


def _literal_str(api: Any, expr: Expression | None) -> str | None:
    """The string ``expr`` is: a literal, or a name whose type mypy knows as a literal string (a constant)."""
    if isinstance(expr, StrExpr):
        return expr.value
    typ = get_proper_type(api.lookup_type_or_none(expr)) if expr is not None else None
    if isinstance(typ, Instance) and typ.last_known_value is not None:
        typ = typ.last_known_value
    return typ.value if isinstance(typ, LiteralType) and isinstance(typ.value, str) else None
