"""Placement through the hooks: a result's type carries where its axes live (``NamedArray[f32, "batch@data
seq"]``), from its operands' placements by the rules of ``_placement_rules``: elementwise and broadcast by name
(operators, ``tnp.add``, ``tnp.where``), reductions (a reduced axis's placement goes), contractions
(``tnp.einsum``, ``tnp.dot``), ``tx.rename`` (the placement follows the name), operations that keep their
operand's axes (``astype``, ``roll``, ``cumsum``), and (``_placement_index``) indexing by a literal dict (the
axes it does not index keep theirs) and ``.at[...]`` updates. Two names on one mesh axis in a result is
``axis-resource-conflict`` on that operation's line; a collective the placement forces (an all-reduce over a
contracted split axis) is a note with the code ``named-comm`` (off by default: ``typed-xmap check --comm`` turns
it on). Placement is gradual: an operand of unknown placement adds none, and an operation without a rule here
gives a result of unknown placement.

Each hook is wrapped outermost (after ``_symbolic``, whose rebuilt types hold no placement). The fast test:
no operand's type shows an ``@``, nothing to do (most programs place nothing).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from mypy.nodes import CallExpr, Expression, ListExpr, TupleExpr
from mypy.types import Instance, TupleType, Type, get_proper_type

from ..._algebra import WHOLE, Collective, NamedShapeError, OpKind, Placed, Placement, stack_placement
from .._core._codes import NAMED_COMM
from .._core._encoding import Shape, carries_placement, decode
from .._core._per_check import PerCheck
from .._core._support import arg_expr, fail, label, operands, operation_text, receiver_expr, report
from .._core._tree import checked_function
from ._merges import one_value, rebound, settled
from ._note_sites import at_site
from ._placement_rules import RULES, _axes, _literal, _names_in_call

if TYPE_CHECKING:
    from ._protocols import TypedXmapPlugin

__all__ = [
    "note_collectives",
    "ordered",
    "placing",
]

Hook = Callable[[Any], Type]


def placing(plugin: TypedXmapPlugin, key: OpKind | str, hook: Hook) -> Hook:
    """``hook`` with its result placed by the rule of ``key``, an operation's kind or a structure operation's
    name (``hook`` itself when there is no rule)."""
    if key in MANY:
        return _placing_many(plugin, hook)
    rule = RULES.get(key)
    if rule is None:
        return hook

    def placed(ctx: Any) -> Type:
        result = hook(ctx)
        receiver = getattr(ctx, "type", None)
        body = plugin.resources.body_placement(ctx.api)
        if (
            not body
            and not (receiver is not None and carries_placement(receiver))
            and not any(carries_placement(t) for group in ctx.arg_types for t in group)
            and not _rebound_operand(ctx)
        ):
            return result
        shape = decode(_first(result))
        if shape is None or shape.named is None or shape.scalar:
            return result
        shapes, labels, exprs = operands(ctx)
        if not shapes:
            return result
        shapes = [settled(ctx.api, expr, s) for s, expr in zip(shapes, exprs, strict=True)]
        operation = operation_text(ctx, labels)
        try:
            found = rule(shape, inside := [_in_body(s, body) for s in shapes], operation, ctx)
        except NamedShapeError as error:
            _report_own(ctx, error, (lambda: rule(shape, shapes, operation, ctx)) if body else None)
            return result
        note_collectives(ctx, found, exprs[0])
        plugin.backward.record(
            ctx, key, shape, inside, labels, exprs, found.placement, operation, _names_in_call, found.collectives
        )
        return _each(result, lambda item: _placed_as(plugin, item, found))

    return placed


def _first(result: Type) -> Type:
    """The NamedArray a result holds: itself, a tuple's first item (``top_k``'s values), a list's item
    (``tnp.split``'s pieces)."""
    proper = get_proper_type(result)
    if isinstance(proper, TupleType) and proper.items:
        return proper.items[0]
    if isinstance(proper, Instance) and proper.type.fullname == "builtins.list" and len(proper.args) == 1:
        return proper.args[0]
    return result


def _each(result: Type, change: Callable[[Type], Type]) -> Type:
    """``result`` with ``change`` applied to each NamedArray ``_first`` reads there (a tuple's items, a list's)."""
    proper = get_proper_type(result)
    if isinstance(proper, TupleType) and proper.items:
        return proper.copy_modified(items=[change(t) for t in proper.items])
    if isinstance(proper, Instance) and proper.type.fullname == "builtins.list" and len(proper.args) == 1:
        return proper.copy_modified(args=[change(proper.args[0])])
    return change(result)


def _placed_as(plugin: TypedXmapPlugin, typ: Type, found: Placed) -> Type:
    """``typ`` (a NamedArray) with ``found``'s placement over its axes (``typ`` itself where nothing changes)."""
    shape = decode(typ)
    if shape is None or shape.named is None or shape.scalar:
        return typ
    placement = ordered(found.placement, shape)
    return typ if placement == shape.placement else plugin.types.encode(replace(shape, placement=placement))


MANY = frozenset({"stack", "concatenate"})
"""The operations whose operands come in a list (``tnp.stack([a, b], "layers")``)."""


def _placing_many(plugin: TypedXmapPlugin, hook: Hook) -> Hook:
    """``tnp.stack``/``tnp.concatenate`` of a literal list or tuple: its items meet by name (each item's own
    type: the list's type is their join, which holds no placement); ``axis`` (a literal) unknown."""

    def placed(ctx: Any) -> Type:
        result = hook(ctx)
        items, axis = arg_expr(ctx, "xs", 0), _literal(ctx, "axis", 1)
        if not isinstance(items, ListExpr | TupleExpr) or not isinstance(axis, str):
            return result
        shapes = [_item_shape(ctx.api, item) for item in items.items]
        shape = decode(result)
        if not any(s is not None and s.placement for s in shapes) or shape is None or shape.named is None:
            return result
        operation = f"tnp.{_name(ctx)}"
        try:
            placements = [s.placement if s else {} for s in shapes]
            found = stack_placement(list(shape.named), placements, axis, operation=operation, axes=_axes(shapes))
        except NamedShapeError as error:
            report(ctx.api, error, ctx.context)
            return result
        known = [(s, item) for s, item in zip(shapes, items.items, strict=True) if s is not None]
        labels = [label(item, f"item {i}") for i, (_, item) in enumerate(known)]
        exprs = [item for _, item in known]
        plugin.backward.record(ctx, _name(ctx), shape, [s for s, _ in known], labels, exprs, found.placement, operation)
        return _placed_as(plugin, result, found)

    return placed


def _rebound_operand(ctx: Any) -> bool:
    """Whether an operand is a variable rebound to a placed value that its type does not show (``_merges``)."""
    exprs = [e for group in ctx.args for e in group]
    if getattr(ctx, "type", None) is not None:
        exprs.append(receiver_expr(ctx.context))
    return any(rebound(ctx.api, e) for e in exprs)


def _item_shape(api: Any, item: Expression) -> Shape | None:
    typ = api.lookup_type_or_none(item)
    shape = decode(typ) if typ is not None else None
    return settled(api, item, shape) if shape is not None and shape.named is not None else None


def _name(ctx: Any) -> str:
    callee = ctx.context.callee if isinstance(ctx.context, CallExpr) else None
    return getattr(callee, "name", "stack")


def _report_own(ctx: Any, error: NamedShapeError, without_body: Callable[[], Placed] | None) -> None:
    """Report ``error``, unless it comes from an xmapped body's ``axis_resources`` alone (``without_body``: the
    rule on the operands' own placements does not raise), which the body's own check reports (``_xmap``)."""
    if without_body is not None:
        try:
            without_body()
        except NamedShapeError as own:
            error = own
        else:
            return
    report(ctx.api, error, ctx.context)


def _in_body(shape: Shape, body: Placement) -> Shape:
    """``shape`` inside an xmapped body: its axes that the body's ``axis_resources`` name are placed there, and
    the others are whole (xmap vectorizes an axis without resources on each device, and never splits a
    positional dim) (``shape``'s own placements first)."""
    if not body or shape.named is None:
        return shape
    added = {n: body.get(n, WHOLE) for n in shape.named if n not in shape.placement}
    return replace(shape, placement={**shape.placement, **added}) if added else shape


def note_collectives(ctx: Any, found: Placed, operand: Expression | None = None) -> None:
    """The collectives ``found`` needs, as ``named-comm`` notes (``typed-xmap check --comm``); one that computes
    a reduction of ``operand`` (a variable holding one value in its function) which an earlier site of the
    function computes too is left out: XLA computes it once (``Collective.computes``)."""
    if found.collectives and ctx.api.msg.errors.is_error_code_enabled(NAMED_COMM):
        for collective in found.collectives:
            if not _computed_before(ctx, collective, operand):
                text = at_site(ctx.api, f"collective: {collective}", ctx.context.line, ctx.context.column)
                fail(ctx.api, text, ctx.context, NAMED_COMM, note=True)


_FIRST_SITE: PerCheck[dict[tuple[object, object, str], tuple[int, int]]] = PerCheck(dict)
"""Per check of a module: (function node, variable, reduction) -> the line and column of the first site that
computes it (a check of the same function again, as mypy's deferral does, finds its own site there)."""


def _computed_before(ctx: Any, collective: Collective, operand: Expression | None) -> bool:
    var = one_value(ctx.api, operand) if collective.computes else None
    function = checked_function(ctx.api)
    if var is None or function is None:
        return False
    site = (ctx.context.line, ctx.context.column)
    return _FIRST_SITE.of(ctx.api).setdefault((function, var, collective.computes), site) != site


def ordered(placement: Placement, shape: Shape) -> dict[str, tuple[str, ...]]:
    """``placement`` over ``shape``'s axes, in their order (how the encoded text lists them)."""
    assert shape.named is not None
    return {n: placement[n] for n in shape.named if n in placement}
