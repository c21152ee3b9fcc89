"""Module-level constants read as literals: ``RESOURCES = {"batch": "data"}`` then ``tx.shard(x, RESOURCES)``.

A name of the checked module stands for its value when the module binds it once, at the top level, to a
literal, and never rebinds or mutates it (no ``global`` rebinding, item assignment, ``del`` or mutating
method call anywhere in the module); ``Final`` says the same. A name from another module stays unknown:
that module may come from mypy's cache, without its syntax tree, and a result must not depend on it.
"""

from __future__ import annotations

from typing import Any

from mypy.nodes import (
    AssignmentStmt,
    Block,
    CallExpr,
    ClassDef,
    Decorator,
    DelStmt,
    Expression,
    ExpressionStmt,
    ForStmt,
    FuncDef,
    IfStmt,
    IndexExpr,
    MemberExpr,
    MypyFile,
    NameExpr,
    OperatorAssignmentStmt,
    Statement,
    TryStmt,
    WhileStmt,
    WithStmt,
)

from ._literals import UNKNOWN, literal_value

__all__ = ["constant_value"]

MUTATING = frozenset({"update", "pop", "popitem", "clear", "setdefault", "append", "extend", "insert", "remove"})


def constant_value(api: Any, expr: Expression | None) -> object:
    """``literal_value(expr)``, or the literal a module-level constant ``expr`` names; else ``UNKNOWN``."""
    value = literal_value(expr)
    if value is not UNKNOWN or not isinstance(expr, NameExpr) or not expr.fullname:
        return value
    tree = getattr(api, "tree", None)
    module, _, _ = expr.fullname.rpartition(".")
    if not isinstance(tree, MypyFile) or module != tree.fullname:
        return UNKNOWN
    values: list[Expression] = []
    if not _bindings(tree.defs, expr.fullname, values) or len(values) != 1:
        return UNKNOWN
    return literal_value(values[0])


def _bindings(statements: list[Statement], fullname: str, values: list[Expression]) -> bool:
    """Collect the values ``fullname`` is bound to in ``statements`` (nested blocks too); ``False`` when one
    of them changes it otherwise (an augmented, item or tuple assignment, ``del``, a mutating method call)."""
    return all(_statement(statement, fullname, values) for statement in statements)


def _statement(statement: Statement, fullname: str, values: list[Expression]) -> bool:
    target = _Target(fullname)
    if isinstance(statement, AssignmentStmt):
        for lvalue in statement.lvalues:
            if target.named(lvalue):
                values.append(statement.rvalue)
            elif target.inside(lvalue):
                return False
        return True
    if isinstance(statement, OperatorAssignmentStmt):
        return not target.inside(statement.lvalue)
    if isinstance(statement, DelStmt):
        return not target.inside(statement.expr)
    if isinstance(statement, ExpressionStmt):
        call = statement.expr
        callee = call.callee if isinstance(call, CallExpr) else None
        return not (isinstance(callee, MemberExpr) and callee.name in MUTATING and target.named(callee.expr))
    if isinstance(statement, ForStmt) and target.inside(statement.index):
        return False
    return all(_bindings(block.body, fullname, values) for block in _blocks(statement))


def _blocks(statement: Statement) -> list[Block]:
    """The blocks nested in a compound statement."""
    if isinstance(statement, (FuncDef, WhileStmt, ForStmt, WithStmt)):
        blocks = [statement.body]
        else_body = getattr(statement, "else_body", None)
        return blocks + ([else_body] if else_body is not None else [])
    if isinstance(statement, Decorator):
        return [statement.func.body]
    if isinstance(statement, ClassDef):
        return [statement.defs]
    if isinstance(statement, IfStmt):
        return [*statement.body, *([statement.else_body] if statement.else_body is not None else [])]
    if isinstance(statement, TryStmt):
        optional = [statement.else_body, statement.finally_body]
        return [statement.body, *statement.handlers, *(b for b in optional if b is not None)]
    return []


class _Target:
    """Tests of an expression against one module-level name."""

    def __init__(self, fullname: str) -> None:
        self.fullname = fullname

    def named(self, expr: Expression | None) -> bool:
        return isinstance(expr, NameExpr) and expr.fullname == self.fullname

    def inside(self, expr: Expression | None) -> bool:
        """``expr`` (an assignment target) is the name, or binds or changes it: ``NAME[k]``, ``NAME.a``,
        ``(NAME, b)``, ``*NAME``."""
        if self.named(expr):
            return True
        if isinstance(expr, IndexExpr):
            return self.named(expr.base) or self.inside(expr.base)
        if isinstance(expr, MemberExpr):
            return self.named(expr.expr)
        items = getattr(expr, "items", None)
        if isinstance(items, list):
            return any(self.inside(item) for item in items)
        inner = getattr(expr, "expr", None)
        return isinstance(inner, NameExpr) and self.named(inner)
