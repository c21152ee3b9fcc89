"""Windowed operations by axis name for ``typed_xmap.numpy``: ``conv``, ``conv_transpose``, ``max_pool``,
``avg_pool``.

The rules (which axis plays which part, the result's named shape, the errors) are
``_algebra/_windows.py``'s. A convolution is one ``lax.conv_general_dilated``: its dimension numbers point at
the named dims where they are (no transpose when each of batch, contracted and output axes is one dim; else
each group is merged into one dim). Named axes held by ``vmap`` levels (inside ``xmap``) that the window or
the contraction needs are gathered into the data first (``_mapped_axes.gather``); the other mapped axes stay
levels (``vmap`` batches the convolution). A transposed convolution is the same call with the input spread by
its strides (``lhs_dilation``), as ``lax.conv_transpose`` makes it. A pool is one ``lax.reduce_window``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.sharding import NamedSharding, PartitionSpec

from ..._algebra import (
    ConvPlan,
    ErrorKind,
    NamedShapeError,
    conv_contraction,
    conv_plan,
    conv_transpose_plan,
    pool_plan,
    pooled_split_error,
)
from ..._value._layout import index_mapped
from ..._value._named_array import NamedArray, wrap
from ..._value._placement import known_placement
from .._memory import allocatable
from .._sharding import dim_resources, on_own_mesh_by_dim, split_count
from ._contract import explicit_mesh
from ._mapped_axes import as_mapped, gather

__all__ = ["avg_pool", "conv", "conv_transpose", "max_pool"]


def _operand(value: Any, names: Sequence[str], *, operation: str) -> NamedArray:
    """``value`` with the mapped axes among ``names`` in its data (a plain value: per element inside xmap)."""
    if not isinstance(value, NamedArray):
        value = as_mapped(value, names, operation=operation)
    return gather(value, [n for n, _ in value.mapped if n in names], operation=operation)


def _merged(data: Any, groups: Sequence[Sequence[int]]) -> tuple[Any, tuple[int, ...]]:
    """``data`` with each group of dims as one dim, and the dim of each group: as it is when every group is one
    dim; else transposed to the groups' order and reshaped (an empty group becomes a dim of size 1)."""
    if all(len(g) == 1 for g in groups):
        return data, tuple(g[0] for g in groups)
    order = [d for g in groups for d in g]
    shape = [math.prod(data.shape[d] for d in g) for g in groups]
    return lax.reshape(lax.transpose(data, order), shape), tuple(range(len(groups)))


def _out_sharding(lhs: Any, rhs: Any, lhs_spec: Sequence[int], rhs_spec: Sequence[int]) -> Any:
    """On a mesh with Explicit axes: the batch dim keeps ``x``'s mesh axes, the feature dim the kernel's (each
    mesh axis once); the windowed dims are whole. ``None`` elsewhere (JAX places the result)."""
    if not explicit_mesh([lhs, rhs]):
        return None
    batch = _spec_entry(lhs, lhs_spec[0])
    features = _spec_entry(rhs, rhs_spec[0])
    if batch is not None and features is not None and set(_names(batch)) & set(_names(features)):
        features = None
    mesh = jax.typeof(lhs).sharding.mesh
    return NamedSharding(mesh, PartitionSpec(batch, *([None] * (len(lhs_spec) - 2)), features))  # NHWC


def _check_placed(lhs: NamedArray, rhs: NamedArray, plan: ConvPlan, operation: str) -> None:
    """The checker's rule for a convolution on an Explicit mesh, where JAX needs its result's sharding: the
    contraction's (``conv_contraction``: the spatial axes made whole) over the operands' placements, two of the
    result's axes on one mesh axis an ``AxisResourceConflict``, not one of them left whole in silence
    (``_out_sharding``)."""
    placements = [known_placement(lhs) or {}, known_placement(rhs) or {}]
    contracted = [n for n in dict.fromkeys((*lhs.axes, *rhs.axes)) if n not in plan.named_shape]
    windows = [a for a, _ in plan.spatial]
    conv_contraction(list(plan.named_shape), contracted, placements, windows, operation=operation)


def _spatial_apart(lhs: NamedArray, rhs: NamedArray, plan: ConvPlan) -> NamedArray:
    """``lhs`` with its spatial dims made whole where they share a mesh axis with the kernel's output features
    (the conv's result has them whole anyway, the move ``conv_placement`` lists): left split there, JAX 0.10.2's
    conv computes wrong values (each output summed once per device along that mesh axis)."""
    assigned, kernel = dim_resources(lhs.data), dim_resources(rhs.data)
    if assigned is None or kernel is None:
        return lhs
    features = {m for f in plan.features if f in rhs.axes for m in kernel[rhs.ndim + rhs.axes.index(f)]}
    dims = {lhs.ndim + lhs.axes.index(a) for a, _ in plan.spatial if a in lhs.axes}
    if not any(set(assigned[d]) & features for d in dims):
        return lhs
    whole = [() if d in dims and set(held) & features else held for d, held in enumerate(assigned)]
    return wrap(jax.reshard(lhs.data, on_own_mesh_by_dim(lhs.data, whole)), lhs.axes, lhs.mapped)


def _split_first(data: Any, dims: Sequence[int]) -> list[int]:
    """``dims`` (a group merged into one dim) with the dims split over mesh axes first, in their order: JAX
    merges split dims into one only when each is major to every whole one (Explicit meshes refuse the rest)."""
    return sorted(dims, key=lambda d: _spec_entry(data, d) is None)


def _split_sharding(out: Any, parts: tuple[list[Any], list[Any]], spatial_dims: int) -> Any:
    """On an Explicit mesh, where the batch and feature dims of ``out`` (NHWC, each group one dim) go once
    split back into their axes: each axis its operand's mesh axes when the merged dim holds exactly those, in
    order; else the merged dim's all on the group's first axis (JAX refuses to guess). ``None`` elsewhere."""
    if not explicit_mesh([out]):
        return None
    spec = [*getattr(jax.typeof(out).sharding, "spec", ()), *([None] * out.ndim)][: out.ndim]
    groups = []
    for merged, entries in zip((spec[0], spec[-1]), parts, strict=True):
        held = tuple(m for e in entries if e is not None for m in _names(e))
        if held == (() if merged is None else _names(merged)):
            groups.append(list(entries))
        else:
            groups.append([merged, *([None] * (len(entries) - 1))])
    entries = [*groups[0], *([None] * spatial_dims), *groups[1]]
    return NamedSharding(jax.typeof(out).sharding.mesh, PartitionSpec(*entries))


def _spec_entry(array: Any, dim: int) -> Any:
    spec = tuple(getattr(jax.typeof(array).sharding, "spec", ()))
    return spec[dim] if dim < len(spec) else None


def _names(entry: Any) -> tuple[Any, ...]:
    return tuple(entry) if isinstance(entry, tuple) else (entry,)


def _listed(value: object) -> list[Any]:
    """``contract``'s names before it is checked (what to gather from ``vmap`` levels; the checks and their
    messages are ``conv_plan``'s)."""
    if isinstance(value, str):
        return [value]
    return list(value) if isinstance(value, (tuple, list)) else []


def _items(value: object) -> list[tuple[Any, Any]]:
    """``spatial``'s pairs before it is checked (as ``_listed``)."""
    return list(value.items()) if isinstance(value, Mapping) else []


def conv(
    x: Any,
    kernel: Any,
    spatial: Mapping[str, str],
    contract: str | Sequence[str] = (),
    *,
    strides: int | Mapping[str, int] | None = None,
    padding: Any = "VALID",
    dilation: int | Mapping[str, int] | None = None,
    feature_group_count: int = 1,
    precision: Any = None,
    preferred_element_type: Any = None,
) -> Any:
    """A convolution by name: ``conv(x, kernel, spatial={'height': 'kh'}, contract='channels')``.

    Each spatial axis of ``x`` slides the kernel axis it maps to (the kernel axis's size is the window);
    ``contract`` axes (in both) are summed; ``x``'s other axes are batch axes and the kernel's other axes are
    the result's new axes. ``strides``/``dilation`` (ints) and ``padding`` (``'VALID'``, ``'SAME'``, an int
    or a ``(low, high)`` pair) are one value for every spatial axis or a dict by spatial name. The result has
    the batch axes, the kernel's new axes and the spatial axes (with their output lengths).

    Args:
        x: a NamedArray with the spatial axes, the axes to contract, and batch axes.
        kernel: a NamedArray with a window axis per spatial axis, the axes to contract, and output features.
        spatial: image axis -> the kernel axis that slides along it.
        contract: the feature axes summed over (in both ``x`` and ``kernel``).
        strides: one stride for every spatial axis, or one per axis.
        padding: ``"VALID"``, ``"SAME"`` or pairs per spatial axis.
        dilation: the kernel's dilation per spatial axis.
        feature_group_count: groups of the contracted features (depthwise: their count).
        precision: ``lax``'s precision.
        preferred_element_type: the accumulation dtype.

    Returns:
        ``x``'s batch and spatial axes (the spatial ones at their output lengths) and ``kernel``'s output axes.

    Raises:
        NamedShapeError: an axis a side lacks, contracted axes of different sizes, or a window larger than
            its (padded) axis.

    Examples:
        >>> images = tx.named(jnp.ones((2, 8, 8, 3)), ["batch", "height", "width", "channels"])
        >>> kernel = tx.named(jnp.ones((3, 3, 3, 4)), ["kh", "kw", "channels", "out"])
        >>> y = tnp.conv(images, kernel, {"height": "kh", "width": "kw"}, "channels", padding="SAME")
        >>> y.named_shape == {"batch": 2, "height": 8, "width": 8, "out": 4}
        True
    """
    operation = "tnp.conv"
    lhs, rhs = _operands(x, kernel, spatial, contract, operation=operation)
    plan = conv_plan(
        lhs.named_shape,
        rhs.named_shape,
        spatial,
        contract,
        strides=strides,
        padding=padding,
        dilation=dilation,
        feature_group_count=feature_group_count,
        operation=operation,
    )
    options = {"precision": precision, "preferred_element_type": preferred_element_type}
    return _convolved(x, kernel, lhs, rhs, plan, feature_group_count=feature_group_count, **options)


def conv_transpose(
    x: Any,
    kernel: Any,
    spatial: Mapping[str, str],
    contract: str | Sequence[str] = (),
    *,
    strides: int | Mapping[str, int] | None = None,
    padding: Any = "VALID",
    dilation: int | Mapping[str, int] | None = None,
    precision: Any = None,
    preferred_element_type: Any = None,
) -> Any:
    """A transposed convolution by name, ``lax.conv_transpose``'s: ``conv_transpose(x, kernel,
    spatial={'height': 'kh'}, contract='channels', strides=2, padding='SAME')`` makes ``height`` twice as long.

    The axes play ``conv``'s parts. ``strides`` spread ``x``'s elements apart (fractional strides);
    ``'SAME'``/``'VALID'`` are the padding of the forward convolution this one transposes (``'SAME'``: each
    spatial axis ``stride`` times longer), a ``(low, high)`` pair pads the spread input, as in JAX. The kernel's
    windows are not flipped (``lax.conv_transpose``'s default, ``transpose_kernel=False``).

    Args:
        x: a NamedArray with the spatial axes, the axes to contract, and batch axes.
        kernel: a NamedArray with a window axis per spatial axis, the axes to contract, and output features.
        spatial: image axis -> the kernel axis that slides along it.
        contract: the feature axes summed over (in both ``x`` and ``kernel``).
        strides: one stride for every spatial axis, or one per axis.
        padding: ``"VALID"``, ``"SAME"`` or pairs per spatial axis.
        dilation: the kernel's dilation per spatial axis.
        precision: ``lax``'s precision.
        preferred_element_type: the accumulation dtype.

    Returns:
        ``x``'s batch and spatial axes (the spatial ones at their output lengths) and ``kernel``'s output axes.

    Raises:
        NamedShapeError: an axis a side lacks, contracted axes of different sizes, or a window larger than
            its (padded) axis.

    Examples:
        >>> images = tx.named(jnp.ones((2, 8, 8, 3)), ["batch", "height", "width", "channels"])
        >>> kernel = tx.named(jnp.ones((3, 3, 3, 4)), ["kh", "kw", "channels", "out"])
        >>> y = tnp.conv_transpose(images, kernel, {"height": "kh", "width": "kw"}, "channels", padding="SAME")
        >>> y.named_shape == {"batch": 2, "height": 8, "width": 8, "out": 4}
        True
    """
    operation = "tnp.conv_transpose"
    lhs, rhs = _operands(x, kernel, spatial, contract, operation=operation)
    plan = conv_transpose_plan(
        lhs.named_shape,
        rhs.named_shape,
        spatial,
        contract,
        strides=strides,
        padding=padding,
        dilation=dilation,
        operation=operation,
    )
    options = {"precision": precision, "preferred_element_type": preferred_element_type}
    return _convolved(x, kernel, lhs, rhs, plan, feature_group_count=1, operation=operation, **options)


def _operands(x: Any, kernel: Any, spatial: Any, contract: Any, *, operation: str) -> tuple[NamedArray, NamedArray]:
    """``x`` and ``kernel`` with the mapped axes the windows and the contraction need in their data."""
    contracted, pairs = _listed(contract), _items(spatial)
    lhs = _operand(x, [a for a, _ in pairs] + list(contracted), operation=operation)
    rhs = _operand(kernel, [w for _, w in pairs] + list(contracted), operation=operation)
    return lhs, rhs


def _convolved(
    x: Any,
    kernel: Any,
    lhs: NamedArray,
    rhs: NamedArray,
    plan: ConvPlan,
    *,
    feature_group_count: int,
    precision: Any,
    preferred_element_type: Any,
    operation: str = "tnp.conv",
) -> Any:
    """The checked convolution ``plan`` of ``lhs`` by ``rhs``: one ``lax.conv_general_dilated`` on their data."""
    if rhs.ndim:
        raise NamedShapeError(
            f"{operation}: kernel has {rhs.ndim} positional dims; a kernel's dims are all named (windows, "
            f"contracted and output axes). Fix: tx.named(kernel, ...) names every dim",
            kind=ErrorKind.POSITIONAL,
        )
    if explicit_mesh([lhs.data, rhs.data]):
        _check_placed(lhs, rhs, plan, operation)
        lhs = _spatial_apart(lhs, rhs, plan)
    common = jnp.result_type(lhs.data, rhs.data)  # promoted as tnp.einsum and the elementwise functions do
    allocatable(plan.named_shape, common, operation=operation, positional=lhs.shape)
    lhs, rhs = (v if v.dtype == common else wrap(v.data.astype(common), v.axes, v.mapped) for v in (lhs, rhs))
    x_dim = {a: lhs.ndim + i for i, a in enumerate(lhs.axes)}
    batch_dims = [*range(lhs.ndim), *(x_dim[a] for a in plan.batch if a in x_dim)]
    feature_dims = [rhs.axes.index(f) for f in plan.features if f in rhs.axes]
    batch, features = _split_first(lhs.data, batch_dims), _split_first(rhs.data, feature_dims)
    lhs_data, lhs_spec = _merged(
        lhs.data, [batch, [x_dim[c] for c in plan.contract], *([x_dim[a]] for a, _ in plan.spatial)]
    )
    rhs_data, rhs_spec = _merged(
        rhs.data,
        [features, [rhs.axes.index(c) for c in plan.contract], *([rhs.axes.index(w)] for _, w in plan.spatial)],
    )
    # laid out batch, spatial, features (NHWC): the new axes minor, as a patch embedding's later layer norms
    # and contractions want them (features second made every later activation embed-major: 30 reduce-windows)
    spatial_dims = len(lhs_spec) - 2
    out_spec = (0, spatial_dims + 1, *range(1, spatial_dims + 1))
    out = lax.conv_general_dilated(
        lhs_data,
        rhs_data,
        window_strides=plan.strides,
        padding=plan.padding,
        lhs_dilation=plan.input_dilation or None,
        rhs_dilation=plan.dilation,
        dimension_numbers=lax.ConvDimensionNumbers(lhs_spec, rhs_spec, out_spec),
        feature_group_count=feature_group_count,
        precision=precision,
        preferred_element_type=preferred_element_type,
        out_sharding=_out_sharding(lhs_data, rhs_data, lhs_spec, rhs_spec),
    )
    shape = [lhs.data.shape[d] for d in batch] + list(out.shape[1:-1]) + [rhs.data.shape[d] for d in features]
    if tuple(shape) != out.shape:
        parts = ([_spec_entry(lhs.data, d) for d in batch], [_spec_entry(rhs.data, d) for d in features])
        out = lax.reshape(out, shape, out_sharding=_split_sharding(out, parts, spatial_dims))
    windowed = range(len(batch), len(batch) + spatial_dims)
    perm = [
        *(batch.index(d) for d in batch_dims),
        *windowed,
        *(len(shape) - len(features) + features.index(d) for d in feature_dims),
    ]
    if perm != sorted(perm):
        out = lax.transpose(out, perm)
    axes = (*(a for a in plan.batch if a in x_dim), *(a for a, _ in plan.spatial), *(rhs.axes[d] for d in feature_dims))
    mapped = tuple((n, s) for n, s in (*lhs.mapped, *rhs.mapped) if n in plan.named_shape)
    result = wrap(out, axes, mapped)
    if isinstance(x, NamedArray) or isinstance(kernel, NamedArray):
        return result
    return _per_element(result, lhs.named_shape, [a for a, _ in plan.spatial], operation=operation)


def _per_element(result: NamedArray, before: Mapping[str, int], windowed: Sequence[str], *, operation: str) -> Any:
    """Plain operands (per element inside ``xmap``): each windowed axis goes back to its ``vmap`` level, which
    needs its length unchanged."""
    for axis in windowed:
        if result.named_shape[axis] != before[axis]:
            raise NamedShapeError(
                f"{operation}: axis {axis!r} is an enclosing xmap level of size {before[axis]}, but the window "
                f"makes it {result.named_shape[axis]}; a level keeps its size. Fix: use padding='SAME' and stride "
                f"1 here, or pass NamedArrays (tx.named) to change the length",
                kind=ErrorKind.AXIS_SIZE,
            )
    return index_mapped(result, set(windowed)).data


def _pool(x: Any, window: Any, strides: Any, padding: Any, *, operation: str, average: bool) -> Any:
    names = list(window) if isinstance(window, Mapping) else []
    value = _operand(x, names, operation=operation)
    plan = pool_plan(value.named_shape, window, strides, padding, operation=operation)
    allocatable(plan.named_shape, value.dtype, operation=operation, positional=value.shape)
    rank = value.data.ndim
    dims = [1] * rank
    steps = [1] * rank
    pads: list[tuple[int, int]] = [(0, 0)] * rank
    for i, (axis, size) in enumerate(plan.window):
        d = value.ndim + value.axes.index(axis)
        dims[d], steps[d] = size, plan.strides[i]
        if not isinstance(plan.padding, str):
            pads[d] = plan.padding[i]
    padding_arg = plan.padding if isinstance(plan.padding, str) else pads
    data = value.data
    _check_split_windows(value, plan.named_shape, [axis for axis, _ in plan.window], operation=operation)
    if average:
        total = _accumulator(data.dtype)
        out = lax.reduce_window(data.astype(total), np.zeros((), total), lax.add, dims, steps, padding_arg)
        out = (out / math.prod(dims)).astype(_averaged(data.dtype))
    else:
        out = lax.reduce_window(data, np.array(_lowest(data.dtype), data.dtype), lax.max, dims, steps, padding_arg)
    result = wrap(out, value.axes, value.mapped)
    if isinstance(x, NamedArray):
        return result
    return _per_element(result, value.named_shape, names, operation=operation)


def _check_split_windows(
    value: NamedArray, pooled: Mapping[str, Any], windowed: Sequence[str], *, operation: str
) -> None:
    """On an Explicit mesh, each split window axis's pooled size must divide into its parts
    (``pooled_split_error``)."""
    entries = dim_resources(value.data)
    if entries is None:
        return
    for axis in windowed:
        mesh_axes = entries[value.ndim + value.axes.index(axis)]
        if mesh_axes:
            parts = split_count(value.data, mesh_axes)
            size = value.named_shape[axis]
            error = pooled_split_error(axis, size, pooled[axis], mesh_axes, parts, operation=operation)
            if error is not None:
                raise error


def _averaged(dtype: Any) -> Any:
    """The dtype of an average, ``jnp.mean``'s: an inexact dtype stays, ints and bools become the default float."""
    return dtype if jnp.issubdtype(dtype, jnp.inexact) else jnp.result_type(float)


def _accumulator(dtype: Any) -> Any:
    """Where an average's window sums: float32 at least (a sum of int8s or float16s would overflow or round in
    its own dtype, as ``jnp.mean`` never lets it)."""
    return jnp.promote_types(_averaged(dtype), jnp.float32)


def _lowest(dtype: Any) -> Any:
    """The identity of ``max`` in ``dtype``: what padding holds in a max pool."""
    if jnp.issubdtype(dtype, jnp.bool_):
        return False
    return -jnp.inf if jnp.issubdtype(dtype, jnp.inexact) else np.iinfo(dtype).min


def max_pool(
    x: Any, window: Mapping[str, int], strides: int | Mapping[str, int] | None = None, padding: Any = "VALID"
) -> Any:
    """The maximum over windows along named axes: ``max_pool(x, {'height': 2, 'width': 2})``.

    ``strides=None`` strides by the window (non-overlapping windows); padding as ``conv``'s.

    Args:
        x: a NamedArray carrying the axes of ``window``.
        window: axis name -> window size.
        strides: a stride for every window axis, or one per axis (``None``: the window's sizes).
        padding: ``"VALID"``, ``"SAME"`` or ``lax.reduce_window``'s pairs per window axis.

    Returns:
        ``x`` with each window axis shortened to its output length.

    Raises:
        NamedShapeError: a window axis ``x`` lacks, or a window or stride that is not a positive int.

    Examples:
        >>> images = tx.named(jnp.ones((2, 8, 8, 3)), ["batch", "height", "width", "channels"])
        >>> pooled = tnp.max_pool(images, {"height": 2, "width": 2})
        >>> pooled.named_shape == {"batch": 2, "height": 4, "width": 4, "channels": 3}
        True
    """
    return _pool(x, window, strides, padding, operation="tnp.max_pool", average=False)


def avg_pool(
    x: Any, window: Mapping[str, int], strides: int | Mapping[str, int] | None = None, padding: Any = "VALID"
) -> Any:
    """The mean over windows along named axes (padding counts as zeros, divided by the full window size).

    As ``jnp.mean``: int and bool inputs give the default float dtype, and every window is summed in float32 at
    least (an int8 or float16 window never overflows or rounds in its own dtype), then cast to the result's
    dtype (float16 and bfloat16 stay theirs).

    Args:
        x: a NamedArray carrying the axes of ``window``.
        window: axis name -> window size.
        strides: a stride for every window axis, or one per axis (``None``: the window's sizes).
        padding: ``"VALID"``, ``"SAME"`` or ``lax.reduce_window``'s pairs per window axis.

    Returns:
        ``x`` with each window axis shortened to its output length.

    Raises:
        NamedShapeError: a window axis ``x`` lacks, or a window or stride that is not a positive int.

    Examples:
        >>> images = tx.named(jnp.ones((2, 8, 8, 3)), ["batch", "height", "width", "channels"])
        >>> pooled = tnp.avg_pool(images, {"height": 2, "width": 2})
        >>> pooled.named_shape == {"batch": 2, "height": 4, "width": 4, "channels": 3}
        True
    """
    return _pool(x, window, strides, padding, operation="tnp.avg_pool", average=True)
