"""Axis resources: which mesh axes (or serial loops) a named axis is split over, and the conflict rule.

``axis_resources={'batch': 'x', 'out': ('y', 'z')}`` assigns named axes to mesh axes. Two named axes
may share a mesh axis only if they never meet in one value's named shape: a value cannot be split
over one mesh axis along two of its dims. This module states that rule once, in pure Python, for
``xmap``, ``tx.shard`` and the mypy plugin.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import count
from typing import Any

from ._errors import AxisResourceConflict, ErrorKind, NamedShapeError

__all__ = [
    "Conflict",
    "Resource",
    "SerialLoop",
    "check_conflicts",
    "check_divisible",
    "conflict_error",
    "different_meshes",
    "loop_conflict_error",
    "mesh_axis_names",
    "normalize_axis_resources",
    "resource_conflicts",
    "resource_count",
    "resource_name",
    "unknown_resource_keys",
]

_loop_ids = count()


@dataclass(frozen=True, eq=False)
class SerialLoop:
    """An anonymous loop resource: ``axis_resources={'i': SerialLoop(4)}`` runs 4 chunks in sequence."""

    length: int
    name: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        length: object = self.length  # annotated int, but given anything at run time
        if not isinstance(length, int) or isinstance(length, bool) or length < 1:
            raise NamedShapeError(
                f"SerialLoop length must be a positive int, got {self.length!r}. Fix: give the number of loop "
                f"steps, e.g. SerialLoop(4)",
                kind=ErrorKind.INVALID_ARGUMENT,
            )
        if not self.name:
            object.__setattr__(self, "name", f"<loop{next(_loop_ids)}>")

    def __repr__(self) -> str:
        return f"SerialLoop({self.length})"


Resource = str | SerialLoop


def resource_name(resource: Resource) -> str:
    return resource.name if isinstance(resource, SerialLoop) else str(resource)


def mesh_axis_names(resources: Mapping[str, Sequence[object]]) -> dict[str, tuple[str, ...]]:
    """A normalised mapping (``normalize_axis_resources``'s) as a placement: each axis -> the names of the mesh
    axes it is split over."""
    return {axis: tuple(str(r) for r in assigned) for axis, assigned in resources.items()}


def normalize_axis_resources(axis_resources: Mapping[str, object] | None) -> dict[str, tuple[Resource, ...]]:
    """``{'a': 'x', 'b': ('x', 'y'), 'c': None}`` -> ``{'a': ('x',), 'b': ('x', 'y')}``, validated; ``None`` leaves
    an axis not split, as in a ``PartitionSpec``."""
    if axis_resources is None:
        return {}
    if not isinstance(axis_resources, Mapping):
        raise NamedShapeError(
            f"axis_resources must be a dict from axis names to mesh axes, got {type(axis_resources).__name__}. "
            f"Fix: write axis_resources={{'batch': 'x'}}",
            kind=ErrorKind.INVALID_ARGUMENT,
        )
    result: dict[str, tuple[Resource, ...]] = {}
    for axis, value in axis_resources.items():
        if value is None:
            continue
        given: tuple[object, ...] = tuple(value) if isinstance(value, (tuple, list)) else (value,)
        resources = tuple(r for r in given if isinstance(r, (str, SerialLoop)))
        if not given:
            raise NamedShapeError(
                f"axis_resources[{axis!r}] = {value!r} assigns no resource. Fix: leave {axis!r} out of "
                f"axis_resources (it is then not split), or name a mesh axis: axis_resources={{{axis!r}: 'x'}}",
                kind=ErrorKind.INVALID_ARGUMENT,
            )
        for resource in given:
            if not isinstance(resource, (str, SerialLoop)):
                raise NamedShapeError(
                    f"axis_resources[{axis!r}] = {value!r}: a resource is a mesh axis name, a SerialLoop "
                    f"or a tuple of them. Fix: write axis_resources={{{axis!r}: 'x'}}",
                    kind=ErrorKind.INVALID_ARGUMENT,
                )
        names = [resource_name(r) for r in resources]
        if len(set(names)) != len(names):
            raise NamedShapeError(
                f"axis_resources[{axis!r}] = {value!r}: a single axis must be assigned a tuple of distinct "
                f"resources. Fix: list each mesh axis once",
                kind=ErrorKind.INVALID_ARGUMENT,
            )
        result[axis] = resources
    return result


@dataclass(frozen=True, slots=True)
class Conflict:
    """Axes ``first`` and ``second`` both use mesh axis ``resource``."""

    first: str
    second: str
    resource: str
    loop: SerialLoop | None = None  # set when the shared resource is a serial loop, not a mesh axis


def resource_conflicts(names: Iterable[str], axis_resources: Mapping[str, tuple[Resource, ...]]) -> list[Conflict]:
    """Every pair of ``names`` that share a resource, in the order the names come."""
    owner: dict[str, str] = {}
    found: list[Conflict] = []
    for name in names:
        for resource in axis_resources.get(name, ()):
            key = resource_name(resource)
            if key in owner and owner[key] != name:
                loop = resource if isinstance(resource, SerialLoop) else None
                found.append(Conflict(owner[key], name, key, loop))
            else:
                owner.setdefault(key, name)
    return found


def conflict_error(conflict: Conflict, where: str) -> AxisResourceConflict:
    """The error for one conflict; ``where`` says which value (``"input x of f"``)."""
    if conflict.loop is not None:
        return loop_conflict_error(conflict)
    return AxisResourceConflict(
        f"axes {conflict.first!r} and {conflict.second!r} are both assigned to mesh axis "
        f"{conflict.resource!r}, but they meet in {where}: one value cannot be split over one mesh axis "
        f"along two of its axes. Fix: assign {conflict.second!r} to another mesh axis, or keep the two "
        f"axes in separate values (reduce one of them first)"
    )


def loop_conflict_error(conflict: Conflict) -> AxisResourceConflict:
    """Two axes of one xmap assigned the same serial loop: one loop runs the chunks of one axis."""
    loop = conflict.loop
    label = (
        f"the serial loop {conflict.resource!r}"
        if loop is not None and not loop.name.startswith("<")
        else (f"the same serial loop {loop!r}")
    )
    return AxisResourceConflict(
        f"axes {conflict.first!r} and {conflict.second!r} are both assigned {label}, but a loop steps through "
        f"the chunks of one axis: two axes on one loop resource conflict. Fix: give {conflict.second!r} its own "
        f"loop or a mesh axis, or nest two xmaps"
    )


def check_conflicts(names: Sequence[str], axis_resources: Mapping[str, tuple[Any, ...]], where: str) -> None:
    """Raise ``AxisResourceConflict`` for the first pair of ``names`` sharing a resource."""
    conflicts = resource_conflicts(names, axis_resources)
    if conflicts:
        raise conflict_error(conflicts[0], where)


def resource_count(assigned: Iterable[Any], mesh_shape: Mapping[str, int]) -> int:
    count = 1
    for resource in assigned:
        count *= resource.length if isinstance(resource, SerialLoop) else mesh_shape[resource]
    return count


def check_divisible(
    sizes: Mapping[str, int], resources: Mapping[str, tuple[Any, ...]], mesh_shape: Mapping[str, int]
) -> None:
    """Each axis size must divide by the devices (and loop steps) it is split over."""
    for axis, assigned in resources.items():
        if axis not in sizes:
            continue
        on_mesh = [r for r in assigned if not isinstance(r, SerialLoop)]
        if sizes[axis] == 0 and on_mesh:
            raise NamedShapeError(
                f"axis {axis!r} has size 0 and is assigned to mesh axis {', '.join(repr(r) for r in on_mesh)}: "
                f"JAX cannot split an empty axis over devices (the result could not be read back). Fix: drop "
                f"{axis!r} from axis_resources for empty inputs, or skip the call when {axis!r} is empty",
                kind=ErrorKind.INVALID_ARGUMENT,
            )
        count = resource_count(assigned, mesh_shape)
        if sizes[axis] % count:
            what = " x ".join(
                f"{r!r} ({r.length} steps)" if isinstance(r, SerialLoop) else f"mesh axis {r!r} ({mesh_shape[r]})"
                for r in assigned
            )
            raise NamedShapeError(
                f"axis {axis!r} has (global) size {sizes[axis]}, which is not divisible by the {count} parts "
                f"of its resources {what}. Fix: pad {axis!r} to a multiple of {count}, or assign it fewer resources",
                kind=ErrorKind.AXIS_SIZE,
            )


def unknown_resource_keys(keys: Iterable[str], names: Iterable[str]) -> list[str]:
    """The axes a mapping names that none of ``names`` is.

    ``xmap``'s ``axis_resources`` declares the placement of its own axes (those of ``in_axes``,
    ``out_axes`` and ``axis_sizes``), so a key that is none of them is a misspelling, as in the original
    xmap. (``tx.shard``/``tx.constrain`` take one model-wide mapping instead: each value ignores the keys
    it lacks.)
    """
    present = set(names)
    return [key for key in keys if key not in present]


def different_meshes(operation: str, meshes: Sequence[tuple[str, str]]) -> NamedShapeError | None:
    """The error for values on different meshes meeting in one operation (an Explicit and an Auto mesh of the
    same devices, say); ``meshes`` are (which value, its mesh in words). ``None`` when they are one mesh."""
    if len({mesh for _, mesh in meshes}) < 2:
        return None
    where = ", ".join(f"{label} on {mesh}" for label, mesh in meshes)
    return NamedShapeError(
        f"{operation}: the operands live on different meshes: {where}. Fix: place them on one mesh (tx.shard each "
        f"under one jax.set_mesh), or move one over with jax.device_put",
        kind=ErrorKind.INVALID_ARGUMENT,
    )
