"""Broadcasting by name: the layout plan of operands (each one's transpose and reshape), cached per layout,
carried out (``align``), and fused with the operation into one cached ``jax.jit`` (``apply_elementwise``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.core import Tracer

from .._algebra import NamedShapeError, broadcast_positional, different_meshes, union_named_shapes
from ._flat import CACHE_SIZE, SORTED_AUX, canonical_order
from ._named_array import NamedArray, laid_out, wrap

__all__ = ["align", "apply_elementwise", "fused", "index_mapped"]


Step = tuple[tuple[int, ...] | None, tuple[int, ...]] | None
"""How one operand is laid out: ``None`` (as it is), or (a transpose's permutation or ``None``, a reshape)."""
Plan = tuple[tuple[Step, ...], tuple[str, ...]]
"""A layout plan: each operand's step, and the result's axes in data."""

_PLANS: dict[Any, Plan] = {}
_FUSED: dict[Any, Callable[..., Any]] = {}
_SCALARS = (int, float, complex, bool)
_ARRAYS = (jax.Array, np.ndarray, np.generic)


def _layout_key(values: Sequence[Any]) -> tuple[Any, ...] | None:
    """What a layout plan depends on: axes and shapes. ``None``: no NamedArray among ``values``, or one with
    mapped axes, or a value planned per call (lists and other array-likes)."""
    key: list[Any] = []
    named = False
    for v in values:
        if type(v) is NamedArray:
            if v.mapped:
                return None
            key.append((v.axes, v.data.shape))
            named = True
        elif isinstance(v, _SCALARS):
            key.append(None)
        elif isinstance(v, _ARRAYS):
            key.append(v.shape)
        else:
            return None
    return tuple(key) if named else None


def _plan(values: Sequence[Any], operation: str, operands: Sequence[str] | None, name_order: bool = False) -> Plan:
    """The layout plan of ``values`` (none of them with mapped axes), checking that they broadcast; with
    ``name_order``, the result's named dims sorted by name (a concrete result's layout, ``wrap``)."""
    named = [v for v in values if isinstance(v, NamedArray)]
    labels = None
    if operands is not None:
        labels = [label for v, label in zip(values, operands, strict=False) if isinstance(v, NamedArray)]
    # The result's axes: the order of the operand with the most named dims (it needs no transpose), then
    # the other axes in first-seen order.
    union = union_named_shapes([v.named_shape for v in named], operation=operation, operands=labels)
    widest = max(named, key=lambda v: len(v.axes)).axes if named else ()
    result_axes = (*widest, *(a for a in union if a not in widest))
    if name_order:
        result_axes = tuple(sorted(result_axes))
    positional = [v.shape if isinstance(v, NamedArray) else np.shape(v) for v in values]
    broadcast_positional(positional, operation=operation, operands=operands)
    rank = max((len(p) for p in positional), default=0)
    steps: list[Step] = []
    for value, pos in zip(values, positional, strict=False):
        if not isinstance(value, NamedArray):
            steps.append((None, tuple(pos) + (1,) * len(result_axes)) if result_axes and len(pos) else None)
            continue
        if value.axes == result_axes and len(pos) == rank:
            steps.append(None)
            continue
        own = [a for a in result_axes if a in value.axes]
        p = len(pos)
        perm = tuple(range(p)) + tuple(p + value.axes.index(a) for a in own)
        sizes = value.named_shape
        target = (1,) * (rank - p) + tuple(pos) + tuple(sizes.get(a, 1) for a in result_axes)
        steps.append((None if perm == tuple(range(len(perm))) else perm, target))
    return tuple(steps), result_axes


def _cached_plan(key: Any, values: Sequence[Any], operation: str, operands: Sequence[str] | None) -> Plan:
    plan = _PLANS.get(key)
    if plan is None:
        plan = _plan(values, operation, operands)  # raises if they do not broadcast: nothing is cached
        if len(_PLANS) > CACHE_SIZE:
            _PLANS.clear()
        _PLANS[key] = plan
    return plan


def _planned(key: Any, values: Sequence[Any], operation: str, operands: Sequence[str] | None) -> tuple[Any, Plan]:
    """The plan for ``key``'s layouts, and the key it is cached under. A concrete result comes out in name order
    (the layout ``wrap`` gives a concrete value), laid out so by the same operation, not by a second transpose."""
    plan = _cached_plan(key, values, operation, operands)
    axes = plan[1]
    if len(axes) < 2 or SORTED_AUX.get(axes) is not None or canonical_order(axes) is None:
        return key, plan
    if any(isinstance(v.data if type(v) is NamedArray else v, Tracer) for v in values):
        return key, plan  # traced: the layout XLA gets best (the widest operand's)
    key = (key, "name order")
    plan = _PLANS.get(key) or _plan(values, operation, operands, name_order=True)
    _PLANS[key] = plan
    return key, plan


def _lay_out(steps: tuple[Step, ...], data: Sequence[Any]) -> list[Any]:
    """Carry out a plan's steps on the operands' data."""
    out = []
    for step, d in zip(steps, data, strict=True):
        if step is None:
            out.append(d)
            continue
        perm, target = step
        moved = d if perm is None else jax.lax.transpose(d, perm)
        out.append(jax.lax.reshape(moved, target) if isinstance(moved, jax.Array) else jnp.reshape(moved, target))
    return out


def fused(key: Any, build: Callable[[], Callable[..., Any]]) -> Callable[..., Any]:
    """One cached ``jax.jit`` per ``key`` (an operation and the layouts it was planned for), built on a miss."""
    fn = _FUSED.get(key)
    if fn is None:
        if len(_FUSED) > CACHE_SIZE:
            _FUSED.clear()
        fn = _FUSED[key] = jax.jit(build(), inline=True)
    return fn


def align(
    values: Sequence[Any], *, operation: str, operands: Sequence[str] | None = None
) -> tuple[list[Any], tuple[str, ...], tuple[tuple[str, int], ...]]:
    """Lay operands out for NumPy broadcasting by name.

    Every NamedArray becomes ``[1]*pad + positional + [size or 1 per result axis]``; other values
    (arrays, scalars) are positional-only and broadcast as usual. Returns the laid-out data, the
    result's axes in data (the union, first-seen order) and its mapped axes. An axis that one operand
    holds in its data and another has mapped is indexed at this map element (``lax.axis_index``).
    """
    key = _layout_key(values)
    if key is not None:  # no mapped axes: a plan cached per layout
        _, (steps, axes) = _planned(key, values, operation, operands)
        data = [v.data if isinstance(v, NamedArray) else v for v in values]
        return _lay_out(steps, data), axes, ()
    named = [v for v in values if isinstance(v, NamedArray)]
    labels = None
    if operands is not None:
        labels = [label for v, label in zip(values, operands, strict=False) if isinstance(v, NamedArray)]
    union = union_named_shapes([v.named_shape for v in named], operation=operation, operands=labels)
    mapped_names = {n for v in named for n, _ in v.mapped}
    result_mapped = tuple((n, s) for n, s in union.items() if n in mapped_names and s is not None)  # sizes known
    values = [index_mapped(v, mapped_names) if isinstance(v, NamedArray) else v for v in values]
    unmapped = [laid_out(v.data, v.axes) if isinstance(v, NamedArray) else v for v in values]
    steps, axes = _plan(unmapped, operation, operands)
    return _lay_out(steps, [v.data if isinstance(v, NamedArray) else v for v in values]), axes, result_mapped


def index_mapped(value: NamedArray, mapped_names: set[str]) -> NamedArray:
    """Turn dims of ``value`` that are mapped elsewhere into this map element's slice."""
    to_index = [a for a in value.axes if a in mapped_names]
    if not to_index:
        return value
    data, axes, mapped = value.data, list(value.axes), list(value.mapped)
    sizes = value.named_shape
    for name in to_index:
        dim = value.ndim + axes.index(name)
        data = jnp.take(data, jax.lax.axis_index(name), axis=dim)
        axes.remove(name)
        mapped.append((name, sizes[name]))
    return wrap(data, axes, tuple(mapped))


def apply_elementwise(
    fn: Callable[..., Any],
    values: Sequence[Any],
    *,
    operation: str,
    operands: Sequence[str] | None = None,
    fuse: bool = True,
) -> Any:
    """Apply a NumPy-broadcasting function to values that broadcast by name.

    With a stable ``fn`` (``fuse``: the same object each call), the layout and ``fn`` run as one cached
    ``jax.jit`` per (``fn``, layouts): eagerly one dispatch; under a trace one cached trace, inlined (the
    reshape that broadcasts an operand is traced once, as inside ``jnp``'s own jitted ufuncs).
    """
    try:
        key = _layout_key(values)
        if key is None:
            if not any(isinstance(v, NamedArray) for v in values):
                return fn(*values)
            arrays, axes, mapped = align(values, operation=operation, operands=operands)
            return wrap(fn(*arrays), axes, mapped)
        key, (steps, axes) = _planned(key, values, operation, operands)
        data = [v.data if isinstance(v, NamedArray) else v for v in values]
        if not any(steps):  # laid out already: the operation itself
            return wrap(fn(*data), axes)
        if fuse:
            jitted = _FUSED.get((fn, key))
            if jitted is None:
                jitted = fused((fn, key), lambda: lambda *args: fn(*_lay_out(steps, args)))
            return wrap(jitted(*data), axes)
        return wrap(fn(*_lay_out(steps, data)), axes)
    except ValueError as error:  # values on different meshes: JAX's error names neither operand nor axis
        apart = _meshes_apart(values, operation, operands)
        if apart is None:
            raise
        raise apart from error


def _meshes_apart(values: Sequence[Any], operation: str, operands: Sequence[str] | None) -> NamedShapeError | None:
    """The error for operands on different meshes (or on another mesh than ``jax.set_mesh``'s), or ``None``."""
    labels = operands or [f"operand {i}" for i in range(len(values))]
    meshes = []
    for label, value in zip(labels, values, strict=False):
        data = value.data if isinstance(value, NamedArray) else value
        mesh = getattr(getattr(jax.typeof(data), "sharding", None), "mesh", None) if hasattr(data, "shape") else None
        if mesh is not None and not mesh.empty:
            meshes.append((label, _mesh_words(mesh)))
    context = jax.sharding.get_abstract_mesh()
    if meshes and not context.empty:
        meshes.append(("jax.set_mesh", _mesh_words(context)))
    return different_meshes(operation, meshes)


def _mesh_words(mesh: Any) -> str:
    """``mesh(x=4 Explicit, y=2 Explicit)``."""
    kinds = getattr(mesh, "axis_types", None) or ("",) * len(mesh.axis_names)
    parts = [
        f"{n}={s} {getattr(k, 'name', '')}".rstrip()
        for n, s, k in zip(mesh.axis_names, mesh.axis_sizes, kinds, strict=False)
    ]
    return "mesh(" + ", ".join(parts) + ")"
