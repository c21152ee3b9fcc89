"""Where a value's dims live: the mesh axes each dim is split over, read from its sharding where that is known.

The runtime's reading of placement (the types' is ``_algebra/_placement``): ``tx.resources_of`` and the
operations that keep a placement (``_ops/``) read it here, and ``@tx.typed`` checks an annotation's
``"batch@data"`` against it (``_checking/_annotations``).
"""

from __future__ import annotations

from typing import Any

import jax
from jax.core import Tracer
from jax.sharding import AxisType, NamedSharding

from ._named_array import NamedArray

__all__ = ["by_dim", "dim_resources", "known_placement"]


def by_dim(spec: Any, ndim: int) -> tuple[tuple[str, ...], ...]:
    """A ``PartitionSpec`` (or ``None``) as the mesh axes of each of ``ndim`` dims."""
    entries = tuple(spec or ()) + (None,) * (ndim - len(spec or ()))
    return tuple(() if e is None else (e,) if isinstance(e, str) else tuple(e) for e in entries)


def dim_resources(data: Any) -> tuple[tuple[str, ...], ...] | None:
    """The mesh axes each dim of ``data`` is split over, when its mesh has Explicit axes (a tracer's too: its
    type carries them); ``None`` elsewhere (Auto axes, no mesh), where the compiler places results itself."""
    sharding = getattr(jax.typeof(data), "sharding", None)
    mesh = getattr(sharding, "mesh", None)
    if sharding is None or mesh is None or mesh.empty or AxisType.Explicit not in tuple(mesh.axis_types):
        return None
    return by_dim(sharding.spec, data.ndim)


def known_placement(x: NamedArray) -> dict[str, tuple[str, ...]] | None:
    """The mesh axes each named axis of ``x`` is split over, where that is known: a concrete value with a
    ``NamedSharding``, a traced one on Explicit mesh axes; ``None`` elsewhere (one device's array, Auto axes
    inside ``jit``, the per-example view inside ``tx.vmap``/``xmap``)."""
    data = x.data
    if x.mapped:
        return None
    if isinstance(data, Tracer):
        assigned = dim_resources(data)
    elif isinstance(sharding := getattr(data, "sharding", None), NamedSharding):
        assigned = by_dim(sharding.spec, data.ndim)
    else:
        return None
    if assigned is None:
        return None
    return {name: a for name, a in zip(x.axes, assigned[x.ndim :], strict=True) if a}
