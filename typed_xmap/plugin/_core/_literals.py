"""Literal expressions as Python values: the specs of ``tx.named``/``xmap`` and ``axis_resources``."""

from __future__ import annotations

from collections.abc import Callable

from mypy.nodes import (
    CallExpr,
    DictExpr,
    EllipsisExpr,
    Expression,
    IntExpr,
    ListExpr,
    MemberExpr,
    NameExpr,
    StrExpr,
    TupleExpr,
    UnaryExpr,
)

from ..._algebra import NamedShapeError, SerialLoop

__all__ = ["UNKNOWN", "literal_value"]

UNKNOWN = object()
"""What ``literal_value`` returns for an expression it cannot evaluate statically."""


def literal_value(
    expr: Expression | None, resolve: Callable[[Expression], Expression] | None = None, *, partial: bool = False
) -> object:
    """A literal's value: str, int, None, ..., lists, tuples, dicts, ``SerialLoop(n)``; else ``UNKNOWN``.
    ``resolve`` gives what a name stands for (``_constants.flow_value``: a name bound once), at every level; a
    dict spread into a dict (``{**RESOURCES, "mlp": "model"}``) gives its items. ``partial`` keeps a container
    whose items or dict values are not all known, with ``UNKNOWN`` in their place (``{"height": cfg.pool}`` ->
    ``{"height": UNKNOWN}``: the names are known)."""
    if resolve is not None and expr is not None:
        expr = resolve(expr)
    if isinstance(expr, (StrExpr, IntExpr)):
        return expr.value
    if isinstance(expr, UnaryExpr) and expr.op == "-" and isinstance(expr.expr, IntExpr):
        return -expr.expr.value
    if isinstance(expr, EllipsisExpr):
        return Ellipsis
    if isinstance(expr, NameExpr) and expr.fullname == "builtins.None":
        return None
    if isinstance(expr, (ListExpr, TupleExpr)):
        items = [literal_value(item, resolve, partial=partial) for item in expr.items]
        if not partial and any(item is UNKNOWN for item in items):
            return UNKNOWN
        return items if isinstance(expr, ListExpr) else tuple(items)
    if isinstance(expr, DictExpr):
        result = {}
        for key, value in expr.items:
            if key is None:  # {**other, ...}: the dict ``other`` holds (a name bound once, through ``resolve``)
                spread = literal_value(value, resolve, partial=partial)
                if not isinstance(spread, dict):
                    return UNKNOWN
                result.update(spread)
                continue
            k, v = literal_value(key, resolve), literal_value(value, resolve, partial=partial)
            if k is UNKNOWN or (v is UNKNOWN and not partial):
                return UNKNOWN
            result[k] = v
        return result
    callee = expr.callee if isinstance(expr, CallExpr) else None
    if isinstance(expr, CallExpr) and isinstance(callee, (NameExpr, MemberExpr)) and callee.name == "SerialLoop":
        length = literal_value(expr.args[0], resolve) if expr.args else UNKNOWN
        if length is UNKNOWN:
            return SerialLoop(1)  # a loop of a length only known at run time is a loop resource all the same
        try:
            return SerialLoop(length)  # type: ignore[arg-type]  # SerialLoop checks the length itself
        except NamedShapeError:
            return UNKNOWN
    return UNKNOWN
