"""Placement: which mesh axes each named axis of a value is split over, and how each operation changes it.

A placement maps axis names to mesh axes (``{"batch": ("data",)}``, written ``"batch@data"``; ``()``, written
``"batch@()"``: known whole, replicated on every device, ``_whole``). It is gradual: an axis it leaves out has an
*unknown* placement (replicated, or placed where the checker cannot see), which never causes an error. A whole
axis meets a split one as the split one is placed, and needs no collective (``_whole``).

This module holds what the rules share: a placement, the collectives it forces (as XLA names them in compiled
HLO) and a rule's result (``Placed``). The rules, each the placement half of one rule of the algebra:
``_placement_rules`` (values meeting by name, reductions, contractions, structure), ``_placement_layout``
(windows, convs, selections, splits, gathers, updates, ``vmap``, renames), ``_placement_moves`` (moves) and
``_normalise_placement`` (normalisations, index reductions, scans); ``_placement_declared`` holds a known
placement against a declared one.

Pure Python, shared by the mypy plugin and the runtime checker.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ._spec import format_mesh_axes, format_placed_name

__all__ = [
    "Collective",
    "CollectiveKind",
    "Placed",
    "Placement",
    "describe_placed",
    "parse_placed_text",
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
    """For a collective that computes one thing of its operand along one axis (an all-reduce combining one
    reduction, ``"sum 'embed'"``; an all-gather making the axis whole, ``"whole 'seq'"``): XLA computes it
    once per value (the same reduction once, the same whole value once), so a second one is no second
    collective."""

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
