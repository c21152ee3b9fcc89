"""Placement on the mesh: where each input and output of an xmap call is split, decided from the plan.

The rule: a dim is placed where its name's resources put it; a dim no name covers (a positional dim, or a
named dim whose axis has no mesh resources) is the compiler's to choose (``PartitionSpec.UNCONSTRAINED`` in
the sharding constraints), never forced replicated. So an inner xmap constrains only its own axes' dims,
the enclosing xmaps' placement of the other dims survives, and nested xmaps compile to what nested
``vmap(spmd_axis_name=...)`` compile to (no all-gathers, dynamic-slices or copies of their own;
``tests/test_xmap_nested.py`` compares the compiled modules). Only where a spec must be concrete (the
``reshard`` back to Explicit mesh axes of the outermost xmap's results) is a dim no name covers replicated.

Explicit mesh axes are made Auto for the body (what ``jax.sharding.auto_axes`` does) and
results are resharded back, since ``vmap`` collectives with ``spmd_axis_name`` need Auto axes in jax 0.10.2.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
from jax.sharding import AxisType, Mesh, NamedSharding, PartitionSpec
from jax.tree_util import tree_flatten, tree_unflatten

from .._algebra import AxisMap, partition_entry
from ._mesh import abstract_mesh_scope, explicit_axes
from ._plan import Plan
from ._specs import Leaf

__all__ = ["input_spec", "output_spec", "output_specs", "run_constrained", "run_on_mesh"]

Run = Callable[[Sequence[Any]], tuple[Any, ...]]  # the levels: per-argument arrays in, per-output subtrees out
Placed = Callable[[int, int], "Sequence[Any] | None"]  # leaf i of output j: an inner xmap's spec of its element


def _spec(
    plan: Plan,
    dims: Sequence[tuple[int, str]],
    rank: int,
    free: Any,
    element: Sequence[Any] | None = None,
) -> PartitionSpec:
    """Each dim of ``dims`` over its name's mesh axes; the other dims ``element``'s entries (in order) or ``free``.

    ``element`` is the placement an inner xmap gave the per-element value (its names' dims); an entry whose
    mesh axes are already used here is dropped.
    """
    entries: list[Any] = [free] * rank
    for dim, name in dims:
        entries[dim] = partition_entry(plan.mesh_axes(name)) or free
    if element is not None:
        used = {a for e in entries for a in _mesh_axes(e)}
        rest = [d for d in range(rank) if d not in {dim for dim, _ in dims}]
        for dim, entry in zip(rest, element, strict=False):
            axes = _mesh_axes(entry)
            if axes and not axes & used:
                entries[dim] = entry
                used |= axes
    return PartitionSpec(*entries)


def _mesh_axes(entry: Any) -> set[str]:
    if entry is None or entry is PartitionSpec.UNCONSTRAINED:
        return set()
    return set(entry) if isinstance(entry, tuple) else {entry}


def input_spec(plan: Plan, leaf: Leaf, rank: int, *, free: Any = PartitionSpec.UNCONSTRAINED) -> PartitionSpec:
    """An argument's split: each named dim over its axis's mesh axes, the others ``free`` (the compiler's)."""
    return _spec(plan, leaf.dims, rank, free)


def output_spec(
    plan: Plan,
    axis_map: AxisMap,
    rank: int,
    *,
    free: Any = PartitionSpec.UNCONSTRAINED,
    element: Sequence[Any] | None = None,
) -> PartitionSpec:
    """An output leaf's split: each out_axes position over its axis's mesh axes; the others where the inner
    xmaps' names put them (``element``), else ``free``."""
    return _spec(plan, axis_map.dims, rank, free, element)


def _outputs(
    plan: Plan, outs: Sequence[Any], placed: Placed, place: Callable[[Any, PartitionSpec], Any]
) -> tuple[Any, ...]:
    """``place(leaf, spec)`` on every output leaf; ``placed(j, i)``: inner xmaps' placement of leaf i of output j."""
    results = []
    for j, (sub, axis_map) in enumerate(zip(outs, plan.config.out_spec.leaves, strict=False)):
        leaves, treedef = tree_flatten(sub)
        results.append(
            tree_unflatten(
                treedef,
                [place(o, output_spec(plan, axis_map, o.ndim, element=placed(j, i))) for i, o in enumerate(leaves)],
            )
        )
    return tuple(results)


def _nothing_placed(j: int, i: int) -> None:
    return None


def output_specs(plan: Plan, outs: Sequence[Any], placed: Placed) -> list[tuple[Any, PartitionSpec]]:
    """Every output leaf with its split (for an enclosing xmap to know where this one put its results)."""
    found: list[tuple[Any, PartitionSpec]] = []
    _outputs(plan, outs, placed, lambda o, spec: found.append((o, spec)))
    return found


def _placed(plan: Plan, spec: PartitionSpec) -> Any:
    """A bare spec under ``jax.set_mesh``; a ``NamedSharding`` on the legacy ``with mesh:`` mesh."""
    return NamedSharding(plan.mesh, spec) if isinstance(plan.mesh, Mesh) else spec


def run_constrained(plan: Plan, data: Sequence[Any], run: Run, placed: Placed = _nothing_placed) -> tuple[Any, ...]:
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
    return _outputs(plan, outs, placed, lambda o, spec: jax.lax.with_sharding_constraint(o, _placed(plan, spec)))


def run_on_mesh(plan: Plan, data: Sequence[Any], run: Run, placed: Placed = _nothing_placed) -> tuple[Any, ...]:
    """The outermost xmap on a mesh: Explicit axes made Auto around the body, results resharded back."""
    with abstract_mesh_scope(plan.mesh):
        current = jax.sharding.get_abstract_mesh()
        explicit = explicit_axes(current)
        if not explicit:
            return run_constrained(plan, data, run, placed)
        # Values without a mesh in their type (numpy inputs) are typed on the mesh first, so that
        # reverse mode hands their cotangents back on the Explicit mesh.
        typed = [
            _on_mesh(v, input_spec(plan, leaf, len(shape), free=None))
            for v, leaf, shape in zip(data, plan.leaves, plan.shapes, strict=False)
        ]
        auto = current.update_axis_types({a: AxisType.Auto for a in explicit})
        with jax.sharding.use_abstract_mesh(auto):
            outs = run_constrained(plan, [_on_mesh(v, PartitionSpec(), force=True) for v in typed], run, placed)
        return _outputs(plan, outs, placed, lambda o, spec: jax.sharding.reshard(o, _concrete(spec)))


def _concrete(spec: PartitionSpec) -> PartitionSpec:
    """``spec`` with the compiler's dims replicated (an Explicit type needs every dim decided)."""
    return PartitionSpec(*(None if e is PartitionSpec.UNCONSTRAINED else e for e in spec))


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
