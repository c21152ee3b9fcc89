"""Reductions by axis name for ``typed_xmap.numpy``: ``sum mean max min var std prod logsumexp all any``,
``argmax argmin``, and ``softmax``/``log_softmax`` built from them.

``axis`` is a name, an int (a positional dim) or a tuple mixing both; ``None`` reduces the positional dims
only, so named axes survive (the original xmap's rule). ``keepdims`` keeps positional dims only: a reduced
named axis is gone. A named axis held in the data is a dim like any other; a mapped one (an enclosing
``vmap`` level, as inside ``xmap``) is gathered into the data first (``_mapped_axes.gather``), so every
reduction is one positional ``jnp`` reduction and keeps ``jnp``'s dtypes, gradients and numerics.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import jax.scipy.special

from ..._algebra import (
    positional_dims,
    reduce_named_shape,
    reduction_operation,
    single_axis,
    split_axis,
)
from ..._value._layout import apply_elementwise, fused
from ..._value._named_array import NamedArray, is_eager, wrap
from ..._value._printing import shape_repr
from ._mapped_axes import as_mapped, gather

__all__ = [
    "all",
    "any",
    "argmax",
    "argmin",
    "log_softmax",
    "logsumexp",
    "max",
    "mean",
    "min",
    "prod",
    "softmax",
    "std",
    "sum",
    "var",
]

AxisArg = str | int | Sequence[str | int] | None


def _operation(fname: str, axis: AxisArg) -> str:
    return reduction_operation(fname, axis)


_PLANS: dict[Any, tuple[tuple[int, ...], tuple[int, ...], tuple[str, ...]]] = {}
_CACHE_SIZE = 4096


def _reduce(fn: Callable[..., Any], fname: str, x: Any, axis: AxisArg, keepdims: bool, kwargs: dict[str, Any]) -> Any:
    """Reduce ``x`` with the positional reduction ``fn(data, axis=dims, keepdims=False, **kwargs)``."""
    if isinstance(x, NamedArray) and not x.mapped and not kwargs:
        key, (dims, positional, axes) = _cached_plan(fn, fname, x, axis, keepdims)
        expand = tuple(sorted(positional)) if keepdims and positional else ()
        if key is not None and is_eager(x.data):  # one cached jit: the reduction and its keepdims together
            return wrap(fused(("reduce", key), lambda: functools.partial(_run, fn, dims, expand))(x.data), axes)
        return wrap(_run(fn, dims, expand, x.data), axes)
    return _reduce_in_general(fn, fname, x, axis, keepdims, kwargs)


def _cached_plan(
    fn: Callable[..., Any], fname: str, x: NamedArray, axis: AxisArg, keepdims: bool
) -> tuple[Any, tuple[tuple[int, ...], tuple[int, ...], tuple[str, ...]]]:
    """``_plan`` cached by (``fn``, ``axis``, ``keepdims``, layout); the key is ``None`` for an unhashable axis."""
    key: Any = (fn, axis, keepdims, x.axes, x.data.shape)
    try:
        plan = _PLANS.get(key)
    except TypeError:  # an unhashable axis (a list): planned per call
        key, plan = None, None
    if plan is None:
        plan = _plan(fname, x, axis)
        if key is not None:
            if len(_PLANS) > _CACHE_SIZE:
                _PLANS.clear()
            _PLANS[key] = plan
    return key, plan


def _run(fn: Callable[..., Any], dims: tuple[int, ...], expand: tuple[int, ...], data: Any, **kwargs: Any) -> Any:
    """The positional reduction over ``dims``; ``expand``: positional dims put back (``keepdims``)."""
    data = fn(data, axis=dims, keepdims=False, **kwargs)
    return jnp.expand_dims(data, expand) if expand else data


def _plan(fname: str, x: NamedArray, axis: AxisArg) -> tuple[tuple[int, ...], tuple[int, ...], tuple[str, ...]]:
    """For a NamedArray without mapped axes: the data dims to reduce, the positional ones, the result's axes."""
    operation = _operation(fname, axis)
    names, ints = split_axis(axis, operation=operation)
    _check_names(x, names, operation)
    positional = tuple(positional_dims(ints, x.shape, operation=operation))
    named_dims = tuple(x.ndim + x.axes.index(n) for n in names)
    return positional + named_dims, positional, tuple(a for a in x.axes if a not in names)


def _check_names(x: NamedArray, names: Sequence[str], operation: str) -> None:
    """Every name is an axis of ``x`` (the message, with ``x``'s repr, built only when one is not)."""
    named = x.named_shape
    if not named.keys() >= set(names):
        reduce_named_shape(named, names, operation=operation, operand=f"x = {shape_repr(x)}")


def _reduce_in_general(
    fn: Callable[..., Any], fname: str, x: Any, axis: AxisArg, keepdims: bool, kwargs: dict[str, Any]
) -> Any:
    """``_reduce`` for plain values (per element, inside ``xmap``) and NamedArrays with mapped axes."""
    operation = _operation(fname, axis)
    names, ints = split_axis(axis, operation=operation)
    plain = not isinstance(x, NamedArray)
    if plain:
        value = as_mapped(x, names, operation=operation)
    else:
        _check_names(x, names, operation)
        value = x
    positional = list(positional_dims(ints, value.shape, operation=operation))
    mapped = {n for n, _ in value.mapped}
    value = gather(value, [n for n in names if n in mapped], operation=operation)
    named_dims = [value.ndim + value.axes.index(n) for n in names]
    expand = tuple(sorted(positional)) if keepdims and positional else ()
    data = _run(fn, tuple(positional + named_dims), expand, value.data, **kwargs)
    if plain:
        return data
    return wrap(data, tuple(a for a in value.axes if a not in names), value.mapped)


def _reduction(fname: str, fn: Callable[..., Any], doc: str) -> Callable[..., Any]:
    def reduction(x: Any, axis: AxisArg = None, *, keepdims: bool = False, **kwargs: Any) -> Any:
        return _reduce(fn, fname, x, axis, keepdims, kwargs)

    reduction.__name__ = reduction.__qualname__ = fname
    source = f"{'jax.scipy.special' if fname == 'logsumexp' else 'jax.numpy'}.{fname}"
    reduction.__doc__ = f"""{doc} over ``axis``: a name, an int (positional dim) or a tuple of both.

``axis=None`` reduces the positional dims only; named axes survive. ``keepdims`` keeps positional
dims. Other keywords go to ``{source}``.

Args:
    x: a NamedArray, or an array (per element inside ``xmap``, where a name is an enclosing map level).
    axis: the axes to reduce: a name, an int, a tuple of both, or ``None`` (the positional dims).
    keepdims: keep the reduced positional dims, of size 1.
    kwargs: passed to ``{source}``.

Returns:
    ``x`` without the reduced axes.

Raises:
    NamedShapeError: a name ``x`` lacks, an int beyond its positional dims, or an axis given twice.

Examples:
    >>> x = tx.named(jnp.ones((2, 3)), ["batch", "embed"])
    >>> tnp.{fname}(x, "embed").named_shape == {{"batch": 2}}
    True
"""
    return reduction


sum = _reduction("sum", jnp.sum, "Sum")
mean = _reduction("mean", jnp.mean, "Mean")
max = _reduction("max", jnp.max, "Maximum")
min = _reduction("min", jnp.min, "Minimum")
prod = _reduction("prod", jnp.prod, "Product")
var = _reduction("var", jnp.var, "Variance (``ddof=`` as in numpy; the count includes named axes' sizes)")
std = _reduction("std", jnp.std, "Standard deviation (``ddof=`` as in numpy)")
logsumexp = _reduction("logsumexp", jax.scipy.special.logsumexp, "``log(sum(exp(x)))``, computed stably,")
all = _reduction("all", jnp.all, "Logical and")
any = _reduction("any", jnp.any, "Logical or")


def _arg_reduce(fn: Callable[..., Any], fname: str, x: Any, axis: AxisArg, keepdims: bool) -> Any:
    axis = single_axis(axis, function=fname, operation=_operation(fname, axis))  # type: ignore[assignment]  # one item of AxisArg
    if axis is None:
        if not isinstance(x, NamedArray):
            return fn(x, axis=None, keepdims=keepdims)
        # numpy's axis=None: the index into the flattened positional dims, per named element
        named = x.data.shape[x.ndim :]
        data = fn(jnp.reshape(x.data, (-1, *named)), axis=0, keepdims=True)
        data = jnp.reshape(data, ((1,) * x.ndim if keepdims else ()) + named)
        return wrap(data, x.axes, x.mapped)

    return _reduce(_single_axis(fn), fname, x, axis, keepdims, {})


@functools.cache
def _single_axis(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` (``jnp.argmax``) called with a one-item ``axis`` tuple; one object per ``fn``, so plans cache."""

    def single(data: Any, *, axis: tuple[int], keepdims: bool) -> Any:
        return fn(data, axis=axis[0], keepdims=keepdims)

    return single


def argmax(x: Any, axis: str | int | None = None, *, keepdims: bool = False) -> Any:
    """Index of the maximum along one axis (a name or an int); ``None``: over the flattened positional dims.

    Args:
        x: a NamedArray (or a per-element array inside ``xmap``).
        axis: the one axis to search along (a name or an int); ``None``: the flattened positional dims.
        keepdims: keep a reduced positional dim, of size 1.

    Returns:
        The int32 index of the largest value along ``axis``; ``x`` without ``axis``.

    Raises:
        NamedShapeError: an axis ``x`` lacks, or more than one axis.

    Examples:
        >>> logits = tx.named(jnp.arange(6.0).reshape(2, 3), ["batch", "vocab"])
        >>> tnp.argmax(logits, "vocab").named_shape == {"batch": 2}
        True
    """
    return _arg_reduce(jnp.argmax, "argmax", x, axis, keepdims)


def argmin(x: Any, axis: str | int | None = None, *, keepdims: bool = False) -> Any:
    """Index of the minimum along one axis (a name or an int); ``None``: over the flattened positional dims.

    Args:
        x: a NamedArray (or a per-element array inside ``xmap``).
        axis: the one axis to search along (a name or an int); ``None``: the flattened positional dims.
        keepdims: keep a reduced positional dim, of size 1.

    Returns:
        The int32 index of the smallest value along ``axis``; ``x`` without ``axis``.

    Raises:
        NamedShapeError: an axis ``x`` lacks, or more than one axis.

    Examples:
        >>> logits = tx.named(jnp.arange(6.0).reshape(2, 3), ["batch", "vocab"])
        >>> tnp.argmin(logits, "vocab").named_shape == {"batch": 2}
        True
    """
    return _arg_reduce(jnp.argmin, "argmin", x, axis, keepdims)


def _elementwise(fname: str, fn: Callable[..., Any], *values: Any) -> Any:
    return apply_elementwise(fn, values, operation=f"tnp.{fname}", operands=("x", "its reduction"))


def _stable_max(x: Any, axis: AxisArg) -> Any:
    """``max(x, axis)``, kept positional dims, non-finite maxima replaced by 0, no gradient."""
    m = max(x, axis, keepdims=True)
    if isinstance(m, NamedArray):
        return wrap(jax.lax.stop_gradient(jnp.where(jnp.isfinite(m.data), m.data, 0)), m.axes, m.mapped)
    return jax.lax.stop_gradient(jnp.where(jnp.isfinite(m), m, 0))


_COMPOSITE_AXES: dict[Any, tuple[str, ...]] = {}


def _composite(body: Callable[[Any, AxisArg], Any], x: Any, axis: AxisArg) -> Any:
    """``body(x, axis)``; eager on a NamedArray, one cached ``jax.jit`` per (``body``, ``axis``, layout).

    The first call with a layout runs unfused (so its errors are raised as ever) and records the result's axes.
    """
    if not isinstance(x, NamedArray) or x.mapped or not is_eager(x.data):
        return body(x, axis)
    try:
        key = (body, axis, x.axes, x.data.shape)
        axes = _COMPOSITE_AXES.get(key)
    except TypeError:  # an unhashable axis (a list)
        return body(x, axis)
    if axes is None:
        result = body(x, axis)
        if len(_COMPOSITE_AXES) > _CACHE_SIZE:
            _COMPOSITE_AXES.clear()
        _COMPOSITE_AXES[key] = result.axes
        return result
    in_axes = x.axes
    return wrap(fused(key, lambda: lambda data: body(wrap(data, in_axes), axis).data)(x.data), axes)


def softmax(x: Any, axis: AxisArg) -> Any:
    """``exp(x) / sum(exp(x), axis)``, stably; the result has ``x``'s axes (broadcast back by name).

    Args:
        x: a NamedArray (or a per-element array inside ``xmap``).
        axis: the axis (a name, an int or a tuple of both) normalised over.

    Returns:
        A value of ``x``'s named shape that sums to 1 along ``axis``.

    Raises:
        NamedShapeError: an axis ``x`` lacks.

    Examples:
        >>> scores = tx.named(jnp.zeros((2, 4)), ["query", "key"])
        >>> tnp.softmax(scores, "key").named_shape == {"query": 2, "key": 4}
        True
    """
    if isinstance(x, NamedArray) and not x.mapped:
        return _normalized(jax.nn.softmax, "softmax", x, axis)
    return _composite(_softmax, x, axis)


def log_softmax(x: Any, axis: AxisArg) -> Any:
    """``x - logsumexp(x, axis)``; the result has ``x``'s axes.

    Args:
        x: a NamedArray (or a per-element array inside ``xmap``).
        axis: the axis (a name, an int or a tuple of both) normalised over.

    Returns:
        A value of ``x``'s named shape whose exponential sums to 1 along ``axis``.

    Raises:
        NamedShapeError: an axis ``x`` lacks.

    Examples:
        >>> scores = tx.named(jnp.zeros((2, 4)), ["query", "key"])
        >>> tnp.log_softmax(scores, "key").named_shape == {"query": 2, "key": 4}
        True
    """
    if isinstance(x, NamedArray) and not x.mapped:
        return _normalized(jax.nn.log_softmax, "log_softmax", x, axis)
    return _composite(_log_softmax, x, axis)


def _normalized(fn: Callable[..., Any], fname: str, x: NamedArray, axis: AxisArg) -> NamedArray:
    """``jax.nn.softmax``/``log_softmax`` over the data dims ``axis`` names: their custom JVP makes the backward
    pass one product and one sum (the composed form differentiates through the max, ``where`` and division),
    and no ``isfinite`` guard (jax's own numerics); one jitted call when eager."""
    dims = _cached_plan(fn, fname, x, axis, False)[1][0]
    return wrap(fn(x.data, axis=dims), x.axes)


def _softmax(x: Any, axis: AxisArg) -> Any:
    shifted = _elementwise("softmax", jnp.subtract, x, _stable_max(x, axis))
    e = _elementwise("softmax", jnp.exp, shifted)
    return _elementwise("softmax", jnp.divide, e, sum(e, axis, keepdims=True))


def _log_softmax(x: Any, axis: AxisArg) -> Any:
    return _elementwise("log_softmax", jnp.subtract, x, logsumexp(x, axis, keepdims=True))
