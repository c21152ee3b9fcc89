"""A placement the checker knows against the placement an annotation declares, once a module is type-checked.

mypy compares a NamedArray's names and sizes (its TypedDict items), never its placement (the fallback's text,
``_encoding``), so a value placed ``batch@data`` fits a declared ``"batch@model seq"``. This check compares
them where a value meets a declared type: a ``return`` against the function's declared return type, a call's
argument against its parameter's annotation (an argument ``functools.partial(f, ...)`` binds against ``f``'s, at
the partial's line), an annotated assignment (``y: NamedArray[f32, "batch@data"] =
...``) against its annotation; the items of a tuple pairwise; a union's one NamedArray member (``X | None``:
``X``) on either side; an overloaded callee's parameter in the overload the call matches (mypy's choice: the
first whose parameters its arguments fit; none where an argument's type holds ``Any`` and several fit).
Gradual: only an axis placed on both sides is compared (the algebra's ``declared_placement_error``,
``[axis-resource-conflict]`` as ``@tx.typed``'s placement mismatch at run time); a value whose names differ
from the declared ones is mypy's own error already.

mypy has no hook for a return or an annotated assignment, so this runs once a module is type-checked, over the
types the checker inferred (as ``_containers`` does), in a module where one of the plugin's call hooks ran (a
``typed_xmap`` operation, or a call of an annotated function): the hooks hand over mypy's checker of the module.
A module that only passes values on, calling nothing, is not checked.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

from mypy.argmap import map_actuals_to_formals
from mypy.checkexpr import has_any_type
from mypy.nodes import ARG_NAMED, ARG_POS, AssignmentStmt, CallExpr, FuncDef, FuncItem, RefExpr, ReturnStmt
from mypy.subtypes import is_subtype
from mypy.typeops import get_all_type_vars
from mypy.types import CallableType, Overloaded, TupleType, Type, UnionType, get_proper_type

from ..._algebra import declared_placement_error
from .._core._callables import called_signature
from .._core._encoding import carries_placement, decode
from .._core._support import label, report
from .._core._tree import expressions, statements_in
from ._declared_parts import (
    declares_placement,
    dict_fields,
    known_shape,
    scan_arguments,
    typed_dict_fields,
    without_axis,
)
from ._merges import placed_at_use

if TYPE_CHECKING:
    from mypy.nodes import Context, Expression, MypyFile

__all__ = ["check_declared_placements"]


def check_declared_placements(api: Any, tree: MypyFile) -> None:
    """Report every value in ``tree`` whose known placement differs from the one its declared type says."""
    owners: dict[int, FuncItem] = {}  # each expression's innermost function (variables are read there)
    for statement, function in statements_in(tree.defs):
        if isinstance(statement, FuncItem):
            owners.update((id(e), statement) for e in expressions(statement.body.body))
        if isinstance(statement, ReturnStmt) and statement.expr is not None and isinstance(function, FuncDef):
            signature = function.type
            if isinstance(signature, CallableType) and not (function.is_generator or function.is_coroutine):
                where = f"the return value of {function.name}"
                _compare(api, statement.expr, signature.ret_type, where, Use(statement, function, tree))
        elif isinstance(statement, AssignmentStmt) and statement.type is not None and len(statement.lvalues) == 1:
            where = f"the value assigned to {label(statement.lvalues[0], 'the variable')}"
            _compare(api, statement.rvalue, statement.type, where, Use(statement, function, tree))
    for expr in expressions(tree.defs):
        if isinstance(expr, CallExpr):
            _check_call(api, expr, owners.get(id(expr)), tree)


class Use(NamedTuple):
    """Where a value meets a declared type: the node to report on, the function it is in (``None``: the
    module's own statements), the module."""

    context: Context
    function: FuncItem | None
    tree: MypyFile


def _check_call(api: Any, call: CallExpr, function: FuncItem | None, tree: MypyFile) -> None:
    for scanned in scan_arguments(api, call):  # tx.scan(f, init, xs): init and xs's slices meet f's parameters
        use = Use(scanned.argument, function, tree)
        _compare(api, scanned.argument, scanned.declared, scanned.where, use, scanned.axis)
    bound = _bound_by_partial(call)
    callee = called_signature(api.lookup_type_or_none(bound.callee)) if bound is not None else _callee(api, call)
    if callee is None or not any(declares_placement(_named_member(t)) for t in callee.arg_types):
        return
    passed = bound or call
    formals = _formals(api, passed, callee)
    name = label(passed.callee, "the function") + (" (bound by functools.partial)" if bound is not None else "")
    for formal, actuals in enumerate(formals):
        if len(actuals) != 1 or not declares_placement(_named_member(callee.arg_types[formal])):
            continue
        parameter = callee.arg_names[formal] or str(formal + 1)
        if _solved(callee, callee.arg_names[formal]):
            continue
        where = f"argument {parameter!r} of {name}"
        argument = passed.args[actuals[0]]
        _compare(api, argument, callee.arg_types[formal], where, Use(argument, function, tree))


def _bound_by_partial(call: CallExpr) -> CallExpr | None:
    """``functools.partial(f, x, k=y)`` read as the call ``f(x, k=y)`` of the arguments it binds (checked as a
    direct call's are, at the partial's line); ``None`` for any other call."""
    if not isinstance(call.callee, RefExpr) or call.callee.fullname != "functools.partial" or not call.args:
        return None
    if call.arg_kinds[0] != ARG_POS:
        return None
    bound = CallExpr(call.args[0], call.args[1:], call.arg_kinds[1:], call.arg_names[1:])
    bound.set_line(call)
    return bound


def _callee(api: Any, call: CallExpr) -> CallableType | None:
    """The signature ``call`` is checked against: an overloaded callee's matching overload (``_matched``), a
    function's, a ``functools.partial``'s (what is left to pass)."""
    found = get_proper_type(api.lookup_type_or_none(call.callee))
    return _matched(api, call, found) if isinstance(found, Overloaded) else called_signature(found)


def _formals(api: Any, call: CallExpr, callee: CallableType) -> list[list[int]]:
    """The actual arguments of ``call`` each of ``callee``'s parameters takes (a partial binds some of them:
    the rest are left unmatched)."""
    return map_actuals_to_formals(
        call.arg_kinds,
        call.arg_names,
        callee.arg_kinds,
        callee.arg_names,
        lambda index: api.lookup_type_or_none(call.args[index]),
    )


def _matched(api: Any, call: CallExpr, callee: Overloaded) -> CallableType | None:
    """The overload of ``callee`` that ``call`` matches, as mypy chooses it: the first whose parameters its
    arguments fit. ``None`` where that is not sure: a star argument, a generic overload (mypy solves its type
    variables), an argument's type holding ``Any`` where several overloads fit."""
    if any(kind not in (ARG_POS, ARG_NAMED) for kind in call.arg_kinds):
        return None
    types = [api.lookup_type_or_none(argument) for argument in call.args]
    if any(t is None for t in types):
        return None
    fitting: list[CallableType] = []
    for item in callee.items:
        if item.variables:
            return None
        formals = _formals(api, call, item)
        taken = sorted(a for actuals in formals for a in actuals)
        if taken != list(range(len(call.args))) or any(
            kind.is_required() and not actuals for kind, actuals in zip(item.arg_kinds, formals, strict=True)
        ):
            continue
        if all(is_subtype(types[a], item.arg_types[f]) for f, actuals in enumerate(formals) for a in actuals):
            fitting.append(item)
    if len(fitting) > 1 and any(has_any_type(t) for t in types if t is not None):
        return None
    return fitting[0] if fitting else None


def _named_member(typ: Type) -> Type:
    """A union's one NamedArray member (``X | None``: ``X``), where it has exactly one; else ``typ``."""
    proper = get_proper_type(typ)
    if not isinstance(proper, UnionType):
        return typ
    named = [m for m in proper.items if (shape := decode(m)) is not None and not shape.scalar]
    return named[0] if len(named) == 1 else typ


def _solved(callee: CallableType, parameter: str | None) -> bool:
    """Whether a generic callee's parameter was typed by solving its type variables (``tx.constrain(x, ...)``
    returned where ``NamedArray[f32, "batch@model"]`` is expected takes that for ``x``'s type): the placement
    there is the context's, not a declaration, so the argument is not held to it."""
    definition = callee.definition
    declared = definition.type if isinstance(definition, FuncDef) else None
    if not isinstance(declared, CallableType) or not declared.variables:
        return False
    if parameter is None or parameter not in declared.arg_names:
        return True
    return bool(get_all_type_vars(declared.arg_types[declared.arg_names.index(parameter)]))


def _compare(api: Any, expr: Expression, declared: Type, where: str, use: Use, axis: str | None = None) -> None:
    actual = api.lookup_type_or_none(expr)
    if actual is not None:
        _compare_types(api, actual, declared, where, use, expr, axis)


def _compare_types(
    api: Any, actual: Type, declared: Type, where: str, use: Use, expr: Expression | None, axis: str | None = None
) -> None:
    """Compare two types' placements, a tuple's items pairwise, a dict literal's or a ``TypedDict``'s fields with
    a ``TypedDict``'s, a union through its one NamedArray member (``X | None``); a variable ``expr`` placed as the
    bindings that reach it agree (``placed_at_use``: mypy's type of a rebound variable keeps its first placement);
    ``axis``: the actual value's axis that the declared one lacks (``tx.scan``'s ``xs``, sliced along it)."""
    found, wanted = get_proper_type(_named_member(actual)), get_proper_type(_named_member(declared))
    items = list(dict_fields(expr, wanted))
    for key, value, field in items:  # each item of a dict literal with its field, reported on the item's line
        _compare(api, value, field, f"{where} (field {key!r})", use._replace(context=value), axis)
    for key, found_field, declared_field in [] if items else typed_dict_fields(found, wanted):
        _compare_types(api, found_field, declared_field, f"{where} (field {key!r})", use, None, axis)
    if isinstance(found, TupleType) and isinstance(wanted, TupleType) and len(found.items) == len(wanted.items):
        for index, (item, declared_item) in enumerate(zip(found.items, wanted.items, strict=True)):
            _compare_types(api, item, declared_item, f"{where} (item {index})", use, None, axis)
        return
    if not carries_placement(wanted):
        return
    known, annotated = without_axis(known_shape(found), axis), decode(wanted)
    if known is None or annotated is None or known.named is None or annotated.named is None:
        return
    if set(known.named) != set(annotated.named):
        return  # the names differ: mypy's own error says so
    if expr is not None:
        known = placed_at_use(api, expr, known, use.function, use.tree.defs)
    error = declared_placement_error(where, annotated.placement, known.placement)
    if error is not None:
        report(api, error, use.context)
