"""Placement of ``tnp.segment_sum``/``tnp.segment_max`` (whose shapes ``_moe_segments`` types), a hook wrapped
as ``_placement``'s: the data's kept axes keep their placements, the segments' axis is whole, and a split
segmented axis is an all-reduce noted (``segment_placement``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mypy.types import Type

from ..._algebra import NamedShapeError, segment_placement
from .._core._encoding import carries_placement, decode
from .._core._support import arg, arg_expr, label, report
from ._merges import rebound, settled
from ._placement import Hook, _placed_as, note_collectives
from ._placement_rules import _literal

if TYPE_CHECKING:
    from ._protocols import TypedXmapPlugin

__all__ = ["placing_segment"]

SEGMENTS = frozenset({"segment_sum", "segment_max"})


def placing_segment(plugin: TypedXmapPlugin, name: str, hook: Hook) -> Hook:
    """``hook`` (of the function ``name``) with its result placed by ``segment_placement`` when ``name`` is a
    segment reduction with literal ``axis`` and ``new_axis`` (``hook`` itself for other functions)."""
    if name not in SEGMENTS:
        return hook

    def placed(ctx: Any) -> Type:
        result = hook(ctx)
        exprs = [arg_expr(ctx, "data", 0), arg_expr(ctx, "segment_ids", 1)]
        types = [arg(ctx, "data", 0), arg(ctx, "segment_ids", 1)]
        given = [t[0] if len(t) == 1 else None for t in types]
        if not any(t is not None and carries_placement(t) for t in given) and not any(
            rebound(ctx.api, e) for e in exprs
        ):
            return result
        shape, axis, new = decode(result), _literal(ctx, "axis", 3), _literal(ctx, "new_axis", 4)
        if (
            shape is None
            or shape.named is None
            or shape.scalar
            or not isinstance(axis, str)
            or not isinstance(new, str)
        ):
            return result
        data, ids = (
            settled(ctx.api, e, s).placement if t is not None and (s := decode(t)) is not None else {}
            for t, e in zip(given, exprs, strict=True)
        )
        operation = f"tnp.{name}({label(exprs[0], 'data')}, {label(exprs[1], 'segment_ids')})"
        try:
            found = segment_placement(list(shape.named), data, ids, axis, new, operation=operation)
        except NamedShapeError as error:
            report(ctx.api, error, ctx.context)
            return result
        note_collectives(ctx, found)
        return _placed_as(plugin, result, found)

    return placed
