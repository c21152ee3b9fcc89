"""Placement changes: a value moved from one placement to another (``tx.shard``/``tx.constrain`` of a value of
known placement, ``tx.moe_dispatch``/``tx.moe_combine`` from ``from_resources`` to ``resources``).

The value is placed as the target says, an axis the target leaves out whole. Per named axis whose placement
changes, as XLA compiles the change on 8 devices (Explicit and Auto meshes, ``tests/test_placement_rules_hlo.py``):

- mesh axes added at its minor end are a local slice: each device keeps its own block, no communication
  (``seq`` whole to ``seq@model``);
- mesh axes that leave its minor end are an ``all-gather`` over them (one per named axis: ``batch@data
  seq@model`` made whole is two), or an ``all-to-all`` over them where they now split another axis (one per pair
  of axes: ``seq@model`` to ``embed@model``);
- where a mesh axis leaves an axis for none and one that split nothing arrives in its place (``batch@data`` to
  ``batch@model``), XLA moves the blocks its own way (a ``collective-permute`` and an ``all-gather`` on 8 CPU
  devices): one ``reshard`` over those mesh axes, listed no other way;
- where named axes exchange mesh axes among themselves (a swap, ``batch@data embed@model`` to ``batch@model
  embed@data``, or a longer cycle), XLA's moves depend on the mesh axes' sizes (data=4, model=2: an
  ``all-to-all`` over data and a ``collective-permute`` over both; 2 by 2: one ``collective-permute``): one
  ``reshard`` over the mesh axes exchanged.

An axis the source does not place is unknown there: none listed for it (``move_placement``).
"""

from __future__ import annotations

from collections.abc import Sequence

from ._placement import Collective, CollectiveKind, Placed, Placement
from ._placement_rules import _checked
from ._spec import format_mesh_axes

__all__ = ["move_placement"]


def move_placement(names: Sequence[str], source: Placement, target: Placement, *, operation: str) -> Placed:
    """A value (axes ``names``) moved from the placement ``source`` to ``target``: placed by ``target``, an axis it
    leaves out whole (a conflict there raises ``AxisResourceConflict``). Per named axis ``source`` places: mesh
    axes added at its minor end need nothing; mesh axes leaving its minor end are one all-gather over them, or
    one all-to-all per axis they now split; a mesh axis leaving for no axis while one that split nothing arrives
    is one ``reshard`` over them (XLA's choice), and so are the mesh axes named axes exchange among themselves
    (a swap or a cycle: ``_cycles``)."""
    placed = {n: tuple(target[n]) for n in names if n in target}
    _checked(names, placed, operation)
    owner = {a: n for n, mesh_axes in placed.items() for a in mesh_axes}
    before_owner = {a: n for n in names if n in source for a in source[n]}
    changes = {n: _change(tuple(source[n]), placed.get(n, ())) for n in names if n in source}
    collectives: list[Collective] = []
    replaced: set[str] = set()
    for name, (leaving, arriving) in changes.items():
        if any(a not in owner for a in leaving) and any(a not in before_owner for a in arriving):
            replaced.update((*leaving, *arriving))
            why = f"{operation} puts {format_mesh_axes(arriving)} where {format_mesh_axes(leaving)} split {name!r}"
            collectives.append(
                Collective(CollectiveKind.RESHARD, (*leaving, *arriving), f"{why} (moved as XLA chooses)")
            )
    for cycle, mesh_axes in _cycles(changes, owner).items():
        replaced.update(mesh_axes)
        why = f"{operation} exchanges {format_mesh_axes(mesh_axes)} among {', '.join(map(repr, cycle))}"
        collectives.append(Collective(CollectiveKind.RESHARD, mesh_axes, f"{why} (moved as XLA chooses)"))
    for name, (leaving, _) in changes.items():
        kept = [a for a in leaving if a not in replaced]
        for other in dict.fromkeys(owner[a] for a in kept if a in owner):
            swapped = tuple(a for a in kept if owner.get(a) == other)
            why = f"{operation} moves {format_mesh_axes(swapped)} from one axis to another ({name!r} -> {other!r})"
            collectives.append(Collective(CollectiveKind.ALL_TO_ALL, swapped, why))
        gathered = tuple(a for a in kept if a not in owner)
        if gathered:
            why = f"{operation} leaves {name!r} whole, split over {format_mesh_axes(gathered)}"
            collectives.append(Collective(CollectiveKind.ALL_GATHER, gathered, why))
    return Placed(placed, tuple(collectives))


def _cycles(
    changes: dict[str, tuple[tuple[str, ...], tuple[str, ...]]], owner: dict[str, str]
) -> dict[tuple[str, ...], tuple[str, ...]]:
    """Named axes that exchange mesh axes among themselves (a swap, ``batch@data embed@model`` to ``batch@model
    embed@data``, or a longer cycle), each group with the mesh axes that move within it. XLA's moves for them
    depend on the mesh axes' sizes, which placements do not give (data=4, model=2: an all-to-all over data and a
    collective-permute over both; 2 by 2: one collective-permute): one ``reshard`` over them."""
    sends = {n: {owner[a] for a in leaving if owner.get(a, n) != n} for n, (leaving, _) in changes.items()}
    reach = {n: _reached(n, sends) for n in sends}
    found: dict[tuple[str, ...], tuple[str, ...]] = {}
    for name in sends:
        cycle = tuple(n for n in sends if n in reach[name] and name in reach[n])
        if len(cycle) > 1 and cycle[0] == name:
            found[cycle] = tuple(a for n in cycle for a in changes[n][0] if owner.get(a) in cycle)
    return found


def _reached(start: str, sends: dict[str, set[str]]) -> set[str]:
    """The named axes that mesh axes leaving ``start`` reach, directly or on through the axes they arrive at."""
    seen: set[str] = set()
    todo = [start]
    while todo:
        for n in sends.get(todo.pop(), set()) - seen:
            seen.add(n)
            todo.append(n)
    return seen


def _change(before: tuple[str, ...], after: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The mesh axes that leave an axis's minor end and those that arrive there, after their common prefix."""
    common = 0
    while common < min(len(before), len(after)) and before[common] == after[common]:
        common += 1
    return before[common:], after[common:]
