"""Placement of the segment reductions (``tnp.segment_sum``, ``tnp.segment_max``): the placement half of
``_segments``'s rule.

Measured on 8 emulated devices (JAX 0.10.2; an Explicit mesh and an Auto one compile the same, since the runtime
runs the reduction with Explicit axes made Auto): each device reduces its block of the segmented axis into every
segment, and the partial results are combined, one ``all-reduce`` (a sum, or a maximum) over the mesh axes the
segmented axis is split over, in the data or, where the data's is whole or unknown, in the ids. The data's other
axes keep their placements and the segments' axis is whole (every device holds every segment). Data and ids
that split the segmented axis over different mesh axes are moved as XLA chooses (a ``reshard``: permutes and
all-gathers, then the all-reduce over one side's mesh axes, XLA's choice too).

Pure Python, shared by the mypy plugin and the runtime checker.
"""

from __future__ import annotations

from collections.abc import Iterable

from ._placement import Collective, CollectiveKind, Placed, Placement
from ._spec import format_mesh_axes
from ._whole import WHOLE

__all__ = ["segment_placement"]


def segment_placement(
    names: Iterable[str], data: Placement, ids: Placement, axis: str, new_axis: str, *, operation: str
) -> Placed:
    """A segment reduction of ``data`` along ``axis`` by ids placed ``ids``, whose result has axes ``names``
    (``axis`` replaced by ``new_axis``): the kept axes keep ``data``'s placements, ``new_axis`` is whole; a split
    ``axis`` is one all-reduce over its mesh axes (the data's, else the ids'), and ids split otherwise than the
    data are moved first (a ``reshard`` over both's mesh axes)."""
    placement = {n: tuple(data[n]) for n in names if n in data and n != axis}
    placement[new_axis] = WHOLE
    own, by_ids = tuple(data.get(axis) or ()), tuple(ids.get(axis) or ())
    mesh_axes = own or by_ids
    if not mesh_axes:
        return Placed(placement)
    collectives = []
    if own and by_ids and own != by_ids:
        both = tuple(dict.fromkeys((*own, *by_ids)))
        why = (
            f"{operation}'s data split {axis!r} over {format_mesh_axes(own)}, its ids over "
            f"{format_mesh_axes(by_ids)} (one is moved as XLA chooses)"
        )
        collectives.append(Collective(CollectiveKind.RESHARD, both, why))
    why = (
        f"{operation} reduces {axis!r}, split over {format_mesh_axes(mesh_axes)}, into every segment (blocks combined)"
    )
    collectives.append(Collective(CollectiveKind.ALL_REDUCE, mesh_axes, why))
    return Placed(placement, tuple(collectives))
