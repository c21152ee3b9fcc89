"""``tx.xmap``: a precise type for the mapped function, and axis-resource conflicts.

- The call ``xmap(fun, in_axes, out_axes, axis_resources=...)`` returns ``XmapFunction[P]`` whose
  parameters are ``fun``'s: with ``NamedArray`` types when ``in_axes`` is omitted (the values carry their
  names), ``Any`` (positional arrays) otherwise. Results are positional arrays (``Any``).
- Signature level: a typed ``fun``'s declared named axes must be the ones its ``in_axes`` leaf maps
  (``named-axis-missing``), its return must be listed in ``out_axes`` (``named-axis-missing``), and no
  parameter or return may hold two axes assigned to one mesh axis (``axis-resource-conflict``).
- Body level: every value the plugin infers inside an xmapped body is checked against the body's
  ``axis_resources``. The body is found from its decorator (``@partial(tx.xmap, ..., axis_resources=...)``)
  or from a module-level ``xmap(f, ...)`` call in the same module as ``f`` (mypy checks module top levels
  before function bodies, so the call is seen first).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from mypy.nodes import CallExpr, Decorator, FuncDef, RefExpr
from mypy.types import CallableType, Instance, Parameters, Type, get_proper_type

from ..._algebra import (
    AxisMap,
    NamedShapeError,
    Resource,
    conflict_error,
    is_axis_map_leaf,
    mesh_axis_names,
    normalize_axis_resources,
    parse_axis_map,
    resource_conflicts,
    unlisted_axes,
    unlisted_return_error,
)
from .._core._codes import NAMED_AXIS_MISSING, code_for, one_line
from .._core._constants import constant_value
from .._core._encoding import decode, describe
from .._core._literals import UNKNOWN, literal_value
from .._core._support import arg, arg_expr, call_argument, fail

if TYPE_CHECKING:
    from mypy.nodes import Context, Expression
    from mypy.plugin import FunctionContext

    from ._protocols import TypedXmapPlugin

__all__ = ["XMAP_NAMES", "Resources", "xmap_hook"]

XMAP_NAMES = frozenset({"typed_xmap._xmap.xmap", "typed_xmap._xmap._api.xmap", "typed_xmap.xmap"})
XMAP_FUNCTIONS = frozenset({"typed_xmap._xmap.XmapFunction", "typed_xmap._xmap._api.XmapFunction"})
PARTIAL_NAMES = frozenset({"functools.partial"})

AxisResources = Mapping[str, tuple[Resource, ...]]


def _is_xmap(expr: Expression) -> bool:
    return isinstance(expr, RefExpr) and expr.fullname in XMAP_NAMES


def _decorator_resources(decorator: Expression) -> Expression | None:
    """``axis_resources=`` of ``@partial(tx.xmap, ...)`` (or ``@functools.partial``)."""
    if not isinstance(decorator, CallExpr):
        return None
    callee = decorator.callee
    if (
        isinstance(callee, RefExpr)
        and callee.fullname in PARTIAL_NAMES
        and decorator.args
        and _is_xmap(decorator.args[0])
    ):
        return call_argument(decorator, "axis_resources")
    return None


def _resources(api: Any, expr: Expression | None) -> AxisResources | None:
    value = constant_value(api, expr)
    if value is UNKNOWN or value is None:
        return None
    try:
        return normalize_axis_resources(value)  # type: ignore[arg-type]
    except NamedShapeError:
        return None


class Resources:
    """Which ``axis_resources`` apply to the function body being checked."""

    def __init__(self, plugin: TypedXmapPlugin) -> None:
        self._plugin = plugin
        self.by_function: dict[str, AxisResources] = {}
        """From module-level ``xmap(f, ...)`` calls (the call form)."""
        self._decorated: dict[int, tuple[FuncDef, AxisResources | None]] = {}

    def record_call(self, fun: Expression | None, resources: AxisResources) -> None:
        if isinstance(fun, RefExpr) and isinstance(fun.node, (FuncDef, Decorator)) and fun.fullname:
            self.by_function[fun.fullname] = resources

    def _for(self, api: Any, fn: FuncDef) -> AxisResources | None:
        cached = self._decorated.get(id(fn))
        if cached is None or cached[0] is not fn:
            found = None
            symbol = self._plugin.lookup_fully_qualified(fn.fullname) if fn.fullname else None
            if symbol is not None and isinstance(symbol.node, Decorator) and symbol.node.func is fn:
                for decorator in symbol.node.decorators:
                    found = _resources(api, _decorator_resources(decorator)) or found
            cached = self._decorated[id(fn)] = (fn, found)
        return cached[1] or self.by_function.get(fn.fullname)

    def _body(self, api: Any) -> tuple[FuncDef, AxisResources] | None:
        """The xmapped body being checked and its ``axis_resources``, if any."""
        scope = getattr(api, "scope", None)
        fn = scope.top_level_function() if scope is not None else None
        if not isinstance(fn, FuncDef):
            return None
        resources = self._for(api, fn)
        return (fn, resources) if resources else None

    def body_placement(self, api: Any) -> dict[str, tuple[str, ...]]:
        """Where the enclosing xmapped body's ``axis_resources`` place its named axes (``{"batch": ("data",)}``);
        empty outside one. A value inside the body is placed so (``_placement``)."""
        body = self._body(api) if self.by_function or self._decorated else None
        if body is None:
            return {}
        return mesh_axis_names(body[1])

    def check_value(self, api: Any, named: Mapping[str, int | None], operation: str, context: Context) -> None:
        """Report when ``named`` holds two axes that share a mesh axis in the enclosing xmapped body."""
        if len(named) < 2 or not self._plugin.config.body_checks:
            return
        body = self._body(api)
        if body is None:
            return
        fn, resources = body
        declared = _declared_axes(fn)
        conflicts = [
            c for c in resource_conflicts(named, resources) if not any({c.first, c.second} <= d for d in declared)
        ]
        if conflicts:  # a pair a parameter or the return already holds is reported once, at the mapping
            error = conflict_error(conflicts[0], f"{operation} (a value with axes {describe(named)} in {fn.name})")
            fail(api, one_line(error), context, code_for(error))


def _declared_axes(fn: FuncDef) -> list[set[str]]:
    """The named axes of ``fn``'s declared parameters and return (checked at the mapping itself)."""
    typ = get_proper_type(fn.type) if fn.type is not None else None
    if not isinstance(typ, CallableType):
        return []
    found = []
    for declared in [*typ.arg_types, typ.ret_type]:
        shape = decode(declared)
        if shape is not None and shape.named:
            found.append(set(shape.named))
    return found


def _leaves(spec: object, count: int, kind: str) -> list[AxisMap | None] | None:
    """One parsed leaf per parameter (or output), ``None`` where the tree is deeper than one level."""
    if spec is UNKNOWN:
        return None
    if is_axis_map_leaf(spec):
        leaves: list[AxisMap | None] = [parse_axis_map(spec, where=kind)] * count
        return leaves
    if isinstance(spec, (list, tuple)):
        return [
            parse_axis_map(item, where=f"{kind}[{i}]") if is_axis_map_leaf(item) else None
            for i, item in enumerate(spec)
        ]
    return None


def xmap_hook(plugin: TypedXmapPlugin, ctx: FunctionContext) -> Type:
    fun_types = arg(ctx, "fun", 0)
    fun = get_proper_type(fun_types[0]) if len(fun_types) == 1 else None
    if not isinstance(fun, CallableType):
        return ctx.default_return_type
    in_expr, out_expr = arg_expr(ctx, "in_axes", 1), arg_expr(ctx, "out_axes", 2)
    resources_expr = arg_expr(ctx, "axis_resources")
    name = fun.name or "fun"
    try:
        resources = normalize_axis_resources(_value_or_none(ctx.api, resources_expr))  # type: ignore[arg-type]
        params = [i for i, kind in enumerate(fun.arg_kinds) if kind.is_positional()]
        in_leaves = None if in_expr is None else _leaves(literal_value(in_expr), len(params), "in_axes")
        out_leaves = _leaves(literal_value(out_expr), 1, "out_axes")
    except NamedShapeError as error:
        fail(ctx.api, one_line(error), ctx.context, code_for(error))
        return ctx.default_return_type
    if resources:
        plugin.resources.record_call(arg_expr(ctx, "fun", 0), resources)
    for position, index in enumerate(params):
        leaf = in_leaves[position] if in_leaves is not None and position < len(in_leaves) else None
        _check_param(ctx, name, fun, index, leaf, in_expr is None, resources)
    _check_return(ctx, name, fun, out_leaves[0] if out_leaves and len(out_leaves) == 1 else None, resources)
    return _mapped_type(plugin, ctx, fun, in_expr is None)


def _value_or_none(api: Any, expr: Expression | None) -> object:
    """A literal or module-constant argument's value (``axis_resources=LOSS_PLACEMENT``), ``None`` if unknown."""
    value = constant_value(api, expr)
    return None if value is UNKNOWN else value


def _fail_conflicts(ctx: FunctionContext, names: list[str], resources: AxisResources, where: str) -> None:
    for conflict in resource_conflicts(names, resources)[:1]:
        error = conflict_error(conflict, where)
        fail(ctx.api, one_line(error), ctx.context, code=code_for(error))


def _check_param(
    ctx: FunctionContext,
    name: str,
    fun: CallableType,
    index: int,
    leaf: AxisMap | None,
    omitted: bool,
    resources: AxisResources,
) -> None:
    param = fun.arg_names[index] or f"argument {index}"
    shape = decode(fun.arg_types[index])
    declared = list(shape.named) if shape is not None and shape.named is not None else []
    mapped = list(leaf.names) if leaf is not None else []
    if shape is not None and shape.named is not None and leaf is not None and set(declared) != set(mapped):
        fail(
            ctx.api,
            f"xmap({name}): in_axes {leaf} maps named axes {describe(dict.fromkeys(mapped))} onto "
            f"parameter {param!r}, but {name} declares {param}: {describe(shape.named)}. Fix: make the "
            f"in_axes leaf list exactly the axes the annotation declares",
            ctx.context,
            code=NAMED_AXIS_MISSING,
        )
    names = list(dict.fromkeys(declared + mapped))
    _fail_conflicts(ctx, names, resources, f"parameter {param!r} of {name}")


def _check_return(
    ctx: FunctionContext, name: str, fun: CallableType, leaf: AxisMap | None, resources: AxisResources
) -> None:
    shape = decode(fun.ret_type)
    declared = list(shape.named) if shape is not None and shape.named is not None else []
    if leaf is not None and shape is not None and shape.named is not None:
        unlisted = unlisted_axes(declared, leaf.names)
        if unlisted:
            error = unlisted_return_error(name, describe(shape.named), str(leaf), unlisted)
            fail(ctx.api, one_line(error), ctx.context, code=code_for(error))
    mapped = list(leaf.names) if leaf is not None else []
    _fail_conflicts(ctx, list(dict.fromkeys(declared + mapped)), resources, f"the return value of {name}")


def _mapped_type(plugin: TypedXmapPlugin, ctx: FunctionContext, fun: CallableType, omitted: bool) -> Type:
    """``XmapFunction[fun's parameters]``: NamedArray types when in_axes is omitted, else ``Any``."""
    default = get_proper_type(ctx.default_return_type)
    if not isinstance(default, Instance) or default.type.fullname not in XMAP_FUNCTIONS:
        return ctx.default_return_type
    any_type = plugin.types.any()
    arg_types = [t if omitted else any_type for t in fun.arg_types]
    kinds = list(fun.arg_kinds)
    params = Parameters(arg_types, kinds, list(fun.arg_names))
    return default.copy_modified(args=[params])
