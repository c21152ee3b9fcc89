"""Placement on the mesh: where each input and output of an xmap call is split, decided from the plan.

Inputs and outputs get sharding constraints at their named dims (a dim is split over the mesh axes its
name is assigned to; dims no name covers are left to the compiler), so ``jit`` partitions the program
(GSPMD/Shardy). Explicit mesh axes are made Auto for the body (what ``jax.sharding.auto_axes`` does) and
results are resharded back, since ``vmap`` collectives with ``spmd_axis_name`` need Auto axes in jax 0.10.2.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
from jax.sharding import AxisType, Mesh, NamedSharding, PartitionSpec
from jax.tree_util import tree_map

from .._algebra import AxisMap
from ._mesh import abstract_mesh_scope, explicit_axes
from ._plan import Plan, partition_entry
from ._specs import Leaf

__all__ = ["input_spec", "output_spec", "run_constrained", "run_on_mesh"]

Run = Callable[[Sequence[Any]], tuple[Any, ...]]  # the levels: per-argument arrays in, per-output subtrees out


def input_spec(plan: Plan, leaf: Leaf, rank: int) -> PartitionSpec:
    """An argument's split: each named dim over its axis's mesh axes."""
    entries: list[Any] = [None] * rank
    for dim, name in leaf.dims:
        entries[dim] = partition_entry(plan.mesh_axes(name))
    return PartitionSpec(*entries)


def output_spec(plan: Plan, axis_map: AxisMap, rank: int) -> PartitionSpec:
    """An output leaf's split: each out_axes position over its axis's mesh axes."""
    entries: list[Any] = [None] * rank
    for pos, name in axis_map.dims:
        entries[pos] = partition_entry(plan.mesh_axes(name))
    return PartitionSpec(*entries)


def _placed(plan: Plan, spec: PartitionSpec) -> Any:
    """A bare spec under ``jax.set_mesh``; a ``NamedSharding`` on the legacy ``with mesh:`` mesh."""
    return NamedSharding(plan.mesh, spec) if isinstance(plan.mesh, Mesh) else spec


def run_constrained(plan: Plan, data: Sequence[Any], run: Run) -> tuple[Any, ...]:
    """``run`` with inputs and outputs constrained to their splits (inside an xmap, or on an Auto mesh)."""
    if not plan.resources:
        return run(data)
    data = [
        jax.lax.with_sharding_constraint(v, _placed(plan, input_spec(plan, leaf, len(shape))))
        if any(plan.mesh_axes(n) for n in leaf.names)
        else v
        for v, leaf, shape in zip(data, plan.leaves, plan.shapes, strict=False)
    ]
    outs = run(data)
    return tuple(
        tree_map(lambda o, m=m: jax.lax.with_sharding_constraint(o, _placed(plan, output_spec(plan, m, o.ndim))), sub)
        for sub, m in zip(outs, plan.config.out_spec.leaves, strict=False)
    )


def run_on_mesh(plan: Plan, data: Sequence[Any], run: Run) -> tuple[Any, ...]:
    """The outermost xmap on a mesh: Explicit axes made Auto around the body, results resharded back."""
    with abstract_mesh_scope(plan.mesh):
        current = jax.sharding.get_abstract_mesh()
        explicit = explicit_axes(current)
        if not explicit:
            return run_constrained(plan, data, run)
        # Values without a mesh in their type (numpy inputs) are typed on the mesh first, so that
        # reverse mode hands their cotangents back on the Explicit mesh.
        typed = [
            _on_mesh(v, input_spec(plan, leaf, len(shape)))
            for v, leaf, shape in zip(data, plan.leaves, plan.shapes, strict=False)
        ]
        auto = current.update_axis_types({a: AxisType.Auto for a in explicit})
        with jax.sharding.use_abstract_mesh(auto):
            outs = run_constrained(plan, [_on_mesh(v, PartitionSpec(), force=True) for v in typed], run)
        return tuple(
            tree_map(lambda o, m=m: jax.sharding.reshard(o, output_spec(plan, m, o.ndim)), sub)
            for sub, m in zip(outs, plan.config.out_spec.leaves, strict=False)
        )


def _on_mesh(value: Any, spec: PartitionSpec, *, force: bool = False) -> Any:
    """``value`` typed on the context mesh with ``spec`` (if it has no mesh yet, or ``force``)."""
    try:
        typ = jax.typeof(value)
    except TypeError:
        return value
    sharding = getattr(typ, "sharding", None)
    if sharding is None or not hasattr(typ, "shape"):
        return value
    if force or sharding.mesh.empty:
        return jax.sharding.reshard(value, spec)
    return value
