"""Names bound once read as what they were bound to: ``RESOURCES = {"batch": "data"}`` then
``tx.shard(x, RESOURCES)``, ``LAYOUT: Final = {"height": "kh"}`` then ``tnp.conv(x, k, LAYOUT)``, a local
``parts = {"heads": 4, "head_dim": 16}`` then ``tx.split_axis(x, "inner", parts)``.

A name of the checked module stands for its value when the module binds it once and never changes it
(``_module_constants``: ``BATCH, SEQ = 8, 4`` binds each name once); ``Final`` says the same. A local stands
for its value when its function binds it once (``_sizes.bound_once``). A name from another module stays as it
is: that module may come from mypy's cache, without its syntax tree, and a result must not depend on it (an int
``Final`` there is known all the same: mypy's own type for it is the literal).
"""

from __future__ import annotations

from functools import partial
from typing import Any

from mypy.nodes import LDEF, Expression, IntExpr, NameExpr, StrExpr

from ._literals import literal_value
from ._module_constants import module_constant
from ._sizes import bound_once, known_literal

__all__ = ["constant_value", "flow_value", "resolved"]


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
    value = bound_once(api, expr) if expr.kind == LDEF else module_constant(api, expr)
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
