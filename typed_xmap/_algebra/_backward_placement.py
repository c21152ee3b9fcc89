"""The backward pass's communication: the transpose of each placement rule (what ``jax.grad`` of a function adds
to its compiled program, beyond its forward pass's collectives).

Reverse-mode differentiation runs, for each operation on the way from a differentiated argument to the result,
its transpose: the result's cotangent ``dC`` (placed as the result) gives each operand's cotangent, which JAX
places as that operand (its transpose rules ask for a cotangent sharded as its primal: ``dot_general``'s
transpose is a ``dot_general`` with the operand's sharding as its ``out_sharding``, a broadcast's a ``reduce_sum``
back to the operand's). Every transpose here is one contraction into a value of fixed placement (``_into``):
the axes of its sources that the target lacks are summed, and per mesh axis

- one that splits a summed axis takes what the forward contraction's rule (``contract_placement``) gives it:
  an ``all-reduce`` over it (each device sums its block; the partial sums are combined), or an ``all-gather``
  of the source split along the summed axis where a source already places the target's axes there (the
  forward FSDP pattern); an all-reduce into a target split along one of its own axes over it is a
  ``reduce-scatter``;
- one that splits a source along an axis the target keeps whole (its placement does not name it) or gives to
  another of its axes is an ``all-gather`` of that source (a weight split along ``embed`` over ``data``, the FSDP
  pattern, contracted into activations split along ``batch`` over ``data``; the cotangent of a value whose
  ``batch`` is whole, concatenated with values split along it); one that splits it where the target places that
  axis on other mesh axes a ``reshard``. As in the forward rules, an axis a placement does not name is read as
  whole (its placement may be unknown: then XLA may place it split, and no all-gather runs).

Per rule (``BackwardRule``):

- contraction ``A, B -> C`` (einsum, dot): ``dA = contract(dC, B -> A)`` and ``dB = contract(A, dC -> B)``: the
  data-parallel gradient of a weight contracts the batch (an all-reduce over its mesh axes), the tensor-parallel
  cotangent of activations contracts a split ``mlp``/``heads`` (an all-reduce over theirs);
- broadcast and elementwise (``A * B`` where ``B`` lacks axes of ``C``): ``dB`` is ``dC`` (times ``A``) summed
  over the axes ``B`` was broadcast along: an all-reduce over the mesh axes they are split over (a layer norm's
  scale gradient summed over a batch split over ``data``);
- reduction over an axis: its transpose is a broadcast along it, no communication;
- normalisation along an axis (``softmax``, ``log_softmax``, ``var``, ``std``): its VJP sums a value placed as
  the operand along the axis (``softmax``: ``dC`` times the result; ``var``: the cotangent of its mean, from the
  deviations ``x - mean``): an all-reduce over its mesh axes. ``logsumexp``'s has none (its maximum is held
  constant, its sum's transpose is a broadcast);
- ``stack``/``concatenate``: the transpose slices the cotangent into the operands' parts, each placed as its
  operand (``BROADCAST``'s rule: only a placement change communicates);
- operations that keep their operand's placement (rename, astype, roll, cumsum): none.

- gathers (a lookup by an index array, a pointwise gather, one index, ``top_k``'s values): the transpose
  scatter-adds the cotangent into a value placed as the operand (``_into(operand, [result])``): the axes the
  index arrays add are summed (an embedding table's gradient sums the batch: an all-reduce over its mesh axes);
  along the gathered axis each device adds into its own block (masked): none;
- moves, pools with overlapping windows, convs over split spatial axes: ``_backward_layout``;
- ``PARTIAL``: an operation without a transpose here (a slice, pad, merge/split of axes, an update, a sort): where it
  touches a split axis its backward communication is not known, and the listing says so (``backward_gap``).

Only the cotangents that are needed count (``BackwardOperand.needed``: the operand depends on a differentiated
argument); XLA removes the others.

Pure Python, shared by the mypy plugin (``typed-xmap check --comm``) and anything that lists communication.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ._backward_layout import halo_back, moved_back, spatial_axes, spatial_moves
from ._errors import NamedShapeError
from ._placement import Collective, CollectiveKind, describe_placed
from ._placement_rules import contract_placement
from ._spec import format_mesh_axes

__all__ = ["BackwardOperand", "BackwardRule", "backward_collectives", "backward_gap"]


class BackwardRule(enum.Enum):
    """Which transpose an operation's backward pass runs."""

    CONTRACTION = "contraction"
    BROADCAST = "broadcast"
    NORMALISATION = "normalisation"
    GATHER = "gather"
    MOVE = "move"
    WINDOW = "window"
    CONV = "conv"
    NONE = "none"
    """Reductions and the operations that keep their operand's placement: no communication."""
    PARTIAL = "partial"
    """No transpose known here: what the backward pass moves is not listed (``backward_gap``)."""


@dataclass(frozen=True, slots=True)
class BackwardOperand:
    """One side of an operation: its axes, their known placement, how messages name it, and (operands only)
    whether its cotangent is needed (it depends on a differentiated argument)."""

    names: tuple[str, ...]
    placement: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    label: str = "the result"
    needed: bool = True


def backward_collectives(
    rule: BackwardRule,
    result: BackwardOperand,
    operands: Sequence[BackwardOperand],
    *,
    operation: str,
    normalised: Sequence[str] = (),
    forward: Sequence[Collective] = (),
) -> tuple[Collective, ...]:
    """The collectives of the backward pass of one operation (``result`` from ``operands``, placed as they are)
    by ``rule``: one transpose per operand whose cotangent is needed (``normalised``: the axes a normalisation
    runs along; ``forward``: the operation's own collectives, a pool's halo)."""
    found: list[Collective] = []
    for index, operand in enumerate(operands):
        if not operand.needed:
            continue
        what = f"{operation} (backward: the cotangent of {operand.label})"
        if rule is BackwardRule.CONTRACTION:
            found += _into(operand, [result, *operands[:index], *operands[index + 1 :]], what)
        elif rule is BackwardRule.BROADCAST:
            found += _into(operand, [result], what)
        elif rule is BackwardRule.NORMALISATION and normalised:
            kept = tuple(n for n in operand.names if n not in set(normalised))
            kept_placement = {n: m for n, m in operand.placement.items() if n in kept}
            sums = _into(BackwardOperand(kept, kept_placement), [operand], what)
            found += [c for c in sums if c.kind is CollectiveKind.ALL_REDUCE]
        elif rule is BackwardRule.GATHER and index == 0:
            found += _into(operand, [result], what)
        elif rule is BackwardRule.MOVE:
            found += moved_back(operand.names, dict(operand.placement), dict(result.placement), what)
        elif rule is BackwardRule.WINDOW and index == 0:
            found += halo_back(forward, what)
        elif rule is BackwardRule.CONV and operands:
            found += _conv(index, result, operands, what)
    return tuple(found)


def backward_gap(
    rule: BackwardRule,
    result: BackwardOperand,
    operands: Sequence[BackwardOperand],
    forward: Sequence[Collective] = (),
) -> bool:
    """Whether an operation's backward communication is not known: it has no transpose here (``PARTIAL``), a
    cotangent is needed, and the operation touches a split axis: its forward pass communicates (``forward``: a
    sort along a split axis), or a needed operand and the result place a split axis differently (a slice along
    it; an axis kept placed as it was moves nothing back)."""
    needed = [o for o in operands if o.needed]
    return rule is BackwardRule.PARTIAL and bool(needed) and (bool(forward) or any(_moved(o, result) for o in needed))


def _moved(operand: BackwardOperand, result: BackwardOperand) -> bool:
    """Whether an axis split in ``operand`` or in ``result`` (one ``operand`` has) is not placed the same in
    the other."""
    mine = any(m and result.placement.get(n) != m for n, m in operand.placement.items())
    return mine or any(m and n in operand.names and operand.placement.get(n) != m for n, m in result.placement.items())


def _conv(index: int, result: BackwardOperand, operands: Sequence[BackwardOperand], what: str) -> list[Collective]:
    """A conv's transpose into operand ``index``: the contraction with the operand's split spatial axes read as
    whole (the forward moved them); into the operand (index 0), its cotangent's blocks moved back over their mesh
    axes (``_backward_layout``); the kernel's contracts the operand the forward already holds whole."""
    spatial = spatial_axes(dict(operands[0].placement), result.names, dict(result.placement))
    whole = [
        BackwardOperand(o.names, {n: () if n in spatial else m for n, m in o.placement.items()}, o.label, o.needed)
        for o in operands
    ]
    sums = _into(whole[index], [result, *whole[:index], *whole[index + 1 :]], what)
    return [*sums, *(spatial_moves(dict(operands[0].placement), spatial, what) if index == 0 else [])]


def _into(target: BackwardOperand, sources: Sequence[BackwardOperand], what: str) -> list[Collective]:
    """The collectives of one contraction of ``sources`` into a value placed as ``target``: the sources' axes
    that ``target`` lacks are summed (see the module's docstring for the rule per mesh axis)."""
    owner = {mesh: name for name, mesh_axes in target.placement.items() for mesh in mesh_axes}
    kinds: dict[CollectiveKind, dict[str, list[str]]] = {}
    for decided, mesh, names in _summing(target, sources):
        scatters = decided is CollectiveKind.ALL_REDUCE and mesh in owner
        kinds.setdefault(CollectiveKind.REDUCE_SCATTER if scatters else decided, {}).setdefault(mesh, []).extend(names)
    for source in sources:
        for name, mesh_axes in source.placement.items():
            for mesh in mesh_axes:
                if name not in target.names or owner.get(mesh) == name:
                    continue
                moves = name in target.placement and mesh not in owner
                kind = CollectiveKind.RESHARD if moves else CollectiveKind.ALL_GATHER
                kinds.setdefault(kind, {}).setdefault(mesh, []).append(name)
    return [_collective(kind, by_mesh, target, what) for kind, by_mesh in kinds.items()]


def _summing(
    target: BackwardOperand, sources: Sequence[BackwardOperand]
) -> list[tuple[CollectiveKind, str, list[str]]]:
    """The summed axes' collectives per mesh axis, as the forward contraction decides them
    (``contract_placement``: an all-reduce of the partial sums, or an all-gather of the source split along a
    summed axis where a source already places the target's axes over its mesh axes); with the sources' axes
    placed two ways (reported in the forward pass), none."""
    placement: dict[str, tuple[str, ...]] = {}
    for source in sources:
        placement.update((n, m) for n, m in source.placement.items() if m and n not in target.names)
    if not placement:
        return []
    kept = [n for n in dict.fromkeys(n for s in sources for n in s.names) if n in target.names]
    try:
        placed = contract_placement(kept, list(placement), [s.placement for s in sources], operation="")
    except NamedShapeError:
        return []
    return [
        (c.kind, mesh, [n for n, m in placement.items() if mesh in m])
        for c in placed.collectives
        if c.kind in (CollectiveKind.ALL_REDUCE, CollectiveKind.ALL_GATHER)
        for mesh in c.mesh_axes
    ]


_WHY = {
    CollectiveKind.ALL_REDUCE: "sums {names}, split over {mesh}",
    CollectiveKind.REDUCE_SCATTER: "sums {names}, split over {mesh}, into {target} split over it",
    CollectiveKind.ALL_GATHER: "leaves {names} whole, split over {mesh}, for {target}",
    CollectiveKind.RESHARD: "places {names} otherwise than {target}, split over {mesh}",
}


def _collective(
    kind: CollectiveKind, by_mesh: Mapping[str, list[str]], target: BackwardOperand, what: str
) -> Collective:
    mesh_axes = tuple(by_mesh)
    names = ", ".join(repr(n) for n in dict.fromkeys(n for ns in by_mesh.values() for n in ns))
    placed = describe_placed(target.names, target.placement)
    why = _WHY[kind].format(names=names, mesh=format_mesh_axes(mesh_axes), target=placed)
    return Collective(kind, mesh_axes, f"{what} {why}")
