"""A ``tx.scan`` step's dict parameter read by a literal key: the type of what the scan hands it.

``def step(total, mb: dict[str, NamedArray[f32, "batch@data *rest"]])`` scanned by
``tx.scan(step, init, {"x": xs, "y": labels}, axis="micro")`` reads ``mb["x"]``, whose declared type leaves the
other axes open (a ``*rest`` group) or their placement unknown; at run time it is ``xs``'s slice (``xs`` without
``micro``). Where every ``tx.scan`` call of the module that passes ``step`` as ``f`` hands that parameter a dict
literal whose item at the key has a known type, and all agree, the read has the item's type (the scanned axis
dropped for ``xs``), placed as the item is and as the declared type places it (the declared placement first),
when the item fits the declared type (the axes it lists; all of them without a group). Anything else leaves the
declared type: an item mypy has not typed yet (a value computed below the step's definition), another kind of
``xs``, a read by another key, a parameter the step rebinds (``mb = {...}``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from mypy.nodes import CallExpr, DictExpr, Expression, FuncDef, IndexExpr, NameExpr, RefExpr, StrExpr, Var
from mypy.types import Instance, LiteralType, Type, TypedDictType, get_proper_type

from ..._algebra import Placement, parse_placed_text
from .._core._callables import SCAN
from .._core._constants import constant_value
from .._core._encoding import NAMED_ARRAY, Shape, decode
from .._core._per_check import PerCheck
from .._core._tree import checked_function, expressions
from ._backward_target import function_of
from ._declared_parts import scan_call_arguments, without_axis
from ._merges import one_value

if TYPE_CHECKING:
    from mypy.plugin import MethodContext

    from ._protocols import TypedXmapPlugin

__all__ = ["SCANNED_READS", "scanned_read_hook"]

SCANNED_READS = frozenset({"builtins.dict.__getitem__", "typing.Mapping.__getitem__"})
"""The reads by key whose type a scan's dict literal may make known."""

_CALLS: PerCheck[dict[FuncDef, list[CallExpr]] | None] = PerCheck(lambda: None)
"""Per check of a module: its ``tx.scan`` calls by the function passed as ``f`` (``None``: not read yet)."""


def scanned_read_hook(plugin: TypedXmapPlugin, ctx: MethodContext) -> Type:
    """``mb["x"]`` in a scanned step: the scanned item's type (above), else mypy's."""
    result = ctx.default_return_type
    read = ctx.context
    if not isinstance(read, IndexExpr) or not isinstance(read.base, NameExpr) or not isinstance(read.base.node, Var):
        return result
    declared = _declared(result)
    key = constant_value(ctx.api, read.index)
    function = checked_function(ctx.api)
    if declared is None or not isinstance(key, str) or not isinstance(function, FuncDef):
        return result
    parameters = [a.variable for a in function.arguments[:2]]
    if read.base.node not in parameters or one_value(ctx.api, read.base) is None:  # ``mb = {...}`` in the body
        return result
    found = _handed(ctx.api, function, parameters.index(read.base.node), key)
    if found is None or not _fits(found, declared):
        return result
    return plugin.types.encode(replace(found, placement={**found.placement, **declared[2]}))


def _handed(api: Any, function: FuncDef, index: int, key: str) -> Shape | None:
    """The shape every scan of ``function`` hands its parameter ``index`` (0: ``init``, 1: a slice of ``xs``) at
    ``key``; ``None`` where a scan hands something else or they differ."""
    calls = _scan_calls(api).get(function, [])
    shapes = [_item(api, call, index, key) for call in calls]
    first = shapes[0] if shapes else None
    return first if first is not None and all(s == first for s in shapes) else None


def _item(api: Any, call: CallExpr, index: int, key: str) -> Shape | None:
    arguments = scan_call_arguments(call)
    literal = arguments.get(("init", "xs")[index])
    if not isinstance(literal, DictExpr):
        return None
    values = [v for k, v in literal.items if isinstance(k, StrExpr) and k.value == key]
    shape = decode(typ) if len(values) == 1 and (typ := _type_of(api, values[0])) is not None else None
    if index == 0:
        return shape
    axis = constant_value(api, arguments.get("axis"))
    if not isinstance(axis, str) or shape is None or shape.named is None or axis not in shape.named:
        return None
    return without_axis(shape, axis)


def _type_of(api: Any, expr: Expression) -> Type | None:
    """``expr``'s type where mypy has it: the expression's own, or a variable's (a parameter of the function
    being checked, a local bound above)."""
    typ = api.lookup_type_or_none(expr)
    if typ is None and isinstance(expr, NameExpr) and isinstance(expr.node, Var):
        typ = expr.node.type
    return typ  # type: ignore[no-any-return]


Declared = tuple[set[str], bool, Placement]


def _declared(typ: Type) -> Declared | None:
    """A declared NamedArray's listed axes, whether a group stands for others (a container's element with a
    group is open: ``_group_scope``), and its placements; ``None``: not a NamedArray of known axes."""
    shape = decode(typ)
    if shape is not None and shape.named is not None:
        return set(shape.named), False, shape.placement
    proper = get_proper_type(typ)
    if not (isinstance(proper, Instance) and proper.type.fullname == NAMED_ARRAY and len(proper.args) == 3):
        return None
    named = get_proper_type(proper.args[1])
    if not isinstance(named, TypedDictType) or named.is_closed:
        return None
    text = get_proper_type(named.fallback.args[0]) if named.fallback.args else None
    written = text.value if isinstance(text, LiteralType) and isinstance(text.value, str) else ""
    listed = set(named.items)
    return listed, True, {n: m for n, m in parse_placed_text(written).items() if n in listed}


def _fits(found: Shape, declared: Declared) -> bool:
    """Whether a value of shape ``found`` fits the declared type: its axes, the listed ones (and others where a
    group stands for them), placed nowhere the declared type places otherwise."""
    listed, group, placement = declared
    if found.named is None or not listed <= set(found.named) or (not group and set(found.named) != listed):
        return False
    return all(found.placement.get(n, m) == m for n, m in placement.items())


def _scan_calls(api: Any) -> dict[FuncDef, list[CallExpr]]:
    """The module's ``tx.scan`` calls by the function they pass as ``f``, for a function the module uses only so
    (a direct call elsewhere is typed by the same body: its reads keep their declared types); read once per check
    of the module."""
    cached = _CALLS.of(api)
    if cached is not None:
        return cached
    calls: dict[FuncDef, list[CallExpr]] = {}
    uses: dict[FuncDef, int] = {}
    for expr in expressions(getattr(getattr(api, "tree", None), "defs", [])):
        if isinstance(expr, RefExpr) and (function := function_of(expr)) is not None:
            uses[function] = uses.get(function, 0) + 1
        if isinstance(expr, CallExpr) and isinstance(expr.callee, RefExpr) and expr.callee.fullname in SCAN:
            f = scan_call_arguments(expr).get("f")
            if isinstance(f, RefExpr) and (function := function_of(f)) is not None:
                calls.setdefault(function, []).append(expr)
    calls = {f: found for f, found in calls.items() if uses.get(f) == len(found)}  # used by its scans alone
    _CALLS.set(api, calls)
    return calls
