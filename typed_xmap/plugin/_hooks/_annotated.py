"""``NamedArray[f32, "batch=32 in", "n 3"]``: the ``typing.Annotated`` type-analyze hook.

To type checkers ``NamedArray`` *is* ``typing.Annotated`` (so one-word specs are metadata, never undefined
names). The hook takes over only when argument 0 is a typed_xmap dtype marker (``f32``, ``Float``, ... or a
user alias of one); every other ``Annotated[...]`` goes back to mypy's own code path untouched.

Type aliases (``Hidden = NamedArray[f32, "batch hidden"]``) and ``cast(NamedArray[...], x)`` never reach
the ``Annotated`` hook: mypy strips ``Annotated`` from expressions before analysing them. They do reach
the hook of the dtype marker, whose enclosing expression still holds the spec strings.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, cast

from mypy.nodes import (
    AssignmentStmt,
    CallExpr,
    Expression,
    ExpressionStmt,
    IndexExpr,
    LambdaExpr,
    ListExpr,
    MemberExpr,
    NameExpr,
    OpExpr,
    ReturnStmt,
    StrExpr,
    TupleExpr,
    TypeAlias,
    TypeAliasStmt,
)
from mypy.types import (
    ANNOTATED_TYPE_NAMES,
    AnyType,
    Instance,
    RawExpressionType,
    Type,
    UnboundType,
    UnionType,
    get_proper_type,
)

from ..._algebra import MANY_DIMS, NamedShapeSyntaxError, parse_shape_spec
from .._core._codes import NAMED_SHAPE_SYNTAX, NAMED_SHAPE_UNKNOWN, one_line
from .._core._encoding import NAMED_ARRAY
from ._group_scope import scoped
from ._unknowns import BARE_NOTE

if TYPE_CHECKING:
    from mypy.nodes import Context
    from mypy.plugin import AnalyzeTypeContext
    from mypy.typeanal import TypeAnalyser

    from ._protocols import TypedXmapPlugin

__all__ = ["analyze_annotated", "analyze_dtype_marker", "analyze_group_alias", "is_dtype_marker", "repair_alias"]

USAGE = 'write NamedArray[f32, "batch=32 in_features"] or NamedArray[f32, "batch", "n 3"]'


def is_dtype_marker(node: object) -> bool:
    """A dtype marker is an alias of ``NamedArray_[dtype, Any, Any]`` (``f32``, ``Float``, a user alias)."""
    if not isinstance(node, TypeAlias):
        return False
    target = get_proper_type(node.target)
    return (
        isinstance(target, Instance)
        and target.type.fullname == NAMED_ARRAY
        and len(target.args) == 3
        and isinstance(get_proper_type(target.args[1]), AnyType)
    )


def _spec_text(arg: Type) -> str | None:
    if isinstance(arg, RawExpressionType):
        return arg.literal_value if isinstance(arg.literal_value, str) else None
    if isinstance(arg, (UnboundType, UnionType)):
        return arg.original_str_expr
    return None


def _build(
    plugin: TypedXmapPlugin, base: Type, texts: list[str | None], context: Context, fail: object, semanal: object
) -> Type:
    """``NamedArray_[DT, NS, PS]`` from the dtype marker's type and the spec strings.

    A variadic group is a key of its own where it binds the function's other axes (its signature, a local
    annotation in its body: ``_group_scope``); anywhere else (a TypedDict field, a ``dict[str, ...]`` value) it
    stands for any other axes, so the type is open: ``"layers *weight"`` holds every stacked weight."""
    proper = get_proper_type(base)
    if not (isinstance(proper, Instance) and proper.type.fullname == NAMED_ARRAY):
        return base
    dtype = proper.args[0]
    try:
        if len(texts) > 2:
            raise NamedShapeSyntaxError(
                f"NamedArray takes a dtype and at most two spec strings, got {len(texts)} specs; fix: {USAGE}"
            )
        if any(text is None for text in texts):
            raise NamedShapeSyntaxError(f"NamedArray specs must be string literals; fix: {USAGE}")
        spec = parse_shape_spec(texts[0] or "", texts[1] if len(texts) > 1 else None)
    except NamedShapeSyntaxError as error:
        fail(one_line(error), context, code=NAMED_SHAPE_SYNTAX)  # type: ignore[operator]
        return plugin.types.array(dtype, None, None)
    named: dict[str, int | None] = {axis.name: axis.size for axis in spec.axes}
    if spec.group_key is not None:
        named[spec.group_key] = None  # the group is a key of its own: a value without it does not fit
    positional = None
    if spec.positional is not None and MANY_DIMS not in spec.positional:
        positional = tuple(d if isinstance(d, int) else None for d in spec.positional)
    typ = plugin.types.array(dtype, named, positional, placement=spec.placement)
    return scoped(typ, context, semanal)


def analyze_annotated(plugin: TypedXmapPlugin, ctx: AnalyzeTypeContext) -> Type:
    """The ``typing.Annotated`` hook."""
    t, api = ctx.type, cast("TypeAnalyser", ctx.api)  # the interface mypy documents; its implementation
    if not t.args and t.name.rsplit(".", 1)[-1] != "Annotated":
        # a bare ``NamedArray`` (typed_xmap's name for ``Annotated``): any dtype, any named shape
        api.note(BARE_NOTE, t, code=NAMED_SHAPE_UNKNOWN)
        return plugin.types.array(plugin.types.any(), None, None)
    if len(t.args) >= 2 and isinstance(t.args[0], UnboundType):
        symbol = api.lookup_qualified(t.args[0].name, t.args[0], suppress_errors=True)
        if symbol is not None and is_dtype_marker(symbol.node):
            plugin.in_annotated += 1
            try:
                base = api.anal_type(t.args[0])
            finally:
                plugin.in_annotated -= 1
            texts = [_spec_text(arg) for arg in t.args[1:]]
            return _build(plugin, base, texts, t, api.fail, api.api)
    return plugin.default_analysis(ctx)


def analyze_dtype_marker(plugin: TypedXmapPlugin, ctx: AnalyzeTypeContext) -> Type:
    """The hook of a dtype marker: recovers ``NamedArray[...]`` in aliases and casts, else mypy's own."""
    t = ctx.type
    base = plugin.default_analysis(ctx)
    if plugin.in_annotated or t.args:
        return base
    semanal = cast("TypeAnalyser", ctx.api).api
    for expr in _statement_exprs(getattr(semanal, "statement", None)):
        index = _annotated_at(ctx, expr, t.line, t.column)
        if index is not None:
            texts = [item.value if isinstance(item, StrExpr) else None for item in index.items[1:]]
            return _build(plugin, base, texts, t, ctx.api.fail, semanal)
    return base


def analyze_group_alias(plugin: TypedXmapPlugin, ctx: AnalyzeTypeContext) -> Type:
    """A use of an alias whose value has a group (``Hidden = NamedArray[f32, "*rest time chan"]``): the group
    binds or is open by where the alias is written (``_group_scope``), as if its spec were written there."""
    return scoped(plugin.default_analysis(ctx), ctx.type, cast("TypeAnalyser", ctx.api).api)


def repair_alias(node: object) -> None:
    """``Hidden = NamedArray[f32, "batch hidden"]`` reads to mypy as ``Hidden = f32`` (a bare name), so it
    marks the alias "no_args" and would drop its type arguments where it is used. Called before mypy
    expands the alias at each use, in this run and in later incremental runs alike."""
    if isinstance(node, TypeAlias) and node.no_args:
        target = get_proper_type(node.target)
        if (
            isinstance(target, Instance)
            and target.type.fullname == NAMED_ARRAY
            and not isinstance(get_proper_type(target.args[1]), AnyType)
        ):
            node.no_args = False


def _statement_exprs(statement: object) -> Iterator[Expression]:
    if isinstance(statement, AssignmentStmt):
        yield statement.rvalue
    elif isinstance(statement, (ExpressionStmt, ReturnStmt)) and statement.expr is not None:
        yield statement.expr
    elif isinstance(statement, TypeAliasStmt):
        yield statement.value


def _children(expr: Expression) -> Iterator[Expression]:
    if isinstance(expr, IndexExpr):
        yield expr.base
        yield expr.index
    elif isinstance(expr, (TupleExpr, ListExpr)):
        yield from expr.items
    elif isinstance(expr, OpExpr):
        yield expr.left
        yield expr.right
    elif isinstance(expr, CallExpr):
        yield from expr.args
    elif isinstance(expr, LambdaExpr):
        yield expr.expr()


def _annotated_at(ctx: AnalyzeTypeContext, root: Expression, line: int, column: int) -> TupleExpr | None:
    """The index of the ``Annotated[marker, ...]`` expression whose marker sits at ``line:column``."""
    stack = [root]
    while stack:
        expr = stack.pop()
        if isinstance(expr, IndexExpr) and isinstance(expr.index, TupleExpr) and len(expr.index.items) >= 2:
            first = expr.index.items[0]
            if first.line == line and first.column == column and _is_annotated(ctx, expr.base):
                return expr.index
        stack.extend(_children(expr))
    return None


def _is_annotated(ctx: AnalyzeTypeContext, base: Expression) -> bool:
    if isinstance(base, NameExpr):
        name = base.name
    elif isinstance(base, MemberExpr) and isinstance(base.expr, NameExpr):
        name = f"{base.expr.name}.{base.name}"
    else:
        return False
    symbol = cast("TypeAnalyser", ctx.api).lookup_qualified(name, base, suppress_errors=True)
    return symbol is not None and symbol.node is not None and symbol.node.fullname in ANNOTATED_TYPE_NAMES
