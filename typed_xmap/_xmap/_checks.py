"""The checks of an xmap call made while planning it: names defined, nesting, resources in scope on the mesh.

Resource conflicts on the traced values are ``_conflicts``'s.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .._algebra import ErrorKind, NamedShapeError, Resource, SerialLoop, unknown_resource_keys
from .._value._frames import Frame
from ._mesh import same_mesh

__all__ = ["check_defined", "check_in_scope", "check_nesting", "different_mesh_error"]

Resources = Mapping[str, tuple[Resource, ...]]


def check_defined(names: Sequence[str], defined: Sequence[str], what: str) -> None:
    """Every axis ``what`` (out_axes, axis_resources) names must be defined by in_axes or axis_sizes."""
    missing = unknown_resource_keys(names, defined)
    if missing:
        raise NamedShapeError(
            f"{what} names axis {', '.join(repr(n) for n in missing)}, which neither in_axes (or the NamedArray "
            f"arguments) nor axis_sizes defines. Fix: map it in in_axes, or give its size in axis_sizes",
            kind=ErrorKind.AXIS_MISSING,
        )


def check_nesting(name: str, names: Sequence[str], mesh: Any, outer: Sequence[Frame]) -> None:
    """An inner xmap defines no axis of an enclosing one, and sees the same mesh."""
    for frame in outer:
        shadowed = [n for n in names if n in frame.names]
        if shadowed:
            raise NamedShapeError(
                f"xmap of {name} reuses axis {shadowed[0]!r}, which an enclosing xmap already "
                f"maps; an inner xmap may use outer axes in collectives but not define them again. Fix: "
                f"rename the inner axis (e.g. {shadowed[0]!r} -> {shadowed[0] + '_inner'!r})",
                kind=ErrorKind.AXIS_MISSING,
            )
    if outer and not same_mesh(mesh, outer[-1].mesh):
        raise different_mesh_error(name)


def different_mesh_error(name: str) -> NamedShapeError:
    return NamedShapeError(
        f"xmap of {name} runs inside another xmap but sees a different mesh; changing the "
        f"physical mesh is not allowed inside xmap. Fix: set the mesh once, around the outer call",
        kind=ErrorKind.INVALID_ARGUMENT,
    )


def check_in_scope(resources: Resources, mesh_shape: Mapping[str, int] | None) -> None:
    """Every mesh-axis resource must be an axis of the current mesh."""
    for axis, assigned in resources.items():
        for resource in assigned:
            if isinstance(resource, SerialLoop):
                continue
            if mesh_shape is None:
                raise NamedShapeError(
                    f"axis_resources[{axis!r}] = {resource!r}, but no device mesh is set, so mesh axis {resource!r} "
                    f"is not in scope. Fix: mesh = jax.make_mesh((4, 2), ('x', 'y')); call the xmapped function "
                    f"under `with jax.set_mesh(mesh):`, or use serial_loop({resource!r}, n)",
                    kind=ErrorKind.INVALID_ARGUMENT,
                )
            if resource not in mesh_shape:
                raise NamedShapeError(
                    f"axis_resources[{axis!r}] = {resource!r}, but the current mesh has axes "
                    f"{', '.join(repr(a) for a in mesh_shape)} and no serial_loop({resource!r}, n) is active. "
                    f"Fix: use one of the mesh axes, or set a mesh that has {resource!r}",
                    kind=ErrorKind.INVALID_ARGUMENT,
                )
