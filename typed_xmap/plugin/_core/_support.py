"""Helpers the checker-phase hooks share: argument access, labels, reporting, result types."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from mypy.nodes import (
    ARG_POS,
    CallExpr,
    Expression,
    IndexExpr,
    IntExpr,
    MemberExpr,
    NameExpr,
    OpExpr,
    StrExpr,
    UnaryExpr,
)
from mypy.types import AnyType, Type, TypeOfAny, get_proper_type

from ..._algebra import GROUP_PREFIX, MARKERS, ErrorKind, NamedShapeError, promote_dtypes
from ._codes import code_for, one_line
from ._encoding import Shape, decode, has_group
from ._messages import dtype_marker

if TYPE_CHECKING:
    from mypy.errorcodes import ErrorCode
    from mypy.nodes import Context
    from mypy.plugin import FunctionContext, MethodContext

    CallContext = FunctionContext | MethodContext

__all__ = [
    "arg",
    "arg_expr",
    "call_argument",
    "certain_error",
    "fail",
    "fallback",
    "label",
    "named_operand",
    "operands",
    "operation_text",
    "receiver_expr",
    "report",
    "result_dtype",
    "shapes_of",
]


def arg(ctx: CallContext, name: str, position: int | None = None) -> list[Type]:
    """The actual types passed for the formal parameter ``name`` (or at ``position``)."""
    if name in ctx.callee_arg_names:
        return ctx.arg_types[ctx.callee_arg_names.index(name)]
    if position is not None and position < len(ctx.arg_types):
        return ctx.arg_types[position]
    return []


def arg_expr(ctx: CallContext, name: str, position: int | None = None) -> Expression | None:
    if name in ctx.callee_arg_names:
        exprs = ctx.args[ctx.callee_arg_names.index(name)]
    elif position is not None and position < len(ctx.args):
        exprs = ctx.args[position]
    else:
        return None
    return exprs[0] if len(exprs) == 1 else None


def call_argument(call: CallExpr, name: str, position: int | None = None) -> Expression | None:
    """The argument a call expression passes as ``name``: by keyword, or at ``position`` (positional)."""
    for index, (kind, arg_name, value) in enumerate(zip(call.arg_kinds, call.arg_names, call.args, strict=True)):
        if arg_name == name or (kind == ARG_POS and index == position):
            return value
    return None


def label(expr: Expression | None, default: str) -> str:
    """How messages name an operand: its source name when it is a name, else ``default``."""
    if isinstance(expr, NameExpr):
        return expr.name
    if isinstance(expr, MemberExpr):
        inner = label(expr.expr, "")
        return f"{inner}.{expr.name}" if inner else default
    if isinstance(expr, CallExpr):
        inner = label(expr.callee, "")
        return f"{inner}(...)" if inner else default
    if isinstance(expr, IndexExpr) and isinstance(expr.index, StrExpr):  # a container's field: p['w_in']
        inner = label(expr.base, "")
        return f"{inner}[{expr.index.value!r}]" if inner else default
    if isinstance(expr, (IntExpr, StrExpr)):
        return repr(expr.value)
    if isinstance(expr, UnaryExpr) and isinstance(expr.expr, IntExpr):
        return f"{expr.op}{expr.expr.value}"
    return default


def fail(api: Any, message: str, context: Context, code: ErrorCode | None = None, *, note: bool = False) -> None:
    """Report straight to mypy's error list, past any error watchers on it.

    mypy type-checks an operator or an overloaded call speculatively, under error watchers: an error there
    means "this variant does not apply" and turns the result into ``Any``. A named-shape error is not about
    which variant applies, so it must not go through them. A hook may run several times for one expression;
    mypy drops the identical repeats.
    """
    errors = api.msg.errors
    watchers = getattr(errors, "_watchers", None)  # private in mypy 2.x: without it, report the plain way
    if watchers is not None:
        errors._watchers = []
    try:
        if note:
            api.msg.note(message, context, code=code)
        else:
            api.fail(message, context, code=code)
    finally:
        if watchers is not None:
            errors._watchers = watchers


def report(api: Any, error: NamedShapeError, context: Context) -> None:
    """A shared-algebra error as a mypy error, with the code its kind gets."""
    fail(api, one_line(error), context, code_for(error))


def certain_error(
    error: NamedShapeError, operands: Sequence[Mapping[str, object] | None], rule: Callable[..., object]
) -> NamedShapeError | None:
    """The error to report for ``error``, raised by ``rule(*operands)`` (each operand's named shape, a variadic
    group ``"*rest"`` an axis of its own, as every hook runs its rule); ``None`` where the operands' groups may
    hold what the operation needs, so the call may be right at run time: its result is unknown, never an error.

    The error belongs to the operand an axis is missing from (``error.axes``): the axis is put in the groups of
    the operands with a group that lack it (a group's own key the rule finds extra is taken out: the group may be
    empty) and the rule runs again, until it passes (``None``) or fails on an axis every operand with a group
    has: missing from an operand without a group, or a clash, an error whatever the groups hold. So an operand
    with a group next to one without is judged by each operand (``tnp.concatenate([a, b], "time")``, ``b`` lacking
    ``time``, is an error whatever ``a``'s group holds). An error of another kind on the rerun (a size clash) is
    reported where it names only axes the operands declare, none the groups were given (their sizes are not
    known): ``a: "*rest chan=3"`` and ``b: "time=5 chan=4"`` clash on ``chan`` whatever ``*rest`` holds. An error
    that names no axes is left unreported where an operand has a group. ``rule`` returns (anything) where it
    passes or cannot read an argument (``_names_first.rerun``)."""
    grouped = [o is not None and has_group(o) for o in operands]
    if error.kind is not ErrorKind.AXIS_MISSING or not any(grouped):
        return error
    shapes = [dict(o) if o is not None else {} for o in operands]
    added: set[str] = set()  # the axes given to the groups, each of a size not known
    current = error
    for _ in range(_TRIES):
        if current.kind is not ErrorKind.AXIS_MISSING:  # e.g. a size clash once the groups were given axes
            on_given = not current.axes or any(a in added or a.startswith(GROUP_PREFIX) for a in current.axes)
            return None if on_given else current  # on axes the operands declare (both sizes known): certain
        if not current.axes:
            return None
        for axis in current.axes:
            if axis.startswith(GROUP_PREFIX):
                for shape in shapes:
                    shape.pop(axis, None)  # the group may stand for no axis
                continue
            lacking = [i for i, shape in enumerate(shapes) if axis not in shape and grouped[i]]
            if not lacking:  # every operand with a group has it: the error is another operand's, or a clash
                return current
            for i in lacking:
                shapes[i][axis] = None  # the group holds it, of a size not known here
            added.add(axis)
        try:
            rule(*shapes)
        except NamedShapeError as again:
            current = again
        else:
            return None
    return None


_TRIES = 8
"""How many times ``certain_error`` gives the groups the axes the rule asks for before it reports nothing."""


def named_operand(ctx: CallContext, name: str, position: int, *, group: bool) -> Shape | None:
    """The argument's shape when it is a NamedArray whose named shape is known, else ``None``. With ``group``,
    a ``*rest`` group is an axis of its own, which the rule leaves alone (``certain_error`` decides an axis the
    call needs that the group may hold); without it (a kernel, whose other axes become the result's; a routing
    table) an argument with a group is not known."""
    types = arg(ctx, name, position)
    shape = decode(types[0]) if len(types) == 1 else None
    if shape is None or shape.scalar or shape.named is None or (not group and has_group(shape.named)):
        return None
    return shape


def shapes_of(types: Sequence[Type]) -> list[Shape] | None:
    """Decoded shapes, or ``None`` when one operand is not an array or scalar the plugin understands."""
    shapes = []
    for typ in types:
        shape = decode(typ)
        if shape is None:
            return None
        shapes.append(shape)
    return shapes


def fallback(ctx: CallContext, candidates: Sequence[Type], unknown: Type | None = None) -> Type:
    """The result when the plugin infers nothing: the stub's ``-> T`` (erased to Any by the signature hook)
    means "the type of the array argument", so give that (a plain array stays a plain array)."""
    if not isinstance(get_proper_type(ctx.default_return_type), AnyType):
        return ctx.default_return_type
    decoded = [decode(typ) for typ in candidates]
    if any(d is None for d in decoded) and any(d is not None and not d.scalar for d in decoded):
        # an operand the plugin cannot read (Any, a plain array) next to a NamedArray: a NamedArray of unknown
        # shape (gradual: fits every declared shape), never one operand's closed shape
        return unknown if unknown is not None else AnyType(TypeOfAny.special_form)
    for typ, shape in zip(candidates, decoded, strict=True):
        if shape is None or not shape.scalar:
            # the array argument; an operand the plugin cannot read (Any, a plain array) next to Python scalars
            # decides the result (``tnp.minimum(1.0, x)`` with ``x: Any`` is Any, never ``float``)
            return typ
    return candidates[0] if candidates else ctx.default_return_type


def result_dtype(shapes: Sequence[Shape]) -> Type:
    """The arrays' common dtype type: JAX's promotion of theirs where it is one of them whatever the flags
    (``i32`` with ``f32`` is ``f32``: the algebra's ``promote_dtypes``), else Any (left to run time)."""
    dtypes = [s.dtype for s in shapes if not s.scalar]
    if not dtypes:
        return AnyType(TypeOfAny.special_form)
    first = get_proper_type(dtypes[0])
    if all(get_proper_type(d) == first for d in dtypes[1:]):
        return dtypes[0]
    names = [_dtype_name(d) for d in dtypes]
    promoted = promote_dtypes(n for n in names if n is not None) if None not in names else None
    return next((d for d, n in zip(dtypes, names, strict=True) if n == promoted), AnyType(TypeOfAny.special_form))


def _dtype_name(dtype: Type) -> str | None:
    """The dtype name of an exact dtype type (``numpy.float32``: ``"float32"``), ``None`` for a kind or Any."""
    marker = dtype_marker(str(get_proper_type(dtype)))
    names = MARKERS[marker].names if marker in MARKERS else frozenset()
    return next(iter(names)) if len(names) == 1 else None


def receiver_expr(context: Any) -> Expression | None:
    """The receiver's expression of a method call, an operator (its left operand) or an index (its base)."""
    if isinstance(context, OpExpr):
        return context.left
    if isinstance(context, IndexExpr):
        return context.base
    callee = context.callee if isinstance(context, CallExpr) else None
    found = getattr(callee, "expr", None)
    return found if isinstance(found, Expression) else None


def operands(ctx: Any) -> tuple[list[Shape], list[str], list[Expression | None]]:
    """The NamedArray operands of known named shape of a call, an operator or a method (its receiver first):
    their shapes, how messages name them, their expressions."""
    types: list[Type] = []
    exprs: list[Expression | None] = []
    receiver = getattr(ctx, "type", None)
    context = ctx.context
    if receiver is not None:  # a method: the receiver first
        types.append(receiver)
        exprs.append(receiver_expr(context))
    for group_types, group_exprs in zip(ctx.arg_types, ctx.args, strict=False):
        for index, typ in enumerate(group_types):
            types.append(typ)
            exprs.append(group_exprs[index] if index < len(group_exprs) else None)
    shapes, labels, kept = [], [], []
    for position, (typ, expr) in enumerate(zip(types, exprs, strict=True)):
        shape = decode(typ)
        if shape is not None and not shape.scalar and shape.named is not None:
            shapes.append(shape)
            labels.append(label(expr, f"operand {position}"))
            kept.append(expr)
    return shapes, labels, kept


def operation_text(ctx: Any, labels: Sequence[str]) -> str:
    """How a message names the operation: ``x * w``, ``tnp.einsum(x, w)``, ``x.mean()`` (``labels``: the
    operands', a method's receiver first: it is named before the dot, not again among the arguments;
    ``(...).mean()`` where the receiver has no name)."""
    context = ctx.context
    if isinstance(context, OpExpr):
        return f"{label(context.left, 'x')} {context.op} {label(context.right, 'y')}"
    if isinstance(context, CallExpr):
        shown = list(labels)
        if getattr(ctx, "type", None) is not None and shown and shown[0] == label(receiver_expr(context), "operand 0"):
            shown = shown[1:]
        callee = context.callee  # a method of a receiver without a name: ``(...).mean()``
        name = label(callee, f"(...).{callee.name}" if isinstance(callee, MemberExpr) else "the call")
        return f"{name}({', '.join(shown)})"
    return "this operation"
