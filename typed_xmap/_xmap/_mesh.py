"""The device mesh ``xmap`` places named axes on: which one is current, and its axis types.

``xmap`` reads the mesh while tracing, so one ``jax.jit`` serves every mesh: ``jit``'s own cache key
holds the mesh contexts (``jax.set_mesh``'s concrete and abstract mesh, and the legacy ``with mesh:``),
so a call under another mesh retraces, and a cached call costs no lookup here.

``jax.set_mesh(mesh)`` sets the abstract mesh that ``jit`` traces under. The older ``with mesh:`` sets
only the concrete one (jax 0.10.2); xmap then traces under an all-Auto view of it, which needs no
concrete mesh in the type system. Meshes from ``jax.make_mesh`` have Explicit axes by default; the body
runs with those axes made Auto (see ``_placement``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import jax
from jax.sharding import AxisType, Mesh

from .._value._compat import legacy_mesh

__all__ = [
    "abstract_mesh_scope",
    "concrete_mesh",
    "explicit_axes",
    "mesh_platform",
    "same_mesh",
    "trace_mesh",
]


def trace_mesh() -> Any:
    """While tracing: the mesh xmap places axes on, or ``None`` when no mesh is set.

    The abstract mesh of ``jax.set_mesh``; for the legacy ``with mesh:``, an all-Auto concrete copy of
    that mesh (sharding constraints then name it, since no abstract mesh gives ``jit`` the devices).
    """
    mesh = jax.sharding.get_abstract_mesh()
    if not mesh.empty:
        return mesh
    legacy = legacy_mesh()  # `with mesh:` sets only this (deprecated) context
    if legacy is None:
        return None
    return Mesh(legacy.devices, legacy.axis_names, axis_types=(AxisType.Auto,) * len(legacy.axis_names))


def concrete_mesh() -> Any:
    """Outside ``jit``: the concrete mesh (``jax.set_mesh`` or ``with mesh:``), or ``None``."""
    mesh = jax.sharding.get_mesh()
    if not mesh.empty:
        return mesh
    return legacy_mesh()


def explicit_axes(mesh: Any) -> tuple[str, ...]:
    """The mesh axes of Explicit type (``jax.make_mesh``'s default)."""
    return tuple(
        name for name, kind in zip(mesh.axis_names, mesh.axis_types, strict=False) if kind == AxisType.Explicit
    )


@contextlib.contextmanager
def abstract_mesh_scope(mesh: Any) -> Iterator[None]:
    """While tracing: make ``mesh`` the abstract mesh unless the caller already set one."""
    if jax.sharding.get_abstract_mesh().empty:
        with jax.sharding.use_abstract_mesh(getattr(mesh, "abstract_mesh", mesh)):
            yield
    else:
        yield


def mesh_platform(mesh: Any) -> str | None:
    device = getattr(getattr(mesh, "abstract_mesh", mesh), "abstract_device", None)
    return getattr(device, "platform", None)


def same_mesh(a: Any, b: Any) -> bool:
    """Same axes and sizes (a concrete mesh and its abstract view, or its Auto copy, count as one)."""
    if a is None or b is None:
        return a is b
    return tuple(a.shape.items()) == tuple(b.shape.items())
