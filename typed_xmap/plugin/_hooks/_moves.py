"""Placement through the MoE helpers. ``tx.moe_dispatch`` is a contraction over the tokens and
``tx.moe_combine`` one over ``expert`` and ``slot`` (the algebra's ``contract_placement``, with the value's and
the table's placements: an all-reduce where a contracted axis is split); the value is moved to
``from_resources`` and then to ``resources`` (literal or constant mappings, the axes they leave out whole; the
algebra's ``move_placement``, per named axis: an all-to-all over the mesh axes that leave it for another axis,
an all-gather over those that leave it for none, a ``reshard`` where another mesh axis takes their place), the
dispatch after its contraction, the combine before it; the collectives are noted. ``tx.moe_route`` places its
tables as the logits' group and token axes are placed and notes what the routing and its balance loss force
(``route_placement``: per split token axis an all-gather and an all-reduce, and so on)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from mypy.nodes import AssignmentStmt, NameExpr, TupleExpr
from mypy.types import TupleType, Type, get_proper_type

from ..._algebra import (
    Collective,
    NamedShapeError,
    Placed,
    Placement,
    contract_placement,
    mapped_placement,
    move_placement,
    route_placement,
)
from .._core._encoding import Shape, decode
from .._core._names_first import Arguments, Unreadable
from .._core._support import arg, arg_expr, report
from .._core._tree import checked_statements, expressions, statements_in
from ._merges import settled
from ._moe_segments import MOE_AXIS_ARGUMENTS
from ._placement import Hook, note_collectives, ordered
from ._placement_vmap import literal_resources

if TYPE_CHECKING:
    from ._protocols import TypedXmapPlugin

__all__ = ["MOVES", "placing_moved"]

MOVES = {"moe_dispatch": "x", "moe_combine": "y"}
"""The functions that move a value from ``from_resources`` to ``resources``, and the value's parameter."""
TABLES = {"moe_dispatch": "dispatch", "moe_combine": "combine"}
"""Their routing table's parameter."""
Resources = dict[str, tuple[str, ...]]


def placing_moved(plugin: TypedXmapPlugin, name: str, hook: Hook) -> Hook:
    """``tx.moe_dispatch``/``tx.moe_combine``: the result placed by the contraction and the moves (``_placed``)
    and their collectives noted; ``tx.moe_route``: ``_placing_route`` (``hook`` itself for the other functions)."""
    if name == "moe_route":
        return _placing_route(plugin, hook)
    if name not in MOVES:
        return hook

    def placed(ctx: Any) -> Type:
        result = hook(ctx)
        shape = decode(result)
        value, table = _operand(ctx, MOVES[name], 0), _operand(ctx, TABLES[name], 1)
        if shape is None or shape.named is None or value is None or table is None:
            return result
        steps = [literal_resources(ctx, "from_resources"), literal_resources(ctx, "resources")]
        if not (value.placement or table.placement or any(s is not None for s in steps)):
            return result
        try:
            found = _placed(f"tx.{name}", list(shape.named), value, table, [s for s in steps if s is not None])
        except NamedShapeError as error:
            report(ctx.api, error, ctx.context)
            return result
        note_collectives(ctx, found)
        return plugin.types.encode(replace(shape, placement=ordered(found.placement, shape)))

    return placed


def _operand(ctx: Any, name: str, position: int) -> Shape | None:
    """The argument ``name``'s named shape, with the placements its variable's binding sites agree on."""
    types = arg(ctx, name, position)
    shape = decode(types[0]) if len(types) == 1 else None
    if shape is None or shape.named is None:
        return None
    return settled(ctx.api, arg_expr(ctx, name, position), shape)


def _placed(operation: str, names: list[str], value: Shape, table: Shape, steps: list[Resources]) -> Placed:
    """The result (axes ``names``) of ``tx.moe_dispatch`` (the contraction, then the moves through ``steps``)
    or ``tx.moe_combine`` (the moves of ``value``, then the contraction): its placement and collectives."""
    assert value.named is not None and table.named is not None
    summed = [n for n in dict.fromkeys([*value.named, *table.named]) if n not in names]
    collectives: list[Collective] = []

    def contract(placement: Placement) -> Placement:
        found = contract_placement(names, summed, [placement, table.placement], operation=operation)
        collectives.extend(found.collectives)
        return found.placement

    axes = names if operation == "tx.moe_dispatch" else list(value.named)
    placement = contract(value.placement) if operation == "tx.moe_dispatch" else value.placement
    for step in steps:
        found = move_placement(axes, placement, mapped_placement(axes, step), operation=operation)
        collectives.extend(found.collectives)
        placement = found.placement
    if operation == "tx.moe_combine":
        placement = contract(placement)
    return Placed(dict(placement), tuple(collectives))


def _placing_route(plugin: TypedXmapPlugin, hook: Hook) -> Hook:
    """``tx.moe_route``: its tables are placed as the logits' group and token axes are, ``expert`` and ``slot``
    whole, and the collectives of the routing and of its balance loss over split logits are noted
    (``route_placement``)."""

    def placed(ctx: Any) -> Type:
        result = hook(ctx)
        logits, tuple_type = _operand(ctx, "logits", 0), get_proper_type(result)
        if logits is None or not logits.placement or not isinstance(tuple_type, TupleType):
            return result
        tables = decode(tuple_type.items[0])
        read = Arguments(ctx, MOE_AXIS_ARGUMENTS).read
        try:
            expert, slot, tokens = read("expert", None), read("slot", None), read("tokens", None)
        except Unreadable:
            return result
        names = list(logits.named or ())
        if tables is None or tables.named is None or not isinstance(expert, str) or not isinstance(slot, str):
            return result
        tokens = (tokens,) if isinstance(tokens, str) else tuple(tokens) if isinstance(tokens, (list, tuple)) else ()
        unused = _unused_results(ctx)
        found = route_placement(
            names,
            logits.placement,
            expert=expert,
            tokens=tokens,
            slot=slot,
            operation="tx.moe_route",
            tables=not {0, 1} <= unused,
            balance=2 not in unused,
        )
        note_collectives(ctx, found)
        placed_tables = plugin.types.encode(replace(tables, placement=ordered(found.placement, tables)))
        return tuple_type.copy_modified(items=[placed_tables, placed_tables, tuple_type.items[2]])

    return placed


def _unused_results(ctx: Any) -> set[int]:
    """The positions of the call's results that its function never reads: the call unpacked into names
    (``dispatch, combine, _ = tx.moe_route(...)``), each ``_`` or a name no expression of the function reads."""
    statements = checked_statements(ctx.api)
    for statement, _ in statements_in(statements):
        if isinstance(statement, AssignmentStmt) and statement.rvalue is ctx.context:
            targets = statement.lvalues[0] if len(statement.lvalues) == 1 else None
            if not isinstance(targets, TupleExpr):
                return set()
            items = targets.items
            read = {e.node for e in expressions(statements) if isinstance(e, NameExpr) and e not in items}
            return {
                i
                for i, target in enumerate(items)
                if isinstance(target, NameExpr) and (target.name == "_" or target.node not in read)
            }
    return set()
