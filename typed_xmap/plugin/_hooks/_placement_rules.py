"""The placement rule of each operation the hooks place (``_placement``'s ``placing`` applies them): each reads
a call's result, its operands' shapes and its literal arguments (the axis, the window, the strides) and calls
the algebra's rule (``broadcast_placement``, ``contract_placement``, ...); ``RULES`` holds the rule of each kind
or name of operation (``rule_key``), and an operation without one gives a result of unknown placement.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import Any

from ..._algebra import (
    COMPUTES,
    NORMALISATIONS,
    OpKind,
    Placed,
    broadcast_placement,
    contract_placement,
    conv_contraction,
    conv_placement,
    gather_placement,
    index_reduce_placement,
    keep_placement,
    normalise_placement,
    reduce_placement,
    rename_placement,
    scan_placement,
    select_placement,
    sort_placement,
    split_placement,
    update_placement,
    window_placement,
)
from .._core._constants import resolved
from .._core._encoding import Shape
from .._core._literals import UNKNOWN, literal_value
from .._core._support import arg_expr

__all__ = [
    "RULES",
    "rule_key",
]

Rule = Callable[[Shape, Sequence[Shape], str, Any], Placed]
"""A placement rule: the result's shape, the operands', how messages name the operation, the call (``ctx``)."""


def _broadcast(result: Shape, operands: Sequence[Shape], operation: str, ctx: Any) -> Placed:
    assert result.named is not None
    placements = [s.placement for s in operands]
    return broadcast_placement(list(result.named), placements, operation=operation, axes=_axes(operands))


def _contract(result: Shape, operands: Sequence[Shape], operation: str, ctx: Any) -> Placed:
    assert result.named is not None
    contracted = [n for n in dict.fromkeys(n for s in operands for n in s.named or ()) if n not in result.named]
    placements = [s.placement for s in operands]
    return contract_placement(list(result.named), contracted, placements, operation=operation, axes=_axes(operands))


def _axes(operands: Sequence[Shape | None]) -> list[Collection[str] | None]:
    """Each operand's named axes (``None``: unknown, an operand of unknown shape too), which say where an axis is
    known whole (``_algebra``'s ``agreed_whole``)."""
    return [None if s is None or s.named is None else s.named.keys() for s in operands]


def _reduce(result: Shape, operands: Sequence[Shape], operation: str, ctx: Any, computes: str = "") -> Placed:
    """The operand's axes the result lacks, or keeps at size 1 (``keepdims``), are reduced (``computes``: what
    the reduction is, where known: ``reduce_placement``)."""
    assert result.named is not None
    operand = operands[0]
    assert operand.named is not None
    reduced = [n for n, size in operand.named.items() if n not in result.named or (result.named[n] == 1 and size != 1)]
    return reduce_placement(operand.placement, reduced, operation=operation, computes=computes)


def _reducing(function: str) -> Rule:
    """``_reduce`` for the reduction ``function`` (``sum``, ``mean``, ``max``, ``min``), which says what its
    all-reduces combine (``COMPUTES``: XLA computes one value's same reduction once)."""

    def reduce(result: Shape, operands: Sequence[Shape], operation: str, ctx: Any) -> Placed:
        return _reduce(result, operands, operation, ctx, COMPUTES[function])

    return reduce


def _normalising(function: str) -> Rule:
    """The rule of the normalisation ``function`` (``softmax``, ``logsumexp``, ``var``, ...): over the axes its
    ``axis`` names (a literal) or, where it drops them, the operand's axes the result lacks
    (``normalise_placement``)."""

    def normalise(result: Shape, operands: Sequence[Shape], operation: str, ctx: Any) -> Placed:
        assert result.named is not None and operands[0].named is not None
        axis = _axis_argument(ctx)
        named = _strings(axis) if isinstance(axis, str | tuple | list) else set()
        over = [n for n in operands[0].named if n in named or n not in result.named]
        return normalise_placement(
            list(result.named), operands[0].placement, over, function=function, operation=operation
        )

    return normalise


def _index_reduce(result: Shape, operands: Sequence[Shape], operation: str, ctx: Any) -> Placed:
    """``argmax``/``argmin``: along the operand's axis the result lacks (``index_reduce_placement``)."""
    assert result.named is not None and operands[0].named is not None
    reduced = [n for n in operands[0].named if n not in result.named]
    if len(reduced) != 1:
        return keep_placement(result.named, operands[0].placement)
    return index_reduce_placement(list(result.named), operands[0].placement, reduced[0], operation=operation)


def _along(placement_rule: Callable[..., Placed]) -> Rule:
    """The rule of an operation along a literal ``axis`` that keeps its operand's axes (``cumsum``: the algebra's
    ``scan_placement``; ``sort``: ``sort_placement``); with ``axis`` not literal, placed as the operand is (JAX
    keeps the placement), the collective not known."""

    def along(result: Shape, operands: Sequence[Shape], operation: str, ctx: Any) -> Placed:
        assert result.named is not None
        axis = _axis_argument(ctx)
        if not isinstance(axis, str):
            return _keep(result, operands, operation, ctx)
        return placement_rule(list(result.named), operands[0].placement, axis, operation=operation)

    return along


def _rename(result: Shape, operands: Sequence[Shape], operation: str, ctx: Any) -> Placed:
    """``tx.rename``: the result's axes are the operand's, renamed, in the operand's order."""
    assert result.named is not None and operands[0].named is not None
    if len(operands[0].named) != len(result.named):  # not a rename of this operand (gradual: unknown)
        return Placed({})
    renames = dict(zip(operands[0].named, result.named, strict=True))
    return Placed(rename_placement(operands[0].placement, renames))


def _keep(result: Shape, operands: Sequence[Shape], operation: str, ctx: Any) -> Placed:
    """An operation that keeps its operand's axes where they are (``astype``, ``roll``, ``cumsum``)."""
    assert result.named is not None
    return keep_placement(result.named, operands[0].placement)


def _reshaped(result: Shape, operands: Sequence[Shape], operation: str, ctx: Any) -> Placed:
    """``pad``, ``merge_axes``, ``split_axis``, ``broadcast_to``, ``sort``, ``argsort``: the axes the call names
    (padded, merged, split, new, sorted along) have an unknown placement, the others keep theirs; all unknown when
    the call's names are not literal."""
    assert result.named is not None
    named = _names_in_call(ctx)
    return keep_placement(result.named, operands[0].placement if named is not None else {}, named or ())


def _conv(result: Shape, operands: Sequence[Shape], operation: str, ctx: Any) -> Placed:
    """``tnp.conv``: a contraction (the features, the kernel's window) whose spatial axes end whole
    (``conv_contraction``, then ``conv_placement``)."""
    spatial, strides = _literal(ctx, "spatial", 2), _literal(ctx, "strides", None)
    kernel = operands[1].named if len(operands) > 1 else None
    if not isinstance(spatial, dict) or kernel is None:
        return _contract(result, operands, operation, ctx)
    assert result.named is not None
    windows = {x_axis: kernel.get(k_axis) for x_axis, k_axis in spatial.items() if isinstance(k_axis, str)}
    contracted = [n for n in dict.fromkeys(n for s in operands for n in s.named or ()) if n not in result.named]
    placements = [s.placement for s in operands]
    contraction = conv_contraction(
        list(result.named), contracted, placements, windows, operation=operation, axes=_axes(operands)
    )
    strides_by_axis = _per_axis(strides, windows, pool=False)
    return conv_placement(contraction, operands[0].placement, windows, strides_by_axis, operation=operation)


def _pool(result: Shape, operands: Sequence[Shape], operation: str, ctx: Any) -> Placed:
    """``tnp.max_pool``/``avg_pool``: the operand's placement kept; overlapping windows over a split axis: a halo."""
    window = _literal(ctx, "window", 1)
    if not isinstance(window, dict):
        return keep_placement(operands[0].named or {}, operands[0].placement)
    windows = {n: w if isinstance(w, int) else None for n, w in window.items()}
    strides = _per_axis(_literal(ctx, "strides", 2), windows, pool=True)
    return window_placement(operands[0].placement, windows, strides, operation=operation)


def _take(result: Shape, operands: Sequence[Shape], operation: str, ctx: Any) -> Placed:
    """``tnp.take(x, indices, axis)``: a gather (``gather_placement``); all unknown when ``axis`` is not literal."""
    assert result.named is not None
    axis = _literal(ctx, "axis", 2)
    if not isinstance(axis, str):
        return keep_placement(result.named, {})
    indices = operands[1:2]
    looked_up = [axis] if any(s.named for s in indices) else []
    picked = [axis] if any(s.named == {} for s in indices) else []
    axes = _axes(operands[:2])
    return gather_placement(
        list(result.named),
        operands[0].placement,
        [axis],
        [s.placement for s in indices],
        operation=operation,
        looked_up=looked_up,
        picked=picked,
        axes=axes,
    )


def _update(result: Shape, operands: Sequence[Shape], operation: str, ctx: Any) -> Placed:
    """``tnp.dynamic_update_slice(x, update, start)``: placed as ``x`` (``update_placement``); unknown when one of
    the two is of unknown named shape (which one is then not known)."""
    assert result.named is not None
    if len(operands) != 2:
        return keep_placement(result.named, {})
    return update_placement(list(result.named), operands[0].placement, operands[1].placement, operation=operation)


def _select(result: Shape, operands: Sequence[Shape], operation: str, ctx: Any) -> Placed:
    """``tnp.top_k(x, k, axis, new_axis)``: the axes it keeps keep their placements (``select_placement``)."""
    assert result.named is not None
    axis = _literal(ctx, "axis", 2)
    if not isinstance(axis, str):
        return keep_placement(result.named, {})
    return select_placement(result.named, operands[0].placement, axis, operation=operation)


def _split(result: Shape, operands: Sequence[Shape], operation: str, ctx: Any) -> Placed:
    """``tnp.split(x, axis, sections)``: each piece placed as ``x`` is, ``axis`` too for equal sections (an int)
    (``split_placement``); all unknown when ``axis`` is not literal."""
    assert result.named is not None
    axis, sections = _literal(ctx, "axis", 1), _literal(ctx, "sections", 2)
    if not isinstance(axis, str):
        return keep_placement(result.named, {})
    equal = sections if isinstance(sections, int) and not isinstance(sections, bool) else None
    return split_placement(result.named, operands[0].placement, axis, sections=equal, operation=operation)


def _per_axis(strides: object, windows: dict[str, int | None], *, pool: bool) -> dict[str, int | None]:
    """A pool's or conv's ``strides`` (one int, a dict by axis, or ``None``: by the window for a pool, 1 for a
    conv, as ``_algebra``'s plans read them) per window axis; an unreadable stride is unknown (``None``)."""
    if strides is None:
        return dict(windows) if pool else dict.fromkeys(windows, 1)
    if isinstance(strides, int):
        return dict.fromkeys(windows, strides)
    if isinstance(strides, dict):
        return {n: s if isinstance(s := strides.get(n, 1), int) else None for n in windows}
    return dict.fromkeys(windows)


def _literal(ctx: Any, name: str, position: int | None) -> object:
    """An argument's literal value (a name bound once stands for its value; an unreadable item ``UNKNOWN``),
    ``None`` when absent."""
    expr = arg_expr(ctx, name, position)
    return literal_value(expr, lambda e: resolved(ctx.api, e), partial=True) if expr is not None else None


def _axis_argument(ctx: Any) -> object:
    """The literal ``axis`` of a function (``tnp.softmax(x, "vocab")``, the second argument) or of a method
    (``x.cumsum("seq")``, the first)."""
    return _literal(ctx, "axis", 1 if getattr(ctx, "type", None) is None else 0)


def _names_in_call(ctx: Any) -> set[str] | None:
    """The axis names a call's arguments other than the operand hold (strings, in tuples, lists and dict keys);
    ``None`` when one of them is not a literal (its names are not known)."""
    found: set[str] = set()
    for exprs in ctx.args[0 if getattr(ctx, "type", None) is not None else 1 :]:
        for expr in exprs:
            value = literal_value(expr, lambda e: resolved(ctx.api, e), partial=True)
            if value is UNKNOWN:
                return None
            found |= _strings(value)
    return found


def _strings(value: object) -> set[str]:
    if isinstance(value, str):
        return {value}
    if isinstance(value, dict):
        return {k for k in value if isinstance(k, str)}
    if isinstance(value, (list, tuple)):
        return {s for item in value for s in _strings(item)}
    return set()


RULES: dict[OpKind | str, Rule] = {
    OpKind.ELEMENTWISE: _broadcast,
    OpKind.SELECT: _broadcast,
    OpKind.CONTRACTION: _contract,
    OpKind.REDUCTION: _reduce,
    OpKind.INDEX_REDUCTION: _reduce,
    "rename": _rename,
    "astype": _keep,
    "roll": _keep,
    "cumsum": _along(scan_placement),
    "cumprod": _along(scan_placement),
    **{name: _normalising(name) for name in NORMALISATIONS},
    **{name: _reducing(name) for name in ("sum", "mean", "max", "min")},
    "argmax": _index_reduce,
    "argmin": _index_reduce,
    "pad": _reshaped,
    "merge_axes": _reshaped,
    "split_axis": _reshaped,
    "broadcast_to": _reshaped,
    "sort": _along(sort_placement),
    "argsort": _along(sort_placement),
    "conv": _conv,
    "max_pool": _pool,
    "avg_pool": _pool,
    "top_k": _select,
    "split": _split,
    "take": _take,
    "dynamic_update_slice": _update,
    "dynamic_slice": _reshaped,
    "conv_transpose": _contract,
}
"""The placement rule of each kind of operation in the table of operations, and of the operations (by name)
that have their own (structure, normalisations, index reductions, scans: ``rule_key``); other operations give
results of unknown placement."""


def rule_key(kind: OpKind, name: str) -> OpKind | str:
    """The key of ``RULES`` (and ``MANY``) an operation is placed by: its name where it has a rule of its own, else
    its kind where that has one, else its name."""
    return name if name in RULES or kind not in RULES else kind
