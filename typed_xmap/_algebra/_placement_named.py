"""The communication of JAX's collectives by axis name (``jax.lax.psum(x, "block")``) inside an xmapped body.

xmap runs each of its named axes as one ``vmap`` level (``axis_name=``, ``spmd_axis_name=`` its resources), so a
collective over a named axis is that level's batching rule: an operation along the batched dim, which is split
over the axis's mesh axes. XLA compiles it, on Explicit and Auto meshes alike (JAX 0.10.2, 8 CPU devices):

- ``psum``, ``pmean``, ``pmax``, ``pmin``: a reduction along the dim, an all-reduce over its mesh axes; over
  several axes (``("batch", "block")``) one per axis, as the levels reduce one after the other;
- ``ppermute``, ``pshuffle``: a gather of the dim's rows in the permutation's order, an all-gather over its mesh
  axes (each call its own);
- ``all_to_all``: an all-to-all over its mesh axes.

An axis its ``axis_resources`` do not place runs whole on each device (vectorized): no communication. Collectives
whose compiled form XLA chooses from their uses (``all_gather``, ``psum_scatter``) have no rule here.
"""

from __future__ import annotations

from collections.abc import Sequence

from ._placement import Collective, CollectiveKind, Placement
from ._spec import format_mesh_axes

__all__ = ["NAMED_COLLECTIVES", "named_collectives"]

NAMED_COLLECTIVES: dict[str, tuple[CollectiveKind, str]] = {
    "psum": (CollectiveKind.ALL_REDUCE, "sums"),
    "pmean": (CollectiveKind.ALL_REDUCE, "averages"),
    "pmax": (CollectiveKind.ALL_REDUCE, "takes the maximum"),
    "pmin": (CollectiveKind.ALL_REDUCE, "takes the minimum"),
    "ppermute": (CollectiveKind.ALL_GATHER, "permutes"),
    "pshuffle": (CollectiveKind.ALL_GATHER, "permutes"),
    "all_to_all": (CollectiveKind.ALL_TO_ALL, "exchanges blocks"),
}
"""A ``jax.lax`` collective's name -> the collective it compiles to along a placed mapped axis, and its verb."""


def named_collectives(name: str, axes: Sequence[str], body: Placement, operation: str) -> tuple[Collective, ...]:
    """The collectives ``jax.lax.<name>`` over the named ``axes`` runs in an xmapped body whose
    ``axis_resources`` place its axes as ``body`` does: one per axis placed on mesh axes, none for a whole or
    unknown one; none for a collective without a rule here."""
    rule = NAMED_COLLECTIVES.get(name)
    if rule is None:
        return ()
    kind, verb = rule
    return tuple(
        Collective(
            kind, tuple(body[axis]), f"{operation} {verb} over '{axis}', mapped on {format_mesh_axes(body[axis])}"
        )
        for axis in dict.fromkeys(axes)
        if body.get(axis)
    )
