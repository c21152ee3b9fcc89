"""Placement of indexing by a literal dict (``x[{"seq": 0}]``, a gather ``emb[{"vocab": tokens}]``) and of
``x.at[...].set(v)`` updates, hooks wrapped as ``_placement``'s: the axes not indexed keep their placements,
a gather's index arrays place the axes they add, and an update is placed as its operand.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mypy.nodes import CallExpr, DictExpr, Expression, IndexExpr, MemberExpr, NameExpr, OpExpr, StrExpr
from mypy.types import Instance, LiteralType, Type, get_proper_type

from ..._algebra import NamedShapeError, gather_placement, update_placement
from .._core._encoding import carries_placement, decode
from .._core._support import label, receiver_expr, report
from ._indexing import bound_key
from ._merges import rebound, settled
from ._placement import Hook, _item_shape, _name, _placed_as, note_collectives
from ._placement_rules import _axes

if TYPE_CHECKING:
    from ._protocols import TypedXmapPlugin

__all__ = [
    "placing_index",
    "placing_update",
]


def placing_index(plugin: TypedXmapPlugin, hook: Hook) -> Hook:
    """``x[{"seq": 0}]``, ``x[{"seq": slice(0, 4)}]``, ``emb[{"vocab": tokens}]`` with a literal dict (or one
    bound once): the axes it does not index keep their placements, an indexed or sliced axis's is unknown, and
    a gather's index array places the axes it adds (``gather_placement``: a clash with a kept axis leaves both
    unknown, a ``reshard`` noted; a conflict among index arrays is reported)."""

    def placed(ctx: Any) -> Type:
        result = hook(ctx)
        if not ctx.args or len(ctx.args[0]) != 1:
            return result
        key = bound_key(ctx, ctx.args[0][0])
        if not isinstance(key, DictExpr) or not all(isinstance(k, StrExpr) for k, _ in key.items):
            return result
        placed = [v for _, v in key.items if (t := ctx.api.lookup_type_or_none(v)) and carries_placement(t)]
        if not carries_placement(ctx.type) and not placed and not rebound(ctx.api, receiver_expr(ctx.context)):
            return result
        indices = [s for _, v in key.items if (s := _item_shape(ctx.api, v)) is not None]
        receiver, shape = decode(ctx.type), decode(result)
        if receiver is None or shape is None or shape.named is None or shape.scalar:
            return result
        receiver = settled(ctx.api, receiver_expr(ctx.context), receiver)
        indexed = {k.value for k, _ in key.items if isinstance(k, StrExpr)}
        looked_up = [k.value for k, v in key.items if isinstance(k, StrExpr) and _is_index_array(ctx.api, v)]
        picked = [k.value for k, v in key.items if isinstance(k, StrExpr) and _is_scalar_index(ctx.api, v)]
        sliced = [k.value for k, v in key.items if isinstance(k, StrExpr) and _is_part_slice(ctx.api, v)]
        try:
            placements = [s.placement for s in indices]
            operation = f"{label(receiver_expr(ctx.context), 'x')}[{_key_text(key)}]"
            axes = _axes([receiver, *indices])
            found = gather_placement(
                list(shape.named),
                receiver.placement,
                indexed,
                placements,
                operation=operation,
                looked_up=looked_up,
                picked=picked,
                sliced=sliced,
                axes=axes,
            )
        except NamedShapeError as error:
            report(ctx.api, error, ctx.context)
            return result
        note_collectives(ctx, found, receiver_expr(ctx.context))
        cut = any(receiver.placement.get(n) for n in sliced)  # a split axis cut short: no transpose known
        exprs, labels = [receiver_expr(ctx.context)], [label(receiver_expr(ctx.context), "x")]
        rule = "slice" if cut else "index"
        plugin.backward.record(ctx, rule, shape, [receiver], labels, exprs, found.placement, operation)
        return _placed_as(plugin, result, found)

    return placed


def _key_text(key: DictExpr) -> str:
    """How messages show a literal dict key: ``{'seq': i - 1}`` (an index shown by name, number, arithmetic or
    slice of those, else ``...``), so that two indexings of one value on one line read apart (mypy drops a repeated
    note of one line)."""
    return "{" + ", ".join(f"{k.value!r}: {_index_text(v)}" for k, v in key.items if isinstance(k, StrExpr)) + "}"


def _index_text(value: Expression) -> str:
    if isinstance(value, OpExpr):
        return f"{_index_text(value.left)} {value.op} {_index_text(value.right)}"
    if isinstance(value, CallExpr) and isinstance(value.callee, NameExpr) and value.callee.name == "slice":
        return f"slice({', '.join(_index_text(a) for a in value.args)})"
    return label(value, "...")


def _is_index_array(api: Any, value: Expression) -> bool:
    """Whether an index value is an array of indices with named axes (a gather), not an int, a slice or a
    scalar."""
    typ = api.lookup_type_or_none(value)
    shape = decode(typ) if typ is not None else None
    return shape is not None and bool(shape.named)


def _is_part_slice(api: Any, value: Expression) -> bool:
    """Whether an index value is a slice that may cut its axis short: not ``slice(None)`` (or ``slice()``)."""
    proper = get_proper_type(api.lookup_type_or_none(value))
    if not isinstance(proper, Instance) or proper.type.fullname != "builtins.slice":
        return False
    return not (isinstance(value, CallExpr) and all(isinstance(a, NameExpr) and a.name == "None" for a in value.args))


def _is_scalar_index(api: Any, value: Expression) -> bool:
    """Whether an index value is one index: an int, a ``jax.Array`` or a NamedArray without named axes."""
    typ = api.lookup_type_or_none(value)
    if typ is None:
        return False
    proper = get_proper_type(typ)
    if isinstance(proper, LiteralType):
        proper = proper.fallback
    if isinstance(proper, Instance) and proper.type.fullname in (
        "builtins.int",
        "jax.Array",
        "jax._src.basearray.Array",
    ):
        return True
    shape = decode(typ)
    return shape is not None and shape.named == {}


def placing_update(plugin: TypedXmapPlugin, hook: Hook) -> Hook:
    """``x.at[...].set(v)`` (``add``, ``mul``, ...): the result (``x``'s type) is placed as ``x`` is; an update
    placed otherwise is moved, a ``reshard`` noted (``update_placement``)."""

    def placed(ctx: Any) -> Type:
        result = hook(ctx)
        values = ctx.arg_types[0] if ctx.arg_types else []
        update = decode(values[0]) if len(values) == 1 else None
        shape = decode(result)
        if update is None or not update.placement or shape is None or shape.named is None or shape.scalar:
            return result
        expr = ctx.args[0][0] if ctx.args and ctx.args[0] else None
        update = settled(ctx.api, expr, update)
        operation = f"{_at_receiver(ctx)}.{_name(ctx)}(...)"
        found = update_placement(list(shape.named), shape.placement, update.placement, operation=operation)
        note_collectives(ctx, found)
        exprs = [receiver_expr(ctx.context), expr]
        labels = [_at_receiver(ctx).removesuffix(".at[...]"), "the update"]
        plugin.backward.record(ctx, "update", shape, [shape, update], labels, exprs, found.placement, operation)
        return _placed_as(plugin, result, found)

    return placed


def _at_receiver(ctx: Any) -> str:
    """How messages name ``x.at[...]`` in ``x.at[...].set(v)``: ``x``'s own text."""
    at = receiver_expr(ctx.context)  # x.at[...]
    base = receiver_expr(at) if isinstance(at, IndexExpr) else None  # x.at
    inner = base.expr if isinstance(base, MemberExpr) else None  # x
    return f"{label(inner, 'x')}.at[...]"
