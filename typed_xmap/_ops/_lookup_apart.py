"""A lookup's index arrays kept off the mesh axes of the rows they read (``emb[{"vocab": tokens}]``).

A lookup from a table whose looked-up axis is split over Explicit mesh axes, by an index array split over some
of the same mesh axes (a table's rows over ``(data, model)``, the tokens' batch over ``data``), is run with
the index array whole over those shared mesh axes (an all-gather of the indices: they are small), each device
looking up the rows of its block (zeros elsewhere) and the blocks summed (an all-reduce over the rows' mesh
axes); the result is then split again as the index array was (a local slice). Left to itself, XLA may gather
the table instead (what it does on Auto mesh axes for a small table), which a large table cannot afford, and
its choice would depend on the sizes. An index array that shares a named axis with the table (a pointwise
gather) is not changed here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import jax

from .._value._named_array import NamedArray, wrap
from ._sharding import dim_resources, on_own_mesh_by_dim

__all__ = ["indices_apart"]


def indices_apart(x: NamedArray, key: Any) -> tuple[Any, Callable[[NamedArray], NamedArray]]:
    """``key`` with each lookup's index array made whole over the mesh axes it shares with the axis it reads in
    ``x``, and how to place the result back (its index axes split as the index arrays were)."""
    rows = dim_resources(x.data)
    if rows is None or not isinstance(key, Mapping):
        return key, _same
    placed: dict[str, tuple[str, ...]] = {}
    changed = dict(key)
    for name, value in key.items():
        if not isinstance(name, str) or name not in x.axes or not isinstance(value, NamedArray) or not value.axes:
            continue
        own = dim_resources(value.data)
        shared = set(rows[x.ndim + x.axes.index(name)])
        if own is None or not shared or set(value.axes) & set(x.axes) or not shared & {a for e in own for a in e}:
            continue
        apart = tuple(tuple(a for a in entry if a not in shared) for entry in own)
        changed[name] = wrap(jax.reshard(value.data, on_own_mesh_by_dim(value.data, apart)), value.axes, value.mapped)
        placed.update({n: own[value.ndim + i] for i, n in enumerate(value.axes) if own[value.ndim + i]})
    if not placed:
        return key, _same

    def back(result: NamedArray) -> NamedArray:
        """Each index axis placed as its index array was, where the result's dim holds less (nothing, or what
        is left of the entry once the rows' mesh axes went) and no other dim holds those mesh axes."""
        assigned = list(dim_resources(result.data) or ((),) * result.data.ndim)
        for i, name in enumerate(result.axes):
            entry, dim = placed.get(name, ()), result.ndim + i
            others = {a for d, held in enumerate(assigned) if d != dim for a in held}
            if entry and assigned[dim] != entry and not others & set(entry):
                assigned[dim] = entry
        return wrap(jax.reshard(result.data, on_own_mesh_by_dim(result.data, assigned)), result.axes, result.mapped)

    return changed, back


def _same(result: NamedArray) -> NamedArray:
    return result
