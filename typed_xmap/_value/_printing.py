"""How a NamedArray prints: ``repr`` (values, or a summary of large ones), the one-line header messages use
(``shape_repr``), and the line notebooks show (``summary_line``)."""

from __future__ import annotations

from typing import Any

import numpy as np
from jax.core import Tracer

from ._named_array import NamedArray, holds_array

__all__ = ["REPR_MAX_VALUES", "readable", "shape_repr", "summary", "summary_line"]


def _repr(self: NamedArray) -> str:
    """The named shape, and the values of a concrete array: all of them when small, a summary when large.

    ``NamedArray(float32[batch=2, embed=3], [[0., 1., 2.], [3., 4., 5.]])``: the values are laid out as
    the data holds them: positional dims first, then the named axes in the order the header lists. A traced
    value shows its named shape only.
    """
    header = shape_repr(self)
    if not readable(self):
        return header
    values = np.asarray(self.data)
    if values.size <= REPR_MAX_VALUES:
        prefix = header[:-1] + ", "
        return prefix + np.array2string(values, separator=", ", prefix=prefix, suffix=")") + ")"
    return header[:-1] + ", " + summary(values) + ")"


setattr(NamedArray, "__repr__", _repr)  # noqa: B010  # assigning a method mypy would reject
setattr(NamedArray, "__str__", _repr)  # noqa: B010


REPR_MAX_VALUES = 100
"""``repr`` shows every value of an array with at most this many elements, a summary of larger ones."""


def shape_repr(x: NamedArray) -> str:
    """``NamedArray(float32[batch=2, embed=3])``: the dtype and named shape, never the values (for messages).

    A NamedArray holding a leaf that is no array shows the leaf: ``NamedArray((3, 4), axes=('in', 'out'))``."""
    if not holds_array(x.data):
        mapped = f", mapped={x.mapped!r}" if x.mapped else ""
        return f"NamedArray({x.data!r}, axes={x.axes!r}{mapped})"
    dtype = getattr(x.data, "dtype", "?")
    named = ", ".join(f"{n}={s}" for n, s in x.named_shape.items())
    positional = ",".join(str(s) for s in x.shape)
    inner = f"{named}; {positional}" if x.shape else named
    mapped = f", mapped: {' '.join(n for n, _ in x.mapped)}" if x.mapped else ""
    return f"NamedArray({dtype}[{inner}]{mapped})"


def summary_line(x: NamedArray) -> str:
    """The named shape and, for a value readable here, what it holds: ``min=.. max=.. mean=..`` (no values).

    The one line notebooks, rich and treescope show (``typed_xmap._ops._display``)."""
    header = shape_repr(x)
    if not readable(x):
        return header
    return f"{header} {summary(np.asarray(x.data)).replace(', ', ' ')}"


def readable(x: NamedArray) -> bool:
    """Whether ``x``'s values can be read here: an array, not traced, not mapped, all its shards on this process."""
    data: Any = x.data  # an array, or a leaf jax.tree.map made
    if isinstance(data, Tracer) or x.mapped or not holds_array(data):
        return False
    return isinstance(data, np.ndarray | np.generic) or bool(getattr(data, "is_fully_addressable", False))


def summary(values: np.ndarray) -> str:
    """``min=-1.2, max=3.4, mean=0.01, nan=2``: what a large array holds, in one line."""
    if values.dtype == np.bool_:
        return f"true={int(values.sum())}"
    if not np.issubdtype(values.dtype, np.number):
        try:
            values = values.astype(np.float32)  # bfloat16 and the other ml_dtypes
        except (TypeError, ValueError):
            return "..."
    if np.issubdtype(values.dtype, np.complexfloating):
        return f"mean={values.mean():.4g}"
    nan = int(np.isnan(values).sum()) if np.issubdtype(values.dtype, np.floating) else 0
    if nan == values.size:
        return f"nan={nan}"
    parts = [f"min={np.nanmin(values):.4g}", f"max={np.nanmax(values):.4g}", f"mean={np.nanmean(values):.4g}"]
    return ", ".join(parts + ([f"nan={nan}"] if nan else []))
