"""Indexing by name: ``x[{...}]``, ``emb[{"vocab": tokens}]``, ``x.at[{...}]``, ``tnp.take`` and the dynamic
slices (the ``INDEXING`` rows of the table of operations).

A dict literal's keys are literal axis names; its values are read as the algebra's items (an int literal, a
``slice(...)`` call, an integer NamedArray, another int: a dynamic index). The result comes from
``index_named_shape``, the runtime's own rule, so an unknown axis is ``named-axis-missing`` here as there.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from mypy.nodes import CallExpr, DictExpr, Expression, IndexExpr, IntExpr, MemberExpr, NameExpr, TupleExpr
from mypy.types import AnyType, Instance, Type, get_proper_type

from ..._algebra import (
    DYNAMIC,
    Gather,
    IndexPlan,
    NamedShapeError,
    Size,
    dynamic_slice_operation,
    dynamic_slice_shape,
    index_named_shape,
    index_operation,
    positional_key_error,
    update_named_shape,
)
from .._core._constants import flow_value, resolved
from .._core._encoding import Shape, decode, has_group
from .._core._literals import UNKNOWN, literal_value
from .._core._names_first import Arguments, Unreadable, run
from .._core._support import arg, arg_expr, certain_error, label, report

if TYPE_CHECKING:
    from mypy.plugin import FunctionContext, MethodContext

    from ._protocols import TypedXmapPlugin

__all__ = [
    "AT_GETITEM",
    "AT_UPDATES",
    "GETITEM",
    "at_hook",
    "at_update_hook",
    "bound_key",
    "getitem_hook",
    "indexing_hook",
]

GETITEM = "typed_xmap._static.NamedArray_.__getitem__"
AT_GETITEM = "typed_xmap._static.At_.__getitem__"
AT_UPDATES = frozenset(f"typed_xmap._static.AtRegion_.{m}" for m in ("set", "add", "multiply", "min", "max"))
_UNREAD = object()
"""An item the plugin cannot read: the result's shape is unknown."""
_NAMES_ONLY = object()
"""An ``Any`` item: its axis must exist (whatever the index is), the result's shape is unknown."""
_SCALAR_INDICES = frozenset({"builtins.int", "jax._src.basearray.Array", "numpy.ndarray", "numpy.integer"})
"""Index types read as a dynamic index (``DYNAMIC``): ``x[{"step": t}]`` with ``t: jax.Array``."""


def _is_integer(shape: Shape) -> bool:
    dtype = get_proper_type(shape.dtype)
    if not isinstance(dtype, Instance):
        return True
    return not any(base.fullname in ("numpy.floating", "numpy.complexfloating") for base in dtype.type.mro)


def _item(expr: Expression, typ: Type, axis: str, *, grouped: bool = False) -> object:
    """The algebra's item for one value of a key (``grouped``: the indexed array has a ``*rest`` group, so an
    index with one too is not read: the two groups' axes may meet)."""
    if isinstance(expr, CallExpr) and isinstance(expr.callee, NameExpr) and expr.callee.fullname == "builtins.slice":
        parts = [literal_value(a) for a in expr.args]
        if any(p is UNKNOWN for p in parts) or len(parts) > 3:
            return slice(None)  # a slice of unknown bounds: the size is unknown (set by _unknown_slices)
        return slice(*parts)
    value = literal_value(expr)
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    shape = decode(typ)
    if shape is not None and not shape.scalar:
        if shape.named is None:
            return _NAMES_ONLY  # an index of unknown shape: the indexed axis must still exist
        if (grouped and has_group(shape.named)) or shape.positional not in (None, ()):
            return _UNREAD
        if not shape.named:
            return DYNAMIC
        dtype = "float" if not _is_integer(shape) else "int32"
        return Gather(shape.named, f"the index of {axis!r}", _is_integer(shape), dtype)
    proper = get_proper_type(typ)
    if isinstance(proper, Instance) and any(base.fullname in _SCALAR_INDICES for base in proper.type.mro):
        return DYNAMIC  # an int, or a jax/numpy array (0-d integer, else the runtime rejects it): drops the axis
    if isinstance(proper, AnyType):
        return _NAMES_ONLY
    return _UNREAD


def _type_of(ctx: MethodContext | FunctionContext, expr: Expression) -> Type:
    """The type mypy inferred for a part of an argument (a dict literal's value)."""
    api: Any = ctx.api
    try:
        return api.lookup_type(expr)  # type: ignore[no-any-return]
    except KeyError:
        return api.expr_checker.accept(expr)  # type: ignore[no-any-return]


def _region(plugin: TypedXmapPlugin, ctx: MethodContext, region: Expression | None) -> tuple[Shape, str] | None:
    """``x.at[key]`` (an ``IndexExpr`` on ``x.at``): the shape of ``x[key]`` and how messages name ``x``."""
    if not isinstance(region, IndexExpr) or not isinstance(region.base, MemberExpr):
        return None
    array = _type_of(ctx, region.base.expr)
    shape = decode(array)
    if shape is None or shape.scalar:
        return None
    operand = label(region.base.expr, "x")
    typed = _index(plugin, ctx, shape, region.index, operand, f"{operand}.at", report_errors=False)
    result = decode(typed) if typed is not None else None
    return (result, operand) if result is not None and result.named is not None else None


def _index(
    plugin: TypedXmapPlugin,
    ctx: MethodContext | FunctionContext,
    shape: Shape,
    key: Expression | None,
    operand: str,
    prefix: str | None = None,
    *,
    report_errors: bool = True,
) -> Type | None:
    """The type of ``x[key]`` for a dict literal ``key``; ``None`` when the key is not one."""
    if not isinstance(key, DictExpr) or shape.named is None:
        return None
    items: dict[object, object] = {}
    unknown: set[object] = set()
    unread = False
    for key_expr, written in key.items:
        value_expr = bound_key(ctx, written)
        axis = literal_value(key_expr)
        if key_expr is None or axis is UNKNOWN:
            return None
        value = _item(value_expr, _type_of(ctx, value_expr), str(axis), grouped=has_group(shape.named))
        if value is _UNREAD:
            return plugin.types.array(shape.dtype, None, shape.positional)
        if value is _NAMES_ONLY:
            unread, value = True, DYNAMIC
        if isinstance(value, slice) and value == slice(None) and isinstance(value_expr, CallExpr) and value_expr.args:
            unknown.add(axis)
        items[axis] = value

    def rule(named: Mapping[str, Size]) -> IndexPlan:
        return index_named_shape(named, items, operation=index_operation(items, prefix or operand), operand=operand)

    try:
        plan = rule(shape.named)
    except NamedShapeError as error:
        certain = certain_error(error, [shape.named], rule)
        if report_errors and certain is not None:
            report(ctx.api, certain, ctx.context)
        return plugin.types.array(shape.dtype, None, shape.positional)
    if unread:
        return plugin.types.array(shape.dtype, None, shape.positional)
    named = {n: (None if n in unknown else s) for n, s in plan.named.items()}
    return plugin.types.array(shape.dtype, named, shape.positional)


def bound_key(ctx: MethodContext | FunctionContext, expr: Expression) -> Expression:
    """A key or item bound once (``idx = {"seq": 0}``, ``window = slice(1, n)``) as what it was bound to."""
    value = resolved(ctx.api, expr)
    if value is expr:
        return expr
    is_slice = isinstance(value, CallExpr) and getattr(value.callee, "fullname", None) == "builtins.slice"
    return value if is_slice or isinstance(value, (DictExpr, IntExpr)) else expr


def getitem_hook(plugin: TypedXmapPlugin, ctx: MethodContext) -> Type:
    """``x[{"batch": 0}]``, ``x[{"seq": slice(0, 4)}]``, ``emb[{"vocab": tokens}]``; ``x[0]`` on positional dims."""
    shape = decode(ctx.type)
    key = bound_key(ctx, ctx.args[0][0]) if ctx.args and len(ctx.args[0]) == 1 else None
    if shape is None or shape.scalar:
        return ctx.default_return_type
    operand = label(getattr(ctx.context, "base", None), "x")
    typed = _index(plugin, ctx, shape, key, operand)
    if typed is not None:
        return typed
    if key is not None and not isinstance(key, DictExpr) and shape.positional is not None and shape.named:
        value = literal_value(key)
        reach = len(value) if isinstance(value, tuple) else 1
        if value is not UNKNOWN and not isinstance(key, TupleExpr) and reach > len(shape.positional):
            report(
                ctx.api, positional_key_error(value, len(shape.positional), shape.named, operand=operand), ctx.context
            )
        return plugin.types.array(shape.dtype, shape.named, None)
    return ctx.default_return_type


def at_hook(plugin: TypedXmapPlugin, ctx: MethodContext) -> Type:
    """``x.at[{...}]``: checks the key as ``x[{...}]`` does; the region keeps ``x``'s type (its updates return it)."""
    proper = get_proper_type(ctx.type)
    key = ctx.args[0][0] if ctx.args and len(ctx.args[0]) == 1 else None
    if isinstance(proper, Instance) and len(proper.args) == 3:
        array = plugin.types.instance("typed_xmap._static.NamedArray_", list(proper.args))
        shape = decode(array) if array is not None else None
        if shape is not None and not shape.scalar:
            operand = label(getattr(getattr(ctx.context, "base", None), "expr", None), "x")
            _index(plugin, ctx, shape, key, operand, f"{operand}.at")
    return ctx.default_return_type


def at_update_hook(plugin: TypedXmapPlugin, method: str, ctx: MethodContext) -> Type:
    """``x.at[{...}].set(v)``: ``v``'s axes must be among the region's (``update_named_shape``)."""
    callee = ctx.context.callee if isinstance(ctx.context, CallExpr) else None
    region = _region(plugin, ctx, callee.expr if isinstance(callee, MemberExpr) else None)
    values = ctx.arg_types[0] if ctx.arg_types else []
    update = decode(values[0]) if len(values) == 1 else None
    if region is None or update is None or update.scalar or update.named is None:
        return ctx.default_return_type
    shape, operand = region
    index = callee.expr.index if isinstance(callee, MemberExpr) and isinstance(callee.expr, IndexExpr) else None
    if shape.named is None or not isinstance(index, DictExpr):
        return ctx.default_return_type
    value = label(ctx.args[0][0] if ctx.args and ctx.args[0] else None, "v")
    shown = index_operation({literal_value(k): literal_value(v) for k, v in index.items}, f"{operand}.at")
    operation = f"{shown}.{method}({value})"
    try:
        update_named_shape(shape.named, update.named, operation=operation, operand=value)
    except NamedShapeError as error:
        certain = certain_error(
            error,
            [shape.named, update.named],
            lambda region, named: update_named_shape(region, named, operation=operation, operand=value),
        )
        if certain is not None:
            report(ctx.api, certain, ctx.context)
    return ctx.default_return_type


def indexing_hook(plugin: TypedXmapPlugin, name: str, ctx: FunctionContext) -> Type:
    """``tnp.take(emb, tokens, axis="vocab")``, ``tnp.dynamic_slice(x, starts, sizes)``,
    ``tnp.dynamic_update_slice(x, update, starts)`` (the result keeps ``x``'s shape)."""
    types = arg(ctx, "x", 0)
    shape = decode(types[0]) if len(types) == 1 else None
    if shape is None or shape.scalar or shape.named is None:
        return ctx.default_return_type
    operand = label(ctx.args[0][0] if ctx.args and ctx.args[0] else None, "x")
    if name == "take":
        axis = flow_value(ctx.api, arg_expr(ctx, "axis", 2))
        indices = arg_expr(ctx, "indices", 1)
        index_types = arg(ctx, "indices", 1)
        if not isinstance(axis, str) or indices is None or len(index_types) != 1:
            return plugin.types.array(shape.dtype, None, shape.positional)
        item = _item(indices, index_types[0], axis, grouped=has_group(shape.named))
        if item is _UNREAD:
            return plugin.types.array(shape.dtype, None, shape.positional)
        operation = f"tnp.take({operand}, ..., axis={axis!r})"
        try:
            plan = index_named_shape(shape.named, {axis: item}, operation=operation, operand=operand)
        except NamedShapeError as error:
            certain = certain_error(
                error,
                [shape.named],
                lambda named: index_named_shape(named, {axis: item}, operation=operation, operand=operand),
            )
            if certain is not None:
                report(ctx.api, certain, ctx.context)
            return plugin.types.array(shape.dtype, None, shape.positional)
        return plugin.types.array(shape.dtype, plan.named, shape.positional)
    if name == "dynamic_slice":
        args = Arguments(ctx)
        starts = _keys(args.expression("start_indices", 1))
        if starts is None:
            return plugin.types.array(shape.dtype, None, shape.positional)

        def rule(named: Mapping[str, Size]) -> dict[str, Size]:
            sizes = args.read("slice_sizes", 2)
            if not isinstance(sizes, Mapping):
                raise Unreadable
            operation = dynamic_slice_operation("dynamic_slice", starts, sizes)
            return dynamic_slice_shape(named, starts, sizes, operation=operation)

        return plugin.types.array(shape.dtype, run(ctx, args, [shape.named], rule), shape.positional)
    _check_update_slice(ctx, shape)
    return plugin.types.array(shape.dtype, shape.named, shape.positional)


def _check_update_slice(ctx: FunctionContext, shape: Shape) -> None:
    """``tnp.dynamic_update_slice(x, update, starts)``: ``update``'s axes among ``x``'s (the runtime's rule)."""
    starts = _keys(Arguments(ctx).expression("start_indices", 2))
    updates = arg(ctx, "update", 1)
    update = decode(updates[0]) if len(updates) == 1 else None
    if starts is None or shape.named is None or update is None or update.named is None:
        return
    region = {n: (update.named.get(n, 1) if n in starts else s) for n, s in shape.named.items()}
    operation = dynamic_slice_operation("dynamic_update_slice", starts)
    operand = label(ctx.args[1][0] if len(ctx.args) > 1 and ctx.args[1] else None, "update")
    try:
        update_named_shape(region, update.named, operation=operation, operand=operand)
    except NamedShapeError as error:
        certain = certain_error(
            error,
            [region, update.named],
            lambda within, named: update_named_shape(within, named, operation=operation, operand=operand),
        )
        if certain is not None:
            report(ctx.api, certain, ctx.context)


def _keys(expr: Expression | None) -> dict[object, object] | None:
    """A dict literal's literal keys (its values, starts, may be anything)."""
    if not isinstance(expr, DictExpr):
        return None
    keys: dict[object, object] = {literal_value(k): 0 for k, _ in expr.items}
    return None if UNKNOWN in keys else keys
