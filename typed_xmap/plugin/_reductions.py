"""Reductions by axis name: ``tnp.sum mean max min prod var std logsumexp all any argmax argmin`` and
``tnp.softmax``/``log_softmax`` (which keep the shape but need the axis).

``axis`` is a name, an int (a positional dim) or a tuple/list mixing both, written as a literal; ``None``
(the default) reduces the positional dims only, so named axes survive. The named part goes through
``reduce_named_shape``: naming an axis the value lacks is ``named-axis-missing``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mypy.nodes import Expression, IntExpr, ListExpr, NameExpr, StrExpr, TupleExpr, UnaryExpr
from mypy.types import Type

from .._algebra import NamedShapeError
from .._algebra import reduce_named_shape
from ._codes import NAMED_SHAPE_SYNTAX, POSITIONAL_SHAPE
from ._encoding import decode
from ._support import arg, arg_expr, fail, fallback, label, report

if TYPE_CHECKING:
    from mypy.plugin import FunctionContext

    from . import TypedXmapPlugin

__all__ = ["REDUCTIONS", "SHAPE_KEEPING", "reduction_hook"]

REDUCTIONS = frozenset(
    {"sum", "mean", "max", "min", "prod", "var", "std", "logsumexp", "all", "any", "argmax", "argmin"}
)
SHAPE_KEEPING = frozenset({"softmax", "log_softmax"})

_UNKNOWN = object()


def _axis_item(expr: Expression) -> str | int | object:
    if isinstance(expr, StrExpr):
        return expr.value
    if isinstance(expr, IntExpr):
        return expr.value
    if isinstance(expr, UnaryExpr) and expr.op == "-" and isinstance(expr.expr, IntExpr):
        return -expr.expr.value
    return _UNKNOWN


def parse_axis(expr: Expression | None) -> tuple[list[str], list[int] | None] | None:
    """``axis`` as (names, ints); ints is None for ``axis=None``; ``None`` when not a literal."""
    if expr is None or (isinstance(expr, NameExpr) and expr.fullname == "builtins.None"):
        return [], None
    items = expr.items if isinstance(expr, (TupleExpr, ListExpr)) else [expr]
    names: list[str] = []
    ints: list[int] = []
    for item in items:
        value = _axis_item(item)
        if value is _UNKNOWN:
            return None
        if isinstance(value, str):
            names.append(value)
        else:
            ints.append(value)  # type: ignore[arg-type]
    return names, ints


def _keepdims(expr: Expression | None) -> bool | None:
    if expr is None:
        return False
    if isinstance(expr, NameExpr) and expr.fullname in ("builtins.True", "builtins.False"):
        return expr.fullname == "builtins.True"
    return None


def reduction_hook(plugin: TypedXmapPlugin, name: str, ctx: FunctionContext) -> Type:
    types = arg(ctx, "x", 0)
    shape = decode(types[0]) if len(types) == 1 else None
    if shape is None or shape.scalar:
        return fallback(ctx, types)
    axis_expr = arg_expr(ctx, "axis", 1)
    parsed = parse_axis(axis_expr)
    dtype = decode(ctx.default_return_type)
    result_dtype = dtype.dtype if dtype is not None and name in ("argmax", "argmin", "all", "any") else shape.dtype
    if parsed is None:
        return plugin.types.array(result_dtype, None, None)
    names, ints = parsed
    source = axis_expr.value if isinstance(axis_expr, StrExpr) else None
    shown = repr(source) if source is not None else _source(names, ints)
    operation = f"tnp.{name}({label(ctx.args[0][0] if ctx.args and ctx.args[0] else None, 'x')}, axis={shown})"
    operand = label(ctx.args[0][0] if ctx.args and ctx.args[0] else None, "the operand")
    if len(set(names)) != len(names):
        fail(ctx.api, f"{operation}: an axis name is listed twice. Fix: list each axis once", ctx.context,
            code=NAMED_SHAPE_SYNTAX,
        )
        return plugin.types.array(result_dtype, None, None)
    named = shape.named
    if named is not None:
        try:
            reduced = reduce_named_shape(named, names, operation=operation, operand=operand)
        except NamedShapeError as error:
            report(ctx.api, error, ctx.context)
            return plugin.types.array(result_dtype, None, None)
        named = named if name in SHAPE_KEEPING else reduced
    positional = _reduce_positional(ctx, shape.positional, ints, operation, name)
    if name not in SHAPE_KEEPING and named is not None:
        plugin.resources.check_value(ctx.api, named, operation, ctx.context)
    return plugin.types.array(result_dtype, named, positional)


def _source(names: list[str], ints: list[int] | None) -> str:
    if ints is None and not names:
        return "None"
    items = [repr(n) for n in names] + [str(i) for i in ints or []]
    return items[0] if len(items) == 1 else "(" + ", ".join(items) + ")"


def _reduce_positional(
    ctx: FunctionContext, positional: tuple[int | None, ...] | None, ints: list[int] | None, operation: str,
    name: str,
) -> tuple[int | None, ...] | None:
    if positional is None:
        return None
    keepdims = _keepdims(arg_expr(ctx, "keepdims"))
    rank = len(positional)
    dims = list(range(rank)) if ints is None else ints
    for i in dims:
        if not -rank <= i < rank:
            fail(ctx.api, f"{operation}: positional axis {i} is out of range for a value with {rank} positional dims; "
                f"named axes are reduced by name, not by position. Fix: use an int in [{-rank}, {rank}) or the "
                f"axis name", ctx.context, code=POSITIONAL_SHAPE,
            )
            return None
    if name in SHAPE_KEEPING:
        return positional
    if keepdims is None:
        return None
    dropped = {i % rank for i in dims}
    if keepdims:
        return tuple(1 if i in dropped else s for i, s in enumerate(positional))
    return tuple(s for i, s in enumerate(positional) if i not in dropped)
