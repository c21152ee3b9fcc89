"""Named contractions: the brace ``tnp.einsum`` and ``tnp.dot``.

The spec is parsed by ``parse_einsum`` and the operands checked by ``einsum_result``, the same code the
runtime uses: a missing braced axis is ``named-axis-missing``, a size clash ``named-axis-size``, a
positional letter count or size mismatch ``positional-shape``, a bad spec ``named-shape-syntax``. Named
axes the spec never mentions are carried through (broadcast by name).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from mypy.nodes import StrExpr
from mypy.types import LiteralType, Type, get_proper_type

from ..._algebra import EinsumResult, NamedShapeError, Size, dot_operation, dot_spec, einsum_result, parse_einsum
from .._core._constants import flow_value
from .._core._encoding import Shape, decode
from .._core._literals import UNKNOWN
from .._core._support import arg, arg_expr, certain_error, fallback, label, report, result_dtype, shapes_of
from ._broadcast import broadcast, known_clash
from ._structure import with_preferred_dtype

if TYPE_CHECKING:
    from mypy.nodes import Context, Expression
    from mypy.plugin import FunctionContext

    from ._protocols import TypedXmapPlugin

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
    plugin: TypedXmapPlugin,
    api: object,
    spec_text: str,
    shapes: Sequence[Shape],
    labels: Sequence[str],
    context: Context,
    operation: str | None = None,
) -> Type:
    """``operation`` names the call in messages when it is not an einsum (``tnp.dot``)."""
    dtype = result_dtype(shapes)
    try:
        spec = parse_einsum(spec_text)
    except NamedShapeError as error:
        report(api, error, context)
        return plugin.types.array(dtype, None, None)
    named_shapes = [s.named for s in shapes]
    if any(n is None for n in named_shapes):
        known_clash(api, shapes, labels, operation or f"einsum {spec_text!r}", context)
        return plugin.types.array(dtype, None, None)
    known_rank = all(s.positional is not None for s in shapes) and len(shapes) == len(spec.inputs)
    positional: list[Sequence[Size]] = (
        [
            s.positional if s.positional is not None else (None,) * len(op.letters)
            for s, op in zip(shapes, spec.inputs, strict=True)
        ]
        if len(shapes) == len(spec.inputs)
        else [s.positional or () for s in shapes]
    )

    def rule(*named: Mapping[str, Size]) -> EinsumResult:
        return einsum_result(spec, list(named), positional, operands=labels, operation=operation)

    try:
        result = rule(*(n for n in named_shapes if n is not None))
    except NamedShapeError as error:  # unreported where an operand's ``*rest`` group may hold what it lacks
        certain = certain_error(error, named_shapes, rule)
        if certain is not None:
            report(api, certain, context)
        return plugin.types.array(dtype, None, None)
    where = operation or f"einsum {spec_text!r}"
    plugin.resources.check_value(api, result.named_shape, where, context)
    return plugin.types.array(dtype, result.named_shape, result.positional_shape if known_rank else None)


def einsum_hook(plugin: TypedXmapPlugin, ctx: FunctionContext) -> Type:
    return with_preferred_dtype(plugin, ctx, _einsum(plugin, ctx))


def _einsum(plugin: TypedXmapPlugin, ctx: FunctionContext) -> Type:
    spec_text = _literal_str(arg_expr(ctx, "spec", 0), arg(ctx, "spec", 0))
    operand_types = arg(ctx, "operands", 1)
    shapes = shapes_of(operand_types)
    if spec_text is None or shapes is None or any(s.scalar for s in shapes):
        if spec_text is not None:  # the spec alone shows a typo (an output axis no operand lists)
            try:
                parse_einsum(spec_text)
            except NamedShapeError as error:
                report(ctx.api, error, ctx.context)
            else:  # the operands it reads still meet by name
                known = [decode(t) for t in operand_types]
                known_clash(ctx.api, known, _labels(ctx, len(known)), f"einsum {spec_text!r}", ctx.context)
        return fallback(ctx, operand_types, plugin.types.array(plugin.types.any(), None, None))
    return _contract(plugin, ctx.api, spec_text, shapes, _labels(ctx, len(shapes)), ctx.context)


def _labels(ctx: FunctionContext, count: int) -> list[str]:
    """How messages name the einsum's operands: their expressions, else ``operand 0``, ``operand 1``, ..."""
    exprs = ctx.args[1] if len(ctx.args) > 1 else []
    return [label(e, f"operand {i}") for i, e in enumerate(exprs)] or [f"operand {i}" for i in range(count)]


def _axis_names(axis: object) -> str | tuple[str, ...] | None:
    """A literal ``axis=`` of ``tnp.dot``: a name or a tuple/list of names."""
    if isinstance(axis, str):
        return axis
    if isinstance(axis, (tuple, list)) and all(isinstance(i, str) for i in axis):
        return tuple(axis)
    return None


def dot_hook(plugin: TypedXmapPlugin, ctx: FunctionContext) -> Type:
    """``tnp.dot(x, y, axis=names)``: the brace einsum the runtime computes (``dot_spec``): contract the named
    axes, keep the positional dims; ``axis=None``: numpy's dot of the positional dims, named axes broadcast."""
    return with_preferred_dtype(plugin, ctx, _dot(plugin, ctx))


def _dot(plugin: TypedXmapPlugin, ctx: FunctionContext) -> Type:
    types = arg(ctx, "x", 0) + arg(ctx, "y", 1)
    shapes = shapes_of(types)
    if shapes is None or len(shapes) != 2 or all(s.scalar for s in shapes):
        return fallback(ctx, types, plugin.types.array(plugin.types.any(), None, None))
    labels = [label(arg_expr(ctx, "x", 0), "x"), label(arg_expr(ctx, "y", 1), "y")]
    axis_expr = arg_expr(ctx, "axis")
    axis = flow_value(ctx.api, axis_expr) if axis_expr is not None else None
    names = _axis_names(axis)
    dtype = result_dtype(shapes)
    if axis is UNKNOWN or (axis is not None and names is None):
        return plugin.types.array(dtype, None, None)
    operation = dot_operation(labels[0], labels[1], axis)
    x, y = (s.positional for s in shapes)
    if names is not None:  # unknown ranks: contract as if rank 0; the result's positional dims stay unknown
        result = _contract(plugin, ctx.api, _dot_spec(x, y, names), shapes, labels, ctx.context, operation)
        decoded = decode(result)
        if decoded is not None and (x is None or y is None):
            return plugin.types.array(decoded.dtype, decoded.named, None)
        return result
    spec = dot_spec(len(x), len(y), None) if x is not None and y is not None else None
    if spec is not None:
        return _contract(plugin, ctx.api, spec, shapes, labels, ctx.context, operation)
    # a scalar positional part (the elementwise product) or unknown ranks: the named axes broadcast by name
    return broadcast(plugin, ctx.api, shapes, labels, operation, ctx.context, ctx.default_return_type)


def _dot_spec(x: Sequence[Size] | None, y: Sequence[Size] | None, names: str | tuple[str, ...]) -> str:
    spec = dot_spec(len(x) if x is not None else 0, len(y) if y is not None else 0, names)
    assert spec is not None  # named axes always make a spec
    return spec
