"""Multi-process runs (``jax.distributed``): process-local argument slices become global arrays.

As in the original xmap, each process passes its local slice of every argument: along a named axis
split over mesh axes that span processes, the slice this process's devices hold; ``axis_sizes`` and
error messages use global sizes. A ``jax.Array`` that is already global (not fully addressable) is
passed through, so it must be sharded as xmap would shard it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jax
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec
from jax.tree_util import tree_flatten, tree_unflatten

from .._algebra import ErrorKind, NamedShapeError, SerialLoop, partition_entry
from .._value._named_array import NamedArray, wrap
from ._specs import SpecTree, match_inputs

__all__ = ["globalize"]


def _is_named(obj: Any) -> bool:
    return isinstance(obj, NamedArray)


def globalize(
    in_spec: SpecTree | None, mesh: Any, resources: Mapping[str, tuple[Any, ...]], args: tuple[Any, ...]
) -> tuple[Any, ...]:
    if mesh is None or not hasattr(mesh, "devices"):
        raise NamedShapeError(
            "xmap in a multi-process run needs a device mesh spanning the processes. "
            "Fix: mesh = jax.make_mesh(...); call the xmapped function under `with jax.set_mesh(mesh):`",
            kind=ErrorKind.INVALID_ARGUMENT,
        )
    leaves = match_inputs(in_spec, args)
    flat, treedef = tree_flatten(args, is_leaf=_is_named)
    out = []
    for leaf, value in zip(leaves, flat, strict=False):
        data = value.data if isinstance(value, NamedArray) else value
        if isinstance(data, jax.Array) and not data.is_fully_addressable:
            out.append(value)  # already global
            continue
        if not hasattr(data, "shape"):
            out.append(value)  # Python scalars are replicated as they are
            continue
        entries: list[Any] = [None] * len(data.shape)
        for dim, name in leaf.dims:
            assigned = tuple(r for r in resources.get(name, ()) if not isinstance(r, SerialLoop))
            entries[dim] = partition_entry(assigned)
        sharding = NamedSharding(mesh, PartitionSpec(*entries))
        array = jax.make_array_from_process_local_data(sharding, np.asarray(data))
        out.append(wrap(array, value.axes, value.mapped) if isinstance(value, NamedArray) else array)
    return tuple(tree_unflatten(treedef, out))
