"""Placement through the MoE moves: ``tx.moe_dispatch``/``tx.moe_combine`` with a literal or constant
``resources`` place the value they move by it, from ``from_resources`` (the algebra's ``move_placement``, per
named axis: an all-to-all over the mesh axes that leave it for another axis, an all-gather over those that
leave it for none, a ``reshard`` where another mesh axis takes their place), and note the collectives;
``tx.moe_route``'s balance loss, a mean over every axis of the logits, notes the all-reduce over the mesh
axes that split them."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from mypy.types import Type

from ..._algebra import NamedShapeError, contract_placement, move_placement, reduce_placement
from .._core._encoding import carries_placement, decode
from .._core._support import arg, arg_expr, report
from ._merges import rebound, settled
from ._placement import Hook, note_collectives, ordered
from ._placement_vmap import literal_resources

if TYPE_CHECKING:
    from ._protocols import TypedXmapPlugin

__all__ = ["MOVES", "placing_moved"]

MOVES = {"moe_dispatch": "x", "moe_combine": "y"}
"""The functions that move a value from ``from_resources`` to ``resources``, and the value's parameter."""


def placing_moved(plugin: TypedXmapPlugin, name: str, hook: Hook) -> Hook:
    """``tx.moe_dispatch``/``tx.moe_combine`` with a literal or constant ``resources``: the value they move is
    placed by it, from ``from_resources`` (or, without it, from the value's own known placement); the collectives
    of the move (``move_placement``) and, for ``moe_combine``, of its contraction over ``expert`` and ``slot``
    after the move are noted (``hook`` itself for the other functions)."""
    if name == "moe_route":
        return _placing_route(hook)
    if name not in MOVES:
        return hook

    def placed(ctx: Any) -> Type:
        result = hook(ctx)
        target, types = literal_resources(ctx, "resources"), arg(ctx, MOVES[name], 0)
        shape, value = decode(result), decode(types[0]) if len(types) == 1 else None
        if target is None or shape is None or shape.named is None or value is None or value.named is None:
            return result
        declared = literal_resources(ctx, "from_resources")
        source = declared if declared is not None else settled(ctx.api, arg_expr(ctx, MOVES[name], 0), value).placement
        names = list(shape.named) if name == "moe_dispatch" else list(value.named)
        operation = f"tx.{name}"
        try:
            found = move_placement(names, source, target, operation=operation)
            if name == "moe_combine":
                summed = [n for n in names if n not in shape.named]
                combined = contract_placement(list(shape.named), summed, [found.placement], operation=operation)
                found = replace(combined, collectives=(*found.collectives, *combined.collectives))
        except NamedShapeError as error:
            report(ctx.api, error, ctx.context)
            return result
        note_collectives(ctx, found)
        return plugin.types.encode(replace(shape, placement=ordered(found.placement, shape)))

    return placed


def _placing_route(hook: Hook) -> Hook:
    """``tx.moe_route``: its balance loss averages over every axis of the logits, so a split axis of theirs
    is an all-reduce over its mesh axes (noted); the tables' placement is left unknown."""

    def placed(ctx: Any) -> Type:
        result = hook(ctx)
        types, expr = arg(ctx, "logits", 0), arg_expr(ctx, "logits", 0)
        if len(types) != 1 or not (carries_placement(types[0]) or rebound(ctx.api, expr)):
            return result
        logits = decode(types[0])
        if logits is None or logits.named is None:
            return result
        placement = settled(ctx.api, expr, logits).placement
        note_collectives(ctx, reduce_placement(placement, list(logits.named), operation="tx.moe_route's balance loss"))
        return result

    return placed
