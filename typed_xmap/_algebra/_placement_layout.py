"""Placement rules of operations that rename an axis or move, cut or pick its blocks (values: ``_placement``):

- a rename moves the placement with the name;
- pools: the result keeps the operand's placement, a window axis included (JAX keeps a split window axis
  split); where windows overlap (window larger than the stride) across a split window axis, each device needs
  its neighbours' edge rows: a halo exchange, two ``collective-permute``s over its mesh axes
  (``window_placement``);
- a conv is a contraction (its features and the kernel's window), placed by ``contract_placement``, whose
  spatial axes end whole (``conv_contraction``: the operand's split spatial axes leave no conflict, as they are
  made whole; ``conv_placement``: ``tnp.conv`` asks for its result placed by the batch's and the
  features' mesh axes only on an Explicit mesh, XLA places it on an Auto one, so unknown); a split spatial axis
  of its operand is moved as XLA chooses (an all-gather of the operand on 8 CPU devices): a ``reshard``.
- selection (``top_k``) along an axis: the kept axes keep their placements, the new axis (the ``k`` selected)
  has an unknown one; a selected axis that was split must be whole on each device first: an ``all-gather``
  over its mesh axes (``tnp.top_k`` gathers it itself on an Explicit mesh, where JAX 0.10.2's ``lax.top_k``
  and sort raise a ``ShardingTypeError``; XLA gathers it on an Auto one) (``select_placement``);
- ``split`` along an axis into equal sections: each piece keeps every placement, the split axis's included
  (JAX keeps it split over the same mesh axes), and when that axis is split, each piece's blocks are moved to
  the devices that hold them: a ``collective-permute`` over its mesh axes per piece; into unequal sections its placement
  is unknown (JAX raises on an Explicit mesh, XLA gathers and moves on an Auto one: a ``reshard``)
  (``split_placement``);
- a gather (``tnp.take``, indexing by a dict with an array of indices) along an axis: the result has the
  indices' axes where the gathered axis was, placed as the indices are, and the operand's other axes placed
  as it places them; where one of those and an indices' axis are on one mesh axis, JAX/XLA run the gather and
  choose which keeps it: both unknown, a ``reshard``. A lookup by an index array along a split axis is an
  ``all-reduce`` over its mesh axes (the blocks summed); one index (an int, a scalar) of a split axis an
  ``all-gather`` (it is made whole first) (``gather_placement``). An update (``x.at[...].set(v)``,
  ``dynamic_update_slice``) is placed as its operand; an update placed otherwise is moved: a ``reshard``
  (``update_placement``);
- ``vmap`` over named axes: the mapped axes leave the body's values and come back on the result, placed over
  the mesh axes the mapped arguments' axis was split over (JAX carries a sharded mapped dimension's mesh axes
  to the outputs; with ``spmd_axis_name``, ``tx.vmap``'s ``axis_resources``, over those where the arguments
  agree). A mapped axis placed on a mesh axis that splits another axis of a result is the axis-resource
  conflict (``vmap_placement``).

Pure Python, shared by the mypy plugin and the runtime checker.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence

from ._placement import Collective, CollectiveKind, Placed, Placement
from ._placement_rules import Axes, _checked, _meet, _split_over, _summed, contract_placement, keep_placement
from ._resources import resource_conflicts
from ._spec import format_mesh_axes

__all__ = [
    "conv_contraction",
    "conv_placement",
    "gather_placement",
    "rename_placement",
    "select_placement",
    "split_placement",
    "update_placement",
    "vmap_placement",
    "window_placement",
]


def window_placement(
    placement: Placement,
    windows: Mapping[str, int | None],
    strides: Mapping[str, int | None],
    *,
    operation: str,
) -> Placed:
    """A pool's window over the axes ``windows`` (axis -> window size), with ``strides``: the result keeps the
    operand's placement, a split window axis included (JAX keeps it split). Where windows overlap (size larger
    than the stride, both known) across a split axis, each block needs its neighbours' edges: a halo exchange,
    two ``collective-permute``s over its mesh axes (one each way, as XLA sends them). (A conv: ``conv_placement``.)"""
    collectives: list[Collective] = []
    for name, size in windows.items():
        stride = strides.get(name, 1)
        if placement.get(name) and size is not None and stride is not None and size > stride:
            mesh_axes = placement[name]
            why = (
                f"{operation}'s windows of {size} (stride {stride}) overlap across {name!r}, split over "
                f"{format_mesh_axes(mesh_axes)}"
            )
            collectives += [
                Collective(CollectiveKind.COLLECTIVE_PERMUTE, mesh_axes, f"{why} (edges to the next block)"),
                Collective(CollectiveKind.COLLECTIVE_PERMUTE, mesh_axes, f"{why} (edges to the previous block)"),
            ]
    return Placed(dict(placement), tuple(collectives))


def conv_contraction(
    names: Sequence[str],
    contracted: Sequence[str],
    placements: Sequence[Placement],
    windows: Iterable[str],
    *,
    operation: str,
    axes: Axes = None,
) -> Placed:
    """``tnp.conv``'s contraction (result axes ``names``, summed ``contracted``; ``placements``: the input's,
    then the kernel's), the input's spatial axes ``windows`` taken as whole: the conv makes them whole in its
    result (``conv_placement``), so one of them and an output feature on one mesh axis is no conflict."""
    whole = set(windows)
    lhs, *rest = placements
    kept = {n: m for n, m in lhs.items() if n not in whole}
    return contract_placement(names, contracted, [kept, *rest], operation=operation, axes=axes)


def conv_placement(
    contracted: Placed,
    placement: Placement,
    windows: Mapping[str, int | None],
    strides: Mapping[str, int | None],
    *,
    operation: str,
) -> Placed:
    """``tnp.conv``: its contraction ``contracted`` (``contract_placement`` over the features and the kernel's
    window) with the spatial axes ``windows`` (axis -> kernel size) made whole. On an Explicit mesh the conv
    asks for its result placed by the batch's and the features' mesh axes only, so a split spatial axis is
    gathered whatever the window (every output size fits then); on an Auto mesh XLA places it. So its placement
    in the result is unknown, and a split spatial axis of the operand ``placement`` is one ``reshard`` over its
    mesh axes (XLA chooses how to move the blocks: an all-gather of the operand on 8 CPU devices)."""
    result = {n: m for n, m in contracted.placement.items() if n not in windows}
    moved = [
        Collective(
            CollectiveKind.RESHARD,
            placement[name],
            f"{operation} leaves {name!r} (window {size}, stride {strides.get(name, 1)}) whole, split over "
            f"{format_mesh_axes(placement[name])} in its operand (moved as XLA chooses)",
        )
        for name, size in windows.items()
        if placement.get(name)
    ]
    return Placed(result, (*contracted.collectives, *moved))


def gather_placement(
    names: Sequence[str],
    operand: Placement,
    gathered: Iterable[str],
    indices: Sequence[Placement],
    *,
    operation: str,
    looked_up: Iterable[str] = (),
    picked: Iterable[str] = (),
    sliced: Iterable[str] = (),
    axes: Axes = None,
) -> Placed:
    """A gather of ``operand`` along the axes ``gathered`` (indexed, sliced) by indices placed ``indices`` (one
    per indexing array), whose result has axes ``names``: the gathered axes' placements go, the operand's other
    axes keep theirs and the indices' axes are placed as the indices place them (the indices meet each other as
    in an elementwise operation: a conflict among them raises ``AxisResourceConflict``). Where a kept axis and an
    indices' axis are on one mesh axis, JAX and XLA run the gather and choose which keeps it (an Explicit mesh
    the indices', an Auto one the operand's, measured on JAX 0.10.2): both placements are unknown, a ``reshard``
    over it. Each axis of ``looked_up`` (those of ``gathered`` indexed by an array) split over mesh axes is an
    all-reduce over them: each device gathers the indices that fall in its block (zeros elsewhere), and the blocks
    are summed. Each axis of ``picked`` (indexed by an int or a scalar) split over mesh axes is made whole first:
    an all-gather over them (the runtime replicates it on an Explicit mesh, where JAX indexes a split dim only
    in place; on an Auto one XLA sends the owning block's row instead, an all-reduce and permutes: its choice);
    two picks of one value along one axis gather it whole once (``Collective.computes``: ``"whole 'seq'"``).
    Each axis of ``sliced`` (cut by a slice short of the whole axis) split over mesh axes is one ``reshard``
    over them: JAX keeps the cut split where its length divides into their parts, moving the blocks to the
    devices that hold them (a collective-permute per slice, the two halves of a GLU's doubled axis two), and
    gathers it whole first where it does not (sizes the checker does not know), so its placement is unknown.
    ``axes``: the operand's and each indices' axes, where known (``_meet``)."""
    dropped = set(gathered)
    kept = {n: m for n, m in operand.items() if n not in dropped and n in names}
    carried = None if axes is None else [_without(axes[0], dropped), *axes[1:]]  # the operand's gathered axes go
    placement, moved = _meet([kept, *indices], names, operation, carried)
    from_indices = {n for p in indices for n in p}
    clashes = [
        c for c in resource_conflicts(names, placement) if (c.first in from_indices) != (c.second in from_indices)
    ]
    for clash in clashes:
        own, added = sorted((clash.first, clash.second), key=lambda n: n in from_indices)
        placement.pop(own, None)
        placement.pop(added, None)
        why = (
            f"{operation} keeps {own!r} and places {added!r} from its indices, both split over "
            f"{format_mesh_axes((clash.resource,))} (one is moved as JAX/XLA chooses)"
        )
        moved.append(Collective(CollectiveKind.RESHARD, (clash.resource,), why))
    _checked(names, placement, operation)
    summed = _summed([n for n in dict.fromkeys(looked_up) if operand.get(n)], operand, f"{operation} looks up along")
    apart = _indices_apart(operand, looked_up, indices, axes, operation=operation)
    whole = _each_split(
        CollectiveKind.ALL_GATHER, picked, operand, f"{operation} picks one index of", ", made whole first", "whole"
    )
    cut = _each_split(CollectiveKind.RESHARD, sliced, operand, f"{operation} slices", " (moved as JAX/XLA chooses)")
    return Placed(placement, (*moved, *apart, *summed, *whole, *cut))


def _each_split(
    kind: CollectiveKind, axes: Iterable[str], operand: Placement, before: str, after: str, computes: str = ""
) -> list[Collective]:
    """One collective of ``kind`` over the mesh axes of each of ``axes`` split in ``operand``; why: ``before``,
    the axis split over its mesh axes, ``after``; ``computes``: what it makes of the operand along the axis
    (``Collective.computes``), if that alone."""
    return [
        Collective(
            kind,
            tuple(operand[n]),
            f"{before} {n!r}, split over {format_mesh_axes(operand[n])}{after}",
            f"{computes} {n!r}" if computes else "",
        )
        for n in dict.fromkeys(axes)
        if operand.get(n)
    ]


def _indices_apart(
    operand: Placement, looked_up: Iterable[str], indices: Sequence[Placement], axes: Axes, *, operation: str
) -> list[Collective]:
    """A lookup along an axis split over mesh axes that the index arrays split too (a table's rows over
    ``(data, model)``, the tokens' batch over ``data``): the index arrays are made whole over the shared mesh axes
    first, an all-gather over them (the runtime does so on an Explicit mesh; on an Auto one XLA may gather the
    table's rows instead, its choice by the sizes). Not for a pointwise gather (indices sharing a named axis with
    the operand) nor where the axes are not known."""
    if axes is None or axes[0] is None or any(a is None or set(a) & set(axes[0]) for a in axes[1:]):
        return []
    split_by_indices = [a for p in indices for mesh_axes in p.values() for a in mesh_axes]
    found = []
    for name in dict.fromkeys(looked_up):
        shared = tuple(a for a in operand.get(name, ()) if a in split_by_indices)
        if shared:
            why = (
                f"{operation}'s indices are split over {format_mesh_axes(shared)}, as its rows along {name!r} are: "
                "the indices made whole over it first"
            )
            found.append(Collective(CollectiveKind.ALL_GATHER, shared, why))
    return found


def _without(axes: Collection[str] | None, dropped: Collection[str]) -> Collection[str] | None:
    return None if axes is None else [n for n in axes if n not in dropped]


def update_placement(names: Sequence[str], operand: Placement, update: Placement, *, operation: str) -> Placed:
    """An update of ``operand`` (``x.at[...].set(v)``, ``dynamic_update_slice``) by a value placed ``update``,
    whose result has axes ``names``: placed as ``operand`` is (JAX places an update's result like its operand).
    Each mesh axis the update splits otherwise (one of its axes on another mesh axis than the operand's, or on a
    mesh axis that splits another of the operand's axes) moves the update's blocks: one ``reshard`` over them."""
    placement = {n: tuple(operand[n]) for n in names if n in operand}
    owner = {a: n for n, mesh_axes in placement.items() for a in mesh_axes}
    moved = [
        name
        for name, mesh_axes in update.items()
        if name in names
        and mesh_axes  # a whole update: each device takes its block of it
        and ((name in placement and placement[name] != mesh_axes) or any(owner.get(a, name) != name for a in mesh_axes))
    ]
    if not moved:
        return Placed(placement)
    mesh_axes, split = _split_over(moved, update)
    why = f"{operation} moves its update ({split} split over {format_mesh_axes(mesh_axes)}) to its operand's placement"
    return Placed(placement, (Collective(CollectiveKind.RESHARD, mesh_axes, why),))


def select_placement(names: Iterable[str], placement: Placement, selected: str, *, operation: str) -> Placed:
    """A selection along ``selected`` (``top_k``) whose result has axes ``names``: the axes it keeps keep their
    placements, a new one (the ``k`` selected) is unknown. A split ``selected`` must be whole on each device: an
    all-gather over its mesh axes (``tnp.top_k`` gathers it itself on an Explicit mesh, where JAX 0.10.2's
    ``lax.top_k`` and sort along a split dim raise a ``ShardingTypeError``; on an Auto one XLA gathers it)."""
    kept = keep_placement(names, placement, (selected,))
    mesh_axes = placement.get(selected)
    if not mesh_axes:
        return kept
    why = f"{operation} selects along {selected!r}, split over {format_mesh_axes(mesh_axes)}"
    return Placed(kept.placement, (Collective(CollectiveKind.ALL_GATHER, mesh_axes, why),))


def split_placement(
    names: Iterable[str], placement: Placement, axis: str, *, sections: int | None, operation: str
) -> Placed:
    """``split`` of a value along ``axis`` into pieces with axes ``names``: into ``sections`` equal sections each
    piece keeps every placement, ``axis``'s too (JAX keeps a split axis split over the same mesh axes), and the
    blocks of each piece are moved to the devices that hold them: one ``collective-permute`` over its mesh axes
    per piece (none for one piece; where the mesh axes hold more than two devices, a piece's blocks come from
    several devices and XLA sends them in more permutes, up to one fewer than the devices, which the checker,
    knowing no mesh sizes, does not count; a piece never used is never moved); into unequal ones
    (``sections``: ``None``) ``axis``'s placement is unknown (JAX raises on an Explicit mesh; XLA gathers and
    moves the blocks on an Auto one: a ``reshard``)."""
    mesh_axes = placement.get(axis)
    if not mesh_axes or sections == 1:
        return keep_placement(names, placement)
    why = f"{operation} cuts {axis!r}, split over {format_mesh_axes(mesh_axes)}, into"
    if sections is not None:
        moved = [
            Collective(
                CollectiveKind.COLLECTIVE_PERMUTE, mesh_axes, f"{why} {sections} pieces: piece {i}'s blocks move"
            )
            for i in range(sections)
        ]
        return Placed(keep_placement(names, placement).placement, tuple(moved))
    moved_unequal = Collective(CollectiveKind.RESHARD, mesh_axes, f"{why} unequal pieces (moved as XLA chooses)")
    return Placed(keep_placement(names, placement, (axis,)).placement, (moved_unequal,))


def vmap_placement(
    mapped: Sequence[str],
    resources: Placement,
    arguments: Sequence[tuple[Iterable[str], Placement]],
) -> dict[str, tuple[str, ...]]:
    """The placement of the axes ``mapped`` over by ``vmap`` on its results, from ``resources`` (``tx.vmap``'s
    ``axis_resources``, JAX's ``spmd_axis_name``) and the mapped arguments (``arguments``: each argument leaf's
    axes and placement; none where they are not seen). JAX carries the mesh axes a mapped argument's axis is
    split over to the results; inside the function the axis is no axis of the values (JAX types them without
    it), so its placement cannot meet theirs there. A mapped axis is placed where ``resources`` place it
    (``spmd_axis_name`` places the function's values, so a result's own axis on that mesh axis conflicts; JAX
    raises on an Explicit mesh where an argument places the axis otherwise), else where the leaves carrying it
    place it, all exactly alike, whole (``axis@()``) included: leaves that differ leave it unknown, a whole one
    and a split one too (JAX raises on an Explicit mesh, "Mapped away dimension of inputs passed to vmap should
    be sharded the same"; XLA chooses on an Auto one), and so does a leaf carrying it whose placement is
    unknown (it may be whole). Each result leaf then meets it with its own placements (``broadcast_placement``:
    a conflict there raises; a whole mapped axis stays whole). JAX also rejects
    an argument broadcast into the body (not mapped) split over a mapped axis's mesh axis, where the body
    combines it with a mapped value; that is not checked here (the body is typed from its annotations)."""
    carried = [(set(axes), placement) for axes, placement in arguments]
    known: dict[str, tuple[str, ...]] = {}
    for name in mapped:
        seen = {placement.get(name) for axes, placement in carried if name in axes}
        only = seen.pop() if len(seen) == 1 else None
        if only is not None:
            known[name] = tuple(only)
    return {n: tuple(resources[n]) if n in resources else known[n] for n in mapped if n in resources or n in known}


def rename_placement(placement: Placement, renames: Mapping[str, str]) -> dict[str, tuple[str, ...]]:
    """A rename moves each placement with its name (``{"seq": "kv_seq"}``: ``seq@data`` -> ``kv_seq@data``)."""
    return {renames.get(n, n): m for n, m in placement.items()}
