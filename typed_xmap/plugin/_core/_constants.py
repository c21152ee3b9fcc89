"""Names bound once read as what they were bound to: ``RESOURCES = {"batch": "data"}`` then
``tx.shard(x, RESOURCES)``, ``LAYOUT: Final = {"height": "kh"}`` then ``tnp.conv(x, k, LAYOUT)``, a local
``parts = {"heads": 4, "head_dim": 16}`` then ``tx.split_axis(x, "inner", parts)``.

A name of the checked module stands for its value when the module binds it once, at the top level, and never
rebinds or mutates it (no ``global`` rebinding, item assignment, ``del`` or mutating method call anywhere in
the module); ``Final`` says the same. A local stands for its value when its function binds it once
(``_sizes.bound_once``). A name from another module stays as it is: that module may come from mypy's cache,
without its syntax tree, and a result must not depend on it (an int ``Final`` there is known all the same:
mypy's own type for it is the literal).
"""

from __future__ import annotations

from functools import partial
from typing import Any

from mypy.nodes import (
    LDEF,
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
    IntExpr,
    MemberExpr,
    MypyFile,
    NameExpr,
    OperatorAssignmentStmt,
    Statement,
    StrExpr,
    TryStmt,
    WhileStmt,
    WithStmt,
)

from ._literals import literal_value
from ._sizes import bound_once, known_literal

__all__ = ["constant_value", "flow_value", "resolved"]

MUTATING = frozenset({"update", "pop", "popitem", "clear", "setdefault", "append", "extend", "insert", "remove"})


def constant_value(api: Any, expr: Expression | None) -> object:
    """``literal_value(expr)``, names bound once (module constants, locals) read as their values; else ``UNKNOWN``."""
    return flow_value(api, expr)


def flow_value(api: Any, expr: Expression | None) -> object:
    """``expr``'s literal value, every name in it bound once (at any depth: ``{"height": POOL}``) read as its value."""
    return literal_value(expr, partial(resolved, api))


def resolved(api: Any, expr: Expression, depth: int = 0) -> Expression:
    """The expression a name bound once stands for (followed through names bound to names), else ``expr``."""
    if not isinstance(expr, NameExpr) or depth > 8:
        return expr
    value = bound_once(api, expr) if expr.kind == LDEF else _module_constant(api, expr)
    if value is not None:
        return resolved(api, value, depth + 1)
    literal = _literal_of_type(api, expr)
    return literal if literal is not None else expr


def _literal_of_type(api: Any, expr: NameExpr) -> Expression | None:
    """An int or str literal mypy knows a name to hold (a ``Final`` constant, also one imported from another
    module: mypy's cache keeps its literal type), as an expression."""
    value = known_literal(api, expr)
    if isinstance(value, int):
        return IntExpr(value)
    return StrExpr(value) if isinstance(value, str) else None


_MODULE_CONSTANTS: dict[tuple[int, str], tuple[MypyFile, Expression | None]] = {}


def _module_constant(api: Any, expr: NameExpr) -> Expression | None:
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
