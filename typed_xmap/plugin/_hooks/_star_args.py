"""``f(x, *weights)``: a star argument of unknown length fills the required parameters it reaches.

mypy maps the elements of ``*weights`` (a ``list``, a ``tuple[X, ...]``: any length) to every positional
parameter from its place on, the optional ones included, so ``def f(x, wq, wk, mask: NamedArray[bool_, "seq"]
| None = None)`` called as ``f(x, *weights)`` is an ``arg-type`` error on ``mask`` although the list holds
exactly the two weights. Here an optional parameter that the elements' type cannot fill is taken to keep its
default (for this call, it reads as keyword-only): the elements are still checked against every parameter
they may fill, a required one included, and ``@tx.typed`` checks the actual call at run time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mypy.nodes import ARG_NAMED_OPT, ARG_OPT, ARG_POS, ARG_STAR, CallExpr
from mypy.subtypes import is_subtype
from mypy.types import CallableType, Instance, Type, get_proper_type

if TYPE_CHECKING:
    from mypy.plugin import FunctionSigContext, MethodSigContext

__all__ = ["unreached_defaults"]


def _element_type(typ: Type) -> Type | None:
    """The element type of a star argument of unknown length (``list[X]``, ``tuple[X, ...]``, ``Sequence[X]``);
    ``None`` for a fixed-length tuple (mypy maps those element by element) or anything else."""
    proper = get_proper_type(typ)
    if isinstance(proper, Instance) and len(proper.args) == 1:
        return proper.args[0]
    return None


def unreached_defaults(ctx: FunctionSigContext | MethodSigContext, signature: CallableType) -> CallableType:
    """``signature`` for this call, with the optional positional parameters that a trailing star argument of
    unknown length cannot fill made keyword-only (they keep their defaults); unchanged for any other call."""
    call = ctx.context
    if not isinstance(call, CallExpr) or ARG_STAR not in call.arg_kinds or ARG_STAR in signature.arg_kinds:
        return signature
    star = call.arg_kinds.index(ARG_STAR)
    if ARG_POS in call.arg_kinds[star + 1 :] or call.arg_kinds.count(ARG_STAR) > 1:
        return signature  # a positional argument after the star: mypy's mapping is the call's own
    element = _element_type(ctx.api.get_expression_type(call.args[star]))
    if element is None:
        return signature
    kinds = list(signature.arg_kinds)
    first = sum(1 for kind in call.arg_kinds[:star] if kind == ARG_POS)  # the parameter the star starts at
    for index in range(first, len(kinds)):
        if kinds[index] == ARG_OPT and not is_subtype(element, signature.arg_types[index]):
            # this one and every later optional positional parameter (the star cannot reach them past it)
            kinds[index:] = [ARG_NAMED_OPT if kind == ARG_OPT else kind for kind in kinds[index:]]
            return signature.copy_modified(arg_kinds=kinds)
    return signature
