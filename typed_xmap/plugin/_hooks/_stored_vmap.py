"""A stored ``tx.vmap``, called later: ``h = tx.vmap(f, axis="batch")`` (a module constant or a local bound
once), then ``h(x)``. Its results' mapped axis is placed as a call at once places it (``_named_vmap``): by
``axis_resources``, else by the placements of the argument leaves carrying it (the algebra's
``vmap_placement``), each result leaf meeting it with the placements ``f``'s declared return gives its other axes.
The type mypy gives the call (the stored function's return, placed by ``axis_resources`` alone) is kept
otherwise.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

from mypy.nodes import ARG_NAMED, ARG_POS, CallExpr, NameExpr, RefExpr
from mypy.types import Instance, Type, get_proper_type

from ..._algebra import vmap_placement
from .._core._constants import constant_value, resolved
from .._core._encoding import NAMED_ARRAY, decode
from .._core._support import call_argument
from ._named_vmap import DEPTH, NAMED_VMAP, _carried, leaves
from ._placement_vmap import constant_resources, vmapped_leaf

if TYPE_CHECKING:
    from ..._algebra import Placement
    from ._protocols import TypedXmapPlugin

__all__ = ["stored_vmap_hook"]


def stored_vmap_hook(plugin: TypedXmapPlugin, ctx: Any) -> Type:
    """``h(x)`` where ``h`` is bound once to ``tx.vmap(f, axis=...)``: its results placed by ``x`` (above)."""
    call = ctx.context
    stored = (
        resolved(ctx.api, call.callee) if isinstance(call, CallExpr) and isinstance(call.callee, NameExpr) else None
    )
    if not (
        isinstance(stored, CallExpr) and isinstance(stored.callee, RefExpr) and stored.callee.fullname in NAMED_VMAP
    ):
        return ctx.default_return_type  # type: ignore[no-any-return]
    names = _mapped_names(ctx.api, stored)
    if not names or any(kind not in (ARG_POS, ARG_NAMED) for kind in call.arg_kinds):
        return ctx.default_return_type  # type: ignore[no-any-return]
    arguments = [leaf for group in ctx.arg_types for t in group for leaf in _carried(t, names, DEPTH)]
    resources = constant_resources(ctx.api, call_argument(stored, "axis_resources", None)) or {}
    mapped = vmap_placement(names, resources, arguments)
    if not mapped:
        return ctx.default_return_type  # type: ignore[no-any-return]
    change = partial(_placed, plugin, ctx, names, mapped)
    return leaves(plugin, ctx.default_return_type, change, DEPTH, read_only=False)


def _mapped_names(api: Any, stored: CallExpr) -> tuple[str, ...]:
    """The literal or constant ``axis`` of the stored ``tx.vmap`` call, as a tuple of names (empty: unknown)."""
    axis = constant_value(api, call_argument(stored, "axis", 1))
    listed = [axis] if isinstance(axis, str) else list(axis) if isinstance(axis, (list, tuple)) else []
    return tuple(listed) if listed and all(isinstance(n, str) for n in listed) else ()


def _placed(plugin: TypedXmapPlugin, ctx: Any, names: tuple[str, ...], mapped: Placement, typ: Type) -> Type | None:
    """A result leaf (a NamedArray carrying the mapped axes) with them placed by ``mapped``."""
    proper = get_proper_type(typ)
    shape = decode(typ)
    if not (isinstance(proper, Instance) and proper.type.fullname == NAMED_ARRAY):
        return None
    if shape is None or shape.named is None or not set(names) <= set(shape.named):
        return typ
    own = {n: m for n, m in shape.placement.items() if n not in names}
    return vmapped_leaf(plugin, ctx, own, typ, mapped)
