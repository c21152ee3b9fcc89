"""The value a module-level name of the checked module is bound to, when the module binds it once and never
changes it: no ``global`` rebinding, augmented, item or attribute assignment, ``del``, mutating method call or
loop over it anywhere in the module. A tuple assignment of a tuple display binds each name to its item
(``BATCH, SEQ, EMBED = 8, 4, 16``). Read by ``_constants`` (any literal: a mapping, a string) and by ``_sizes``
(an int size).
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
    ListExpr,
    MemberExpr,
    MypyFile,
    NameExpr,
    OperatorAssignmentStmt,
    StarExpr,
    Statement,
    TryStmt,
    TupleExpr,
    WhileStmt,
    WithStmt,
)

__all__ = ["module_constant"]

MUTATING = frozenset({"update", "pop", "popitem", "clear", "setdefault", "append", "extend", "insert", "remove"})

_MODULE_CONSTANTS: dict[tuple[int, str], tuple[MypyFile, Expression | None]] = {}


def module_constant(api: Any, expr: NameExpr) -> Expression | None:
    """The value a module-level name of the checked module is bound to, once and never changed; memoized."""
    tree = getattr(api, "tree", None)
    module, _, _ = expr.fullname.rpartition(".") if expr.fullname else ("", "", "")
    if not isinstance(tree, MypyFile) or module != tree.fullname:
        return None
    key = (id(tree), expr.fullname)
    cached = _MODULE_CONSTANTS.get(key)
    if cached is not None and cached[0] is tree:
        return cached[1]
    values: list[Expression] = []
    found = values[0] if _bindings(tree.defs, expr.fullname, values) and len(values) == 1 else None
    if len(_MODULE_CONSTANTS) > 4096:
        _MODULE_CONSTANTS.clear()
    _MODULE_CONSTANTS[key] = (tree, found)
    return found


def _bindings(statements: list[Statement], fullname: str, values: list[Expression]) -> bool:
    """Collect the values ``fullname`` is bound to in ``statements`` (nested blocks too); ``False`` when one
    of them changes it otherwise (an augmented or item assignment, unpacking from a value that is no tuple
    display, ``del``, a mutating method call)."""
    return all(_statement(statement, fullname, values) for statement in statements)


def _statement(statement: Statement, fullname: str, values: list[Expression]) -> bool:
    target = _Target(fullname)
    if isinstance(statement, AssignmentStmt):
        for bound, value in (p for lvalue in statement.lvalues for p in _unpacked(lvalue, statement.rvalue)):
            if target.named(bound):
                values.append(value)
            elif target.inside(bound):
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


def _unpacked(lvalue: Expression, rvalue: Expression) -> list[tuple[Expression, Expression]]:
    """The (target, value) pairs an assignment binds: ``BATCH, SEQ = 8, 4`` binds ``BATCH`` to ``8`` and ``SEQ``
    to ``4`` (nested tuples alike); a target unpacked from anything else (a call, a starred item, another
    length) is paired with the whole value, which is no value of its own (``_Target.inside``: it is changed)."""
    targets, items = getattr(lvalue, "items", None), getattr(rvalue, "items", None)
    if not (isinstance(lvalue, (TupleExpr, ListExpr)) and isinstance(rvalue, (TupleExpr, ListExpr))):
        return [(lvalue, rvalue)]
    if not isinstance(targets, list) or not isinstance(items, list) or len(targets) != len(items):
        return [(lvalue, rvalue)]
    if any(isinstance(e, StarExpr) for e in [*targets, *items]):
        return [(lvalue, rvalue)]
    return [pair for target, item in zip(targets, items, strict=True) for pair in _unpacked(target, item)]


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
