"""A size read through a property of a config: ``cfg.wide`` where ``wide`` returns ``self.channels * 2``.

A config class often derives sizes in properties (``width = 2 * self.half_width + 1``). A property whose body
is one ``return`` stands for its expression, with ``self`` read as the object it is read on: ``cfg.wide`` is the
symbol ``2 * cfg.channels``, so it meets ``cfg.channels * 2 + 1`` (certainly different) and
``cfg.channels * 2`` (the same) as the sizes they are. Any other property is a symbol of its own text.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from mypy.nodes import Decorator, Expression, FuncDef, MemberExpr, ReturnStmt
from mypy.types import Instance, get_proper_type

from .._algebra import StaticSize, SymbolicSize

__all__ = ["property_size"]


def property_size(api: Any, expr: MemberExpr, receiver: str, size_of: Callable[[Expression], StaticSize]) -> StaticSize:
    """The size ``expr`` (``<receiver>.<property>``) stands for, by its property's one ``return`` (``size_of``
    reads it), its ``self`` rebased on ``receiver``; ``None`` when ``expr`` is no such property."""
    body = _returned(api, expr)
    if body is None:
        return None
    returned, own = body
    size = size_of(returned)
    return _rebased(size, own, receiver) if size is not None else None


def _returned(api: Any, expr: MemberExpr) -> tuple[Expression, str] | None:
    """The expression a property returns and the name of its ``self``."""
    try:
        owner = get_proper_type(api.get_expression_type(expr.expr))
    except Exception:
        return None
    if not isinstance(owner, Instance):
        return None
    found = owner.type.get(expr.name)
    node = found.node if found is not None else None
    function = node.func if isinstance(node, Decorator) else node
    if not isinstance(function, FuncDef) or not function.is_property or not function.arguments:
        return None
    statements = function.body.body
    if len(statements) != 1 or not isinstance(statements[0], ReturnStmt) or statements[0].expr is None:
        return None
    return statements[0].expr, function.arguments[0].variable.name


def _rebased(size: StaticSize, own: str, receiver: str) -> StaticSize:
    """``size`` with each atom read on ``self`` (``self.channels``) read on ``receiver`` (``cfg.channels``);
    ``None`` when an atom is not ``self``'s (a module constant, another object: not this property's to say).
    One prefix replaced by another keeps the atoms' order, so the form stays canonical."""
    if not isinstance(size, SymbolicSize):
        return size
    prefix = f"{own}."
    if not all(atom.startswith(prefix) for atom in size.atoms):
        return None
    return replace(size, atoms=tuple(f"{receiver}.{atom[len(prefix) :]}" for atom in size.atoms))
