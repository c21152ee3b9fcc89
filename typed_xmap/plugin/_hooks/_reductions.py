"""Reductions by axis name: the ``REDUCTION``, ``INDEX_REDUCTION`` and ``SHAPE_KEEPING`` rows of the table
of operations (``tnp.sum ... argmax argmin``; ``tnp.softmax``/``log_softmax`` keep the shape but need the axis).

``axis`` is read as a literal value and checked by the algebra's rules, the runtime's own
(``split_axis``, ``single_axis``, ``positional_dims``, ``reduced_positional``): naming an axis the value
lacks is ``named-axis-missing`` (``reduce_named_shape``), a positional int out of range ``positional-shape``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mypy.nodes import Expression, NameExpr
from mypy.types import Type

from ..._algebra import (
    TNP_OPERATIONS,
    NamedShapeError,
    OpKind,
    ResultDType,
    Size,
    positional_dims,
    reduce_named_shape,
    reduced_positional,
    reduction_operation,
    single_axis,
    split_axis,
)
from .._core._constants import flow_value
from .._core._encoding import Shape, decode
from .._core._literals import UNKNOWN
from .._core._support import arg, arg_expr, certain_error, fallback, label, report
from ._broadcast import bound_operands

if TYPE_CHECKING:
    from mypy.plugin import FunctionContext

    from ._protocols import TypedXmapPlugin

__all__ = ["reduction_hook"]


def _keepdims(expr: Expression | None) -> bool | None:
    if expr is None:
        return False
    if isinstance(expr, NameExpr) and expr.fullname in ("builtins.True", "builtins.False"):
        return expr.fullname == "builtins.True"
    return None


def reduction_hook(plugin: TypedXmapPlugin, name: str, ctx: FunctionContext) -> Type:
    operation_row = TNP_OPERATIONS[name]
    types = arg(ctx, "x", 0)
    variable, resolved = bound_operands(types)  # ``x: A``: its axes checked on A's bound
    shape = decode(resolved[0]) if len(types) == 1 else None
    if shape is None or shape.scalar:
        return fallback(ctx, types, plugin.types.array(plugin.types.any(), None, None))
    if variable is not None:
        result = _reduced(plugin, name, ctx, shape)
        if operation_row.kind is OpKind.SHAPE_KEEPING:
            return variable
        decoded = decode(result)  # A may have more axes than its bound: what remains is unknown (gradual)
        return plugin.types.array(decoded.dtype, None, None) if decoded is not None else result
    return _reduced(plugin, name, ctx, shape)


def _reduced(plugin: TypedXmapPlugin, name: str, ctx: FunctionContext, shape: Shape) -> Type:
    operation_row = TNP_OPERATIONS[name]
    declared = decode(ctx.default_return_type)
    result_dtype = (
        declared.dtype if declared is not None and operation_row.dtype is not ResultDType.SAME else shape.dtype
    )
    axis_expr = arg_expr(ctx, "axis", 1)
    axis = flow_value(ctx.api, axis_expr) if axis_expr is not None else None
    if axis is UNKNOWN:
        return plugin.types.array(result_dtype, None, None)
    operand = label(ctx.args[0][0] if ctx.args and ctx.args[0] else None, "x")
    operation = reduction_operation(name, axis, operand)
    keeps_shape = operation_row.kind is OpKind.SHAPE_KEEPING
    try:
        if operation_row.kind is OpKind.INDEX_REDUCTION:
            axis = single_axis(axis, function=name, operation=operation)
        names, ints = split_axis(axis, operation=operation)
        named = shape.named
        if named is not None:
            reduced = reduce_named_shape(named, names, operation=operation, operand=operand)
            named = named if keeps_shape else reduced
        positional: tuple[Size, ...] | None = None
        if shape.positional is not None:
            dims = positional_dims(ints, shape.positional, operation=operation)
            keepdims = _keepdims(arg_expr(ctx, "keepdims"))
            if keeps_shape:
                positional = shape.positional
            elif keepdims is not None:
                positional = reduced_positional(shape.positional, dims, keepdims=keepdims)
    except NamedShapeError as error:  # unreported where the axis may be one a group ("*rest") stands for
        certain = certain_error(
            error,
            [shape.named],
            lambda named: reduce_named_shape(
                named, split_axis(axis, operation=operation)[0], operation=operation, operand=operand
            ),
        )
        if certain is not None:
            report(ctx.api, certain, ctx.context)
        return plugin.types.array(result_dtype, None, None)
    if not keeps_shape and named is not None:
        plugin.resources.check_value(ctx.api, named, operation, ctx.context)
    return plugin.types.array(result_dtype, named, positional)
