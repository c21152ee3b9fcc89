"""Windowed operations by axis name: ``tnp.conv``, ``tnp.conv_transpose`` and the pools (``max_pool``, ``avg_pool``).

A convolution pairs each spatial axis of ``x`` with the kernel axis that carries its window size
(``spatial={'height': 'kh'}``), sums the ``contract`` axes both carry, keeps ``x``'s other axes as batch
axes and makes the kernel's other axes output axes. Strides, dilation and padding are given per spatial
name or once for all. A transposed convolution (``lax.conv_transpose``'s) has the same roles: its strides
dilate the input (fractional strides) and its ``'SAME'``/``'VALID'`` padding is the forward convolution's,
as JAX reads it. These functions check the names and sizes and compute the result's named shape (an
unknown size is ``None``); the runtime (``typed_xmap.numpy._windows``) and the mypy plugin call them.

Pure Python.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from ._errors import ErrorKind, NamedShapeError
from ._shapes import Size, is_size
from ._spec import format_mesh_axes
from ._structure import carried_axis, require_axis

__all__ = ["ConvPlan", "Padding", "PoolPlan", "conv_plan", "conv_transpose_plan", "pool_plan", "pooled_split_error"]

Shape = Mapping[str, Size]
Padding = str | tuple[tuple[int, int], ...]
"""``'VALID'``/``'SAME'`` for every spatial axis, or one ``(low, high)`` pair per spatial axis."""


@dataclass(frozen=True, slots=True)
class ConvPlan:
    """A checked convolution: which axes play which part, the per-axis numbers, the result's named shape."""

    spatial: tuple[tuple[str, str], ...]
    """(axis of ``x``, kernel axis carrying its window), in the order ``spatial`` lists them."""
    contract: tuple[str, ...]
    batch: tuple[str, ...]
    """``x``'s other named axes, in ``x``'s order."""
    features: tuple[str, ...]
    """The kernel's other named axes (the result's new axes), in the kernel's order."""
    strides: tuple[int, ...]
    dilation: tuple[int, ...]
    padding: Padding
    named_shape: dict[str, Size]
    input_dilation: tuple[int, ...] = ()
    """Per spatial axis, how far apart ``x``'s elements are spread (a transposed convolution's strides); ``()``:
    not spread."""


@dataclass(frozen=True, slots=True)
class PoolPlan:
    """A checked pool: the windowed axes with their window sizes and strides, the padding, the result."""

    window: tuple[tuple[str, int], ...]
    strides: tuple[int, ...]
    padding: Padding
    named_shape: dict[str, Size]


def _positive(value: object, *, operation: str, argument: str) -> int:
    if not is_size(value) or value == 0:
        raise NamedShapeError(
            f"{operation}: {argument} is {value!r}; it must be a positive int. Fix: pass e.g. 1 or 2",
            kind=ErrorKind.INVALID_ARGUMENT,
        )
    return value


def _per_axis(value: object, names: Sequence[str], default: int, *, operation: str, argument: str) -> tuple[int, ...]:
    """``strides=2`` (every spatial axis) or ``strides={'height': 2}`` (the others ``default``)."""
    if value is None:
        return (default,) * len(names)
    if not isinstance(value, Mapping):
        number = _positive(value, operation=operation, argument=argument)
        return (number,) * len(names)
    _known_keys(value, names, operation=operation, argument=argument)
    return tuple(_positive(value.get(n, default), operation=operation, argument=f"{argument}[{n!r}]") for n in names)


def _known_keys(value: Mapping[object, object], names: Sequence[str], *, operation: str, argument: str) -> None:
    for key in value:
        if key not in names:
            raise NamedShapeError(
                f"{operation}: {argument} names axis {key!r}, which is not a spatial axis; the spatial axes are "
                f"{tuple(names)}. Fix: key {argument} by a spatial axis, or give one value for all",
                kind=ErrorKind.AXIS_MISSING,
                axes=[str(key)],
            )


def _pair(value: object, *, operation: str, argument: str) -> tuple[int, int]:
    if is_size(value):
        return (value, value)
    if isinstance(value, Sequence) and len(value) == 2 and all(is_size(v) for v in value):
        return (int(value[0]), int(value[1]))
    raise NamedShapeError(
        f"{operation}: {argument} is {value!r}; padding is 'VALID', 'SAME', an int or a (low, high) pair of "
        f"non-negative ints. Fix: write padding='SAME' or padding={{'height': (1, 1)}}",
        kind=ErrorKind.INVALID_ARGUMENT,
    )


def _padding(value: object, names: Sequence[str], *, operation: str) -> Padding:
    if isinstance(value, str):
        if value.upper() not in ("VALID", "SAME"):
            _pair(value, operation=operation, argument="padding")  # raises: not a padding
        return value.upper()
    if isinstance(value, Mapping):
        _known_keys(value, names, operation=operation, argument="padding")
        return tuple(_pair(value.get(n, 0), operation=operation, argument=f"padding[{n!r}]") for n in names)
    pair = _pair(value, operation=operation, argument="padding")
    return (pair,) * len(names)


def _out_size(
    size: Size,
    window: Size,
    stride: int,
    dilation: int,
    pad: tuple[int, int] | str,
    *,
    axis: str,
    operation: str,
    spread: int = 1,
) -> Size:
    """The length of a windowed axis: ``lax.conv_general_dilated``'s and ``lax.reduce_window``'s rule (its
    elements ``spread`` apart: ``lhs_dilation``). A non-empty axis shorter than its window (padded) is an error;
    an empty one gives the windows its padding alone holds, none if it holds none (lax's rule)."""
    if size is None or window is None:
        return None
    if pad == "SAME":
        return -(-size // stride)
    low, high = (0, 0) if isinstance(pad, str) else pad
    span = (window - 1) * dilation + 1
    length = (size - 1) * spread + 1 if size else 0
    if length + low + high < span:
        if size == 0:  # an empty axis stays empty: no window fits, as lax computes it
            return 0
        padded = f" ({length + low + high} padded)" if low + high else ""
        spaced = f" (spread to {length} by stride {spread})" if spread > 1 else ""
        raise NamedShapeError(
            f"{operation}: axis {axis!r} has size {size}{spaced}{padded}, shorter than its window of {span}. Fix: "
            f"pad it (padding='SAME'), or use a smaller window or dilation",
            kind=ErrorKind.AXIS_SIZE,
        )
    return (length + low + high - span) // stride + 1


def _names(value: object, *, operation: str, argument: str) -> tuple[str, ...]:
    names = (value,) if isinstance(value, str) else value
    if not isinstance(names, (tuple, list)) or not all(isinstance(n, str) for n in names):
        raise NamedShapeError(
            f"{operation}: {argument} is an axis name or a tuple of names, got {value!r}. Fix: write "
            f"{argument}='channels' or {argument}=('channels',)",
            kind=ErrorKind.INVALID_ARGUMENT,
        )
    return tuple(names)


def _contract_sizes(x: Shape, kernel: Shape, contract: Sequence[str], groups: int, *, operation: str) -> None:
    """One size per contracted name; with ``groups``, ``x``'s first contracted axis is ``groups`` times the kernel's."""
    for i, name in enumerate(contract):
        carried_axis(x, name, operation=operation, operand="x")
        carried_axis(kernel, name, operation=operation, operand="kernel")
        mine, theirs = x[name], kernel[name]
        factor = groups if i == 0 else 1
        if mine is not None and theirs is not None and mine != theirs * factor:
            grouped = f" x {groups} groups (feature_group_count)" if factor > 1 else ""
            raise NamedShapeError(
                f"{operation}: contracted axis {name!r} has size {mine} in x but {theirs}{grouped} in kernel. "
                f"Fix: give {name!r} one size in both, or contract another axis",
                kind=ErrorKind.AXIS_SIZE,
            )


def _grouped_features(kernel: Shape, features: Sequence[str], groups: int, *, operation: str) -> None:
    """With ``feature_group_count``, the output features split evenly into the groups."""
    sizes = [kernel[f] for f in features]
    total = 1
    for size in sizes:
        if size is None:
            return
        total *= size
    if total % groups:
        raise NamedShapeError(
            f"{operation}: feature_group_count={groups} does not divide the kernel's output axes {tuple(features)} "
            f"(together {total}). Fix: make the output features a multiple of {groups}",
            kind=ErrorKind.AXIS_SIZE,
        )


def _roles(
    x: Shape,
    kernel: Shape,
    spatial: object,
    contract: object,
    *,
    strides: object,
    padding: object,
    dilation: object,
    feature_group_count: object,
    operation: str,
) -> ConvPlan:
    """Which axis of ``x`` and ``kernel`` plays which part, checked, with the per-axis numbers: a plan whose
    named shape has the result's batch and feature axes, not yet the windowed ones."""
    if not isinstance(spatial, Mapping) or not spatial:
        raise NamedShapeError(
            f"{operation}: spatial maps each spatial axis of x to the kernel axis carrying its window, got "
            f"{spatial!r}. Fix: write spatial={{'height': 'kh', 'width': 'kw'}}",
            kind=ErrorKind.INVALID_ARGUMENT,
        )
    pairs = tuple(
        (
            require_axis(x, a, operation=operation, operand="x"),
            require_axis(kernel, w, operation=operation, operand="kernel"),
        )
        for a, w in spatial.items()
    )
    names = [a for a, _ in pairs]
    contracted = _names(contract, operation=operation, argument="contract")
    _windows_apart(kernel, pairs, contracted, operation=operation)
    groups = _positive(feature_group_count, operation=operation, argument="feature_group_count")
    _contract_sizes(x, kernel, contracted, groups, operation=operation)
    windows = {w for _, w in pairs}
    batch = tuple(a for a in x if a not in names and a not in contracted)
    features = tuple(a for a in kernel if a not in windows and a not in contracted)
    for name in features:
        if name in x:
            raise NamedShapeError(
                f"{operation}: kernel axis {name!r} becomes an output axis, but x has an axis {name!r} too. Fix: "
                f"rename one of them (tx.rename), or list it in contract=",
                kind=ErrorKind.AXIS_MISSING,
                axes=[name],
            )
    _grouped_features(kernel, features, groups, operation=operation)
    stride = _per_axis(strides, names, 1, operation=operation, argument="strides")
    dilate = _per_axis(dilation, names, 1, operation=operation, argument="dilation")
    pad = _padding(padding, names, operation=operation)
    out = {a: x[a] for a in batch} | {f: kernel[f] for f in features}
    return ConvPlan(pairs, contracted, batch, features, stride, dilate, pad, out)


def _windows_apart(kernel: Shape, pairs: Sequence[tuple[str, str]], contract: Sequence[str], *, operation: str) -> None:
    """Each spatial axis has a kernel axis of its own, of at least one element, that is not contracted."""
    seen: dict[str, str] = {}
    for axis, window in pairs:
        other = seen.setdefault(window, axis)
        if other != axis or window in contract:
            role = f"of both {other!r} and {axis!r}" if other != axis else f"of {axis!r} and contracted too"
            raise NamedShapeError(
                f"{operation}: kernel axis {window!r} is the window {role}; each "
                f"spatial axis slides a kernel axis of its own. Fix: give the kernel one window axis per spatial "
                f"axis, e.g. spatial={{'height': 'kh', 'width': 'kw'}}",
                kind=ErrorKind.AXIS_MISSING,
                axes=[window],
            )
        if kernel[window] == 0:
            raise NamedShapeError(
                f"{operation}: kernel axis {window!r} (the window of {axis!r}) has size 0; a window holds at least "
                f"one element. Fix: give the kernel's window axes sizes of at least 1",
                kind=ErrorKind.AXIS_SIZE,
            )


def conv_plan(
    x: Shape,
    kernel: Shape,
    spatial: object,
    contract: object,
    *,
    strides: object = None,
    padding: object = "VALID",
    dilation: object = None,
    feature_group_count: object = 1,
    operation: str = "tnp.conv",
) -> ConvPlan:
    """Check a named convolution and compute its result's named shape."""
    r = _roles(
        x,
        kernel,
        spatial,
        contract,
        strides=strides,
        padding=padding,
        dilation=dilation,
        feature_group_count=feature_group_count,
        operation=operation,
    )
    windowed = [(a, kernel[w]) for a, w in r.spatial]
    return replace(
        r, named_shape=r.named_shape | _windowed(x, windowed, r.strides, r.dilation, r.padding, operation=operation)
    )


def conv_transpose_plan(
    x: Shape,
    kernel: Shape,
    spatial: object,
    contract: object,
    *,
    strides: object = None,
    padding: object = "VALID",
    dilation: object = None,
    operation: str = "tnp.conv_transpose",
) -> ConvPlan:
    """Check a named transposed convolution (``lax.conv_transpose``'s: ``strides`` spread ``x``, ``'SAME'`` makes
    each spatial axis ``stride`` times longer, ``(low, high)`` pairs pad the spread input) and compute its
    result's named shape. The plan is the forward convolution it runs: stride 1, ``input_dilation`` the
    strides, the padding as pairs (left as given while a window size is unknown)."""
    r = _roles(
        x,
        kernel,
        spatial,
        contract,
        strides=strides,
        padding=padding,
        dilation=dilation,
        feature_group_count=1,
        operation=operation,
    )
    windows = [kernel[w] for _, w in r.spatial]
    pads = [r.padding if isinstance(r.padding, str) else r.padding[i] for i in range(len(windows))]
    pairs = [
        _transposed_padding((k - 1) * d + 1, s, p) if k is not None else None
        for k, s, d, p in zip(windows, r.strides, r.dilation, pads, strict=True)
    ]
    known = tuple(p for p in pairs if p is not None)
    padding_pairs: Padding = known if len(known) == len(pairs) else r.padding
    out = dict(r.named_shape)
    for i, (axis, _) in enumerate(r.spatial):
        pair = pairs[i]
        out[axis] = (
            None
            if pair is None
            else _out_size(
                x[axis], windows[i], 1, r.dilation[i], pair, axis=axis, operation=operation, spread=r.strides[i]
            )
        )
    ones = (1,) * len(r.spatial)
    return replace(r, strides=ones, padding=padding_pairs, named_shape=out, input_dilation=r.strides)


def _transposed_padding(span: int, stride: int, padding: tuple[int, int] | str) -> tuple[int, int]:
    """The padding of the spread input that ``lax.conv_transpose`` uses for a window spanning ``span``: for
    ``'SAME'``/``'VALID'``, what makes it the forward convolution's transpose; pairs as given."""
    if not isinstance(padding, str):
        return padding
    if padding == "SAME":
        total = span + stride - 2
        low = span - 1 if stride > span - 1 else -(-total // 2)
    else:
        total = span + stride - 2 + max(span - stride, 0)
        low = span - 1
    return (low, total - low)


def _windowed(
    x: Shape,
    windows: Sequence[tuple[str, Size]],
    strides: Sequence[int],
    dilation: Sequence[int],
    pad: Padding,
    *,
    operation: str,
) -> dict[str, Size]:
    """Each windowed axis's output length."""
    return {
        axis: _out_size(
            x[axis],
            size,
            strides[i],
            dilation[i],
            pad if isinstance(pad, str) else pad[i],
            axis=axis,
            operation=operation,
        )
        for i, (axis, size) in enumerate(windows)
    }


def pool_plan(
    x: Shape, window: object, strides: object = None, padding: object = "VALID", *, operation: str
) -> PoolPlan:
    """Check a pool over named windows (``{'height': 2}``); ``strides=None`` strides by the window."""
    if not isinstance(window, Mapping) or not window:
        raise NamedShapeError(
            f"{operation}: window maps axis names to window sizes, got {window!r}. Fix: write "
            f"window={{'height': 2, 'width': 2}}",
            kind=ErrorKind.INVALID_ARGUMENT,
        )
    sizes = tuple(
        (
            require_axis(x, a, operation=operation, operand="x"),
            _positive(s, operation=operation, argument=f"window[{a!r}]"),
        )
        for a, s in window.items()
    )
    names = [a for a, _ in sizes]
    if strides is None:
        stride = tuple(s for _, s in sizes)
    else:
        stride = _per_axis(strides, names, 1, operation=operation, argument="strides")
    pad = _padding(padding, names, operation=operation)
    out = dict(x) | _windowed(x, sizes, stride, (1,) * len(sizes), pad, operation=operation)
    return PoolPlan(sizes, stride, pad, out)


def pooled_split_error(
    axis: str, size: int, pooled: int, mesh_axes: Sequence[str], parts: int, *, operation: str
) -> NamedShapeError | None:
    """A pool keeps a split window axis split (``window_placement``); on an Explicit mesh JAX then needs its
    pooled size to divide into the ``parts`` its ``mesh_axes`` cut it in (else it raises a bare
    ``ShardingTypeError``): the error for an axis whose pooled size does not, ``None`` where it does."""
    if not mesh_axes or pooled % parts == 0:
        return None
    where = f"mesh axis {mesh_axes[0]!r}" if len(mesh_axes) == 1 else f"mesh axes {format_mesh_axes(mesh_axes)}"
    return NamedShapeError(
        f"{operation}: axis {axis!r} (size {size}) is split over {where} in {parts} parts, and pools to size "
        f"{pooled}, which {parts} does not divide: on an Explicit mesh a pooled axis stays split, so its pooled "
        f"size must divide into the parts. Fix: choose a window, strides or padding whose pooled size of "
        f"{axis!r} is a multiple of {parts}, or make {axis!r} whole first (tx.constrain with a mapping "
        f"without {axis!r})",
        kind=ErrorKind.AXIS_SIZE,
        axes=[axis],
    )
