"""Placement read from a literal or constant ``axis -> mesh axes`` argument (``literal_resources``: ``tx.vmap``'s
``axis_resources``, the MoE moves' ``resources``) and of ``tx.vmap``'s results (``vmap_resources``,
``vmapped_leaf``), for ``_named_vmap`` and ``_moves``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from mypy.nodes import Expression
from mypy.types import Type

from ..._algebra import (
    NamedShapeError,
    Placement,
    broadcast_placement,
    mesh_axis_names,
    normalize_axis_resources,
    vmap_placement,
)
from .._core._constants import constant_value
from .._core._encoding import decode
from .._core._support import arg_expr, report
from ._placement import _placed_as

if TYPE_CHECKING:
    from ._protocols import TypedXmapPlugin

__all__ = [
    "constant_resources",
    "literal_resources",
    "vmap_resources",
    "vmapped_leaf",
]


def literal_resources(ctx: Any, name: str) -> dict[str, tuple[str, ...]] | None:
    """A literal or module-constant ``axis -> mesh axes`` argument, normalised; ``None``: absent or unreadable."""
    return constant_resources(ctx.api, arg_expr(ctx, name))


def constant_resources(api: Any, expr: Expression | None) -> dict[str, tuple[str, ...]] | None:
    """``expr`` read as a literal or module-constant ``axis -> mesh axes`` mapping, normalised; ``None``: absent
    or unreadable."""
    value = constant_value(api, expr)
    if not isinstance(value, dict):
        return None
    try:
        return mesh_axis_names(normalize_axis_resources(value))
    except NamedShapeError:
        return None  # the runtime's check words it; gradual here


def vmap_resources(
    ctx: Any, names: Sequence[str], arguments: Sequence[tuple[Sequence[str], Placement]]
) -> dict[str, tuple[str, ...]]:
    """``tx.vmap(f, axis=names, axis_resources=...)``: where its results' mapped axes are placed
    (``vmap_placement``), from a literal or constant ``axis_resources`` and the placements of the argument
    leaves it is called with (``arguments``: empty where the call is not seen); unknown without either."""
    resources = literal_resources(ctx, "axis_resources") or {}
    return vmap_placement(names, resources, arguments)


def vmapped_leaf(plugin: TypedXmapPlugin, ctx: Any, own: Placement, result: Type, mapped: Placement) -> Type:
    """An output leaf of ``tx.vmap``: ``result`` (``f``'s declared leaf with the mapped axes added) placed by the
    leaf's ``own`` placements and the mapped axes' ``mapped``; two of its axes on one mesh axis is
    ``axis-resource-conflict`` on the ``tx.vmap`` line."""
    shape = decode(result)
    if shape is None or shape.named is None or not (mapped or own):
        return result
    try:
        axes = [[n for n in shape.named if n not in mapped], list(mapped)]  # a whole mapped axis stays whole
        found = broadcast_placement(list(shape.named), [own, mapped], operation="tx.vmap", axes=axes)
    except NamedShapeError as error:
        report(ctx.api, error, ctx.context)
        return result
    return _placed_as(plugin, result, found)
