"""Sizes read from the source: an int, a symbol (``cfg.mlp``, ``n``, ``x.named_shape["seq"]`` and simple
arithmetic on them), or unknown; the symbols' canonical form and rules are the algebra's (``_algebra/_symbols``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from mypy.nodes import (
    GDEF,
    LDEF,
    AssignmentStmt,
    Block,
    CallExpr,
    Decorator,
    DelStmt,
    DictExpr,
    Expression,
    ExpressionStmt,
    ForStmt,
    FuncDef,
    FuncItem,
    IfStmt,
    IndexExpr,
    IntExpr,
    ListExpr,
    MemberExpr,
    NameExpr,
    OperatorAssignmentStmt,
    OpExpr,
    ReturnStmt,
    StarExpr,
    Statement,
    StrExpr,
    TryStmt,
    TupleExpr,
    WhileStmt,
    WithStmt,
)
from mypy.types import Instance, LiteralType, get_proper_type

from ..._algebra import StaticSize, SymbolicSize, size_add, size_floordiv, size_mul, symbol
from ._encoding import Shape, decode, has_group
from ._literals import UNKNOWN, literal_value
from ._module_constants import module_constant

__all__ = [
    "bound_once",
    "erased",
    "known_literal",
    "local_names",
    "named_value_sizes",
    "read_sizes",
    "static_size",
    "symbols_of",
    "value_axis_symbol",
    "with_symbols",
]


def _size_sub(a: StaticSize, b: StaticSize) -> StaticSize:
    return size_add(a, -b) if isinstance(b, int) else None


_ARITHMETIC: dict[str, Callable[[StaticSize, StaticSize], StaticSize]] = {
    "+": size_add,
    "*": size_mul,
    "//": size_floordiv,
    "-": _size_sub,
}


def _source(api: Any, expr: Expression, this: Mapping[str, str] | None = None) -> str | None:
    """A name or attribute chain as written (``cfg.mlp``, ``self.heads``), from a name bound once in its
    function (a parameter never reassigned, a local assigned once) or a module's name. A name bound twice
    (``ch = ch * 2``, a loop variable, a rebound ``x``) would give one text to two sizes: no symbol (unknown).
    In a property's body (``this``: its ``self`` -> the receiver as written) ``self`` is the receiver."""
    if isinstance(expr, NameExpr):
        if this is not None and expr.kind == LDEF:
            return this.get(expr.name)
        if expr.kind == LDEF and _bindings(api).counts.get(expr.name, 0) > 1:
            return None
        return expr.name
    if isinstance(expr, MemberExpr):
        inner = _source(api, expr.expr, this)
        return f"{inner}.{expr.name}" if inner is not None else None
    return None


def static_size(api: Any, expr: Expression | None, depth: int = 0, this: Mapping[str, str] | None = None) -> StaticSize:
    """The size ``expr`` denotes: an int when mypy knows its value or a module constant of the checked module
    is bound to one (``_module_constants``), a symbol for a name, a config attribute or
    another value's ``named_shape[...]`` (and ``+ - * //`` on them), else unknown (``None``). A local assigned
    once stands for what it was assigned (``pixels = cfg.patch * cfg.patch``), a property that returns one
    expression for what it returns (``cfg.wide`` with ``return self.channels * 2``: ``2 * cfg.channels``)."""
    if expr is None or depth > 8:
        return None
    if isinstance(expr, NameExpr) and expr.kind == LDEF and this is None:
        bindings = _bindings(api)
        if bindings.counts.get(expr.name, 0) == 1 and expr.name in bindings.values:
            return static_size(api, bindings.values[expr.name], depth + 1)
    if isinstance(expr, IntExpr):
        return expr.value
    if isinstance(expr, NameExpr) and expr.kind == GDEF and this is None:
        constant = _module_int(api, expr, depth)
        if constant is not None:
            return constant
    if isinstance(expr, OpExpr) and expr.op in _ARITHMETIC:
        left, right = static_size(api, expr.left, depth + 1, this), static_size(api, expr.right, depth + 1, this)
        return _ARITHMETIC[expr.op](left, right)
    known = _literal_int(api, expr)
    if known is not None:
        return known
    if isinstance(expr, IndexExpr) and isinstance(expr.index, StrExpr):
        base = expr.base
        if isinstance(base, MemberExpr) and base.name == "named_shape" and this is None:
            return _axis_size(api, base.expr, expr.index.value)
        return None
    if isinstance(expr, MemberExpr):
        expanded = _property(api, expr, depth, this)
        if expanded is not None:
            return expanded
    text = _source(api, expr, this)
    return symbol(text) if text is not None else None


def _module_int(api: Any, expr: NameExpr, depth: int) -> int | None:
    """The int a module constant of the checked module stands for (``EMBED = 16``, ``BATCH, SEQ = 8, 4``); a
    constant bound to anything else keeps its name as its symbol."""
    value = module_constant(api, expr)
    size = static_size(api, value, depth + 1) if value is not None else None
    return size if isinstance(size, int) else None


def _property(api: Any, expr: MemberExpr, depth: int, this: Mapping[str, str] | None) -> StaticSize:
    """``cfg.wide`` where ``wide`` is a property whose body is one ``return``: the size it returns, its ``self``
    read as ``cfg``, when that is in the symbols' canonical form over the config's own sizes; else ``None``."""
    receiver = _source(api, expr.expr, this)
    try:
        typ = get_proper_type(api.get_expression_type(expr.expr))
    except Exception:
        return None
    node = typ.type.get(expr.name) if isinstance(typ, Instance) and receiver is not None else None
    function = node.node.func if node is not None and isinstance(node.node, Decorator) else None
    if function is None or not function.is_property or not function.arguments or len(function.body.body) != 1:
        return None
    (statement,) = function.body.body
    if not isinstance(statement, ReturnStmt) or statement.expr is None or receiver is None:
        return None
    size = static_size(api, statement.expr, depth + 1, {function.arguments[0].variable.name: receiver})
    if isinstance(size, SymbolicSize) and any(atom.startswith("(") for atom in size.atoms):
        return None  # a floor division of its own (cfg.grid: image // patch): the property's name reads better
    return size


def bound_once(api: Any, expr: Expression) -> Expression | None:
    """What a local name bound once in its function (``parts = {...}``, ``v = 2``) was assigned, else ``None``."""
    if not isinstance(expr, NameExpr) or expr.kind != LDEF:
        return None
    bindings = _bindings(api)
    return bindings.values.get(expr.name) if bindings.counts.get(expr.name, 0) == 1 else None


def known_literal(api: Any, expr: Expression) -> int | str | None:
    """The int or str mypy knows ``expr`` to hold (``Literal[8]``, a ``Final`` constant, ``n = 8``'s last known
    value), else ``None``."""
    try:
        proper = get_proper_type(api.get_expression_type(expr))
    except Exception:
        return None
    if isinstance(proper, Instance) and proper.last_known_value is not None:
        proper = proper.last_known_value
    if isinstance(proper, LiteralType) and isinstance(proper.value, (int, str)) and not isinstance(proper.value, bool):
        return proper.value
    return None


def _literal_int(api: Any, expr: Expression) -> int | None:
    value = known_literal(api, expr)
    return value if isinstance(value, int) else None


def _axis_size(api: Any, value: Expression, axis: str) -> StaticSize:
    """``value.named_shape[axis]``: the size its type carries (an int or a symbol), else the symbol of that text."""
    shape = decode(api.get_expression_type(value))
    if shape is not None and shape.named is not None and axis in shape.named:
        size = shape.named[axis]
        if size is not None:
            return size
        if axis in shape.symbols:
            return shape.symbols[axis]
    text = _source(api, value)
    return value_axis_symbol(text, axis) if text is not None else None


def value_axis_symbol(value: str, axis: str) -> SymbolicSize:
    """The size of ``axis`` of the value named ``value`` (bound once), as written: ``x.named_shape["seq"]``."""
    return symbol(f"{value}.named_shape['{axis}']")


def named_value_sizes(api: Any, expr: Expression | None, shape: Shape) -> dict[str, StaticSize]:
    """``with_symbols(shape)``, an unknown size of a value named by a name bound once being that value's own
    ``x.named_shape['seq']`` (the symbol ``tnp.arange("seq", x.named_shape["seq"])`` has)."""
    sizes = with_symbols(shape)
    text = _source(api, expr) if isinstance(expr, NameExpr) else None
    if text is None:
        return sizes
    return {n: s if s is not None else value_axis_symbol(text, n) for n, s in sizes.items()}


def read_sizes(
    api: Any, expr: Expression | None, resolve: Callable[[Expression], Expression] | None = None
) -> dict[str, StaticSize] | None:
    """A literal dict ``{"batch": n, "embed": cfg.embed}``: its axis names and their sizes; ``None`` when the
    keys are not string literals. A literal that is no size (``"4"``) stays as it is, for the algebra to word.
    A dict bound once spread into it (``{**window, "c1": cfg.c1}``; ``resolve`` reads a name, else a local bound
    once is read) gives its own; another value's whole ``x.named_shape`` gives that value's names and sizes
    (``x.named_shape['seq']`` where unknown)."""
    if isinstance(expr, MemberExpr) and expr.name == "named_shape":
        shape = decode(api.get_expression_type(expr.expr))
        if shape is None or shape.scalar or shape.named is None or has_group(shape.named):
            return None
        return {axis: _axis_size(api, expr.expr, axis) for axis in shape.named}
    if not isinstance(expr, DictExpr):
        return None
    sizes: dict[str, Any] = {}
    for key, value in expr.items:
        if key is None:  # ** of a dict bound once
            spread = read_sizes(api, resolve(value) if resolve else bound_once(api, value) or value, resolve)
            if spread is None:
                return None
            sizes.update(spread)
            continue
        if not isinstance(key, StrExpr):
            return None
        written = literal_value(value)
        sizes[key.value] = static_size(api, value) if written is UNKNOWN or isinstance(written, int) else written
    return sizes


def erased(sizes: Mapping[str, StaticSize]) -> dict[str, int | None]:
    """The sizes the algebra's rules take: ints, with ``None`` for a symbol."""
    return {n: s if isinstance(s, int) else None for n, s in sizes.items()}


def symbols_of(sizes: Mapping[str, StaticSize]) -> dict[str, SymbolicSize]:
    return {n: s for n, s in sizes.items() if isinstance(s, SymbolicSize)}


def with_symbols(shape: Shape) -> dict[str, StaticSize]:
    """A decoded shape's named sizes with its symbols in place of ``None``."""
    named = shape.named or {}
    return {n: s if s is not None else shape.symbols.get(n) for n, s in named.items()}


@dataclass(frozen=True)
class _Bindings:
    counts: dict[str, int] = field(default_factory=dict)
    """How many times each name is bound."""
    values: dict[str, Expression] = field(default_factory=dict)
    """What a name bound by one plain assignment ``name = value`` was assigned."""


_NO_BINDINGS = _Bindings()
_BINDINGS: dict[int, tuple[object, _Bindings]] = {}


def _bindings(api: Any) -> _Bindings:
    """The names bound in the function being checked (the outermost one, nested ones included: over-counting
    only gives fewer symbols); memoized per function."""
    scope = getattr(api, "scope", None)
    function = scope.top_level_function() if scope is not None else None
    if function is None:
        return _NO_BINDINGS
    cached = _BINDINGS.get(id(function))
    if cached is not None and cached[0] is function:
        return cached[1]
    found = _Bindings()
    _count_function(function, found)
    if len(_BINDINGS) > 4096:
        _BINDINGS.clear()
    _BINDINGS[id(function)] = (function, found)
    return found


def local_names(function: FuncItem) -> set[str]:
    """The names ``function`` binds (its parameters and locals, nested functions' included)."""
    found = _Bindings()
    _count_function(function, found)
    return set(found.counts)


def _count_function(function: FuncItem, found: _Bindings) -> None:
    for argument in function.arguments:
        found.counts[argument.variable.name] = found.counts.get(argument.variable.name, 0) + 1
    _count_block(function.body, found)


def _count_target(target: Expression | None, counts: _Bindings) -> None:
    if isinstance(target, NameExpr):
        counts.counts[target.name] = counts.counts.get(target.name, 0) + 1
    elif isinstance(target, (TupleExpr, ListExpr)):
        for item in target.items:
            _count_target(item, counts)
    elif isinstance(target, StarExpr):
        _count_target(target.expr, counts)
    elif isinstance(target, IndexExpr) and isinstance(target.base, NameExpr):  # parts["heads"] = 8 changes parts
        counts.counts[target.base.name] = counts.counts.get(target.base.name, 0) + 2


_MUTATING = frozenset({"update", "pop", "popitem", "clear", "setdefault", "append", "extend", "insert", "remove"})
"""Methods that change a dict or list in place: a local they are called on is no longer its one binding."""


def _count_block(block: Block | None, counts: _Bindings) -> None:
    for statement in block.body if block is not None else ():
        _count_statement(statement, counts)


def _count_statement(statement: Statement, counts: _Bindings) -> None:
    if isinstance(statement, AssignmentStmt):
        for target in statement.lvalues:
            _count_target(target, counts)
        (first, *more) = statement.lvalues
        if not more and isinstance(first, NameExpr):
            counts.values[first.name] = statement.rvalue
    elif isinstance(statement, OperatorAssignmentStmt):
        _count_target(statement.lvalue, counts)
        _count_target(statement.lvalue, counts)  # x += 1 rebinds: never one binding
    elif isinstance(statement, DelStmt):
        _count_target(statement.expr, counts)
        _count_target(statement.expr, counts)
    elif isinstance(statement, ExpressionStmt) and isinstance(statement.expr, CallExpr):
        callee = statement.expr.callee
        if isinstance(callee, MemberExpr) and callee.name in _MUTATING and isinstance(callee.expr, NameExpr):
            counts.counts[callee.expr.name] = counts.counts.get(callee.expr.name, 0) + 2
    elif isinstance(statement, (ForStmt, WhileStmt)):
        if isinstance(statement, ForStmt):
            _count_target(statement.index, counts)
            _count_target(statement.index, counts)  # a loop variable takes many values
        _count_block(statement.body, counts)
        _count_block(statement.else_body, counts)
    elif isinstance(statement, IfStmt):
        for body in statement.body:
            _count_block(body, counts)
        _count_block(statement.else_body, counts)
    elif isinstance(statement, WithStmt):
        for bound in statement.target:
            _count_target(bound, counts)
        _count_block(statement.body, counts)
    elif isinstance(statement, TryStmt):
        for block in (statement.body, *statement.handlers, statement.else_body, statement.finally_body):
            _count_block(block, counts)
        for var in statement.vars:
            _count_target(var, counts)
    elif isinstance(statement, Decorator):
        _count_function(statement.func, counts)
    elif isinstance(statement, FuncDef):
        _count_function(statement, counts)
    elif isinstance(statement, Block):
        _count_block(statement, counts)
