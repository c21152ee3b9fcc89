"""Placement where a variable's bindings meet: what an operand that is a variable holds, whatever path reached it.

Where branches meet (after ``if``/``else``, at a loop's head) mypy gives a variable the simplified union of its
types there, and that keeps *one* of two types that differ only in placement (placement rides in the shape's
text, which mypy does not compare: ``make_simplified_union`` finds them equivalent). A value placed
``batch@data`` in one branch and ``batch@model`` in the other would then carry the first branch's placement, and
an operation meeting another value on ``data`` would be a false ``axis-resource-conflict``. Placement is
gradual, so an operand that is a local variable bound at more than one site keeps only the placements that
every site agrees on: a site whose value's type is not known yet (it comes later, or in a loop not yet
checked), or that binds part of a value (a tuple target, a ``for`` or ``with`` target, an augmented
assignment), agrees on none. A variable bound once keeps its placement.

A variable rebound to a placed value (``x = tx.shard(x, {"batch": "data"})`` where ``x`` is a parameter
annotated without placement) is narrowed by mypy to the assigned type, but mypy's narrowing keeps the declared
type when the two compare equal, and placement is no part of that comparison: later uses read the declared,
unplaced type. mypy's binder still holds the assigned type; an operand that is such a variable takes its
placement from there (``rebound``), then keeps what every binding site that may reach it agrees on, as above
(after ``if flag: x = tx.shard(...)`` with no ``else``, the parameter's site agrees on none: unknown).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

from mypy.nodes import (
    AssignmentExpr,
    AssignmentStmt,
    Block,
    Expression,
    ForStmt,
    FuncItem,
    IfStmt,
    ListExpr,
    NameExpr,
    Node,
    OperatorAssignmentStmt,
    StarExpr,
    Statement,
    TryStmt,
    TupleExpr,
    Var,
    WhileStmt,
    WithStmt,
)
from mypy.types import CallableType, Type

from .._core._encoding import Shape, carries_placement, decode
from .._core._tree import checked_function, checked_statements, expressions

__all__ = ["one_value", "placed_at_use", "rebound", "settled"]

Site = Type | None
"""The type bound at one site (``None``: unknown, or a part of a value)."""


def settled(api: Any, expr: Expression | None, shape: Shape) -> Shape:
    """``shape``, the type of the operand ``expr``, with only the placements every binding site of its
    variable that may reach it agrees on (``shape`` itself for an operand that is not a variable bound at
    more than one such site). A variable's placement is its latest binding's (``rebound``)."""
    if not isinstance(expr, NameExpr) or not isinstance(expr.node, Var):
        return shape
    shape = _rebound_shape(api, expr, shape)
    if not shape.placement:
        return shape
    sites = _sites(api, expr.node, expr.line, checked_function(api), checked_statements(api))
    if len(sites) < 2:
        return shape
    agreed = _agreed(shape.placement, sites)
    return shape if agreed == shape.placement else replace(shape, placement=agreed)


def placed_at_use(api: Any, expr: Expression, shape: Shape, function: Any, module: Sequence[Statement]) -> Shape:
    """After a module is checked (no binder, no checker scope: ``_declared``), ``shape``, the type mypy gives the
    variable ``expr`` at its use, placed as every binding site in ``function`` (``None``: the ``module``'s own
    statements) that may reach the use agrees (a rebinding's placement, which mypy's type of the variable
    drops); ``shape`` itself for anything else, or a variable no site of that body binds."""
    if not isinstance(expr, NameExpr) or not isinstance(expr.node, Var) or shape.named is None:
        return shape
    body = function.body.body if isinstance(function, FuncItem) else module
    sites = _sites(api, expr.node, expr.line, function, body)
    if not sites:
        return shape
    first = decode(sites[0]) if sites[0] is not None else None
    agreed = _agreed(first.placement if first is not None else {}, sites[1:])
    return replace(shape, placement={n: m for n, m in agreed.items() if n in shape.named})


def _agreed(placement: Mapping[str, tuple[str, ...]], sites: Sequence[Site]) -> dict[str, tuple[str, ...]]:
    """The placements of ``placement`` that every site's type gives alike (an unknown site: none)."""
    agreed = dict(placement)
    for site in sites:
        found = decode(site) if site is not None else None
        known = found.placement if found is not None else {}
        agreed = {n: m for n, m in agreed.items() if known.get(n) == m}
        if not agreed:
            break
    return agreed


def rebound(api: Any, expr: Expression | None) -> bool:
    """Whether ``expr`` is a variable that mypy's binder holds with a placement (its latest binding's) that the
    variable's type, as mypy reads it, may not show (the fast test of the placing hooks)."""
    if not isinstance(expr, NameExpr) or not isinstance(expr.node, Var):
        return False
    bound = _bound(api, expr)
    return bound is not None and carries_placement(bound)


def _bound(api: Any, expr: NameExpr) -> Type | None:
    """The type mypy's binder holds for the variable ``expr`` here (``None``: none, or no binder)."""
    binder = getattr(api, "binder", None)
    return binder.get(expr) if binder is not None else None


def _rebound_shape(api: Any, expr: NameExpr, shape: Shape) -> Shape:
    """``shape`` with the placement of the type the binder holds for ``expr``, where that type has the same
    axes (mypy reads a rebound variable as its declared type when the two differ only in placement)."""
    bound = _bound(api, expr)
    if bound is None or not carries_placement(bound):
        return shape
    found = decode(bound)
    if found is None or found.named is None or shape.named is None or found.named.keys() != shape.named.keys():
        return shape
    return shape if found.placement == shape.placement else replace(shape, placement=found.placement)


def _sites(api: Any, var: Var, line: int, scope: Any, body: Sequence[Statement]) -> list[Site]:
    """The type bound at each site of ``body``, the statements of the function ``scope`` (or of a module), that
    binds ``var`` and may reach a use at ``line`` (the parameter's declared type among them, unless a binding
    hides it)."""
    outer: list[Site] = []
    if isinstance(scope, FuncItem):
        signature = scope.type
        for index, argument in enumerate(scope.arguments):
            if argument.variable is var:
                declared = isinstance(signature, CallableType) and index < len(signature.arg_types)
                outer.append(signature.arg_types[index] if declared and isinstance(signature, CallableType) else None)
    return _block_sites(api, var, line, body, outer)


def _block_sites(api: Any, var: Var, line: int, body: Sequence[Statement], outer: list[Site]) -> list[Site]:
    """The sites of ``body``, a block run in order, that may reach a use at ``line``, after ``outer``, those
    that reach the block: a statement of the block that surely binds ``var`` before the one holding the use
    hides the sites before it (``outer`` too), and the statements after that one are not reached. Inside an
    ``if``'s branch holding the use, that branch is a block of its own (the other branches do not reach it);
    inside a loop, every site of the loop counts (a later iteration's reach the use)."""
    holding = next((i for i, s in enumerate(body) if s.line <= line <= (s.end_line or s.line)), len(body))
    start = next((i for i in reversed(range(holding)) if _surely_binds(body[i], var)), None)
    sites = list(outer) if start is None else []
    sites += _sites_in(api, var, body[start or 0 : holding])
    if holding == len(body) or isinstance(body[holding], AssignmentStmt):
        return sites
    statement = body[holding]
    branch = _branch_holding(statement, line) if isinstance(statement, IfStmt) else None
    if branch is not None:  # the walruses of the whole statement count (its conditions' reach the branch)
        return _block_sites(api, var, line, branch.body, sites + _walrus_sites(api, var, [statement]))
    return sites + _sites_in(api, var, [statement])  # a compound statement: all its sites (a loop's reach it)


def one_value(api: Any, expr: Expression | None) -> Var | None:
    """The variable ``expr`` names when it holds one value wherever the function mypy is checking reads it (a
    parameter never rebound, a local bound at one site), else ``None``."""
    function = checked_function(api)
    if not isinstance(expr, NameExpr) or not isinstance(expr.node, Var) or not isinstance(function, FuncItem):
        return None
    sites = len(_sites_in(api, expr.node, function.body.body))
    parameter = any(argument.variable is expr.node for argument in function.arguments)
    return expr.node if sites == (0 if parameter else 1) else None


def _sites_in(api: Any, var: Var, reached: Sequence[Statement]) -> list[Site]:
    """The sites binding ``var`` in ``reached`` (nested blocks included)."""
    sites: list[Site] = []
    for node in _statements(reached):
        if isinstance(node, AssignmentStmt):
            for lvalue in node.lvalues:
                if isinstance(lvalue, NameExpr) and lvalue.node is var:
                    sites.append(api.lookup_type_or_none(node.rvalue))
                elif _binds(lvalue, var):
                    sites.append(None)
        elif isinstance(node, OperatorAssignmentStmt | ForStmt | WithStmt):
            targets = [node.lvalue] if isinstance(node, OperatorAssignmentStmt) else []
            targets += [node.index] if isinstance(node, ForStmt) else []
            targets += [t for t in node.target if t is not None] if isinstance(node, WithStmt) else []
            sites += [None for target in targets if _binds(target, var)]
    return sites + _walrus_sites(api, var, reached)


def _walrus_sites(api: Any, var: Var, reached: Sequence[Statement]) -> list[Site]:
    """The sites of the assignment expressions (``(x := ...)``) binding ``var`` in ``reached``."""
    return [
        api.lookup_type_or_none(e.value)
        for e in expressions(reached)
        if isinstance(e, AssignmentExpr) and e.target.node is var
    ]


def _surely_binds(statement: Statement, var: Var) -> bool:
    """Whether ``statement`` binds ``var`` on every path through it: an assignment to it (or to a tuple holding
    it), or an ``if`` with an ``else`` whose every branch surely binds it."""
    if isinstance(statement, AssignmentStmt):
        return any(_binds(lvalue, var) for lvalue in statement.lvalues)
    if isinstance(statement, IfStmt) and statement.else_body is not None:
        branches = [*statement.body, statement.else_body]
        return all(any(_surely_binds(s, var) for s in branch.body) for branch in branches)
    return False


def _branch_holding(statement: IfStmt, line: int) -> Block | None:
    """The branch of ``statement`` whose statements hold ``line`` (``None``: the use is in a condition)."""
    for branch in [*statement.body, statement.else_body]:
        if branch is not None and branch.body:
            first, last = branch.body[0], branch.body[-1]
            if first.line <= line <= (last.end_line or last.line):
                return branch
    return None


def _binds(target: Node, var: Var) -> bool:
    """Whether the assignment target ``target`` (a name, a tuple or list of them, starred) binds ``var``."""
    if isinstance(target, NameExpr):
        return target.node is var
    if isinstance(target, StarExpr):
        return _binds(target.expr, var)
    if isinstance(target, TupleExpr | ListExpr):
        return any(_binds(item, var) for item in target.items)
    return False


def _statements(body: Sequence[Statement]) -> Iterator[Statement]:
    """Every statement of ``body``, nested blocks included (not the bodies of nested functions or classes,
    whose variables are their own)."""
    stack: list[Node | None] = list(reversed(body))
    while stack:
        node = stack.pop()
        if node is None:
            continue
        if isinstance(node, Block):
            stack.extend(reversed(node.body))
            continue
        if not isinstance(node, Statement):
            continue
        yield node
        if isinstance(node, IfStmt):
            stack.extend([node.else_body, *reversed(node.body)])
        elif isinstance(node, WhileStmt | ForStmt):
            stack.extend([node.else_body, node.body])
        elif isinstance(node, WithStmt):
            stack.append(node.body)
        elif isinstance(node, TryStmt):
            stack.extend([node.finally_body, node.else_body, *reversed(node.handlers), node.body])
