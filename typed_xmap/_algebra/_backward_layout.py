"""The backward pass's communication for the operations that move, select or slide over blocks rather than
contract them (``_backward_placement`` dispatches to these; its ``_into`` gives a gather's scatter-add):

- a placement move (``tx.shard``/``tx.constrain`` from one placement to another): on an Explicit mesh its
  transpose is the reverse move (JAX's ``reshard`` transposes to a ``reshard`` back to the operand's placement),
  the collectives ``move_placement`` gives for it (an all-gather where the move split an axis, an all-to-all
  back, a ``reshard`` where another mesh axis took a mesh axis's place), an axis a placement does not name read
  as whole;
- a pool with overlapping windows over a split axis (``window_placement``'s halo): its transpose scatters each
  window's cotangent back over the same windows, so the blocks exchange edges again: the forward's
  collective-permutes over the same mesh axes; windows that do not overlap, or an axis not split, none;
- a conv over a split spatial axis: the forward moves the operand's blocks (``conv_placement``'s ``reshard``)
  and contracts the features and the window with the spatial axes whole; its transpose contracts the same way
  (``_backward_placement``'s ``_conv``: the split spatial axes read as whole); the operand's cotangent moves its
  blocks back over their mesh axes, one ``reshard`` (``spatial_moves``), and the kernel's contracts the operand
  the forward made whole, moving nothing (on an Explicit mesh: on an Auto one XLA keeps the forward's halo
  exchange and sends it again, which the test suite records).
"""

from __future__ import annotations

from collections.abc import Sequence

from ._placement import Collective, CollectiveKind
from ._placement_moves import move_placement
from ._spec import format_mesh_axes

__all__: list[str] = []  # read by _backward_placement only (the package offers backward_collectives)

Axes = tuple[str, ...]
PlacementItems = dict[str, tuple[str, ...]]


def moved_back(names: Axes, operand: PlacementItems, result: PlacementItems, what: str) -> list[Collective]:
    """The reverse of the move of a value (axes ``names``) placed as ``operand`` to ``result``: from ``result``'s
    placement back to ``operand``'s, an axis either does not name read as whole (as the forward rules read it)."""
    back = move_placement(names, {n: result.get(n, ()) for n in names}, operand, operation=what)
    return list(back.collectives)


def halo_back(forward: Sequence[Collective], what: str) -> list[Collective]:
    """A pool's cotangent scattered back over overlapping windows: the forward's halo exchange again (its
    collective-permutes, over the same mesh axes)."""
    return [
        Collective(c.kind, c.mesh_axes, f"{what} sends the windows' edges back over {format_mesh_axes(c.mesh_axes)}")
        for c in forward
        if c.kind is CollectiveKind.COLLECTIVE_PERMUTE
    ]


def spatial_axes(operand: PlacementItems, result_names: Axes, result: PlacementItems) -> Axes:
    """A conv's split spatial axes: those the operand splits that the result keeps (a spatial axis is a result
    axis) without a placement (``conv_placement`` leaves a split spatial axis's placement unknown)."""
    return tuple(n for n, mesh in operand.items() if mesh and n in result_names and n not in result)


def spatial_moves(operand: PlacementItems, spatial: Axes, what: str) -> list[Collective]:
    """One ``reshard`` over the mesh axes splitting the conv's spatial axes ``spatial`` in its operand: the
    blocks its transpose moves (XLA chooses how: a halo exchange of the operand's cotangent, an all-gather of
    the operand for the kernel's)."""
    mesh_axes = tuple(dict.fromkeys(m for n in spatial for m in operand[n]))
    if not mesh_axes:
        return []
    names = ", ".join(map(repr, spatial))
    why = f"{what} moves the blocks of {names}, split over {format_mesh_axes(mesh_axes)} (moved as XLA chooses)"
    return [Collective(CollectiveKind.RESHARD, mesh_axes, why)]
