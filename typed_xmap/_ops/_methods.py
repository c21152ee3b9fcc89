"""The methods users reach for on a NamedArray: ``x.sum('batch')``, ``x.rename({...})``, ``x.merge_axes(...)``.

Each delegates to the one function that does the work (``typed_xmap.numpy`` or ``typed_xmap._structure``),
so a method and its function never differ. ``NamedArray`` inherits them from ``NamedArrayMethods``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["NamedArrayMethods"]


def _tnp(name: str) -> Callable[..., Any]:
    import typed_xmap.numpy as tnp  # at call time: typed_xmap.numpy imports the NamedArray class

    return getattr(tnp, name)  # type: ignore[no-any-return]  # a tnp function


def _reduction(name: str) -> Callable[..., Any]:
    def method(self: Any, axis: Any = None, *, keepdims: bool = False, **kwargs: Any) -> Any:
        return _tnp(name)(self, axis, keepdims=keepdims, **kwargs)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"``tnp.{name}(x, axis, ...)``: see ``typed_xmap.numpy.{name}``."
    return method


def _along(name: str) -> Callable[..., Any]:
    def method(self: Any, axis: Any, **kwargs: Any) -> Any:
        return _tnp(name)(self, axis=axis, **kwargs)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"``tnp.{name}(x, axis=...)``: see ``typed_xmap.numpy.{name}``."
    return method


class NamedArrayMethods:
    """Methods of ``NamedArray`` that are ``tnp``/``tx`` functions of it."""

    __slots__ = ()

    sum = _reduction("sum")
    mean = _reduction("mean")
    max = _reduction("max")
    min = _reduction("min")
    prod = _reduction("prod")
    var = _reduction("var")
    std = _reduction("std")
    all = _reduction("all")
    any = _reduction("any")
    logsumexp = _reduction("logsumexp")
    argmax = _reduction("argmax")
    argmin = _reduction("argmin")
    cumsum = _along("cumsum")
    cumprod = _along("cumprod")

    def rename(self, renames: Mapping[str, str]) -> Any:
        """``tx.rename(x, renames)``."""
        from ._structure import rename

        return rename(self, renames)  # type: ignore[arg-type]  # self is a NamedArray

    def merge_axes(self, axes: Sequence[str], into: str) -> Any:
        """``tx.merge_axes(x, axes, into)``."""
        from ._structure import merge_axes

        return merge_axes(self, axes, into)  # type: ignore[arg-type]  # self is a NamedArray

    def split_axis(self, axis: str, parts: Mapping[str, int]) -> Any:
        """``tx.split_axis(x, axis, parts)``."""
        from ._structure import split_axis

        return split_axis(self, axis, parts)  # type: ignore[arg-type]  # self is a NamedArray

    def broadcast_to(self, shape: Mapping[str, int]) -> Any:
        """``tx.broadcast_to(x, shape)``."""
        from ._structure import broadcast_to

        return broadcast_to(self, shape)  # type: ignore[arg-type]  # self is a NamedArray
