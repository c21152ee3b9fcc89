"""Known whole: a named axis split over no mesh axis, replicated on every device.

A placement maps an axis to the mesh axes it is split over; the empty tuple ``()`` (written ``"batch@()"``, the
``PartitionSpec`` entry ``None``) says the axis is known to be *whole* on each device, where an axis the placement
leaves out is unknown (gradual). A mapping given to ``tx.shard``/``tx.constrain`` places every axis it names and
leaves every other one whole (``mapped_placement``), as the ``PartitionSpec`` it builds does.

Where values meet by name (elementwise, broadcast, a contraction's operands, a gather's indices), a whole operand
meets a split one as the split one is placed (JAX's broadcasting rule: each device slices its block of the whole
value; no conflict, no collective), and the result is known whole along an axis only where every operand that has
the axis knows it whole (``agreed_whole``): an operand that has it with an unknown placement may split it. A whole
axis needs no collective: a reduction or a contraction over it sums on each device (the rules of
``_placement_rules`` list collectives for split axes only).

Pure Python, shared by the mypy plugin and the runtime checker.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence

from ._resources import mesh_axis_names
from ._spec import is_whole

__all__ = ["WHOLE", "agreed_whole", "mapped_placement"]

WHOLE: tuple[str, ...] = ()
"""The placement of a known-whole axis: split over no mesh axis."""


def mapped_placement(names: Iterable[str], resources: Mapping[str, Sequence[object]]) -> dict[str, tuple[str, ...]]:
    """The placement of a value with axes ``names`` placed by a mapping (``tx.shard``, ``tx.constrain``; its
    ``resources`` normalised, an axis mapped to ``None`` left out): each mapped axis over its mesh axes, every
    other axis whole."""
    placed = mesh_axis_names(resources)
    return {n: placed.get(n, WHOLE) for n in names}


def agreed_whole(
    names: Iterable[str],
    placements: Sequence[Mapping[str, tuple[str, ...]]],
    axes: Sequence[Collection[str] | None] | None = None,
) -> dict[str, tuple[str, ...]]:
    """The axes of ``names`` known whole where values placed ``placements`` meet: every operand that has the axis
    knows it whole. ``axes`` are the operands' axes (``None`` for one of unknown axes: it may have any); without
    them, every operand must place the axis whole."""
    found: dict[str, tuple[str, ...]] = {}
    for name in names:
        holders = (
            list(placements)
            if axes is None
            else [p for p, own in zip(placements, axes, strict=True) if own is None or name in own]
        )
        if holders and all(is_whole(p.get(name)) for p in holders):
            found[name] = WHOLE
    return found
