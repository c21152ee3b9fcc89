"""``tx.scan(f, init, xs, axis=...)``: ``f`` takes each slice of ``xs`` along ``axis`` and returns
``(carry, y)``; the stacked outputs ``ys`` are the ``y``s with ``axis`` added (``_ops/_scan.py``'s rule).

The signature hook gives ``xs`` the type ``f``'s slice parameter has with ``axis`` added, so mypy's own argument
check reports ``xs`` whose slices ``f`` does not take (a misspelt or wrong axis); the function hook types
``(carry, ys)``: the carry as mypy infers it, ``ys`` leaf by leaf inside pytrees with ``axis`` (the size
``xs`` gives it, or ``length=``). ``axis`` must be a literal (or a name bound once to one); else the stub's types.
"""

from __future__ import annotations

import os
from functools import partial
from typing import TYPE_CHECKING, Any

from mypy.erasetype import erase_typevars
from mypy.expandtype import expand_type
from mypy.types import CallableType, FunctionLike, Instance, TupleType, Type, get_proper_type

from .._core._callables import SCAN, scanned_body
from .._core._constants import flow_value
from .._core._encoding import NAMED_ARRAY, decode, mentions_group, open_groups
from .._core._sizes import with_symbols
from .._core._support import arg, arg_expr
from ._calls import bind_arguments
from ._named_vmap import DEPTH, leaves

if TYPE_CHECKING:
    from mypy.nodes import Expression
    from mypy.plugin import FunctionContext, FunctionSigContext

    from ..._algebra import StaticSize
    from ._protocols import TypedXmapPlugin

__all__ = ["SCAN", "scan_hook", "scan_signature"]


def _body(api: Any, expr: Expression | None) -> CallableType | None:
    """``f``'s signature, when it takes a carry and a slice (of a ``functools.partial``: what is left to pass)."""
    return scanned_body(api.get_expression_type(expr) if expr is not None else None)


def _has_group(body: CallableType) -> bool:
    """Whether ``f`` declares a variadic group (``"*rest chan"``): the scan binds it, as a call does."""
    return any(mentions_group(t) for t in [*body.arg_types, body.ret_type])


def _stacked(plugin: TypedXmapPlugin, axis: str, size: StaticSize, typ: Type) -> Type | None:
    """A NamedArray leaf with the scanned axis in front (a ``*rest`` group, the caller's once ``f``'s is bound, an
    axis of its own); ``None``: not a NamedArray."""
    proper = get_proper_type(typ)
    shape = decode(typ)
    if shape is None or shape.scalar or not (isinstance(proper, Instance) and proper.type.fullname == NAMED_ARRAY):
        return None
    if shape.named is None:
        return plugin.types.array(shape.dtype, None, shape.positional)
    sizes = {axis: size, **with_symbols(shape)}
    named = {n: s if isinstance(s, int) or s is None else None for n, s in sizes.items()}
    symbols = {n: s for n, s in sizes.items() if s is not None and not isinstance(s, int)}
    return plugin.types.array(shape.dtype, named, shape.positional, symbols)


def scan_signature(plugin: TypedXmapPlugin, ctx: FunctionSigContext) -> FunctionLike:
    """``xs``'s expected type: ``f``'s slice parameter with ``axis`` added, leaf by leaf (a failure: the stub's)."""
    try:
        return _expecting(plugin, ctx)
    except Exception:
        if os.environ.get("TYPED_XMAP_PLUGIN_DEBUG"):
            raise
        return ctx.default_signature


def _expecting(plugin: TypedXmapPlugin, ctx: FunctionSigContext) -> FunctionLike:
    signature = _without_ys_variable(ctx.default_signature)
    names = signature.arg_names
    if "xs" not in names or "axis" not in names or "f" not in names:
        return signature
    axis_args, f_args = ctx.args[names.index("axis")], ctx.args[names.index("f")]
    axis = flow_value(ctx.api, axis_args[0]) if len(axis_args) == 1 else None
    body = _body(ctx.api, f_args[0]) if len(f_args) == 1 else None
    if not isinstance(axis, str) or body is None:
        return signature
    if _has_group(body):
        return _binding_group(ctx, signature, body)
    if _stacked(plugin, axis, None, body.arg_types[1]) is None:
        # a container slice (a TypedDict of weights): the stacked xs may be declared as another container kind
        # (``dict[str, NamedArray[f32, "layers *weight"]]`` for a ``Layer`` TypedDict), which fits at run time
        return signature
    expected = leaves(plugin, body.arg_types[1], partial(_stacked, plugin, axis, None), DEPTH, read_only=True)
    types = list(signature.arg_types)
    types[names.index("xs")] = expected
    return signature.copy_modified(arg_types=types)


def _binding_group(ctx: FunctionSigContext, signature: CallableType, body: CallableType) -> CallableType:
    """``f`` with a group: ``f`` fits as it is, ``init`` must fit ``f``'s carry parameter with its group open
    (mypy's own ``arg-type``, as at a call of ``f``), the carry is ``init``'s type; the function hook binds the
    group for ``ys`` (``_bound_outputs``)."""
    names = signature.arg_names
    init_args = ctx.args[names.index("init")] if "init" in names else []
    if len(init_args) != 1:
        return signature
    init = ctx.api.get_expression_type(init_args[0])
    carry = [v for v in signature.variables if v.name == "_C"]
    expanded = expand_type(signature, {v.id: init for v in carry})
    types = list(expanded.arg_types)
    types[names.index("f")] = ctx.api.get_expression_type(ctx.args[names.index("f")][0])
    types[names.index("init")] = open_groups(body.arg_types[0])
    return expanded.copy_modified(arg_types=types, variables=[v for v in signature.variables if v not in carry])


def _without_ys_variable(signature: CallableType) -> CallableType:
    """The stub's ``_Y`` (ys, ``f``'s second output) erased: the function hook types ys from ``f`` itself, and a
    TypeVar would let mypy infer it from the *expected* type (``_, hs = tx.scan(...)`` with ``hs`` declared,
    stacked) and then reject ``f``, whose outputs are not stacked."""
    ys = [v.id for v in signature.variables if v.name == "_Y"]
    if not ys:
        return signature
    erased = erase_typevars(signature, ids_to_erase=ys)
    if not isinstance(erased, CallableType):
        return signature
    return erased.copy_modified(variables=[v for v in signature.variables if v.id not in ys])


def scan_hook(plugin: TypedXmapPlugin, ctx: FunctionContext) -> Type:
    """``(carry, ys)``: ``ys`` are ``f``'s outputs with ``axis`` added, its size ``xs``'s or ``length=``."""
    plugin.containers.record(ctx.api)  # init and xs meet f's parameters: ``_declared`` checks the module
    axis = flow_value(ctx.api, arg_expr(ctx, "axis"))
    body = _body(ctx.api, arg_expr(ctx, "f", 0))
    result = get_proper_type(ctx.default_return_type)
    returned = get_proper_type(body.ret_type) if body is not None else None
    if not isinstance(result, TupleType) or len(result.items) != 2:
        return ctx.default_return_type
    outputs = returned.items[1] if isinstance(returned, TupleType) and len(returned.items) == 2 else None
    if not isinstance(axis, str) or outputs is None:
        # f's outputs lack the scanned axis: ys never have their closed shape, only their dtype and structure
        written = outputs if outputs is not None else result.items[1]
        unread = leaves(plugin, written, partial(_unknown, plugin), DEPTH, read_only=False)
        return result.copy_modified(items=[result.items[0], unread])
    size = _scanned_size(ctx, axis)
    if body is not None and _has_group(body):
        outputs = _bound_outputs(plugin, ctx, axis, body)
    ys = leaves(plugin, outputs, partial(_stacked, plugin, axis, size), DEPTH, read_only=False)
    return result.copy_modified(items=[result.items[0], ys])


def _bound_outputs(plugin: TypedXmapPlugin, ctx: FunctionContext, axis: str, body: CallableType) -> Type:
    """``f``'s ``y`` with its group bound as in the call ``f(init, slice of xs)`` (``bind_arguments``: a carry or
    slice that does not fit ``f`` is reported as at a call)."""
    carry = [(t, arg_expr(ctx, "init", 1)) for t in arg(ctx, "init", 1)]
    per_formal: list[list[tuple[Type, Expression | None]]] = [carry[:1], []]
    xs = arg(ctx, "xs", 2)
    shape = decode(xs[0]) if len(xs) == 1 else None
    if shape is not None and not shape.scalar and shape.named is not None and axis in shape.named:
        sizes = {n: s for n, s in with_symbols(shape).items() if n != axis}
        named = {n: s if isinstance(s, int) or s is None else None for n, s in sizes.items()}
        symbols = {n: s for n, s in sizes.items() if s is not None and not isinstance(s, int)}
        per_formal[1] = [(plugin.types.array(shape.dtype, named, None, symbols), arg_expr(ctx, "xs", 2))]
    returned = get_proper_type(bind_arguments(plugin, body, per_formal, ctx.api, ctx.context, body.ret_type))
    if isinstance(returned, TupleType) and len(returned.items) == 2:
        return returned.items[1]
    return plugin.types.any()


def _unknown(plugin: TypedXmapPlugin, typ: Type) -> Type | None:
    """A NamedArray leaf of unknown shape (its dtype kept); ``None``: not a NamedArray."""
    shape = decode(typ)
    if shape is None or shape.scalar:
        return None
    return plugin.types.array(shape.dtype, None, None)


def _scanned_size(ctx: FunctionContext, axis: str) -> StaticSize:
    """The scanned axis's size: ``xs``'s (a NamedArray's), else a literal ``length=``."""
    types = arg(ctx, "xs", 2)
    shape = decode(types[0]) if len(types) == 1 else None
    if shape is not None and shape.named is not None and axis in shape.named:
        return with_symbols(shape).get(axis)
    length = flow_value(ctx.api, arg_expr(ctx, "length"))
    return length if isinstance(length, int) and not isinstance(length, bool) else None
