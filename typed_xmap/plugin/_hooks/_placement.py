"""Placement through the hooks: a result's type carries where its axes live (``NamedArray[f32, "batch@data
seq"]``), from its operands' placements by the algebra's rules (``_algebra/_placement``): elementwise and
broadcast by name (operators, ``tnp.add``, ``tnp.where``), reductions (a reduced axis's placement goes),
contractions (``tnp.einsum``, ``tnp.dot``), ``tx.rename`` (the placement follows the name), operations that
keep their operand's axes (``astype``, ``roll``, ``cumsum``) and indexing by a literal dict (the axes it does
not index keep theirs). Two names on one mesh axis in a result is ``axis-resource-conflict``
on that operation's line; a collective the placement forces (an all-reduce over a contracted split axis) is a
note with the code ``named-comm`` (off by default: ``typed-xmap check --comm`` turns it on). Placement is
gradual: an operand of unknown placement adds none, and an operation without a rule here gives a result of
unknown placement.

Each hook is wrapped outermost (after ``_symbolic``, whose rebuilt types hold no placement). The fast test:
no operand's type shows an ``@``, nothing to do (most programs place nothing).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from mypy.nodes import DictExpr, StrExpr
from mypy.types import Type

from ..._algebra import (
    NamedShapeError,
    OpKind,
    Placed,
    Placement,
    broadcast_placement,
    contract_placement,
    reduce_placement,
    rename_placement,
)
from .._core._codes import NAMED_COMM
from .._core._encoding import Shape, carries_placement, decode
from .._core._support import fail, operands, operation_text, report
from ._indexing import bound_key
from ._merges import settled

if TYPE_CHECKING:
    from ._protocols import TypedXmapPlugin

__all__ = ["RULES", "placing", "placing_index"]

Hook = Callable[[Any], Type]
Rule = Callable[[Shape, Sequence[Shape], str], Placed]


def _broadcast(result: Shape, operands: Sequence[Shape], operation: str) -> Placed:
    assert result.named is not None
    return broadcast_placement(list(result.named), [s.placement for s in operands], operation=operation)


def _contract(result: Shape, operands: Sequence[Shape], operation: str) -> Placed:
    assert result.named is not None
    contracted = [n for n in dict.fromkeys(n for s in operands for n in s.named or ()) if n not in result.named]
    placements = [s.placement for s in operands]
    return contract_placement(list(result.named), contracted, placements, operation=operation)


def _reduce(result: Shape, operands: Sequence[Shape], operation: str) -> Placed:
    """The operand's axes the result lacks, or keeps at size 1 (``keepdims``), are reduced."""
    assert result.named is not None
    operand = operands[0]
    assert operand.named is not None
    reduced = [n for n, size in operand.named.items() if n not in result.named or (result.named[n] == 1 and size != 1)]
    return reduce_placement(operand.placement, reduced, operation=operation)


def _rename(result: Shape, operands: Sequence[Shape], operation: str) -> Placed:
    """``tx.rename``: the result's axes are the operand's, renamed, in the operand's order."""
    assert result.named is not None and operands[0].named is not None
    if len(operands[0].named) != len(result.named):  # not a rename of this operand (gradual: unknown)
        return Placed({})
    renames = dict(zip(operands[0].named, result.named, strict=True))
    return Placed(rename_placement(operands[0].placement, renames))


def _keep(result: Shape, operands: Sequence[Shape], operation: str) -> Placed:
    """An operation that keeps its operand's axes where they are (``astype``, ``roll``, ``cumsum``)."""
    assert result.named is not None
    return Placed({n: m for n, m in operands[0].placement.items() if n in result.named})


RULES: dict[OpKind | str, Rule] = {
    OpKind.ELEMENTWISE: _broadcast,
    OpKind.SELECT: _broadcast,
    OpKind.CONTRACTION: _contract,
    OpKind.REDUCTION: _reduce,
    OpKind.INDEX_REDUCTION: _reduce,
    OpKind.SHAPE_KEEPING: _reduce,
    "rename": _rename,
    "astype": _keep,
    "roll": _keep,
    "cumsum": _keep,
    "cumprod": _keep,
}
"""The placement rule of each kind of operation in the table of operations, and of the structure operations
(by name) that have one; other operations give results of unknown placement."""


def placing(plugin: TypedXmapPlugin, key: OpKind | str, hook: Hook) -> Hook:
    """``hook`` with its result placed by the rule of ``key``, an operation's kind or a structure operation's
    name (``hook`` itself when there is no rule)."""
    rule = RULES.get(key)
    if rule is None:
        return hook

    def placed(ctx: Any) -> Type:
        result = hook(ctx)
        receiver = getattr(ctx, "type", None)
        if not (receiver is not None and carries_placement(receiver)) and not any(
            carries_placement(t) for group in ctx.arg_types for t in group
        ):
            return result
        shape = decode(result)
        if shape is None or shape.named is None or shape.scalar:
            return result
        shapes, labels, exprs = operands(ctx)
        if not shapes:
            return result
        shapes = [settled(ctx.api, expr, s) for s, expr in zip(shapes, exprs, strict=True)]
        try:
            found = rule(shape, shapes, operation_text(ctx, labels))
        except NamedShapeError as error:
            report(ctx.api, error, ctx.context)
            return result
        if found.collectives and ctx.api.msg.errors.is_error_code_enabled(NAMED_COMM):
            for collective in found.collectives:
                fail(ctx.api, f"collective: {collective}", ctx.context, NAMED_COMM, note=True)
        if found.placement == shape.placement:
            return result
        return plugin.types.encode(replace(shape, placement=_ordered(found.placement, shape)))

    return placed


def _ordered(placement: Placement, shape: Shape) -> dict[str, tuple[str, ...]]:
    assert shape.named is not None
    return {n: placement[n] for n in shape.named if n in placement}


def placing_index(plugin: TypedXmapPlugin, hook: Hook) -> Hook:
    """``x[{"seq": 0}]``, ``x[{"seq": slice(0, 4)}]``, ``emb[{"vocab": tokens}]`` with a literal dict (or one
    bound once): the axes it does not index keep their placements; an indexed or sliced axis's, and the axes a
    gather adds, are unknown."""

    def placed(ctx: Any) -> Type:
        result = hook(ctx)
        if not carries_placement(ctx.type) or not ctx.args or len(ctx.args[0]) != 1:
            return result
        key = bound_key(ctx, ctx.args[0][0])
        receiver, shape = decode(ctx.type), decode(result)
        if not isinstance(key, DictExpr) or not all(isinstance(k, StrExpr) for k, _ in key.items):
            return result
        if receiver is None or shape is None or shape.named is None or shape.scalar:
            return result
        receiver = settled(ctx.api, getattr(ctx.context, "base", None), receiver)
        indexed = {k.value for k, _ in key.items if isinstance(k, StrExpr)}
        kept = {n: m for n, m in receiver.placement.items() if n in shape.named and n not in indexed}
        return plugin.types.encode(replace(shape, placement=_ordered(kept, shape))) if kept else result

    return placed
