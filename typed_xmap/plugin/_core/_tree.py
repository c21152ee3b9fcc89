"""Every expression of a module, outermost first: for the checks that run over a whole module once it is
type-checked (``_containers``) and for counting named shapes (``typed-xmap check --unknowns``); and the
function (or module) mypy is checking, for the hooks that read the code around a call.

A plugin cannot subclass mypy's compiled tree visitors (``TraverserVisitor``), so this walks the statements
and expressions by their kinds. A kind it does not list is not entered (its expressions are not yielded).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from mypy.nodes import (
    AssertStmt,
    AssignmentExpr,
    AssignmentStmt,
    AwaitExpr,
    Block,
    CallExpr,
    CastExpr,
    ClassDef,
    ComparisonExpr,
    ConditionalExpr,
    Decorator,
    DelStmt,
    DictExpr,
    DictionaryComprehension,
    Expression,
    ExpressionStmt,
    ForStmt,
    FuncItem,
    GeneratorExpr,
    IfStmt,
    IndexExpr,
    LambdaExpr,
    ListComprehension,
    ListExpr,
    MemberExpr,
    Node,
    OperatorAssignmentStmt,
    OpExpr,
    OverloadedFuncDef,
    RaiseStmt,
    ReturnStmt,
    SetComprehension,
    SetExpr,
    SliceExpr,
    StarExpr,
    Statement,
    TryStmt,
    TupleExpr,
    UnaryExpr,
    WhileStmt,
    WithStmt,
    YieldExpr,
    YieldFromExpr,
)

__all__ = ["checked_function", "checked_statements", "expressions", "statements_in"]


def checked_function(api: Any) -> Any:
    """The function mypy is checking (``api`` is its ``TypeChecker``); None at a module's top level."""
    scope = getattr(api, "scope", None)
    return scope.current_function() if scope is not None else None


def checked_statements(api: Any) -> Sequence[Statement]:
    """The statements of the function mypy is checking, or of the module at its top level."""
    function = checked_function(api)
    if isinstance(function, FuncItem):
        return function.body.body
    return getattr(getattr(api, "tree", None), "defs", [])


def expressions(statements: Sequence[Node]) -> Iterator[Expression]:
    """Every expression of ``statements`` (functions, classes and nested blocks included; or of expressions, those
    themselves), outermost first."""
    stack: list[Node] = list(reversed(statements))
    while stack:
        node = stack.pop()
        if isinstance(node, Expression):
            yield node
        stack.extend(reversed([child for child in _children(node) if child is not None]))


def statements_in(statements: Sequence[Statement]) -> Iterator[tuple[Statement, FuncItem | None]]:
    """Every statement of ``statements`` (in functions, classes and nested blocks too), with the function it is
    in (``None``: a module's or a class's own)."""
    stack: list[tuple[Node, FuncItem | None]] = [(s, None) for s in reversed(statements)]
    while stack:
        node, function = stack.pop()
        if not isinstance(node, Statement):
            continue
        yield node, function
        inner = node if isinstance(node, FuncItem) else function
        if isinstance(node, ClassDef):
            inner = None
        stack.extend((child, inner) for child in reversed(_children(node)) if isinstance(child, Statement))


def _children(node: Node) -> Sequence[Node | None]:
    """The statements and expressions directly inside ``node``."""
    found = _statement_children(node) if isinstance(node, Statement) else _expression_children(node)
    return found if found is not None else ()


def _statement_children(node: Statement) -> Sequence[Node | None] | None:
    if isinstance(node, AssignmentStmt):
        return [*node.lvalues, node.rvalue]
    if isinstance(node, OperatorAssignmentStmt):
        return [node.lvalue, node.rvalue]
    if isinstance(node, (ExpressionStmt, ReturnStmt)):
        return [node.expr]
    if isinstance(node, Block):
        return node.body
    if isinstance(node, FuncItem):
        return [node.body]
    if isinstance(node, Decorator):
        return [*node.decorators, node.func]
    if isinstance(node, OverloadedFuncDef):
        return list(node.items)
    if isinstance(node, ClassDef):
        return [node.defs]
    if isinstance(node, IfStmt):
        return [*node.expr, *node.body, node.else_body]
    if isinstance(node, WhileStmt):
        return [node.expr, node.body, node.else_body]
    if isinstance(node, ForStmt):
        return [node.index, node.expr, node.body, node.else_body]
    if isinstance(node, WithStmt):
        return [*node.expr, *node.target, node.body]
    if isinstance(node, TryStmt):
        return [node.body, *node.types, *node.handlers, node.else_body, node.finally_body]
    if isinstance(node, (AssertStmt, RaiseStmt)):
        return [node.expr, getattr(node, "msg", None), getattr(node, "from_expr", None)]
    if isinstance(node, DelStmt):
        return [node.expr]
    return None


def _expression_children(node: Node) -> Sequence[Node | None] | None:
    if isinstance(node, CallExpr):
        return [node.callee, *node.args]
    if isinstance(node, OpExpr):
        return [node.left, node.right]
    if isinstance(node, ComparisonExpr):
        return node.operands
    if isinstance(node, (MemberExpr, UnaryExpr, StarExpr, CastExpr, AwaitExpr, YieldFromExpr)):
        return [node.expr]
    if isinstance(node, YieldExpr):
        return [node.expr]
    if isinstance(node, IndexExpr):
        return [node.base, node.index]
    if isinstance(node, (TupleExpr, ListExpr, SetExpr)):
        return node.items
    if isinstance(node, DictExpr):
        return [part for item in node.items for part in item]
    if isinstance(node, ConditionalExpr):
        return [node.cond, node.if_expr, node.else_expr]
    if isinstance(node, SliceExpr):
        return [node.begin_index, node.end_index, node.stride]
    if isinstance(node, AssignmentExpr):
        return [node.target, node.value]
    if isinstance(node, LambdaExpr):
        return [node.body]
    if isinstance(node, (ListComprehension, SetComprehension)):
        return [node.generator]
    if isinstance(node, GeneratorExpr):
        return [node.left_expr, *node.sequences, *(c for conditions in node.condlists for c in conditions)]
    if isinstance(node, DictionaryComprehension):
        return [node.key, node.value, *node.sequences, *(c for conditions in node.condlists for c in conditions)]
    return None
