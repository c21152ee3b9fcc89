"""``isinstance(v, tx.NamedArray)``, the ``is_leaf=`` idiom of tree maps over params: accepted.

To mypy ``NamedArray`` is ``typing.Annotated`` (which lets ``NamedArray[f32, "batch"]`` hold axis names),
a special form ``isinstance`` rejects; at run time it is the class, and the check works. When the second
argument names typed_xmap's ``NamedArray`` (alone or in a tuple), the call's signature takes any object
there; ``v`` is not narrowed.
"""

from __future__ import annotations

from mypy.nodes import Expression, MemberExpr, NameExpr, TupleExpr
from mypy.plugin import FunctionSigContext
from mypy.types import AnyType, FunctionLike, TypeOfAny

ISINSTANCE = frozenset({"builtins.isinstance", "builtins.issubclass"})
ANNOTATED = frozenset({"typing.Annotated", "typing_extensions.Annotated"})


def _names_named_array(expression: Expression) -> bool:
    if isinstance(expression, TupleExpr):
        return any(_names_named_array(item) for item in expression.items)
    return (
        isinstance(expression, NameExpr | MemberExpr)
        and expression.name == "NamedArray"
        and expression.fullname in ANNOTATED
    )


def isinstance_signature(ctx: FunctionSigContext) -> FunctionLike:
    signature = ctx.default_signature
    classes = ctx.args[1] if len(ctx.args) > 1 else []
    if len(classes) != 1 or not _names_named_array(classes[0]) or len(signature.arg_types) < 2:
        return signature
    arg_types = [signature.arg_types[0], AnyType(TypeOfAny.special_form), *signature.arg_types[2:]]
    return signature.copy_modified(arg_types=arg_types)
