"""``f(params["w_in"])`` with ``params: dict[str, NamedArray[f32, "layers *weight"]]``: a value with an open group
fits a parameter with a closed spec that lists its axes.

A ``*group`` in a container is open (``_group_scope``): each value read from it has the axes listed
(``layers``) and whichever others its group stands for, so its type is an open TypedDict of axes. mypy never
takes an open TypedDict for a closed one, so passing it to ``w: NamedArray[f32, "layers embed hidden"]`` would be
``arg-type`` on correct code; at run time ``@tx.typed`` accepts it when the group holds ``embed hidden``. Here the
parameter, for this call, accepts such an argument when every axis it lists is one of the parameter's (with the
parameter's sizes, and its dtype): a value the parameter does not list an axis of (``"embed hidden"`` for
``layers``) is still the error.

Only arguments read without a call (a name, an attribute, a subscript by a literal) are looked at: typing one
again costs nothing, where a call would be checked twice.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mypy.argmap import map_actuals_to_formals
from mypy.nodes import ARG_NAMED, ARG_POS, CallExpr, Expression, IndexExpr, IntExpr, MemberExpr, NameExpr, StrExpr
from mypy.types import AnyType, CallableType, Instance, Type, TypedDictType, TypeOfAny, get_proper_type

from .._core._encoding import NAMED_ARRAY, items_of, map_items

if TYPE_CHECKING:
    from mypy.plugin import FunctionSigContext, MethodSigContext

__all__ = ["open_arguments_fit", "read_without_call"]


def read_without_call(expr: Expression) -> bool:
    """Whether ``expr`` is read without a call: ``w``, ``p.w``, ``params["w_in"]``, ``blocks[0].w``."""
    if isinstance(expr, NameExpr):
        return True
    if isinstance(expr, MemberExpr):
        return read_without_call(expr.expr)
    if isinstance(expr, IndexExpr):
        return isinstance(expr.index, (StrExpr, IntExpr)) and read_without_call(expr.base)
    return False


def _axes(typ: Type) -> tuple[Instance, TypedDictType] | None:
    """A NamedArray type and its TypedDict of axes, else ``None``."""
    proper = get_proper_type(typ)
    if not (isinstance(proper, Instance) and proper.type.fullname == NAMED_ARRAY and len(proper.args) == 3):
        return None
    named = get_proper_type(proper.args[1])
    return (proper, named) if isinstance(named, TypedDictType) else None


def _named(typ: Type) -> bool:
    """Whether ``typ`` is a NamedArray type, or a tuple or union holding one."""
    return _axes(typ) is not None or any(_named(item) for item in items_of(typ) or ())


def _fitting(parameter: Type, argument: Type) -> Type:
    """``parameter``, for an ``argument`` with open axes that the closed ``parameter`` lists all of, opened to
    those axes (the parameter's own items and dtype); else ``parameter`` (a union's items each so)."""
    mapped = map_items(parameter, lambda item: _fitting(item, argument))
    if mapped is not None:
        return mapped
    wanted, given = _axes(parameter), _axes(argument)
    if wanted is None or given is None:
        return parameter
    (array, closed), (_, opened) = wanted, given
    if not closed.is_closed or opened.is_closed or not set(opened.items) <= set(closed.items):
        return parameter
    items = {name: closed.items[name] for name in opened.items}
    fits = TypedDictType(items, set(items), set(items), closed.fallback, is_closed=False)
    return array.copy_modified(args=[array.args[0], fits, array.args[2]])


def open_arguments_fit(ctx: FunctionSigContext | MethodSigContext, signature: CallableType) -> CallableType:
    """``signature`` for this call, each closed NamedArray parameter given an argument with open axes (a value
    of a container with a group) opened to the argument's axes when it lists them all; else unchanged."""
    call = ctx.context
    if not isinstance(call, CallExpr) or not any(_named(t) for t in signature.arg_types):
        return signature
    formals = map_actuals_to_formals(
        call.arg_kinds,
        call.arg_names,
        signature.arg_kinds,
        signature.arg_names,
        lambda _: AnyType(TypeOfAny.special_form),
    )
    types, changed = list(signature.arg_types), False
    for formal, actuals in enumerate(formals):
        if len(actuals) != 1 or call.arg_kinds[actuals[0]] not in (ARG_POS, ARG_NAMED) or not _named(types[formal]):
            continue
        expr = call.args[actuals[0]]
        if read_without_call(expr):
            fitting = _fitting(types[formal], ctx.api.get_expression_type(expr))
            changed, types[formal] = changed or fitting is not types[formal], fitting
    return signature.copy_modified(arg_types=types) if changed else signature
