"""Placement of the reductions that read a split axis other than as one sum: normalisations, index reductions
and scans (the placement half of ``tnp.softmax``, ``log_softmax``, ``logsumexp``, ``var``, ``std``, ``argmax``,
``argmin``, ``cumsum``, ``cumprod``; ``reduce_placement`` is the one-pass reductions' ``sum``, ``max``, ...).

Measured on 8 emulated devices (JAX 0.10.2, Explicit and Auto meshes), the collectives XLA compiles per axis
split over mesh axes M that the operation runs along:

- a normalisation makes two passes over the axis, each combined across its blocks: ``softmax``,
  ``log_softmax`` and ``logsumexp`` a maximum (for stability) and a sum of exponentials, ``var`` and ``std`` a
  mean and a sum of squared deviations: two ``all-reduce``s over M. ``softmax`` and ``log_softmax`` keep the
  axis, placed as it was (each device normalises its own block); the others drop it (``normalise_placement``);
- an index reduction (``argmax``/``argmin``) finds each block's best value and its index; the pairs are
  gathered and the best of them chosen on every device: two ``all-gather``s over M (the values and the
  indices), the axis dropped (``index_reduce_placement``);
- a scan (``cumsum``/``cumprod``) along the axis needs every earlier block: one ``all-gather`` over M, and the
  result keeps the axis placed as it was (``scan_placement``); so does a sort (``sort``/``argsort``) on an
  Explicit mesh (``sort_placement``; on an Auto one XLA may sort across devices instead).

Several split axes at once: the collectives of each, over its own mesh axes (XLA combines each axis's blocks on
their own, as it does for a sum over two split axes: ``reduce_placement``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ._placement import Collective, CollectiveKind, Placed, Placement
from ._placement_rules import keep_placement
from ._spec import format_mesh_axes

__all__ = [
    "COMPUTES",
    "NORMALISATIONS",
    "index_reduce_placement",
    "normalise_placement",
    "scan_placement",
    "sort_placement",
]

NORMALISATIONS = {
    "softmax": ("maximum", "sum of exponentials"),
    "log_softmax": ("maximum", "sum of exponentials"),
    "logsumexp": ("maximum", "sum of exponentials"),
    "var": ("mean", "sum of squared deviations"),
    "std": ("mean", "sum of squared deviations"),
}
"""The normalisations by ``tnp`` name, and the two passes each makes over the axes it runs along."""

COMPUTES = {"sum": "sum", "mean": "sum", "max": "max", "min": "min", "maximum": "max"}
"""The reduction of the operand alone that a reduction (by ``tnp`` name) or a normalisation's first pass (by
its name in ``NORMALISATIONS``) combines across blocks: XLA computes one value's same reduction along one axis
once (``tnp.mean(x, "embed")`` and ``tnp.var(x, "embed")`` share the sum; ``tnp.max`` and ``tnp.softmax``
the maximum; a second pass, of values made from the first, is its own)."""


def _per_axis(
    names: Sequence[str],
    placement: Placement,
    over: Iterable[str],
    kinds: Sequence[tuple[CollectiveKind, str, str]],
) -> Placed:
    """``names`` placed as ``placement`` places them, and for each axis of ``over`` split over mesh axes, one
    collective per item of ``kinds`` (kind, why, what it computes: ``Collective.computes`` without the axis)
    over them (``why`` formatted with the axis and its mesh axes)."""
    collectives = [
        Collective(
            kind,
            tuple(placement[axis]),
            why.format(axis=repr(axis), mesh=format_mesh_axes(placement[axis])),
            f"{computes} {axis!r}" if computes else "",
        )
        for axis in dict.fromkeys(over)
        if placement.get(axis)
        for kind, why, computes in kinds
    ]
    return Placed(keep_placement(names, placement).placement, tuple(collectives))


def normalise_placement(
    names: Sequence[str], placement: Placement, over: Iterable[str], *, function: str, operation: str
) -> Placed:
    """A normalisation ``function`` (a key of ``NORMALISATIONS``) over the axes ``over`` of a value placed
    ``placement``, whose result has axes ``names`` (``over`` kept by ``softmax``, dropped by ``logsumexp``):
    the result keeps the placements of its axes; each axis of ``over`` split over mesh axes M needs two
    all-reduces over M, one per pass."""
    first, second = NORMALISATIONS[function]
    why = f"{operation} normalises over {{axis}}, split over {{mesh}}"
    kinds = [
        (CollectiveKind.ALL_REDUCE, f"{why} (its {first})", COMPUTES[first]),
        (CollectiveKind.ALL_REDUCE, f"{why} (its {second})", ""),
    ]
    return _per_axis(names, placement, over, kinds)


def index_reduce_placement(names: Sequence[str], placement: Placement, axis: str, *, operation: str) -> Placed:
    """``argmax``/``argmin`` along ``axis`` of a value placed ``placement``, whose result has axes ``names``: the
    kept axes keep their placements; a split ``axis`` needs its blocks' best values and their indices gathered:
    two all-gathers over its mesh axes."""
    why = f"{operation} searches {{axis}}, split over {{mesh}}: each block's best"
    kinds = [(CollectiveKind.ALL_GATHER, f"{why} values", ""), (CollectiveKind.ALL_GATHER, f"{why} indices", "")]
    return _per_axis(names, placement, (axis,), kinds)


def scan_placement(names: Sequence[str], placement: Placement, axis: str, *, operation: str) -> Placed:
    """``cumsum``/``cumprod`` along ``axis`` of a value placed ``placement`` (the result's axes ``names``, the
    operand's): placed as the operand is; a split ``axis`` is all-gathered over its mesh axes (each block needs
    the blocks before it)."""
    why = f"{operation} scans along {{axis}}, split over {{mesh}} (each block needs the blocks before it)"
    return _per_axis(names, placement, (axis,), [(CollectiveKind.ALL_GATHER, why, "")])


def sort_placement(names: Sequence[str], placement: Placement, axis: str, *, operation: str) -> Placed:
    """``sort``/``argsort`` along ``axis``, as ``scan_placement``: placed as the operand is (JAX keeps a sorted
    split axis split), a split ``axis`` all-gathered (each block needs the others). On an Explicit mesh; on an
    Auto one XLA may sort across devices instead (all-to-alls), its own choice."""
    why = f"{operation} sorts along {{axis}}, split over {{mesh}} (each block needs the others)"
    return _per_axis(names, placement, (axis,), [(CollectiveKind.ALL_GATHER, why, "")])
