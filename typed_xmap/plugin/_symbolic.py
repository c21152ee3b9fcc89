"""Symbolic sizes through the hooks that keep axes by name: where operands meet (operators, elementwise
functions, einsum, a call's arguments) one name must have one size, and sizes that certainly differ
(``cfg.mlp`` vs ``cfg.mlp // 2``) are a ``named-axis-size`` error; the result keeps the operands' symbols for
the axes whose size it does not know. The rule is the algebra's (``meet_sizes``); the hooks compute the rest.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import TYPE_CHECKING, Any

from mypy.nodes import CallExpr, DictExpr, Expression, IndexExpr, OpExpr, StrExpr
from mypy.types import Type

from .._algebra import NamedShapeError, StaticSize, SymbolicSize, meet_sizes
from ._encoding import Shape, carries_symbols, decode
from ._sizes import named_value_sizes, with_symbols
from ._support import label, report

if TYPE_CHECKING:
    from ._protocols import TypedXmapPlugin

__all__ = ["indexed", "keeping", "meeting"]

Hook = Callable[[Any], Type]


def _operands(ctx: Any) -> tuple[list[Shape], list[str], list[Expression | None]]:
    types: list[Type] = []
    exprs: list[Expression | None] = []
    receiver = getattr(ctx, "type", None)
    context = ctx.context
    if receiver is not None:  # a method: the receiver first
        types.append(receiver)
        if isinstance(context, OpExpr):
            exprs.append(context.left)
        elif isinstance(context, IndexExpr):
            exprs.append(context.base)
        else:
            callee = context.callee if isinstance(context, CallExpr) else None
            exprs.append(getattr(callee, "expr", None))
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


def _has_symbols(ctx: Any) -> bool:
    """The fast test: does any operand's type carry a symbolic size (most calls: none)?"""
    receiver = getattr(ctx, "type", None)
    if receiver is not None and carries_symbols(receiver):
        return True
    return any(carries_symbols(t) for group in ctx.arg_types for t in group)


def _operation(ctx: Any, labels: list[str]) -> str:
    context = ctx.context
    if isinstance(context, OpExpr):
        return f"{label(context.left, 'x')} {context.op} {label(context.right, 'y')}"
    if isinstance(context, CallExpr):
        return f"{label(context.callee, 'the call')}({', '.join(labels)})"
    return "this operation"


def _with(plugin: TypedXmapPlugin, result: Type, sizes: dict[str, StaticSize], skip: Collection[str] = ()) -> Type:
    shape = decode(result)
    if shape is None or shape.named is None or shape.scalar:
        return result
    found = {
        n: size
        for n, s in shape.named.items()
        if s is None and n not in skip and n not in shape.symbols and isinstance(size := sizes.get(n), SymbolicSize)
    }
    if not found:
        return result
    return plugin.types.array(shape.dtype, shape.named, shape.positional, {**shape.symbols, **found})


def meeting(plugin: TypedXmapPlugin, hook: Hook) -> Hook:
    """A hook whose operands meet by name: symbols checked against each other (an operand named by a name
    bound once also stands for its own ``x.named_shape[...]``), kept in the result."""

    def symbolic(ctx: Any) -> Type:
        if not _has_symbols(ctx):
            return hook(ctx)
        shapes, labels, exprs = _operands(ctx)
        static = [named_value_sizes(ctx.api, e, s) for s, e in zip(shapes, exprs, strict=True)]
        try:
            shown = [with_symbols(s) for s in shapes]
            meet_sizes(static, operation=_operation(ctx, labels), operands=labels, shown=shown)
        except NamedShapeError as error:
            report(ctx.api, error, ctx.context)
            return hook(ctx)
        return _with(plugin, hook(ctx), _kept_sizes(shapes))  # the operands' own symbols, not their names'

    return symbolic


def _kept_sizes(shapes: list[Shape]) -> dict[str, StaticSize]:
    sizes: dict[str, StaticSize] = {}
    for shape in shapes:
        for name, size in with_symbols(shape).items():
            if sizes.get(name) is None:
                sizes[name] = size
    return sizes


def keeping(plugin: TypedXmapPlugin, hook: Hook) -> Hook:
    """A hook that keeps the sizes of the axes it keeps (reductions, cumsum): the operand's symbols."""

    def symbolic(ctx: Any) -> Type:
        result = hook(ctx)
        if not _has_symbols(ctx):
            return result
        shapes, _, _ = _operands(ctx)
        return _with(plugin, result, _kept_sizes(shapes))

    return symbolic


def indexed(plugin: TypedXmapPlugin, hook: Hook) -> Hook:
    """``x[{...}]`` with a literal dict: the axes it does not index keep their symbols."""

    def symbolic(ctx: Any) -> Type:
        result = hook(ctx)
        key = ctx.args[0][0] if ctx.args and ctx.args[0] else None
        receiver = decode(ctx.type)
        if receiver is None or not receiver.symbols or not isinstance(key, DictExpr):
            return result
        if not all(isinstance(k, StrExpr) for k, _ in key.items):
            return result
        keys = {k.value for k, _ in key.items if isinstance(k, StrExpr)}
        return _with(plugin, result, with_symbols(receiver), skip=keys)

    return symbolic
