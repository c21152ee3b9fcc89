"""Symbolic sizes through the hooks that keep axes by name: where operands meet (operators, elementwise
functions, einsum, a call's arguments) one name must have one size, and sizes that certainly differ
(``cfg.mlp`` vs ``cfg.mlp // 2``) are a ``named-axis-size`` error; the result keeps the operands' symbols for
the axes whose size it does not know. An operand that reads a container's field (``p["w_in"]``) has the sizes
its builder gave it (``_built``). The rule is the algebra's (``meet_sizes``); the hooks compute the rest.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import TYPE_CHECKING, Any

from mypy.nodes import CallExpr, DictExpr, Expression, IndexExpr, NameExpr, OpExpr, StrExpr
from mypy.types import Type

from ..._algebra import NamedShapeError, StaticSize, SymbolicSize, meet_sizes, size_add
from .._core._encoding import Shape, carries_symbols, decode
from .._core._sizes import named_value_sizes, static_size, with_symbols
from .._core._support import operands, operation_text, report
from ._built import built_sizes, reads_field
from ._indexing import bound_key

if TYPE_CHECKING:
    from ._protocols import TypedXmapPlugin

__all__ = ["indexed", "keeping", "meeting"]

Hook = Callable[[Any], Type]


def _receiver(ctx: Any) -> Expression | None:
    """The expression of a method's receiver (``x`` in ``x + y``, ``x[...]``, ``x.sum(...)``), else ``None``."""
    context = ctx.context
    if getattr(ctx, "type", None) is None:
        return None
    if isinstance(context, OpExpr):
        return context.left
    if isinstance(context, IndexExpr):
        return context.base
    callee = context.callee if isinstance(context, CallExpr) else None
    receiver: Expression | None = getattr(callee, "expr", None)
    return receiver


def _has_symbols(ctx: Any) -> bool:
    """The fast test: does any operand's type carry a symbolic size (most calls: none)?"""
    receiver = getattr(ctx, "type", None)
    if receiver is not None and carries_symbols(receiver):
        return True
    return any(carries_symbols(t) for group in ctx.arg_types for t in group)


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
        if not _has_symbols(ctx) and not _reads_fields(ctx):
            return hook(ctx)
        shapes, labels, exprs = operands(ctx)
        built = [_built(ctx.api, e, s) for s, e in zip(shapes, exprs, strict=True)]
        static = [{**named_value_sizes(ctx.api, e, s), **b} for s, e, b in zip(shapes, exprs, built, strict=True)]
        try:
            shown = [{**with_symbols(s), **b} for s, b in zip(shapes, built, strict=True)]
            meet_sizes(static, operation=operation_text(ctx, labels), operands=labels, shown=shown)
        except NamedShapeError as error:
            if not _found_by_the_hook(error, shapes):
                report(ctx.api, error, ctx.context)
            return hook(ctx)
        kept = _kept_sizes(shapes, built)  # the operands' own symbols (a field's as built), not their names'
        return _with(plugin, hook(ctx), kept)

    return symbolic


def _found_by_the_hook(error: NamedShapeError, shapes: list[Shape]) -> bool:
    """Whether the clash ``error`` is on is one the wrapped hook's own rule finds and reports: the operands'
    types give its axis two different int sizes (the rule meets the operands it reads, next to one it cannot
    read too: ``known_clash``, a call's binding): one clash, one report. The symbolic check reports the rest: a
    symbol that differs whatever the config, a size known from how a container's field was built."""
    for name in error.axes:
        sizes = {s.named.get(name) for s in shapes if s.named is not None}
        if len({size for size in sizes if isinstance(size, int)}) > 1:
            return True
    return False


def _kept_sizes(shapes: list[Shape], built: list[dict[str, StaticSize]] | None = None) -> dict[str, StaticSize]:
    sizes: dict[str, StaticSize] = {}
    for index, shape in enumerate(shapes):
        for name, size in {**with_symbols(shape), **(built[index] if built else {})}.items():
            if sizes.get(name) is None:
                sizes[name] = size
    return sizes


def _reads_fields(ctx: Any) -> bool:
    """Does an operand read a container's field (``p["w_in"]``): its sizes may be known as built?"""
    return reads_field(_receiver(ctx)) or any(reads_field(e) for group in ctx.args for e in group)


def _built(api: Any, expr: Expression | None, shape: Shape) -> dict[str, StaticSize]:
    """The sizes the field ``expr`` reads was built with (``_built``), for the axes its type leaves unknown."""
    if not reads_field(expr) or not any(s is None for s in with_symbols(shape).values()):
        return {}
    return {n: s for n, s in built_sizes(api, expr).items() if with_symbols(shape).get(n, 0) is None}


def keeping(plugin: TypedXmapPlugin, hook: Hook) -> Hook:
    """A hook that keeps the sizes of the axes it keeps (reductions, cumsum): the operand's symbols."""

    def symbolic(ctx: Any) -> Type:
        result = hook(ctx)
        if not _has_symbols(ctx) and not _reads_fields(ctx):
            return result
        shapes, _, exprs = operands(ctx)
        built = [_built(ctx.api, e, s) for s, e in zip(shapes, exprs, strict=True)]
        return _with(plugin, result, _kept_sizes(shapes, built))

    return symbolic


def indexed(plugin: TypedXmapPlugin, hook: Hook) -> Hook:
    """``x[{...}]`` with a literal dict: the axes it does not index keep their symbols; an axis sliced with a
    symbolic bound (``slice(1, n)``, ``slice(0, cfg.time - 1)``) gets the slice's length (``n - 1``)."""

    def symbolic(ctx: Any) -> Type:
        result = hook(ctx)
        key = bound_key(ctx, ctx.args[0][0]) if ctx.args and ctx.args[0] else None
        receiver = decode(ctx.type)
        if receiver is None or receiver.named is None or not isinstance(key, DictExpr):
            return result
        if not all(isinstance(k, StrExpr) for k, _ in key.items):
            return result
        sizes = with_symbols(receiver)
        sliced = {
            k.value: _slice_length(ctx.api, bound_key(ctx, v), sizes.get(k.value))
            for k, v in key.items
            if isinstance(k, StrExpr) and _is_slice(bound_key(ctx, v))
        }
        if not receiver.symbols and not any(isinstance(s, SymbolicSize) for s in sliced.values()):
            return result
        keys = {k.value for k, _ in key.items if isinstance(k, StrExpr)}
        return _with(plugin, _with(plugin, result, sliced), sizes, skip=keys)

    return symbolic


def _is_slice(expr: Expression) -> bool:
    return isinstance(expr, CallExpr) and isinstance(expr.callee, NameExpr) and expr.callee.fullname == "builtins.slice"


def _slice_length(api: Any, expr: Expression, size: StaticSize) -> StaticSize:
    """The length of ``slice(start, stop)`` (unit step, a start that is a non-negative int) on an axis of ``size``:
    ``stop - start``, the stop taken as within the axis (as a model's slices are) unless it is certainly past
    its end (``slice(1, n + 1)`` on an axis of ``n``: ``n - 1``); a negative stop counts from the end."""
    if not isinstance(expr, CallExpr) or not 1 <= len(expr.args) <= 3:
        return None
    values = [None if _is_none(a) else static_size(api, a) for a in expr.args]
    if any(v is None and not _is_none(a) for a, v in zip(expr.args, values, strict=True)):
        return None  # a bound the checker cannot read
    start, stop, step = (None, values[0], None) if len(values) == 1 else (*values, None)[:3]
    first = start if start is not None else 0
    if step not in (None, 1) or not isinstance(first, int) or first < 0:
        return None
    if stop is None:
        stop = size
    elif isinstance(stop, int) and stop < 0:
        stop = size_add(size, stop)
    elif isinstance(stop, SymbolicSize) and isinstance(size, SymbolicSize) and _past(stop, size):
        stop = size  # certainly past the end: clamped to it
    return size_add(stop, -first) if isinstance(stop, SymbolicSize) else None


def _past(stop: SymbolicSize, size: SymbolicSize) -> bool:
    """``stop`` is certainly beyond ``size`` (one arithmetic, a larger offset: ``n + 1`` past ``n``)."""
    same = (stop.atoms, stop.scale, stop.divisor) == (size.atoms, size.scale, size.divisor)
    return same and stop.offset > size.offset


def _is_none(expr: Expression) -> bool:
    return isinstance(expr, NameExpr) and expr.fullname == "builtins.None"
