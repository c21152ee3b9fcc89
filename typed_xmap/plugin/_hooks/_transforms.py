"""JAX transforms and ``functools.partial`` keep the named types of the functions they wrap.

- ``jax.jit``, ``jax.checkpoint``/``jax.remat`` (decorator, call, ``partial(jax.jit, static_argnames=...)``):
  the result is the wrapped function's own signature; attributes (``.lower``, ``.trace``) still come from
  JAX's wrapper type.
- ``jax.grad(f, argnums=0, has_aux=False)``: the same parameters; a gradient has its parameter's type (a
  tuple of them for a tuple ``argnums``), paired with the aux value under ``has_aux``.
  ``jax.value_and_grad`` returns ``(value, grad)`` (``((value, aux), grad)`` under ``has_aux``).
- ``jax.vmap``: the same named axes; positional dims become unknown (one is mapped), non-array
  parameters ``Any``.
- ``functools.partial(f, ...)`` of a NamedArray-annotated ``f``: a later call binds axis sizes across the
  bound and the later arguments, as the direct call does. ``@partial(tx.xmap, ...)`` gets the checks of
  ``tx.xmap(f, ...)``, reported once at the decorator.

Anything the plugin cannot read (an overloaded or unknown callable, a non-literal ``argnums``) keeps
JAX's own type.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mypy.argmap import map_actuals_to_formals
from mypy.nodes import ARG_POS, CallExpr, Decorator, Expression, LambdaExpr, RefExpr
from mypy.plugin import FunctionContext
from mypy.plugins.functools import partial_call_callback, partial_new_callback
from mypy.types import AnyType, CallableType, Instance, LiteralType, TupleType, Type, TypeOfAny, get_proper_type

from .._core._encoding import decode, has_group, is_named_array, map_items, open_groups
from .._core._literals import literal_value
from .._core._support import arg_expr
from ._backward import note_backward
from ._backward_target import function_of
from ._calls import bind_arguments, has_named_params

if TYPE_CHECKING:
    from mypy.plugin import MethodContext

    from ._protocols import TypedXmapPlugin

__all__ = ["TRANSFORMS", "partial_call_hook", "partial_new_hook", "transform_hook"]

JIT, GRAD, VALUE_AND_GRAD, VMAP = "jit", "grad", "value_and_grad", "vmap"
TRANSFORMS = {
    "jax._src.api.jit": JIT,
    "jax._src.pjit.jit": JIT,
    "jax.jit": JIT,
    "jax._src.ad_checkpoint.checkpoint": JIT,
    "jax._src.ad_checkpoint.remat": JIT,
    "jax.checkpoint": JIT,
    "jax.remat": JIT,
    "jax._src.api.grad": GRAD,
    "jax.grad": GRAD,
    "jax._src.api.value_and_grad": VALUE_AND_GRAD,
    "jax.value_and_grad": VALUE_AND_GRAD,
    "jax._src.api.vmap": VMAP,
    "jax.vmap": VMAP,
}
"""Fully qualified names of the JAX transforms, to the rule that types their result."""
BOUND = "__typed_xmap_bound"
"""The extra attribute a partial of an annotated function carries: the function's own signature."""
ACTUALS = "__typed_xmap_actuals"
"""A tuple of the bound arguments' types, one per parameter of ``BOUND`` (``Any`` where nothing is bound)."""
TRANSFORM = "__typed_xmap_transform"
"""The extra attribute of ``partial(jax.jit, ...)``: the transform's full name, as a literal string."""
FILLED = "__typed_xmap_filled"
"""A tuple flagging, per parameter of ``BOUND``, whether the partial binds it (``int`` = bound, ``None`` not)."""


def _callable(typ: Type | None) -> CallableType | None:
    proper = get_proper_type(typ) if typ is not None else None
    return proper if isinstance(proper, CallableType) and not proper.is_type_obj() else None


def _mentions_named(fun: CallableType) -> bool:
    return has_named_params(fun) or any(is_named_array(t) for t in [*fun.arg_types, fun.ret_type])


def _calls_named(fun: Expression) -> bool:
    """Whether ``fun`` is a lambda calling a function whose signature mentions NamedArrays (the lambda's own type
    may not: ``lambda p: loss(p["w"], batch)`` takes ``p`` as ``Any``)."""
    body = fun.expr() if isinstance(fun, LambdaExpr) else None
    function = function_of(body.callee) if isinstance(body, CallExpr) else None
    return function is not None and isinstance(function.type, CallableType) and _mentions_named(function.type)


def _fallback(default: Type, fun: CallableType) -> Instance:
    """Attribute access (``f.lower``) goes to the callable's fallback: JAX's wrapper when it is a class."""
    proper = get_proper_type(default)
    return proper if isinstance(proper, Instance) and proper.type.fullname != "builtins.object" else fun.fallback


def _argnums(expr: Expression | None) -> int | tuple[int, ...] | None:
    if expr is None:
        return 0
    value = literal_value(expr)
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, tuple) and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        return value
    return None


def _flag(expr: Expression | None) -> bool | None:
    if expr is None:
        return False
    value = literal_value(expr)
    return value if isinstance(value, bool) else None


def transformed(
    plugin: TypedXmapPlugin,
    kind: str,
    fun: CallableType,
    default: Type,
    option: Any,
) -> Type:
    """The type of ``kind`` applied to ``fun``; ``option(name)`` gives a keyword's expression."""
    result = _transformed(plugin, kind, fun, default, option)
    proper = get_proper_type(result)
    if isinstance(proper, CallableType):  # a "*rest" group: open at the call, unknown in what it returns
        return proper.copy_modified(
            arg_types=[open_groups(t) for t in proper.arg_types], ret_type=_without_group(plugin, proper.ret_type)
        )
    return result


def _without_group(plugin: TypedXmapPlugin, typ: Type) -> Type:
    """A returned type with a group (``"*rest embed"``) has an unknown named shape outside its function."""
    mapped = map_items(typ, lambda item: _without_group(plugin, item))
    if mapped is not None:
        return mapped
    shape = decode(typ)
    if shape is None or shape.named is None or not has_group(shape.named):
        return typ
    return plugin.types.array(shape.dtype, None, shape.positional)


def _transformed(
    plugin: TypedXmapPlugin,
    kind: str,
    fun: CallableType,
    default: Type,
    option: Any,
) -> Type:
    fallback = _fallback(default, fun)
    if kind == JIT:
        return fun.copy_modified(fallback=fallback)
    if kind == VMAP:
        return fun.copy_modified(
            arg_types=[_unmapped(plugin, t) for t in fun.arg_types],
            ret_type=_unmapped(plugin, fun.ret_type),
            fallback=fallback,
        )
    argnums, has_aux = _argnums(option("argnums")), _flag(option("has_aux"))
    if argnums is None or has_aux is None:
        return default
    positional = [i for i, k in enumerate(fun.arg_kinds) if k.is_positional()]
    indices = (argnums,) if isinstance(argnums, int) else argnums
    if any(not -len(positional) <= i < len(positional) for i in indices):
        return default
    grads = [fun.arg_types[positional[i]] for i in indices]
    tuple_fallback = plugin.types.instance("builtins.tuple", [plugin.types.any()])
    if tuple_fallback is None:
        return default
    grad: Type = grads[0] if isinstance(argnums, int) else TupleType(grads, tuple_fallback)
    value = fun.ret_type
    if has_aux:
        returned = get_proper_type(value)
        if not isinstance(returned, TupleType) or len(returned.items) != 2:
            return default
        value, aux = returned.items
        result: Type = (
            TupleType([grad, aux], tuple_fallback) if kind == GRAD else TupleType([returned, grad], tuple_fallback)
        )
    else:
        result = grad if kind == GRAD else TupleType([value, grad], tuple_fallback)
    return fun.copy_modified(ret_type=result, fallback=fallback)


def _unmapped(plugin: TypedXmapPlugin, typ: Type) -> Type:
    shape = decode(typ)
    if shape is None or shape.scalar or not is_named_array(typ):
        return plugin.types.any()
    return plugin.types.array(shape.dtype, shape.named, None)


def transform_hook(plugin: TypedXmapPlugin, kind: str, ctx: FunctionContext) -> Type:
    """``jax.jit(f)``, ``jax.grad(f, argnums=...)``, ...: typed from ``f``'s signature."""
    if not ctx.arg_types or len(ctx.arg_types[0]) != 1:
        return ctx.default_return_type
    fun = _callable(ctx.arg_types[0][0])
    named = fun is not None and _mentions_named(fun)
    if kind in (GRAD, VALUE_AND_GRAD) and (argnums := _argnums(arg_expr(ctx, "argnums"))) is not None:
        unread = named or _calls_named(ctx.args[0][0])  # a partial's type may be lost
        note_backward(plugin.backward, ctx, ctx.args[0][0], argnums, unread=unread)
    if fun is None or not named:
        return ctx.default_return_type
    return transformed(plugin, kind, fun, ctx.default_return_type, lambda name: arg_expr(ctx, name))


# -- functools.partial --------------------------------------------------------------------------------


def partial_new_hook(plugin: TypedXmapPlugin, ctx: FunctionContext) -> Type:
    """``partial(f, ...)``: mypy's own inference, plus what ``f``'s named parameters were bound to (or,
    for ``partial(jax.jit, ...)``/``partial(tx.xmap, ...)``, which transform it applies)."""
    from ._xmap import XMAP_NAMES

    result = partial_new_callback(ctx)
    proper = get_proper_type(result)
    first = ctx.args[0][0] if ctx.args and len(ctx.args[0]) == 1 else None
    if isinstance(proper, Instance) and isinstance(first, RefExpr) and first.fullname in TRANSFORMS.keys() | XMAP_NAMES:
        text = plugin.types.instance("builtins.str")
        if text is not None:
            return proper.copy_with_extra_attr(TRANSFORM, LiteralType(first.fullname, text))
    if len(ctx.arg_types) != 3 or len(ctx.arg_types[0]) != 1 or not isinstance(proper, Instance):
        return result
    fun = _callable(ctx.arg_types[0][0])
    if fun is None or not has_named_params(fun) or proper.extra_attrs is None:
        return result
    kinds = [k for group in ctx.arg_kinds[1:] for k in group]
    names = [n for group in ctx.arg_names[1:] for n in group]
    types = [t for group in ctx.arg_types[1:] for t in group]
    mapping = map_actuals_to_formals(kinds, names, fun.arg_kinds, fun.arg_names, lambda i: types[i])
    bound_types: list[Type] = []
    filled: list[Type] = []
    none = plugin.types.instance("builtins.int")
    any_type = plugin.types.any()
    tuple_fallback = plugin.types.instance("builtins.tuple", [any_type])
    if none is None or tuple_fallback is None:
        return result
    for actuals in mapping:
        if len(actuals) == 1:
            bound_types.append(types[actuals[0]])
            filled.append(none)
        else:
            bound_types.append(any_type)
            filled.append(any_type)
    marked = proper.copy_with_extra_attr(BOUND, fun)
    marked = marked.copy_with_extra_attr(ACTUALS, TupleType(bound_types, tuple_fallback))
    return marked.copy_with_extra_attr(FILLED, TupleType(filled, tuple_fallback))


def partial_call_hook(plugin: TypedXmapPlugin, ctx: MethodContext) -> Type:
    """A call of a partial: mypy's own check, then named-shape binding or the transform it applies."""
    result = partial_call_callback(ctx)
    receiver = get_proper_type(ctx.type)
    if not isinstance(receiver, Instance) or receiver.extra_attrs is None:
        return result
    attrs = receiver.extra_attrs.attrs
    if BOUND in attrs:
        _bind_partial_call(plugin, ctx, attrs, result)
        return result
    marker = get_proper_type(attrs.get(TRANSFORM))
    fullname = marker.value if isinstance(marker, LiteralType) else None
    if not isinstance(fullname, str):
        return result
    flat_kinds = [k for group in ctx.arg_kinds for k in group]
    flat_types = [t for group in ctx.arg_types for t in group]
    if len(flat_types) != 1 or flat_kinds[0] != ARG_POS:
        return result
    fun = _callable(flat_types[0])
    if fun is None:
        return result
    construction = _construction(ctx.context, fullname)
    from ._xmap import XMAP_NAMES, xmap_hook

    if fullname in TRANSFORMS:
        if not _mentions_named(fun):
            return result

        kind = TRANSFORMS[fullname]
        if construction is None and kind in (GRAD, VALUE_AND_GRAD):
            return result  # argnums/has_aux unknown

        def option(name: str) -> Expression | None:
            return _keyword(construction, name) if construction is not None else None

        return transformed(plugin, kind, fun, result, option)
    if fullname in XMAP_NAMES and construction is not None:
        return xmap_hook(plugin, _xmap_context(ctx, construction, flat_types[0], result))
    return result


def _bind_partial_call(plugin: TypedXmapPlugin, ctx: MethodContext, attrs: dict[str, Type], result: Type) -> None:
    original = _callable(attrs.get(BOUND))
    filled, actuals_bound = get_proper_type(attrs.get(FILLED)), get_proper_type(attrs.get(ACTUALS))
    applied = _callable(attrs.get("__mypy_partial"))
    if original is None or applied is None or not isinstance(filled, TupleType):
        return
    if not isinstance(actuals_bound, TupleType):
        return
    per_formal: list[list[tuple[Type, Expression | None]]] = []
    for typ, flag in zip(actuals_bound.items, filled.items, strict=False):
        per_formal.append([] if isinstance(get_proper_type(flag), AnyType) else [(typ, None)])
    kinds = [k for group in ctx.arg_kinds for k in group]
    names = [n for group in ctx.arg_names for n in group]
    types = [t for group in ctx.arg_types for t in group]
    exprs = [e for group in ctx.args for e in group]
    mapping = map_actuals_to_formals(kinds, names, applied.arg_kinds, applied.arg_names, lambda i: types[i])
    for formal, actuals in enumerate(mapping):
        name = applied.arg_names[formal]
        if not actuals or name is None or name not in original.arg_names:
            continue
        target = original.arg_names.index(name)
        per_formal[target] = [(types[i], exprs[i]) for i in actuals]
    bind_arguments(plugin, original, per_formal, ctx.api, ctx.context, result)


def _keyword(call: CallExpr, name: str) -> Expression | None:
    for arg_name, value in zip(call.arg_names, call.args, strict=False):
        if arg_name == name:
            return value
    return None


def _is_partial_of(expr: Expression, fullname: str) -> bool:
    if not isinstance(expr, CallExpr) or not isinstance(expr.callee, RefExpr):
        return False
    if expr.callee.fullname != "functools.partial" or not expr.args:
        return False
    first = expr.args[0]
    from ._xmap import XMAP_NAMES

    names = XMAP_NAMES if fullname in XMAP_NAMES else {fullname}
    return isinstance(first, RefExpr) and (
        first.fullname in names or TRANSFORMS.get(first.fullname) == TRANSFORMS.get(fullname, "")
    )


def _construction(context: object, fullname: str) -> CallExpr | None:
    """The ``partial(transform, ...)`` expression being called: ``partial(...)(f)`` or a decorator."""
    if isinstance(context, CallExpr) and _is_partial_of(context.callee, fullname):
        return context.callee  # type: ignore[return-value]
    if isinstance(context, Decorator):
        for decorator in context.decorators:
            if _is_partial_of(decorator, fullname):
                return decorator  # type: ignore[return-value]
    return None


XMAP_FORMALS = ("fun", "in_axes", "out_axes", "axis_sizes", "axis_resources", "donate_argnums", "backend")


def _xmap_context(ctx: MethodContext, construction: CallExpr, fun_type: Type, default: Type) -> FunctionContext:
    """The context ``tx.xmap(f, in_axes, ...)`` would have, from ``partial(tx.xmap, ...)`` applied to ``f``."""
    any_type = AnyType(TypeOfAny.special_form)
    args: list[list[Expression]] = [[] for _ in XMAP_FORMALS]
    types: list[list[Type]] = [[] for _ in XMAP_FORMALS]
    position = 0
    for expr, kind, name in zip(
        construction.args[1:], construction.arg_kinds[1:], construction.arg_names[1:], strict=False
    ):
        if kind == ARG_POS and position < len(XMAP_FORMALS):
            args[position].append(expr)
            types[position].append(any_type)
            position += 1
        elif name in XMAP_FORMALS:
            args[XMAP_FORMALS.index(name)].append(expr)
            types[XMAP_FORMALS.index(name)].append(any_type)
    fun_expr = ctx.args[0][0] if ctx.args and ctx.args[0] else construction
    if position < len(XMAP_FORMALS):
        args[position].append(fun_expr)
        types[position].append(fun_type)
    return FunctionContext(
        arg_types=types,
        arg_kinds=[[ARG_POS] * len(a) for a in args],
        callee_arg_names=list(XMAP_FORMALS),
        arg_names=[[None] * len(a) for a in args],
        default_return_type=default,
        args=args,
        context=construction,
        api=ctx.api,
    )
