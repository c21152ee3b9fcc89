"""No silent unknowns: where a NamedArray's named shape becomes unknown, say so and why.

Every hook that types an array operation (``tnp``, ``tx``, the operators and methods, calls of annotated
functions) is wrapped here. When its result is a NamedArray of unknown named shape while none of its
NamedArray operands was unknown, that expression is where the shape *became* unknown: a note with the code
``named-shape-unknown`` (off by default; ``typed-xmap check --unknowns`` and a mypy config's
``enable_error_code`` turn it on) names the cause, the operand that is not a NamedArray or the argument the
checker could not read. An unknown carried on from an operand is not noted again: it was noted where it began.

An array operation the plugin cannot type is a NamedArray of unknown shape, never ``Any`` (so ``return x +
tnp.conv(...)`` is not ``no-any-return`` under ``--strict``). A number to a float literal's power
(``cfg.embed ** -0.5``) is a ``float``, not typeshed's ``Any``: ``w * Any`` is ``Any`` before any hook runs. For
the same reason numpy's float-valued ufuncs of Python numbers (``np.sqrt(fan_in)``, ``np.log(n)``) are
``np.float64`` (a ``float``), not numpy's ``Any``: ``w / np.sqrt(fan_in)`` keeps ``w``'s named shape and sizes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mypy.nodes import (
    ARG_POS,
    CallExpr,
    DictExpr,
    Expression,
    FloatExpr,
    IndexExpr,
    ListExpr,
    OpExpr,
    StrExpr,
    TupleExpr,
    UnaryExpr,
)
from mypy.types import AnyType, Instance, LiteralType, ProperType, TupleType, Type, TypeVarType, get_proper_type

from ..._algebra import GROUP_PREFIX
from .._core._codes import NAMED_SHAPE_UNKNOWN
from .._core._encoding import Shape, decode, has_group
from .._core._literals import UNKNOWN, literal_value
from .._core._support import fail, label, result_dtype
from ._lambdas import typed_by_its_call

if TYPE_CHECKING:
    from ._protocols import TypedXmapPlugin

__all__ = ["BARE_NOTE", "POWERS", "is_numpy_ufunc_call", "noting_unknowns", "power_hook", "shown", "ufunc_hook"]

POWERS = frozenset(f"builtins.{kind}.{dunder}" for kind in ("int", "float") for dunder in ("__pow__", "__rpow__"))
"""``n ** -0.5``: typeshed's ``Any`` (a negative base gives a complex), narrowed by ``power_hook``."""

Hook = Callable[[Any], Type]

BARE_NOTE = "named shape unknown: a bare NamedArray annotation (any dtype, any named shape)"


def _operands(ctx: Any) -> list[tuple[str | None, Type, Expression | None]]:
    """(formal name, type, expression) of every operand: a method's receiver first (formal ``None``)."""
    found: list[tuple[str | None, Type, Expression | None]] = []
    receiver = getattr(ctx, "type", None)
    if receiver is not None:
        context = ctx.context
        expr = context.left if isinstance(context, OpExpr) else context.base if isinstance(context, IndexExpr) else None
        if isinstance(context, CallExpr):
            expr = getattr(context.callee, "expr", None)
        found.append((None, receiver, expr))
    for index, (types, exprs) in enumerate(zip(ctx.arg_types, ctx.args, strict=False)):
        name = ctx.callee_arg_names[index] if index < len(ctx.callee_arg_names) else None
        for position, typ in enumerate(types):
            found.append((name or f"argument {index + 1}", typ, exprs[position] if position < len(exprs) else None))
    return found


def _unknown(proper: ProperType) -> bool:
    """A NamedArray of unknown named shape, or a tuple holding one (``tnp.top_k``'s pair)."""
    if isinstance(proper, TupleType):
        return any(_unknown(get_proper_type(item)) for item in proper.items)
    shape = decode(proper)
    return shape is not None and not shape.scalar and shape.named is None


def _unknown_inside(api: Any, exprs: list[Expression | None]) -> bool:
    """Whether a dict, list or tuple literal among ``exprs`` holds a NamedArray of unknown named shape
    (``x[{"step": t}]`` with ``t`` unknown), by the types the checker gave its items."""
    lookup = getattr(api, "lookup_type_or_none", None)
    stack = [e for e in exprs if isinstance(e, (DictExpr, ListExpr, TupleExpr))]
    while stack and lookup is not None:
        expr = stack.pop()
        items = [v for _, v in expr.items] if isinstance(expr, DictExpr) else list(expr.items)
        for item in items:
            if isinstance(item, (DictExpr, ListExpr, TupleExpr)):
                stack.append(item)
                continue
            typ = lookup(item)
            shape = decode(typ) if typ is not None else None
            if shape is not None and not shape.scalar and shape.named is None:
                return True
    return False


def _what(ctx: Any, fallback: str) -> str:
    """How the note names the operation: the call as written (``tnp.max_pool(...)``), ``x + y``, ``x[...]``."""
    context = ctx.context
    if isinstance(context, OpExpr):
        return f"{label(context.left, 'x')} {context.op} {label(context.right, 'y')}"
    if isinstance(context, IndexExpr):
        return f"{label(context.base, 'x')}[...]"
    if isinstance(context, CallExpr):
        return f"{label(context.callee, fallback)}(...)"
    return fallback


def _cause(operands: list[tuple[str | None, Type, Expression | None]], shapes: list[Shape | None]) -> str:
    """Why the result's named shape is unknown: an operand that meets a NamedArray but is not one, else the
    arguments the checker could not read as literals, else the operation itself."""
    meets_array = any(shape is not None and not shape.scalar for shape in shapes)
    for (_, _, expr), shape in zip(operands, shapes, strict=True):
        if shape is not None and shape.named is not None and has_group(shape.named):
            group = next(name for name in shape.named if name.startswith(GROUP_PREFIX))
            holds = "which may hold an axis this operation names"
            return f"its operand {shown(expr)} has the variadic group '{group}', {holds}"
    first = get_proper_type(operands[0][1]) if operands else None
    if shapes and shapes[0] is None and isinstance(first, (Instance, TypeVarType)) and not meets_array:
        # the value operated on (``tnp.zeros_like(model.w2)``, ``tnp.sum(x)`` with ``x: T``) is no array
        kind = first.type.fullname if isinstance(first, Instance) else ""
        if not kind.startswith(("builtins.", "numpy.", "jax.")):
            what = f"type {first.type.name}" if isinstance(first, Instance) else f"the type variable {first.name}"
            return f"its operand {shown(operands[0][2])} is of {what}, not a NamedArray"
    unread = []
    for (name, typ, expr), shape in zip(operands, shapes, strict=True):
        proper = get_proper_type(typ)
        positional = isinstance(proper, Instance) and proper.type.fullname.endswith(("Array", "ndarray"))
        array_like = positional or isinstance(proper, AnyType)
        if shape is None and array_like and meets_array:
            what = (
                f"a positional {proper.type.name}, not a NamedArray" if isinstance(proper, Instance) else "of type Any"
            )
            return f"its operand {shown(expr)} is {what}"
        readable = name is not None and not array_like and (shape is None or shape.scalar)
        if readable and expr is not None and literal_value(expr) is UNKNOWN:
            unread.append(f'"{name}" ({shown(expr)})')
    if unread:
        return f"the checker does not read {', '.join(unread)} as {'a literal' if len(unread) == 1 else 'literals'}"
    return "the checker infers no named shape for these arguments"


def shown(expr: Expression | None, limit: int = 60) -> str:
    """An argument as written, near enough: names, attributes, calls and literals, and the dicts, lists and
    tuples of them (``{"height": cfg.pool, "width": cfg.pool}``), cut at ``limit`` characters."""
    if isinstance(expr, DictExpr):
        text = "{" + ", ".join(f"{shown(k)}: {shown(v)}" for k, v in expr.items) + "}"
    elif isinstance(expr, (TupleExpr, ListExpr)):
        inner = ", ".join(shown(item) for item in expr.items)
        text = f"({inner})" if isinstance(expr, TupleExpr) else f"[{inner}]"
    elif isinstance(expr, StrExpr):
        text = f'"{expr.value}"'
    else:
        text = label(expr, "...")
    return text if len(text) <= limit else text[: limit - 3] + "..."


def noting_unknowns(plugin: TypedXmapPlugin, hook: Hook, name: str, *, declared: bool = False) -> Hook:
    """``hook`` (an array operation's, ``name`` its short name) whose unknown results are noted where they
    begin, and whose ``Any`` result for NamedArray operands is a NamedArray of unknown shape. ``declared``: the
    callee is the user's own annotated function (its declared return type may hold no named shape)."""

    def noted(ctx: Any) -> Type:
        plugin.containers.record(ctx.api)  # the module's containers are checked once it is type-checked
        result = hook(ctx)
        proper = get_proper_type(result)
        if not isinstance(proper, AnyType) and not _unknown(proper):
            return result  # the common case, decided without looking at the operands
        operands = _operands(ctx)
        shapes = [decode(typ) for _, typ, _ in operands]
        arrays = [s for s in shapes if s is not None and not s.scalar]
        if isinstance(proper, AnyType):
            if not arrays or not isinstance(get_proper_type(ctx.default_return_type), AnyType):
                return result
            result = plugin.types.array(result_dtype(arrays), None, None)  # unknown, never Any
        if any(s.named is None for s in arrays):
            return result  # carried on from an unknown operand (noted where it began)
        if _unknown_inside(ctx.api, [expr for _, _, expr in operands]):
            return result  # an index or a list of NamedArrays holding an unknown one: carried on too
        if any(typed_by_its_call(expr, typ) for _, typ, expr in operands):
            return result  # a lambda's parameter, typed by the lambda's call in another pass (_lambdas)
        if ctx.api.msg.errors.is_error_code_enabled(NAMED_SHAPE_UNKNOWN):
            cause = _cause(operands, shapes)
            if declared and _unknown(get_proper_type(ctx.default_return_type)):
                cause = "its declared return type has no named shape (a bare NamedArray)"
            fail(
                ctx.api,
                f"named shape unknown: {_what(ctx, name)}: {cause}",
                ctx.context,
                NAMED_SHAPE_UNKNOWN,
                note=True,
            )
        return result

    return noted


def power_hook(ctx: Any) -> Type:
    """``cfg.embed ** -0.5``, ``x ** 0.5``: a number to a float literal's power is a ``float`` (typeshed says
    ``Any``, as a negative base gives a complex; scales are not negative). mypy types ``w * Any`` as ``Any``
    without asking the plugin, so an ``Any`` scale would make ``w * cfg.embed ** -0.5`` an unknown shape."""
    context = ctx.context
    result: Type = ctx.default_return_type
    if not (isinstance(context, OpExpr) and context.op == "**" and isinstance(get_proper_type(result), AnyType)):
        return result
    exponent = context.right
    if isinstance(exponent, UnaryExpr) and exponent.op == "-":
        exponent = exponent.expr
    if not isinstance(exponent, FloatExpr):
        return result
    number: Type = ctx.api.named_generic_type("builtins.float", [])
    return number


FLOAT_UFUNCS = frozenset(
    [
        "sqrt",
        "cbrt",
        "exp",
        "exp2",
        "expm1",
        "log",
        "log2",
        "log10",
        "log1p",
        "sin",
        "cos",
        "tan",
        "arcsin",
        "arccos",
        "arctan",
        "sinh",
        "cosh",
        "tanh",
        "arcsinh",
        "arccosh",
        "arctanh",
        "deg2rad",
        "rad2deg",
        "degrees",
        "radians",
        "divide",
        "true_divide",
        "arctan2",
        "hypot",
        "logaddexp",
        "logaddexp2",
    ]
)
"""numpy's ufuncs whose value for Python ints and floats is a ``numpy.float64`` (``np.sqrt(4)`` is ``2.0``)."""
_UFUNC_CLASSES = ("._UFunc_Nin1_Nout1.__call__", "._UFunc_Nin2_Nout1.__call__")


def is_numpy_ufunc_call(fullname: str) -> bool:
    """Whether ``fullname`` is the call of a numpy ufunc of one or two operands (``np.sqrt(...)``)."""
    return fullname.startswith("numpy.") and fullname.endswith(_UFUNC_CLASSES)


def ufunc_hook(ctx: Any) -> Type:
    """``np.sqrt(fan_in)``: a float-valued ufunc (``FLOAT_UFUNCS``) of Python ints and floats only is a
    ``numpy.float64`` (numpy's stubs say ``Any``, and ``w / Any`` is ``Any`` before any hook runs); any
    other call keeps the stub's type."""
    result: Type = ctx.default_return_type
    receiver = get_proper_type(ctx.type)
    name = get_proper_type(receiver.args[0]) if isinstance(receiver, Instance) and receiver.args else None
    if not isinstance(get_proper_type(result), AnyType) or not isinstance(name, LiteralType):
        return result
    kinds = [kind for group in ctx.arg_kinds for kind in group]
    numbers = [get_proper_type(typ) for group in ctx.arg_types for typ in group]
    if name.value not in FLOAT_UFUNCS or not numbers or any(kind != ARG_POS for kind in kinds):
        return result  # out=, dtype=, where=: left as numpy types them
    if not all(_python_number(typ) for typ in numbers):
        return result
    try:
        number: Type = ctx.api.named_generic_type("numpy.float64", [])
    except Exception:  # an older numpy without the class: a float all the same
        number = ctx.api.named_generic_type("builtins.float", [])
    return number


def _python_number(typ: ProperType) -> bool:
    if isinstance(typ, LiteralType):
        typ = typ.fallback
    return isinstance(typ, Instance) and typ.type.fullname in ("builtins.int", "builtins.float")
