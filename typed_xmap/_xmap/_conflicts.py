"""Resource conflicts in an xmap call: two named axes on one mesh axis meeting in one value.

They are caught in three places:

- inputs and outputs: from the specs (every named axis of a spec leaf ends up as a dim of that value), plus
  the enclosing xmaps' axes a value carries;
- intermediates: by named-shape inference over the jaxpr of the per-element body (``_inference``). It
  runs only when two axes in scope share a resource, so other calls pay nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax

from .._algebra import AxisResourceConflict, Resource, check_conflicts, conflict_error, resource_conflicts
from .._value._frames import outer_carried
from ._inference import check_jaxpr
from ._plan import Plan, element_avals

__all__ = ["check_argument_conflicts", "check_intermediates", "check_output_conflicts"]

Resources = Mapping[str, tuple[Resource, ...]]


def check_argument_conflicts(plan: Plan, data: Sequence[Any]) -> None:
    """No argument holds two axes on one resource (its mapped axes, and the enclosing xmaps' it carries)."""
    for leaf, value in zip(plan.leaves, data, strict=False):
        check_conflicts(
            outer_carried(plan.outer, value) + list(leaf.names),
            plan.all_resources,
            f"argument {leaf.describe()} of {plan.config.name}",
        )


def check_output_conflicts(
    plan: Plan, outs: Sequence[Any], carried: Callable[[int, int], set[str]], label: Callable[[int, int], str]
) -> None:
    """Every output gets a dim per listed axis and keeps the enclosing xmaps' axes it carries: no two may clash."""
    for j, sub in enumerate(outs):
        listed = list(plan.config.out_spec.leaves[j].names)
        for i, value in enumerate(jax.tree_util.tree_leaves(sub)):
            outer = outer_carried(plan.outer, value)
            where = f"{label(j, i)} of {plan.config.name}"
            _check_output(outer + listed, sorted(carried(j, i)) + outer, plan.all_resources, where)


def _check_output(names: Sequence[str], carried: Sequence[str], resources: Resources, where: str) -> None:
    conflicts = resource_conflicts(names, resources)
    if not conflicts:
        return
    conflict = conflicts[0]
    for broadcast, owner in ((conflict.second, conflict.first), (conflict.first, conflict.second)):
        if broadcast not in carried and owner in carried:
            raise AxisResourceConflict(
                f"{where} is broadcast along axis {broadcast!r}, which is assigned to mesh axis "
                f"{conflict.resource!r}, but the output is already partitioned along {conflict.resource!r} "
                f"because it carries axis {owner!r}. Fix: drop {broadcast!r} from its out_axes, or assign "
                f"{broadcast!r} to another mesh axis"
            )
    raise conflict_error(conflict, where)


def check_intermediates(plan: Plan, element: Callable[..., Any], data: Sequence[Any]) -> None:
    """Trace the per-element body alone and infer every value's named axes (only when a conflict is possible)."""
    scope = plan.scope
    if not resource_conflicts(scope, plan.all_resources):
        return
    inputs = [
        frozenset(leaf.names) | frozenset(outer_carried(plan.outer, value))
        for leaf, value in zip(plan.leaves, data, strict=False)
    ]
    jaxpr = jax.make_jaxpr(element, axis_env=list(plan.axis_env().items()))(*element_avals(plan, data))
    check_jaxpr(jaxpr, inputs, frozenset(scope), plan.all_resources)
