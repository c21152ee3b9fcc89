"""Broadcast by name: arithmetic and comparison operators on ``NamedArray_``, and tnp's elementwise
functions (``tnp.add``, ``tnp.exp``, ``tnp.where``, ``tnp.clip``, ...).

The result carries the union of the operands' named axes (``union_named_shapes``: one name, one size) and
the numpy broadcast of their positional dims (``broadcast_positional``). A ``jax.Array`` next to a NamedArray
is positional only, as at run time (no named axis; its dims broadcast with the positional ones, so the result's
positional dims are unknown, its named axes and their placements the NamedArrays'). An operand the plugin does
not understand (``Any``) makes the result's shape unknown, and nothing is reported.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from mypy.nodes import OpExpr
from mypy.types import AnyType, Instance, NoneType, Type, TypeOfAny, TypeVarType, get_proper_type

from ..._algebra import OPERATORS, NamedShapeError, OperatorKind, broadcast_positional, union_named_shapes
from .._core._encoding import Shape, decode
from .._core._support import fallback, label, report, result_dtype, shapes_of

if TYPE_CHECKING:
    from mypy.nodes import Context
    from mypy.plugin import FunctionContext, MethodContext

    from ._protocols import TypedXmapPlugin

__all__ = [
    "OPERATOR_METHODS",
    "SYMBOLS",
    "bound_operands",
    "broadcast",
    "elementwise_hook",
    "known_clash",
    "operator_hook",
]

SYMBOLS = {op.name: op.symbol for op in OPERATORS.values() if op.kind is not OperatorKind.UNARY}
"""The binary operators and comparisons of the table of operations (unary ones keep the stub's type)."""
COMPARISON_SYMBOLS = frozenset(op.symbol for op in OPERATORS.values() if op.kind is OperatorKind.COMPARISON)
OPERATOR_METHODS = frozenset(dunder for name in SYMBOLS for dunder in OPERATORS[name].dunders)
ELEMENTWISE_PARAMS = ("x", "x1", "x2", "condition", "y", "min", "max")
JAX_ARRAYS = frozenset({"jax._src.basearray.Array", "jax.Array"})


def _operand_shapes(types: Sequence[Type]) -> list[Shape] | None:
    """The operands' shapes (``None`` when one is not understood), a ``jax.Array`` next to a NamedArray read as
    positional only: no named axes, its dims (and dtype) unknown."""
    decoded = [decode(typ) for typ in types]
    if not any(shape is not None and not shape.scalar for shape in decoded):
        return shapes_of(types)  # no NamedArray: a jax.Array stays as the stub types it
    shapes = []
    for typ, shape in zip(types, decoded, strict=True):
        proper = get_proper_type(typ)
        if shape is not None:
            shapes.append(shape)
        elif isinstance(proper, Instance) and proper.type.fullname in JAX_ARRAYS:
            shapes.append(Shape(AnyType(TypeOfAny.special_form), {}, None))
        else:
            return None
    return shapes


def _declared_dtype(default: Type) -> Type | None:
    """The dtype the stub's return type declares (``bool`` for comparisons), if it declares one."""
    shape = decode(default)
    if shape is None or isinstance(get_proper_type(shape.dtype), AnyType):
        return None
    return shape.dtype


def bound_operands(types: Sequence[Type]) -> tuple[TypeVarType | None, list[Type]]:
    """The one TypeVar bound to a NamedArray type among the operands (``A = TypeVar("A",
    bound=tx.AnyNamedArray)``), and the operand types with it read as its bound."""
    found: TypeVarType | None = None
    resolved: list[Type] = []
    for typ in types:
        proper = get_proper_type(typ)
        if isinstance(proper, TypeVarType) and decode(proper.upper_bound) is not None:
            if found is not None and found.id != proper.id:
                return None, list(types)  # two TypeVars: the result is neither
            found = proper
            resolved.append(proper.upper_bound)
        else:
            resolved.append(typ)
    return found, resolved


def _keep_type_variable(variable: TypeVarType | None, operands: Sequence[Type], result: Type, default: Type) -> Type:
    """``x * s`` with ``x: A`` is ``A`` when the result's named shape is ``x``'s: the other operands are
    scalars, ``A`` itself or of unknown named shape (``x / tnp.sqrt(tnp.sum(x * x))``: gradual, never a false
    error), or add no axis to ``A``'s bound. Not for comparisons (their dtype is bool)."""
    if variable is None or _declared_dtype(default) is not None:
        return result
    others = [decode(t) for t in operands if get_proper_type(t) != variable]
    if all(shape is not None and (shape.scalar or shape.named is None) for shape in others):
        return variable
    bound, found = decode(variable.upper_bound), decode(result)
    if bound is not None and found is not None and bound.named is not None and bound.named == found.named:
        return variable
    return result


def broadcast(
    plugin: TypedXmapPlugin,
    api: object,
    shapes: Sequence[Shape],
    labels: Sequence[str],
    operation: str,
    context: Context,
    default: Type,
    dtype_from: Sequence[Shape] | None = None,
) -> Type:
    """The type of an elementwise result; reports a size clash or positional mismatch."""
    dtype = _declared_dtype(default) or result_dtype(shapes if dtype_from is None else dtype_from)
    named_shapes = [s.named for s in shapes if s.named is not None]
    if len(named_shapes) != len(shapes):
        known_clash(api, shapes, labels, operation, context)
        return plugin.types.array(dtype, None, None)
    try:
        named = union_named_shapes(named_shapes, operation=operation, operands=labels)
    except NamedShapeError as error:
        report(api, error, context)
        return plugin.types.array(dtype, None, None)
    positional = None
    positional_shapes = [s.positional for s in shapes if s.positional is not None]
    if len(positional_shapes) == len(shapes):
        try:
            positional = broadcast_positional(positional_shapes, operation=operation, operands=labels)
        except NamedShapeError as error:
            report(api, error, context)
    plugin.resources.check_value(api, named, operation, context)
    return plugin.types.array(dtype, named, positional)


def known_clash(
    api: object, shapes: Sequence[Shape | None], labels: Sequence[str], operation: str, context: Context
) -> None:
    """Where one operand's named shape is unknown (``Any``, a plain array, ``tx.AnyNamedArray``), the result's
    is too, but the operands whose named shapes are known still meet by name: two of them giving one axis two
    sizes is reported (an unknown operand adds axes, it never reconciles two sizes; nor does a ``*rest`` group:
    it stands for axes not listed, whose sizes are unknown, so only two listed sizes can clash)."""
    if len(labels) != len(shapes):  # operands passed as ``*args``: named by position
        labels = [f"operand {i}" for i in range(len(shapes))]
    known = [(s.named, name) for s, name in zip(shapes, labels, strict=True) if s is not None and s.named is not None]
    if len(known) < 2:
        return
    try:
        union_named_shapes([n for n, _ in known], operation=operation, operands=[name for _, name in known])
    except NamedShapeError as error:
        report(api, error, context)


def operator_hook(plugin: TypedXmapPlugin, method: str, ctx: MethodContext) -> Type:
    """``x + y``, ``x < y``, ``2.0 * x`` (mypy calls ``__rmul__`` on the array for the last one)."""
    if len(ctx.arg_types) != 1 or len(ctx.arg_types[0]) != 1:
        return ctx.default_return_type
    reflected = method.startswith("__r") and method[3:-2] in SYMBOLS
    symbol = SYMBOLS[method[3:-2] if reflected else method[2:-2]]
    variable, (ours, other) = bound_operands([ctx.type, ctx.arg_types[0][0]])
    shapes = _operand_shapes([other, ours] if reflected else [ours, other])
    if shapes is None:
        return ctx.default_return_type
    expr = ctx.context
    if isinstance(expr, OpExpr):
        labels = [label(expr.left, "the left operand"), label(expr.right, "the right operand")]
    else:
        labels = ["the left operand", "the right operand"]
    operation = f"{labels[0]} {symbol} {labels[1]}"
    # the stub's own dtype only for comparisons (bool); an arithmetic overload's ``Self`` is not the result's
    declared = (
        ctx.default_return_type if symbol in COMPARISON_SYMBOLS else plugin.types.array(plugin.types.any(), None, None)
    )
    result = broadcast(plugin, ctx.api, shapes, labels, operation, ctx.context, declared)
    return _keep_type_variable(variable, [ctx.type, ctx.arg_types[0][0]], result, declared)


def elementwise_hook(plugin: TypedXmapPlugin, name: str, ctx: FunctionContext) -> Type:
    """``tnp.exp(x)``, ``tnp.add(x, y)``, ``tnp.where(c, x, y)``, ``tnp.clip(x, 0, 1)``."""
    types: list[Type] = []
    labels: list[str] = []
    for index, (formal, actuals, exprs) in enumerate(zip(ctx.callee_arg_names, ctx.arg_types, ctx.args, strict=False)):
        if formal is not None and formal not in ELEMENTWISE_PARAMS:
            continue  # keyword options (**kwargs)
        for typ, expr in zip(actuals, exprs, strict=False):
            if isinstance(get_proper_type(typ), NoneType):
                continue
            types.append(typ)
            labels.append(label(expr, formal or f"operand {index}"))
    variable, resolved = bound_operands(types)
    shapes = _operand_shapes(resolved)
    values_only = _operand_shapes(resolved[1:]) if shapes is None and name == "where" else None
    if values_only and not all(s.scalar for s in values_only):
        # a condition the plugin cannot read (Any, a plain array): the values meet by name and decide the result
        result = broadcast(plugin, ctx.api, values_only, labels[1:], "tnp.where", ctx.context, ctx.default_return_type)
        return _keep_type_variable(variable, types[1:], result, ctx.default_return_type)
    if shapes is None:
        known_clash(ctx.api, [decode(t) for t in resolved], labels, f"tnp.{name}", ctx.context)
    if not shapes or all(s.scalar for s in shapes):
        candidates = types[1:] if name == "where" else types  # where's condition is not its value
        return fallback(ctx, candidates, plugin.types.array(plugin.types.any(), None, None))
    values = shapes[1:] if name == "where" else shapes  # where's condition does not decide the dtype
    result = broadcast(plugin, ctx.api, shapes, labels, f"tnp.{name}", ctx.context, ctx.default_return_type, values)
    return _keep_type_variable(variable, types, result, ctx.default_return_type)
