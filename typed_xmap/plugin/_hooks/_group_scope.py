"""Where a variadic group written in an annotation (``"*rest chan"``) binds, and where it is open.

At run time ``@tx.typed`` binds a group once per call, across the parameters and the return, the items of a
tuple among them included (``-> tuple[NamedArray[f32, "*rest chan"], NamedArray[f32, "*rest feat"]]``). The
plugin keeps the group as a key of its own (closed: a value without it does not fit) wherever it means that
binding:

- a parameter's or the return's type in a function's signature, or an item of a tuple or union there
  (``NamedArray[f32, "*rest chan"] | None``);
- a local variable's annotation (or a tuple item of it) in the body of a function whose signature declares the
  group (``out: NamedArray[f32, "*rest time mid"] = ...``): the same group as the signature's;
- a type alias whose value is such a NamedArray (``Hidden = NamedArray[f32, "*rest time chan"]``) keeps it, and
  each use of the alias is judged where it is written, as if the spec were written there.

Anywhere else (a TypedDict field, a ``dict[str, ...]`` value, a variable outside such a function) each value's
group is its own, so the type is open (``open_groups``): ``"layers *weight"`` holds every stacked weight.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from mypy.nodes import AssignmentStmt, Decorator, FuncBase, IndexExpr, TupleExpr, TypeAliasStmt
from mypy.types import CallableType, Type, UnboundType, UnionType

from ..._algebra import GROUP_PREFIX
from .._core._encoding import decode, items_of, open_groups

if TYPE_CHECKING:
    from mypy.nodes import Context, Expression

__all__ = ["groups_of", "scoped"]

TUPLES = frozenset({"tuple", "Tuple", "typing.Tuple", "builtins.tuple"})
UNIONS = frozenset({"Optional", "typing.Optional", "Union", "typing.Union"})


def groups_of(typ: Type) -> set[str]:
    """The group keys (``'*rest'``) of a NamedArray type, or of the items of a tuple or union of them."""
    items = items_of(typ)
    if items is not None:
        return {key for item in items for key in groups_of(item)}
    shape = decode(typ)
    if shape is None or shape.named is None:
        return set()
    return {name for name in shape.named if name.startswith(GROUP_PREFIX)}


def scoped(typ: Type, context: Context, semanal: object) -> Type:
    """``typ`` (an annotation's type, written at ``context``) with its groups kept where they bind, else open.
    ``semanal`` is mypy's semantic analyzer (its current statement and the functions it is inside)."""
    groups = groups_of(typ)
    if not groups or _binds(groups, context, semanal):
        return typ
    return open_groups(typ)


def _binds(groups: set[str], context: Context, semanal: object) -> bool:
    statement = getattr(semanal, "statement", None)
    function = statement.func if isinstance(statement, Decorator) else statement
    if isinstance(function, FuncBase):
        signature = function.unanalyzed_type
        if not isinstance(signature, CallableType):
            return True
        return _at_top(context, [*signature.arg_types, signature.ret_type])
    if isinstance(statement, AssignmentStmt) and statement.unanalyzed_type is not None:
        if not _at_top(context, [statement.unanalyzed_type]):
            return False
        stack = getattr(semanal, "function_stack", None) or []
        return any(groups <= _declared(function) for function in stack)
    if isinstance(statement, AssignmentStmt):
        return _defines_alias(statement, context)
    if isinstance(statement, TypeAliasStmt):
        return _is_top_expr(statement.value, context)
    return False


def _declared(function: object) -> set[str]:
    """The groups a function's signature declares."""
    signature = getattr(function, "type", None)
    if not isinstance(signature, CallableType):
        return set()
    return {key for typ in [*signature.arg_types, signature.ret_type] for key in groups_of(typ)}


def _tops(types: list[Type]) -> Iterator[Type]:
    """The types themselves and, recursively, the items of the ``tuple[...]`` and unions among them."""
    for typ in types:
        yield typ
        if isinstance(typ, UnboundType) and typ.name in TUPLES | UNIONS:
            yield from _tops(list(typ.args))
        elif isinstance(typ, UnionType):  # ``X | None``
            yield from _tops(list(typ.items))


def _at_top(context: Context, types: list[Type]) -> bool:
    return any(top.line == context.line and top.column == context.column for top in _tops(types))


def _defines_alias(statement: AssignmentStmt, context: Context) -> bool:
    """``Hidden = NamedArray[f32, "*rest time chan"]``: the alias keeps the group; each use decides."""
    return statement.unanalyzed_type is None and _is_top_expr(statement.rvalue, context)


def _is_top_expr(expr: Expression, context: Context) -> bool:
    """Whether ``expr`` is ``NamedArray[marker, ...]`` (or a tuple of them) with its marker at ``context``."""
    if isinstance(expr, IndexExpr) and isinstance(expr.index, TupleExpr) and expr.index.items:
        first = expr.index.items[0]
        if first.line == context.line and first.column == context.column:
            return True
        name = getattr(expr.base, "name", "")
        return name in TUPLES and any(_is_top_expr(item, context) for item in expr.index.items)
    return False
