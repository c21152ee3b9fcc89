"""Placement of the MoE routing: ``tx.moe_route``'s tables and the collectives its steps force.

``tx.moe_route(logits, k, capacity, expert=, tokens=)`` is a softmax and a top-k along ``expert``, a running
count along the ``tokens`` axes (each token's slot in its expert's buffer), the tokens each expert takes in a
group (a sum along ``tokens``) and the balance loss (means along ``tokens`` and the group axes, a sum along
``expert``). Measured on 8 emulated devices (JAX 0.10.2, data=4 by model=2, ``tests/test_comm_moe.py``), the
collectives XLA compiles per split axis of the logits, over its mesh axes M:

- a token axis: the running count needs the blocks before each one, an ``all-gather`` over M; the tokens
  each expert takes at each choice are summed along it (for the tables), and so are the tokens each expert
  takes and the gates (for the balance loss): an ``all-reduce`` over M per value, three values that XLA's
  combiner packs into one tuple all-reduce; the running count over several token axes sums each later one
  (each block's total under every earlier token axis), one more all-reduce over M per earlier token axis;
- the ``expert`` axis (on an Explicit mesh): the softmax's two passes, two ``all-reduce``s over M; the top-k
  needs the axis whole, an ``all-gather`` over M; the balance loss's sum over the experts, one more
  ``all-reduce``;
- a group axis (any other): the balance loss's mean over the groups, an ``all-reduce`` over M.

The tables (dispatch and combine) keep the logits' placement of the group and token axes; ``expert`` and
``slot`` are whole (the one-hot tables are made whole along them on each device). Where the program drops the
tables or the balance loss, XLA removes what computes only it (the running count; the balance loss's mean over
the groups and sum over the experts): the caller says so (``tables=``, ``balance=``).

Pure Python.
"""

from __future__ import annotations

from collections.abc import Sequence

from ._placement import Collective, CollectiveKind, Placed, Placement
from ._spec import format_mesh_axes

__all__ = ["route_placement"]


def route_placement(
    names: Sequence[str],
    placement: Placement,
    *,
    expert: str,
    tokens: Sequence[str],
    slot: str,
    operation: str,
    tables: bool = True,
    balance: bool = True,
) -> Placed:
    """``moe_route`` of logits with axes ``names`` placed ``placement``: the tables' placement (the logits' group
    and token axes as placed, ``expert`` and ``slot`` whole) and the collectives the routing and its balance loss
    force, one per value they carry, per split axis (a token axis: an all-gather and three all-reduces, one more
    per earlier token axis; ``expert``: two all-reduces, an all-gather and an all-reduce; a group axis: an
    all-reduce). ``tables=False``/``balance=False``: that result is not used (XLA removes what computes only it:
    the running count and its sums, the balance loss's own reductions)."""
    placed = {n: tuple(placement[n]) for n in names if n in placement and n != expert}
    placed.update({expert: (), slot: ()})
    collectives: list[Collective] = []
    for name in (n for n in names if placement.get(n)):
        mesh_axes = tuple(placement[name])
        where = f"{name!r}, split over {format_mesh_axes(mesh_axes)}"
        if name == expert:
            steps = [
                (True, CollectiveKind.ALL_REDUCE, f"{operation}'s softmax takes the maximum along {where}"),
                (True, CollectiveKind.ALL_REDUCE, f"{operation}'s softmax sums along {where}"),
                (True, CollectiveKind.ALL_GATHER, f"{operation}'s top-k needs {where}, whole"),
                (balance, CollectiveKind.ALL_REDUCE, f"{operation}'s balance loss sums {where}"),
            ]
        elif name in tokens:
            steps = [
                (tables, CollectiveKind.ALL_GATHER, f"{operation} counts the slots taken along {where}"),
                (tables, CollectiveKind.ALL_REDUCE, f"{operation} sums each choice's tokens per expert along {where}"),
                *(
                    (tables, CollectiveKind.ALL_REDUCE, f"{operation}'s running count sums {where} under {outer!r}")
                    for outer in tokens[: list(tokens).index(name)]
                ),
                (balance, CollectiveKind.ALL_REDUCE, f"{operation}'s balance loss counts the tokens along {where}"),
                (balance, CollectiveKind.ALL_REDUCE, f"{operation}'s balance loss averages the gates along {where}"),
            ]
        else:
            steps = [(balance, CollectiveKind.ALL_REDUCE, f"{operation}'s balance loss reduces {where}")]
        collectives.extend(Collective(kind, mesh_axes, why) for used, kind, why in steps if used)
    return Placed(placed, tuple(collectives))
