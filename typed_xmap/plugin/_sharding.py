"""``tx.shard(x, {...})`` and ``tx.constrain(x, {...})`` with a literal mapping: the axis-resource conflict
rule (``resource_conflicts``) on ``x``'s named axes, as at run time (``AxisResourceConflict``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mypy.types import Type

from .._algebra import NamedShapeError, conflict_error, normalize_axis_resources, resource_conflicts
from ._encoding import decode, describe
from ._literals import UNKNOWN, literal_value
from ._support import arg, arg_expr, label, report

if TYPE_CHECKING:
    from mypy.plugin import FunctionContext

    from ._protocols import TypedXmapPlugin

__all__ = ["SHARDING_NAMES", "sharding_hook"]

SHARDING_NAMES = {
    "typed_xmap._ops._sharding.shard": "tx.shard",
    "typed_xmap.shard": "tx.shard",
    "typed_xmap._ops._sharding.constrain": "tx.constrain",
    "typed_xmap.constrain": "tx.constrain",
}


def sharding_hook(plugin: TypedXmapPlugin, name: str, ctx: FunctionContext) -> Type:
    types = arg(ctx, "x", 0)
    shape = decode(types[0]) if len(types) == 1 else None
    value = literal_value(arg_expr(ctx, "axis_resources", 1))
    if shape is None or shape.named is None or shape.scalar or value is UNKNOWN or not isinstance(value, dict):
        return ctx.default_return_type
    try:
        resources = normalize_axis_resources(value)
    except NamedShapeError as error:
        report(ctx.api, error, ctx.context)
        return ctx.default_return_type
    conflicts = resource_conflicts(list(shape.named), resources)
    if conflicts:
        where = f"{name}({label(arg_expr(ctx, 'x', 0), 'x')}, ...) (a value with axes {describe(shape.named)})"
        report(ctx.api, conflict_error(conflicts[0], where), ctx.context)
    return ctx.default_return_type
