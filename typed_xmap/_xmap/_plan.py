"""The plan of one xmap call: everything decided from the arguments' structure and shapes, before tracing.

``make_plan`` matches the arguments against ``in_axes``, infers every axis's size, resolves resources on the
mesh and checks them; the frozen ``Plan`` it returns is then read (never changed) by the body, the loops,
the placement and the checks. ``jit`` caches the whole trace per argument signature, so a plan is made once
per signature.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.tree_util import tree_flatten

from .._algebra import Resource, SerialLoop, partition_entry
from .._value._frames import Frame, active_frames
from .._value._named_array import NamedArray
from ._checks import check_defined, check_in_scope, check_nesting
from ._config import Config
from ._loops import loop_axis
from ._specs import Leaf, infer_sizes, match_inputs

__all__ = ["Plan", "element_avals", "make_plan", "unwrap_arguments"]


@dataclass(frozen=True)
class Plan:
    """One xmap call, decided: axes (one vmap level each, outermost first), sizes, resources, positions."""

    config: Config
    mesh: Any  # the mesh traced under, or None
    mesh_shape: Mapping[str, int] | None
    resources: Mapping[str, tuple[Resource, ...]]  # this xmap's, serial_loop names resolved
    all_resources: Mapping[str, tuple[Resource, ...]]  # with the enclosing xmaps'
    outer: tuple[Frame, ...]  # the enclosing xmaps being traced, outermost first
    leaves: tuple[Leaf, ...]  # one per flattened argument value
    treedef: Any  # of the argument tuple, NamedArrays as leaves
    shapes: tuple[tuple[int, ...], ...]
    names: tuple[str, ...]
    sizes: Mapping[str, int]
    loop_axis: str | None
    in_positions: tuple[tuple[int | None, ...], ...]  # per level: where its axis sits in each argument
    out_positions: tuple[tuple[int | None, ...], ...]  # per level: where its axis goes in each output leaf

    @property
    def scope(self) -> list[str]:
        """Every axis name in scope in the body: the enclosing xmaps', then this one's."""
        return [n for f in self.outer for n in f.names] + list(self.names)

    def axis_env(self) -> dict[str, int]:
        """The size of every axis in scope in the body (the loop axis, which the body cannot name, left out)."""
        sizes = {n: s for f in self.outer for n, s in f.sizes.items()}
        sizes.update(self.sizes)
        if self.loop_axis is not None:
            sizes.pop(self.loop_axis)
        return sizes

    def mesh_axes(self, name: str) -> tuple[str, ...]:
        """The mesh axes axis ``name`` is split over (none without a mesh)."""
        if self.mesh is None:
            return ()
        return tuple(r for r in self.resources.get(name, ()) if not isinstance(r, SerialLoop))

    def spmd_axis_name(self, name: str) -> Any:
        """``vmap``'s ``spmd_axis_name`` (and a PartitionSpec entry) for axis ``name``."""
        return partition_entry(self.mesh_axes(name))

    def mesh_part(self, name: str) -> int:
        """Into how many device parts axis ``name`` is split."""
        part = 1
        for axis in self.mesh_axes(name):
            part *= (self.mesh_shape or {})[axis]
        return part


def element_avals(plan: Plan, data: Sequence[Any]) -> list[Any]:
    """The per-element shape and dtype of each argument value (its named dims removed)."""
    avals = []
    for leaf, value, shape in zip(plan.leaves, data, plan.shapes, strict=False):
        named_dims = {d for d, _ in leaf.dims}
        element_shape = tuple(s for d, s in enumerate(shape) if d not in named_dims)
        avals.append(jax.ShapeDtypeStruct(element_shape, jnp.result_type(value)))
    return avals


def _is_named(obj: Any) -> bool:
    return isinstance(obj, NamedArray)


def _shape(value: Any) -> tuple[int, ...]:
    shape = getattr(value, "shape", None)
    return tuple(shape) if shape is not None else tuple(np.shape(value))


def unwrap_arguments(args: tuple[Any, ...]) -> tuple[list[Any], Any]:
    """The flattened argument values as arrays (a NamedArray's data), and the tree they came in."""
    flat, treedef = tree_flatten(args, is_leaf=_is_named)
    return [v.data if isinstance(v, NamedArray) else v for v in flat], treedef


def _defined_names(config: Config, leaves: Sequence[Leaf]) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    if config.in_spec is not None:
        seen.update(dict.fromkeys(config.in_spec.names))
    for leaf in leaves:  # NamedArray arguments define their own axes
        seen.update(dict.fromkeys(leaf.names))
    seen.update(dict.fromkeys(name for name, _ in config.axis_sizes))
    names = tuple(seen)
    check_defined(config.out_spec.names, names, "out_axes")
    check_defined([axis for axis, _ in config.resources], names, "axis_resources")
    return names


def _position(names: Sequence[str], dims: Sequence[tuple[int, str]], k: int) -> int | None:
    """Where level ``k``'s axis sits once the levels outside it (``< k``) have taken their dims."""
    order = {n: i for i, n in enumerate(names)}
    where = {n: d for d, n in dims}
    if names[k] not in where:
        return None
    d = where[names[k]]
    return d - sum(1 for n2, d2 in where.items() if order[n2] < k and d2 < d)


def make_plan(config: Config, mesh: Any, resources: Mapping[str, tuple[Resource, ...]], args: tuple[Any, ...]) -> Plan:
    """Match ``args`` to the specs, infer sizes, place resources on ``mesh``; raise on the first fault."""
    leaves = tuple(match_inputs(config.in_spec, args))
    data, treedef = unwrap_arguments(args)
    shapes = tuple(_shape(d) for d in data)
    names = _defined_names(config, leaves)
    outer = tuple(active_frames())
    check_nesting(config.name, names, mesh, outer)
    sizes = infer_sizes(leaves, shapes, config.sizes, names)
    mesh_shape = dict(mesh.shape) if mesh is not None else None
    check_in_scope(resources, mesh_shape)
    all_resources = {n: r for f in outer for n, r in f.resources.items()}
    all_resources.update(resources)
    out_dims = [m.dims for m in config.out_spec.leaves]
    return Plan(
        config,
        mesh,
        mesh_shape,
        dict(resources),
        all_resources,
        outer,
        leaves,
        treedef,
        shapes,
        names,
        sizes,
        loop_axis(resources),
        tuple(tuple(_position(names, leaf.dims, k) for leaf in leaves) for k in range(len(names))),
        tuple(tuple(_position(names, dims, k) for dims in out_dims) for k in range(len(names))),
    )
