"""Placement rules where values meet by name, reduce, contract or keep their axes (values: ``_placement``):

- where values meet by name (elementwise, broadcast, einsum's operands), the result carries the union of
  the operands' placements. One name placed on two different mesh axes by two operands is no error, since
  the checker does not know the mesh's axis types: on an Auto mesh XLA moves the operands (all-gathers), on
  an Explicit one JAX raises a ``ShardingTypeError`` while tracing. Its placement in the result is then
  unknown, and a ``reshard`` is noted;
- two *different* names on the *same* mesh axis in one result is the axis-resource conflict
  (``resource_conflicts``/``conflict_error``, the rule ``xmap`` and ``tx.shard`` check), raised at the
  operation that makes that value;
- a reduction drops the reduced axes' placements; a reduced axis that was split needs an ``all-reduce``
  over its mesh axes, one per axis (``Collective.computes`` names the reduction, which XLA computes once per
  value and axis); normalisations, index reductions and scans: ``_normalise_placement``;
- a contraction (einsum, dot) over a split axis needs an ``all-reduce`` over its mesh axes (each device
  sums its block; the partial sums are combined), unless the result is itself split over one of them (another
  operand's axis lives there: the FSDP pattern, a weight split along the axis it is contracted over, the
  activations along the batch), where the split operand is ``all-gather``-ed over them instead;
- a move (``tx.shard``/``tx.constrain`` of a known placement, ``tx.moe_dispatch``/``tx.moe_combine``):
  ``_placement_moves``;
- structure: an operation that keeps its operand's axes keeps their placements, but the axes whose extent it
  changes or makes (``keep_placement``'s ``changed``: the padded axes, a merged or split axis, a broadcast's new
  axes) have an unknown one; ``tnp.stack`` and ``tnp.concatenate`` meet their operands as elementwise
  operations do (``stack_placement``), the new or concatenated axis unknown.

Pure Python, shared by the mypy plugin and the runtime checker.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence

from ._placement import Collective, CollectiveKind, Placed, Placement, describe_placed
from ._placement_contract import apart_contraction
from ._resources import conflict_error, resource_conflicts
from ._spec import format_mesh_axes
from ._whole import agreed_whole

__all__ = [
    "broadcast_placement",
    "contract_placement",
    "keep_placement",
    "reduce_placement",
    "stack_placement",
]


Axes = Sequence[Collection[str] | None] | None
"""The axes of each operand (``None`` for one of unknown axes), where known: where an axis is known whole."""


def _meet(
    placements: Sequence[Placement], names: Sequence[str], operation: str, axes: Axes = None
) -> tuple[dict[str, tuple[str, ...]], list[Collective]]:
    """The union of the operands' placements over ``names``; a name placed two ways is left unknown; a whole
    operand meets a split one as it is split, and the result is whole where the operands agree (``agreed_whole``)."""
    result: dict[str, tuple[str, ...]] = {}
    moved: list[Collective] = []
    clashed: set[str] = set()
    wanted = set(names)
    for placement in placements:
        for name, mesh_axes in placement.items():
            if name not in wanted or name in clashed or not mesh_axes:
                continue
            known = result.get(name)
            if known is None:
                result[name] = mesh_axes
            elif known != mesh_axes:
                clashed.add(name)
                del result[name]
                why = (
                    f"{operation} meets {name!r} placed on {format_mesh_axes(known)} and on "
                    f"{format_mesh_axes(mesh_axes)}; one operand is moved"
                )
                moved.append(Collective(CollectiveKind.RESHARD, tuple(dict.fromkeys((*known, *mesh_axes))), why))
    result.update(agreed_whole([n for n in names if n not in result and n not in clashed], placements, axes))
    return result, moved


def _split_over(names: Sequence[str], placement: Placement) -> tuple[tuple[str, ...], str]:
    """The mesh axes ``names`` are split over in ``placement`` (each once, in order) and how messages list the
    names (``'seq', 'heads'``)."""
    mesh_axes = tuple(dict.fromkeys(a for n in names for a in placement[n]))
    return mesh_axes, ", ".join(f"{n!r}" for n in names)


def _checked(names: Sequence[str], placement: dict[str, tuple[str, ...]], operation: str) -> None:
    """The axis-resource conflict rule on a result: two of its names on one mesh axis."""
    conflicts = resource_conflicts(names, placement)
    if conflicts:
        where = f"the result of {operation} (a value with axes {describe_placed(names, placement)})"
        raise conflict_error(conflicts[0], where)


def broadcast_placement(
    names: Sequence[str], placements: Sequence[Placement], *, operation: str, axes: Axes = None
) -> Placed:
    """Elementwise and broadcast by name: the result (axes ``names``) is placed as its operands are (``axes``:
    the operands' own axes, where known; ``_meet``).

    Raises ``AxisResourceConflict`` when two of the result's axes land on one mesh axis.
    """
    placement, moved = _meet(placements, names, operation, axes)
    _checked(names, placement, operation)
    return Placed(placement, tuple(moved))


def reduce_placement(placement: Placement, reduced: Iterable[str], *, operation: str, computes: str = "") -> Placed:
    """A reduction over ``reduced``: their placements go; one all-reduce per reduced split axis, over its mesh
    axes (the partial results of each device's block are combined; XLA combines each axis's blocks on their own).
    ``computes`` names the reduction (``"sum"`` for a sum or a mean, ``"max"``: ``Collective.computes``).
    Normalisations, index reductions and scans: ``_normalise_placement``."""
    dropped = [n for n in dict.fromkeys(reduced) if n in placement]
    kept = {n: m for n, m in placement.items() if n not in set(dropped)}
    dropped = [n for n in dropped if placement[n]]  # a whole axis is summed on each device
    return Placed(kept, tuple(_summed(dropped, placement, f"{operation} reduces", computes)))


def _summed(names: Sequence[str], placement: Placement, doing: str, computes: str = "") -> list[Collective]:
    """One all-reduce per axis of ``names`` (each split in ``placement``), over its mesh axes; ``computes``: the
    reduction it combines (``Collective.computes``), if one of the operand alone."""
    return [
        Collective(
            CollectiveKind.ALL_REDUCE,
            tuple(placement[n]),
            f"{doing} {n!r}, split over {format_mesh_axes(placement[n])}",
            f"{computes} {n!r}" if computes else "",
        )
        for n in names
    ]


def contract_placement(
    names: Sequence[str],
    contracted: Sequence[str],
    placements: Sequence[Placement],
    *,
    operation: str,
    axes: Axes = None,
) -> Placed:
    """A contraction (einsum, dot) whose result has axes ``names`` and which sums over ``contracted``.

    The result is placed as its operands place its axes (a conflict there raises ``AxisResourceConflict``).
    A contracted axis split over mesh axes needs an all-reduce of the partial sums over them; where the result
    is split over one of them, the operand split along the contracted axis is all-gathered over them instead
    (what XLA does for a weight split along its contracted axis and activations split along the batch).
    """
    placement, moved = _meet(placements, [*names, *contracted], operation, axes)
    result = {n: m for n, m in placement.items() if n not in set(contracted)}
    _checked(names, result, operation)
    apart = apart_contraction(contracted, placements, placement, result, operation)
    if apart is not None:  # the operands split the contracted axes apart: moved first
        return Placed(result, (*moved, *apart))
    summed = [n for n in contracted if placement.get(n)]
    if not summed:
        return Placed(result, tuple(moved))
    mesh_axes, split = _split_over(summed, placement)
    if not any(a in mesh_axes for m in result.values() for a in m):
        return Placed(result, (*moved, *_summed(summed, placement, f"{operation} contracts")))
    why = f"{operation} contracts {split}, split over {format_mesh_axes(mesh_axes)}, where the result is split too"
    return Placed(result, (*moved, Collective(CollectiveKind.ALL_GATHER, mesh_axes, why)))


def keep_placement(names: Iterable[str], placement: Placement, changed: Iterable[str] = ()) -> Placed:
    """An operation whose result (axes ``names``) keeps its operand's axes where they are (``astype``, ``roll``,
    ``cumsum``, ``pad``, merging and splitting axes, ``broadcast_to``): their placements, but those of the axes
    in ``changed`` (padded, merged, split or new: their blocks are not the operand's), which are unknown."""
    dropped = set(changed)
    return Placed({n: placement[n] for n in names if n in placement and n not in dropped})


def stack_placement(
    names: Sequence[str], placements: Sequence[Placement], axis: str, *, operation: str, axes: Axes = None
) -> Placed:
    """``tnp.stack`` along a new ``axis`` and ``tnp.concatenate`` along ``axis``: the operands meet by name as in
    an elementwise operation (a conflict in the result raises ``AxisResourceConflict``); ``axis``'s placement
    is unknown (the compiler places a new axis; blocks of a concatenated one are not the operands')."""
    return broadcast_placement(
        [n for n in names if n != axis],
        [{n: m for n, m in p.items() if n != axis} for p in placements],
        operation=operation,
        axes=axes,
    )
