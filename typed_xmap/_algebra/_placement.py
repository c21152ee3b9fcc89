"""Placement: which mesh axes each named axis of a value is split over, and how each operation changes it.

A placement maps axis names to mesh axes (``{"batch": ("data",)}``, written ``"batch@data"``; ``()``, written
``"batch@()"``: known whole, replicated on every device, ``_whole``). It is gradual: an axis it leaves out has an
*unknown* placement (replicated, or placed where the checker cannot see), which never causes an error. A whole
axis meets a split one as the split one is placed, and needs no collective (``_whole``). Each rule here is the
placement half of one rule of the algebra:

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
- a rename moves the placement with the name;
- a move (``tx.shard``/``tx.constrain`` of a known placement, ``tx.moe_dispatch``/``tx.moe_combine``):
  ``_placement_moves``;
- structure: an operation that keeps its operand's axes keeps their placements, but the axes whose extent it
  changes or makes (``keep_placement``'s ``changed``: the padded axes, a merged or split axis, a broadcast's new
  axes) have an unknown one; ``tnp.stack`` and ``tnp.concatenate`` meet their operands as elementwise
  operations do (``stack_placement``), the new or concatenated axis unknown;
- pools: the result keeps the operand's placement, a window axis included (JAX keeps a split window axis
  split); where windows overlap (window larger than the stride) across a split window axis, each device needs
  its neighbours' edge rows: a halo exchange, two ``collective-permute``s over its mesh axes
  (``window_placement``);
- a conv is a contraction (its features and the kernel's window), placed by ``contract_placement``, whose
  spatial axes end whole (``conv_placement``: ``tnp.conv`` asks for its result placed by the batch's and the
  features' mesh axes only on an Explicit mesh, XLA places it on an Auto one, so unknown); a split spatial axis
  of its operand is moved as XLA chooses (an all-gather of the operand on 8 CPU devices): a ``reshard``.
- selection (``top_k``) along an axis: the kept axes keep their placements, the new axis (the ``k`` selected)
  has an unknown one; a selected axis that was split must be whole on each device first: an ``all-gather``
  over its mesh axes (``tnp.top_k`` gathers it itself on an Explicit mesh, where JAX 0.10.2's ``lax.top_k``
  and sort raise a ``ShardingTypeError``; XLA gathers it on an Auto one) (``select_placement``);
- ``split`` along an axis into equal sections: each piece keeps every placement, the split axis's included
  (JAX keeps it split over the same mesh axes), and when that axis is split, each piece's blocks are moved to
  the devices that hold them: ``collective-permute``s over its mesh axes; into unequal sections its placement
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

``placement_mismatch`` is whether a value placed one way fits an annotation's ``"batch@data"`` (``@tx.typed``);
``declared_placement_error`` is its static half (the plugin: a placement the checker knows against a declared one).

Pure Python, shared by the mypy plugin and the runtime checker.
"""

from __future__ import annotations

import enum
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from ._errors import ErrorKind, NamedShapeError
from ._resources import conflict_error, resource_conflicts
from ._shapes import Mismatch
from ._spec import format_mesh_axes, format_placed_name, is_whole, partition_entry
from ._whole import agreed_whole

__all__ = [
    "Collective",
    "CollectiveKind",
    "Placed",
    "Placement",
    "broadcast_placement",
    "contract_placement",
    "conv_placement",
    "declared_placement_error",
    "describe_placed",
    "gather_placement",
    "keep_placement",
    "parse_placed_text",
    "placement_mismatch",
    "reduce_placement",
    "rename_placement",
    "select_placement",
    "split_placement",
    "stack_placement",
    "update_placement",
    "vmap_placement",
    "window_placement",
]

Placement = Mapping[str, tuple[str, ...]]
"""Axis name -> the mesh axes it is split over, major to minor; an absent name: unknown placement."""


class CollectiveKind(enum.Enum):
    """The communication a placement forces, as XLA names it in compiled HLO."""

    ALL_REDUCE = "all-reduce"
    ALL_GATHER = "all-gather"
    REDUCE_SCATTER = "reduce-scatter"
    """Partial sums combined and each device keeps its block of the sum (a gradient of a weight split FSDP-style)."""
    ALL_TO_ALL = "all-to-all"
    COLLECTIVE_PERMUTE = "collective-permute"
    """Each device sends a block to another: the halo exchange of overlapping windows over a split axis."""
    RESHARD = "reshard"
    """One name placed two ways: a value is moved (all-to-all, collective-permute or all-gather: XLA's choice)."""


@dataclass(frozen=True, slots=True)
class Collective:
    """One collective an operation needs: its kind, the mesh axes it runs over, and why."""

    kind: CollectiveKind
    mesh_axes: tuple[str, ...]
    why: str
    computes: str = ""
    """For an all-reduce that combines one reduction of its operand along one axis (``"sum 'embed'"``): XLA
    computes the same reduction of one value once, so a second one is no second collective."""

    def __str__(self) -> str:
        return f"{self.kind.value} over {format_mesh_axes(self.mesh_axes)}: {self.why}"


@dataclass(frozen=True, slots=True)
class Placed:
    """A result's placement and the collectives that make it."""

    placement: dict[str, tuple[str, ...]]
    collectives: tuple[Collective, ...] = ()


def describe_placed(names: Iterable[str], placement: Placement) -> str:
    """``"'batch@data heads'"``: a value's axes with their known placements (quoted, as messages quote)."""
    return repr(" ".join(n if not placement.get(n) else format_placed_name(n, placement[n]) for n in names))


def parse_placed_text(text: str) -> dict[str, tuple[str, ...]]:
    """The placements a named shape in the plugin's notation holds: ``"batch@data=8 mlp=cfg.mlp // 2
    heads@(x,y)"`` -> ``{"batch": ("data",), "heads": ("x", "y")}`` (``format_placed_name``'s inverse)."""
    found: dict[str, tuple[str, ...]] = {}
    for token in text.split():
        name, at, where = token.partition("=")[0].partition("@")
        if at and where:
            inner = where[1:-1] if where.startswith("(") and where.endswith(")") else where
            found[name] = tuple(a for a in inner.split(",") if a)
    return found


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
    in place; on an Auto one XLA sends the owning block's row instead, an all-reduce and permutes: its choice).
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
    whole = [
        Collective(
            CollectiveKind.ALL_GATHER,
            tuple(operand[n]),
            f"{operation} picks one index of {n!r}, split over {format_mesh_axes(operand[n])}, made whole first",
        )
        for n in dict.fromkeys(picked)
        if operand.get(n)
    ]
    return Placed(placement, (*moved, *summed, *whole))


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


def split_placement(names: Iterable[str], placement: Placement, axis: str, *, even: bool, operation: str) -> Placed:
    """``split`` of a value along ``axis`` into pieces with axes ``names``: into equal sections (``even``) each
    piece keeps every placement, ``axis``'s too (JAX keeps a split axis split over the same mesh axes, and the
    blocks of each piece are moved to the devices that hold them: ``collective-permute``s over them); into
    unequal ones ``axis``'s placement is unknown (JAX raises on an Explicit mesh; XLA gathers and moves the
    blocks on an Auto one: a ``reshard``)."""
    mesh_axes = placement.get(axis)
    if not mesh_axes:
        return keep_placement(names, placement)
    why = f"{operation} cuts {axis!r}, split over {format_mesh_axes(mesh_axes)}, into"
    if even:
        moved = Collective(CollectiveKind.COLLECTIVE_PERMUTE, mesh_axes, f"{why} pieces whose blocks move")
        return Placed(keep_placement(names, placement).placement, (moved,))
    moved = Collective(CollectiveKind.RESHARD, mesh_axes, f"{why} unequal pieces (moved as XLA chooses)")
    return Placed(keep_placement(names, placement, (axis,)).placement, (moved,))


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


def placement_mismatch(declared: Placement, actual: Placement | None) -> Mismatch | None:
    """Whether a value placed ``actual`` fits an annotation's ``declared`` placements (``"batch@data"``); a
    value whose placement is not known (``None``: no ``NamedSharding``, Auto mesh axes inside ``jit``) fits."""
    if actual is None:
        return None
    for name, wanted in declared.items():
        found = actual.get(name, ())
        if found != wanted:
            return Mismatch(_misplaced(name, found, wanted), ErrorKind.PLACEMENT, name, placement_fix(declared))
    return None


def placement_fix(declared: Placement) -> str:
    """How a value placed other than an annotation's ``declared`` placements is made to fit (the checker's
    message and the runtime's name the same move)."""
    wanted = {n: partition_entry(m) for n, m in declared.items()}
    return f"move the value with tx.constrain(..., {wanted!r}), or correct the annotation"


def _misplaced(name: str, found: tuple[str, ...], wanted: tuple[str, ...]) -> str:
    """Why ``name`` placed ``found`` does not fit the annotation's ``wanted``; a whole one (``()``) says so."""
    declared = format_placed_name(name, wanted)
    if not found:  # known whole
        return f"axis {name!r} is whole (replicated) here, but the annotation declares {declared!r}"
    where = f"mesh axis {found[0]!r}" if len(found) == 1 else f"mesh axes {found}"
    if is_whole(wanted):
        return f"axis {name!r} is split over {where}, but the annotation declares it whole ({declared!r})"
    return f"axis {name!r} is split over {where} but the annotation says {declared}"


def declared_placement_error(where: str, declared: Placement, known: Placement) -> NamedShapeError | None:
    """The error for a value whose placement the checker knows (``known``) put where an annotation declares
    another (``declared``: a return, a parameter, an annotated variable), or ``None``. Gradual: an axis the
    checker does not know, or that the annotation writes without ``@``, fits; but a mesh axis the value is
    known to split along one axis cannot split another that the annotation places on it."""
    mismatch = placement_mismatch({n: m for n, m in declared.items() if n in known}, known)
    mismatch = mismatch or _mesh_axis_taken(declared, known)
    if mismatch is None or mismatch.axis is None:
        return None
    return NamedShapeError(
        f"{where} is placed other than its annotation says: {mismatch.reason}. Fix: {placement_fix(declared)}",
        kind=ErrorKind.PLACEMENT,
    )


def _mesh_axis_taken(declared: Placement, known: Placement) -> Mismatch | None:
    """An axis the annotation places on a mesh axis that the value is known to split along another of its axes
    (``seq@model`` known, ``embed@model`` declared): one mesh axis cannot split a value along two axes (the
    conflict rule, ``resource_conflicts``, over the known placement with the declared one over it)."""
    merged = {**{n: m for n, m in known.items() if n not in declared}, **declared}
    for conflict in resource_conflicts(merged, merged):
        if (conflict.first in declared) != (conflict.second in declared):
            declared_first = conflict.first in declared
            name, other = (conflict.first, conflict.second) if declared_first else (conflict.second, conflict.first)
            return Mismatch(
                f"axis {other!r} is split over mesh axis {conflict.resource!r}, which the annotation gives to "
                f"{name!r} ({name}@{format_mesh_axes(declared[name])})",
                ErrorKind.PLACEMENT,
                other,
            )
    return None
