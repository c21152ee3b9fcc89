"""``jax.jit(lambda v: tx.merge_axes(v, ...))(sharded)``: a lambda without annotations, transformed and called
at once, is typed with the types of the arguments it is called with.

mypy types a lambda's parameters from the type its call expects of it; ``jax.jit(fun: Callable, ...)`` expects
any callable, so ``v`` is ``Any`` and every named shape in the body is unknown, though the call right after
says what ``v`` is. Here the transform's signature, for this call, expects of its lambda a callable of the
outer call's argument types: mypy then types the body with them (the hooks run on it as written), and the
transform keeps the lambda's type (``_transforms``). Not for ``jax.vmap``, whose lambda sees one example of
its arguments, nor for a transform declared ``(fun: F) -> F``: the rewrite would leave ``F`` unsolved. Only
arguments read without a call (a name, an attribute, a subscript by a literal) are looked at, so nothing is
checked twice.

mypy also types the lambda once with no expectation (to choose among ``jax.jit``'s overloads): its parameters
are ``Any`` there, and what becomes unknown in that pass is not noted (``typed_by_its_call``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mypy.nodes import ARG_POS, CallExpr, LambdaExpr, NameExpr, Var
from mypy.types import AnyType, CallableType, FunctionLike, Type, TypeOfAny, TypeVarType, get_proper_type

from .._core._tree import checked_statements, expressions
from ._open_arguments import read_without_call

if TYPE_CHECKING:
    from mypy.nodes import Expression
    from mypy.plugin import FunctionContext, FunctionSigContext

__all__ = ["called_lambda_signature", "caller", "forget_typed_lambdas", "typed_by_its_call"]

_PARAMETERS: dict[int, Var] = {}
"""The parameters of the lambdas typed by their call, by id (the node kept, so an id is never another's)."""


def forget_typed_lambdas() -> None:
    """Drop the parameters of an earlier build's lambdas (a new plugin is made per build): kept, they would hold
    that build's types for the rest of the process."""
    _PARAMETERS.clear()


def typed_by_its_call(expr: Expression | None, typ: Type) -> bool:
    """Whether ``expr`` is a parameter of a lambda typed by its call (``jax.jit(lambda v: ...)(x)``) seen as
    ``Any``: the pass with no expectation, where an unknown named shape is not the lambda's."""
    node = expr.node if isinstance(expr, NameExpr) else None
    return node is not None and _PARAMETERS.get(id(node)) is node and isinstance(get_proper_type(typ), AnyType)


def caller(ctx: FunctionSigContext | FunctionContext) -> CallExpr | None:
    """The call whose callee is this call (``jax.jit(f)(x)``: the call of ``x``), in the function being checked
    (or the module)."""
    for expr in expressions(checked_statements(ctx.api)):
        if isinstance(expr, CallExpr) and expr.callee is ctx.context:
            return expr
    return None


def called_lambda_signature(ctx: FunctionSigContext) -> FunctionLike:
    """The transform's signature for this call: its first parameter, given a lambda without annotations that the
    transform's result is called with positional arguments, a callable of those arguments' types."""
    signature = ctx.default_signature
    first: Expression | None = ctx.args[0][0] if ctx.args and len(ctx.args[0]) == 1 else None
    if not isinstance(first, LambdaExpr) or isinstance(get_proper_type(signature.arg_types[0]), TypeVarType):
        return signature
    if any(argument.type_annotation is not None for argument in first.arguments):
        return signature
    outer = caller(ctx)
    if outer is None or any(kind != ARG_POS for kind in outer.arg_kinds) or len(outer.args) != len(first.arguments):
        return signature
    if first.arg_kinds != [ARG_POS] * len(outer.args) or not all(read_without_call(a) for a in outer.args):
        return signature
    types = [ctx.api.get_expression_type(argument) for argument in outer.args]
    _PARAMETERS.update((id(argument.variable), argument.variable) for argument in first.arguments)
    expected = CallableType(
        types,
        [ARG_POS] * len(types),
        list(first.arg_names),
        AnyType(TypeOfAny.special_form),
        ctx.api.named_generic_type("builtins.function", []),
    )
    return signature.copy_modified(arg_types=[expected, *signature.arg_types[1:]])
