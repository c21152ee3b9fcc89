"""Named contractions: the brace ``tnp.einsum`` and ``tnp.dot``.

The spec is parsed by ``parse_einsum`` and the operands checked by ``einsum_result``, the same code the
runtime uses: a missing braced axis is ``named-axis-missing``, a size clash ``named-axis-size``, a
positional letter count or size mismatch ``positional-shape``, a bad spec ``named-shape-syntax``. Named
axes the spec never mentions are carried through (broadcast by name).
"""

from __future__ import annotations

import string
from typing import TYPE_CHECKING, Sequence

from mypy.nodes import ListExpr, StrExpr, TupleExpr
from mypy.types import LiteralType, Type, get_proper_type

from .._algebra import einsum_result, parse_einsum
from .._algebra import NamedShapeError
from .._algebra import union_named_shapes
from ._encoding import Shape, decode
from ._support import arg, arg_expr, fallback, label, result_dtype, shapes_of
from ._support import report as report_error

if TYPE_CHECKING:
    from mypy.nodes import Context, Expression
    from mypy.plugin import FunctionContext

    from . import TypedXmapPlugin

__all__ = ["dot_hook", "einsum_hook"]


def _literal_str(expr: Expression | None, types: Sequence[Type]) -> str | None:
    if isinstance(expr, StrExpr):
        return expr.value
    if len(types) == 1:
        proper = get_proper_type(types[0])
        if isinstance(proper, LiteralType) and isinstance(proper.value, str):
            return proper.value
    return None


def _contract(
    plugin: TypedXmapPlugin, api: object, spec_text: str, shapes: Sequence[Shape], labels: Sequence[str],
    context: Context, display: str | None = None,
) -> Type:
    """``display`` names the operation in messages when it is not an einsum call (``tnp.dot``)."""
    dtype = result_dtype(shapes)

    def report(api: object, error: NamedShapeError, context: Context) -> None:
        if display is not None:
            error = type(error)(str(error).replace(f"einsum {spec_text!r}", display))
        report_error(api, error, context)

    try:
        spec = parse_einsum(spec_text)
    except NamedShapeError as error:
        report(api, error, context)
        return plugin.types.array(dtype, None, None)
    if any(s.named is None for s in shapes):
        return plugin.types.array(dtype, None, None)
    known_rank = all(s.positional is not None for s in shapes) and len(shapes) == len(spec.inputs)
    positional = [
        s.positional if s.positional is not None else (None,) * len(op.letters)
        for s, op in zip(shapes, spec.inputs)
    ] if len(shapes) == len(spec.inputs) else [s.positional or () for s in shapes]
    try:
        result = einsum_result(
            spec, [s.named for s in shapes], positional, operands=labels  # type: ignore[misc]
        )
    except NamedShapeError as error:
        report(api, error, context)
        return plugin.types.array(dtype, None, None)
    where = display or f"einsum {spec_text!r}"
    plugin.resources.check_value(api, result.named_shape, where, context)
    return plugin.types.array(dtype, result.named_shape, result.positional_shape if known_rank else None)


def einsum_hook(plugin: TypedXmapPlugin, ctx: FunctionContext) -> Type:
    spec_text = _literal_str(arg_expr(ctx, "spec", 0), arg(ctx, "spec", 0))
    operand_types = arg(ctx, "operands", 1)
    shapes = shapes_of(operand_types)
    if spec_text is None or shapes is None or any(s.scalar for s in shapes):
        return fallback(ctx, operand_types)
    exprs = ctx.args[1] if len(ctx.args) > 1 else []
    labels = [label(e, f"operand {i}") for i, e in enumerate(exprs)] or None
    return _contract(plugin, ctx.api, spec_text, shapes, labels or [f"operand {i}" for i in range(len(shapes))],
                     ctx.context)


def _axis_names(expr: Expression | None) -> list[str] | None:
    if isinstance(expr, StrExpr):
        return [expr.value]
    if isinstance(expr, (TupleExpr, ListExpr)) and all(isinstance(i, StrExpr) for i in expr.items):
        return [i.value for i in expr.items]  # type: ignore[attr-defined]
    return None


def dot_hook(plugin: TypedXmapPlugin, ctx: FunctionContext) -> Type:
    """``tnp.dot(x, y, axis=names)``: the einsum ``'{names},{names}->'`` plus positional dims kept;
    ``axis=None``: numpy's dot of the positional dims, named axes broadcast by name."""
    types = arg(ctx, "x", 0) + arg(ctx, "y", 1)
    shapes = shapes_of(types)
    if shapes is None or len(shapes) != 2 or all(s.scalar for s in shapes):
        return fallback(ctx, types)
    labels = [label(arg_expr(ctx, "x", 0), "x"), label(arg_expr(ctx, "y", 1), "y")]
    axis_expr = arg_expr(ctx, "axis")
    if axis_expr is None or (hasattr(axis_expr, "fullname") and axis_expr.fullname == "builtins.None"):
        return _positional_dot(plugin, ctx, shapes, labels)
    names = _axis_names(axis_expr)
    if names is None:
        return plugin.types.array(result_dtype(shapes), None, None)
    ranks = [len(s.positional) if s.positional is not None else 0 for s in shapes]
    xl, yl = string.ascii_letters[:ranks[0]], string.ascii_letters[ranks[0]:ranks[0] + ranks[1]]
    braces = "{" + ",".join(names) + "}"
    shown = repr(names[0]) if isinstance(axis_expr, StrExpr) else repr(tuple(names))
    result = _contract(
        plugin, ctx.api, f"{xl}{braces},{yl}{braces}->{xl}{yl}", shapes, labels, ctx.context,
        f"tnp.dot({labels[0]}, {labels[1]}, axis={shown})",
    )
    decoded = decode(result)
    if decoded is not None and any(s.positional is None for s in shapes):
        return plugin.types.array(decoded.dtype, decoded.named, None)  # positional dims unknown
    return result


def _positional_dot(plugin: TypedXmapPlugin, ctx: FunctionContext, shapes: list[Shape], labels: list[str]) -> Type:
    dtype = result_dtype(shapes)
    if any(s.named is None for s in shapes):
        return plugin.types.array(dtype, None, None)
    try:
        named = union_named_shapes([s.named for s in shapes], operation="tnp.dot", operands=labels)  # type: ignore[misc]
    except NamedShapeError as error:
        report(ctx.api, error, ctx.context)
        return plugin.types.array(dtype, None, None)
    x, y = (s.positional for s in shapes)
    positional = None
    if x is not None and y is not None:
        if not x or not y:
            positional = x or y
        elif len(y) == 1:
            positional = x[:-1]
        else:
            positional = x[:-1] + y[:-2] + y[-1:]
    plugin.resources.check_value(ctx.api, named, "tnp.dot", ctx.context)
    return plugin.types.array(dtype, named, positional)
