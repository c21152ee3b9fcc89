"""``sharding=`` of a constructor (``tnp.zeros ones full arange causal_mask``) or a draw of ``tx.random``
(``normal uniform bernoulli randint``): the runtime places the result with ``tx.constrain``'s rule, so a literal or
module-constant mapping is read and checked as ``tx.shard``'s is (``_sharding``: a mapping that does not normalise,
two of the value's axes on one mesh axis: ``axis-resource-conflict``), and the result's type is placed by it (the
axes it names over their mesh axes, every other axis known whole). A key naming no axis of the value is ignored,
as ``tx.shard`` ignores it (one model-wide mapping serves every value)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mypy.types import Type

from .._core._constants import constant_value
from .._core._encoding import decode, has_group
from .._core._support import arg_expr
from ._sharding import _placed, checked_mapping, mapping_conflict

if TYPE_CHECKING:
    from ._protocols import TypedXmapPlugin

__all__ = ["sharding_placed"]


def sharding_placed(plugin: TypedXmapPlugin, ctx: Any, operation: str, result: Type) -> Type:
    """``result`` (the constructed NamedArray) placed by the call's literal or constant ``sharding=``; ``result``
    itself where there is none, it is unreadable, or the result's axes are not known."""
    value = constant_value(ctx.api, arg_expr(ctx, "sharding"))
    shape = decode(result)
    if not isinstance(value, dict) or shape is None or shape.scalar or shape.named is None or has_group(shape.named):
        return result
    resources = checked_mapping(ctx, value)
    if resources is None or mapping_conflict(ctx, shape.named, resources, f"{operation}(..., sharding=...)"):
        return result
    return _placed(plugin, result, resources, 0) or result
