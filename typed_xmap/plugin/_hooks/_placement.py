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

from collections.abc import Callable, Collection, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from mypy.nodes import CallExpr, DictExpr, Expression, IndexExpr, ListExpr, MemberExpr, StrExpr, TupleExpr
from mypy.types import Instance, LiteralType, TupleType, Type, get_proper_type

from ..._algebra import (
    COMPUTES,
    NORMALISATIONS,
    WHOLE,
    Collective,
    NamedShapeError,
    OpKind,
    Placed,
    Placement,
    broadcast_placement,
    contract_placement,
    conv_placement,
    gather_placement,
    index_reduce_placement,
    keep_placement,
    mesh_axis_names,
    normalise_placement,
    normalize_axis_resources,
    reduce_placement,
    rename_placement,
    scan_placement,
    select_placement,
    sort_placement,
    split_placement,
    stack_placement,
    update_placement,
    vmap_placement,
    window_placement,
)
from .._core._codes import NAMED_COMM
from .._core._constants import constant_value, resolved
from .._core._encoding import Shape, carries_placement, decode
from .._core._literals import UNKNOWN, literal_value
from .._core._support import arg_expr, fail, label, operands, operation_text, receiver_expr, report
from .._core._tree import checked_function
from ._indexing import bound_key
from ._merges import one_value, rebound, settled

if TYPE_CHECKING:
    from ._protocols import TypedXmapPlugin

__all__ = [
    "RULES",
    "literal_resources",
    "note_collectives",
    "ordered",
    "placing",
    "placing_index",
    "placing_update",
    "rule_key",
    "vmap_resources",
    "vmapped_leaf",
]

Hook = Callable[[Any], Type]
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
    """``tnp.conv``: a contraction (the features, the kernel's window) whose spatial axes end whole."""
    contracted = _contract(result, operands, operation, ctx)
    spatial, strides = _literal(ctx, "spatial", 2), _literal(ctx, "strides", None)
    kernel = operands[1].named if len(operands) > 1 else None
    if not isinstance(spatial, dict) or kernel is None:
        return contracted
    windows = {x_axis: kernel.get(k_axis) for x_axis, k_axis in spatial.items() if isinstance(k_axis, str)}
    strides_by_axis = _per_axis(strides, windows, pool=False)
    return conv_placement(contracted, operands[0].placement, windows, strides_by_axis, operation=operation)


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
    even = isinstance(sections, int) and not isinstance(sections, bool)
    return split_placement(result.named, operands[0].placement, axis, even=even, operation=operation)


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


def placing(plugin: TypedXmapPlugin, key: OpKind | str, hook: Hook) -> Hook:
    """``hook`` with its result placed by the rule of ``key``, an operation's kind or a structure operation's
    name (``hook`` itself when there is no rule)."""
    if key in MANY:
        return _placing_many(plugin, hook)
    rule = RULES.get(key)
    if rule is None:
        return hook

    def placed(ctx: Any) -> Type:
        result = hook(ctx)
        receiver = getattr(ctx, "type", None)
        body = plugin.resources.body_placement(ctx.api)
        if (
            not body
            and not (receiver is not None and carries_placement(receiver))
            and not any(carries_placement(t) for group in ctx.arg_types for t in group)
            and not _rebound_operand(ctx)
        ):
            return result
        shape = decode(_first(result))
        if shape is None or shape.named is None or shape.scalar:
            return result
        shapes, labels, exprs = operands(ctx)
        if not shapes:
            return result
        shapes = [settled(ctx.api, expr, s) for s, expr in zip(shapes, exprs, strict=True)]
        operation = operation_text(ctx, labels)
        try:
            found = rule(shape, inside := [_in_body(s, body) for s in shapes], operation, ctx)
        except NamedShapeError as error:
            _report_own(ctx, error, (lambda: rule(shape, shapes, operation, ctx)) if body else None)
            return result
        note_collectives(ctx, found, exprs[0])
        plugin.backward.record(ctx, key, shape, inside, labels, exprs, found.placement, operation, _names_in_call)
        return _each(result, lambda item: _placed_as(plugin, item, found))

    return placed


def _first(result: Type) -> Type:
    """The NamedArray a result holds: itself, a tuple's first item (``top_k``'s values), a list's item
    (``tnp.split``'s pieces)."""
    proper = get_proper_type(result)
    if isinstance(proper, TupleType) and proper.items:
        return proper.items[0]
    if isinstance(proper, Instance) and proper.type.fullname == "builtins.list" and len(proper.args) == 1:
        return proper.args[0]
    return result


def _each(result: Type, change: Callable[[Type], Type]) -> Type:
    """``result`` with ``change`` applied to each NamedArray ``_first`` reads there (a tuple's items, a list's)."""
    proper = get_proper_type(result)
    if isinstance(proper, TupleType) and proper.items:
        return proper.copy_modified(items=[change(t) for t in proper.items])
    if isinstance(proper, Instance) and proper.type.fullname == "builtins.list" and len(proper.args) == 1:
        return proper.copy_modified(args=[change(proper.args[0])])
    return change(result)


def _placed_as(plugin: TypedXmapPlugin, typ: Type, found: Placed) -> Type:
    """``typ`` (a NamedArray) with ``found``'s placement over its axes (``typ`` itself where nothing changes)."""
    shape = decode(typ)
    if shape is None or shape.named is None or shape.scalar:
        return typ
    placement = ordered(found.placement, shape)
    return typ if placement == shape.placement else plugin.types.encode(replace(shape, placement=placement))


MANY = frozenset({"stack", "concatenate"})
"""The operations whose operands come in a list (``tnp.stack([a, b], "layers")``)."""


def _placing_many(plugin: TypedXmapPlugin, hook: Hook) -> Hook:
    """``tnp.stack``/``tnp.concatenate`` of a literal list or tuple: its items meet by name (each item's own
    type: the list's type is their join, which holds no placement); ``axis`` (a literal) unknown."""

    def placed(ctx: Any) -> Type:
        result = hook(ctx)
        items, axis = arg_expr(ctx, "xs", 0), _literal(ctx, "axis", 1)
        if not isinstance(items, ListExpr | TupleExpr) or not isinstance(axis, str):
            return result
        shapes = [_item_shape(ctx.api, item) for item in items.items]
        shape = decode(result)
        if not any(s is not None and s.placement for s in shapes) or shape is None or shape.named is None:
            return result
        operation = f"tnp.{_name(ctx)}"
        try:
            placements = [s.placement if s else {} for s in shapes]
            found = stack_placement(list(shape.named), placements, axis, operation=operation, axes=_axes(shapes))
        except NamedShapeError as error:
            report(ctx.api, error, ctx.context)
            return result
        known = [(s, item) for s, item in zip(shapes, items.items, strict=True) if s is not None]
        labels = [label(item, f"item {i}") for i, (_, item) in enumerate(known)]
        exprs = [item for _, item in known]
        plugin.backward.record(ctx, _name(ctx), shape, [s for s, _ in known], labels, exprs, found.placement, operation)
        return _placed_as(plugin, result, found)

    return placed


def _rebound_operand(ctx: Any) -> bool:
    """Whether an operand is a variable rebound to a placed value that its type does not show (``_merges``)."""
    exprs = [e for group in ctx.args for e in group]
    if getattr(ctx, "type", None) is not None:
        exprs.append(receiver_expr(ctx.context))
    return any(rebound(ctx.api, e) for e in exprs)


def _item_shape(api: Any, item: Expression) -> Shape | None:
    typ = api.lookup_type_or_none(item)
    shape = decode(typ) if typ is not None else None
    return settled(api, item, shape) if shape is not None and shape.named is not None else None


def _name(ctx: Any) -> str:
    callee = ctx.context.callee if isinstance(ctx.context, CallExpr) else None
    return getattr(callee, "name", "stack")


def _report_own(ctx: Any, error: NamedShapeError, without_body: Callable[[], Placed] | None) -> None:
    """Report ``error``, unless it comes from an xmapped body's ``axis_resources`` alone (``without_body``: the
    rule on the operands' own placements does not raise), which the body's own check reports (``_xmap``)."""
    if without_body is not None:
        try:
            without_body()
        except NamedShapeError as own:
            error = own
        else:
            return
    report(ctx.api, error, ctx.context)


def _in_body(shape: Shape, body: Placement) -> Shape:
    """``shape`` inside an xmapped body: its axes that the body's ``axis_resources`` name are placed there, and
    the others are whole (xmap vectorizes an axis without resources on each device, and never splits a
    positional dim) (``shape``'s own placements first)."""
    if not body or shape.named is None:
        return shape
    added = {n: body.get(n, WHOLE) for n in shape.named if n not in shape.placement}
    return replace(shape, placement={**shape.placement, **added}) if added else shape


def note_collectives(ctx: Any, found: Placed, operand: Expression | None = None) -> None:
    """The collectives ``found`` needs, as ``named-comm`` notes (``typed-xmap check --comm``); one that computes
    a reduction of ``operand`` (a variable holding one value in its function) which an earlier site of the
    function computes too is left out: XLA computes it once (``Collective.computes``)."""
    if found.collectives and ctx.api.msg.errors.is_error_code_enabled(NAMED_COMM):
        for collective in found.collectives:
            if not _computed_before(ctx, collective, operand):
                fail(ctx.api, f"collective: {collective}", ctx.context, NAMED_COMM, note=True)


_FIRST_SITE: dict[tuple[int, int, str], tuple[str, int, int]] = {}
"""(function node, variable, reduction) -> the function's name and the line and column of the first site that
computes it (a check of the same function again, as mypy's deferral does, finds its own site there)."""


def _computed_before(ctx: Any, collective: Collective, operand: Expression | None) -> bool:
    var = one_value(ctx.api, operand) if collective.computes else None
    function = checked_function(ctx.api)
    if var is None or function is None:
        return False
    if len(_FIRST_SITE) > 4096:
        _FIRST_SITE.clear()
    site = (function.fullname, ctx.context.line, ctx.context.column)
    first = _FIRST_SITE.setdefault((id(function), id(var), collective.computes), site)
    if first[0] != site[0]:  # a stale entry (a function since freed, its id reused)
        _FIRST_SITE[id(function), id(var), collective.computes] = first = site
    return first != site


def ordered(placement: Placement, shape: Shape) -> dict[str, tuple[str, ...]]:
    """``placement`` over ``shape``'s axes, in their order (how the encoded text lists them)."""
    assert shape.named is not None
    return {n: placement[n] for n in shape.named if n in placement}


def placing_index(plugin: TypedXmapPlugin, hook: Hook) -> Hook:
    """``x[{"seq": 0}]``, ``x[{"seq": slice(0, 4)}]``, ``emb[{"vocab": tokens}]`` with a literal dict (or one
    bound once): the axes it does not index keep their placements, an indexed or sliced axis's is unknown, and
    a gather's index array places the axes it adds (``gather_placement``: a clash with a kept axis leaves both
    unknown, a ``reshard`` noted; a conflict among index arrays is reported)."""

    def placed(ctx: Any) -> Type:
        result = hook(ctx)
        if not ctx.args or len(ctx.args[0]) != 1:
            return result
        key = bound_key(ctx, ctx.args[0][0])
        if not isinstance(key, DictExpr) or not all(isinstance(k, StrExpr) for k, _ in key.items):
            return result
        placed = [v for _, v in key.items if (t := ctx.api.lookup_type_or_none(v)) and carries_placement(t)]
        if not carries_placement(ctx.type) and not placed and not rebound(ctx.api, receiver_expr(ctx.context)):
            return result
        indices = [s for _, v in key.items if (s := _item_shape(ctx.api, v)) is not None]
        receiver, shape = decode(ctx.type), decode(result)
        if receiver is None or shape is None or shape.named is None or shape.scalar:
            return result
        receiver = settled(ctx.api, receiver_expr(ctx.context), receiver)
        indexed = {k.value for k, _ in key.items if isinstance(k, StrExpr)}
        looked_up = [k.value for k, v in key.items if isinstance(k, StrExpr) and _is_index_array(ctx.api, v)]
        picked = [k.value for k, v in key.items if isinstance(k, StrExpr) and _is_scalar_index(ctx.api, v)]
        try:
            placements = [s.placement for s in indices]
            operation = f"{label(receiver_expr(ctx.context), 'x')}[...]"
            axes = _axes([receiver, *indices])
            found = gather_placement(
                list(shape.named),
                receiver.placement,
                indexed,
                placements,
                operation=operation,
                looked_up=looked_up,
                picked=picked,
                axes=axes,
            )
        except NamedShapeError as error:
            report(ctx.api, error, ctx.context)
            return result
        note_collectives(ctx, found)
        return _placed_as(plugin, result, found)

    return placed


def _is_index_array(api: Any, value: Expression) -> bool:
    """Whether an index value is an array of indices with named axes (a gather), not an int, a slice or a
    scalar."""
    typ = api.lookup_type_or_none(value)
    shape = decode(typ) if typ is not None else None
    return shape is not None and bool(shape.named)


def _is_scalar_index(api: Any, value: Expression) -> bool:
    """Whether an index value is one index: an int, a ``jax.Array`` or a NamedArray without named axes."""
    typ = api.lookup_type_or_none(value)
    if typ is None:
        return False
    proper = get_proper_type(typ)
    if isinstance(proper, LiteralType):
        proper = proper.fallback
    if isinstance(proper, Instance) and proper.type.fullname in (
        "builtins.int",
        "jax.Array",
        "jax._src.basearray.Array",
    ):
        return True
    shape = decode(typ)
    return shape is not None and shape.named == {}


def placing_update(plugin: TypedXmapPlugin, hook: Hook) -> Hook:
    """``x.at[...].set(v)`` (``add``, ``mul``, ...): the result (``x``'s type) is placed as ``x`` is; an update
    placed otherwise is moved, a ``reshard`` noted (``update_placement``)."""

    def placed(ctx: Any) -> Type:
        result = hook(ctx)
        values = ctx.arg_types[0] if ctx.arg_types else []
        update = decode(values[0]) if len(values) == 1 else None
        shape = decode(result)
        if update is None or not update.placement or shape is None or shape.named is None or shape.scalar:
            return result
        expr = ctx.args[0][0] if ctx.args and ctx.args[0] else None
        update = settled(ctx.api, expr, update)
        found = update_placement(
            list(shape.named), shape.placement, update.placement, operation=f"{_at_receiver(ctx)}.{_name(ctx)}(...)"
        )
        note_collectives(ctx, found)
        return _placed_as(plugin, result, found)

    return placed


def _at_receiver(ctx: Any) -> str:
    """How messages name ``x.at[...]`` in ``x.at[...].set(v)``: ``x``'s own text."""
    at = receiver_expr(ctx.context)  # x.at[...]
    base = receiver_expr(at) if isinstance(at, IndexExpr) else None  # x.at
    inner = base.expr if isinstance(base, MemberExpr) else None  # x
    return f"{label(inner, 'x')}.at[...]"


def literal_resources(ctx: Any, name: str) -> dict[str, tuple[str, ...]] | None:
    """A literal or module-constant ``axis -> mesh axes`` argument, normalised; ``None``: absent or unreadable."""
    value = constant_value(ctx.api, arg_expr(ctx, name))
    if not isinstance(value, dict):
        return None
    try:
        return mesh_axis_names(normalize_axis_resources(value))
    except NamedShapeError:
        return None  # the runtime's check words it; gradual here


def vmap_resources(
    ctx: Any, names: Sequence[str], arguments: Sequence[tuple[Sequence[str], Placement]]
) -> dict[str, tuple[str, ...]]:
    """``tx.vmap(f, axis=names, axis_resources=...)``: where its results' mapped axes are placed
    (``vmap_placement``), from a literal or constant ``axis_resources`` and the placements of the argument
    leaves it is called with (``arguments``: empty where the call is not seen); unknown without either."""
    resources = literal_resources(ctx, "axis_resources") or {}
    return vmap_placement(names, resources, arguments)


def vmapped_leaf(plugin: TypedXmapPlugin, ctx: Any, own: Placement, result: Type, mapped: Placement) -> Type:
    """An output leaf of ``tx.vmap``: ``result`` (``f``'s declared leaf with the mapped axes added) placed by the
    leaf's ``own`` placements and the mapped axes' ``mapped``; two of its axes on one mesh axis is
    ``axis-resource-conflict`` on the ``tx.vmap`` line."""
    shape = decode(result)
    if shape is None or shape.named is None or not (mapped or own):
        return result
    try:
        axes = [[n for n in shape.named if n not in mapped], list(mapped)]  # a whole mapped axis stays whole
        found = broadcast_placement(list(shape.named), [own, mapped], operation="tx.vmap", axes=axes)
    except NamedShapeError as error:
        report(ctx.api, error, ctx.context)
        return result
    return _placed_as(plugin, result, found)
