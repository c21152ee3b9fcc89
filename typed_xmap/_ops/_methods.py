"""The methods users reach for on a NamedArray, bound onto the class once every operation exists.

``x.sum('batch')``, ``x[{...}]``, ``x.at[{...}]``, ``x.rename({...})``, ``x.merge_axes(...)``: each is the
one function that does the work (``typed_xmap.numpy``'s or ``tx``'s), so a method and its function never
differ. ``NamedArray`` (``typed_xmap._value``) knows no operation; importing this module binds them, as
JAX binds ``jax.Array``'s methods after its operations are defined. ``typed_xmap``'s first lazy name,
``typed_xmap.numpy`` and ``typed_xmap.random`` import it, so whichever public module comes first, the
methods are there. The display hooks (Jupyter, rich, treescope: ``_display.py``) are bound with them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .._value._named_array import NamedArray
from .._value._tracebacks import entry_point
from . import _ipython
from ._display import DISPLAY_HOOKS
from ._indexing import At, getitem
from ._structure import broadcast_to, merge_axes, rename, split_axis
from ._tnp import _reductions, _structure as _tnp_structure

__all__: list[str] = []

REDUCTIONS = ("sum", "mean", "max", "min", "prod", "var", "std", "all", "any", "logsumexp", "argmax", "argmin")
ALONG = ("cumsum", "cumprod")


def _reduction(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    def method(self: Any, axis: Any = None, *, keepdims: bool = False, **kwargs: Any) -> Any:
        return fn(self, axis, keepdims=keepdims, **kwargs)

    method.__doc__ = f"``tnp.{name}(x, axis, ...)``: see ``typed_xmap.numpy.{name}``."
    return method


def _along(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    def method(self: Any, axis: Any, **kwargs: Any) -> Any:
        return fn(self, axis=axis, **kwargs)

    method.__doc__ = f"``tnp.{name}(x, axis=...)``: see ``typed_xmap.numpy.{name}``."
    return method


def _rename(self: NamedArray, renames: Mapping[str, str]) -> NamedArray:
    """``tx.rename(x, renames)``."""
    return rename(self, renames)


def _merge_axes(self: NamedArray, axes: Sequence[str], into: str) -> NamedArray:
    """``tx.merge_axes(x, axes, into)``."""
    return merge_axes(self, axes, into)


def _split_axis(self: NamedArray, axis: str, parts: Mapping[str, int]) -> NamedArray:
    """``tx.split_axis(x, axis, parts)``."""
    return split_axis(self, axis, parts)


def _broadcast_to(self: NamedArray, shape: Mapping[str, int]) -> NamedArray:
    """``tx.broadcast_to(x, shape)``."""
    return broadcast_to(self, shape)


def _getitem(self: NamedArray, key: Any) -> NamedArray:
    """``x[{"batch": 0}]``, ``x[{"seq": slice(0, 4)}]``, ``emb[{"vocab": tokens}]``; ``x[0]``: positional dims."""
    return getitem(self, key)


def _at(self: NamedArray) -> At:
    """``x.at[{"seq": i}].set(v)`` (``add multiply min max get``): a functional update by name."""
    return At(self)


def _bind() -> None:
    methods: dict[str, Callable[..., Any]] = {
        "__getitem__": _getitem,
        "rename": _rename,
        "merge_axes": _merge_axes,
        "split_axis": _split_axis,
        "broadcast_to": _broadcast_to,
    }
    methods.update({name: _reduction(name, getattr(_reductions, name)) for name in REDUCTIONS})
    methods.update({name: _along(name, getattr(_tnp_structure, name)) for name in ALONG})
    for name, method in methods.items():
        method.__name__, method.__qualname__ = name, f"NamedArray.{name}"
        setattr(NamedArray, name, entry_point(method))
    NamedArray.at = property(_at)  # type: ignore[attr-defined]  # bound here, typed by _static
    for name, hook in DISPLAY_HOOKS.items():
        setattr(NamedArray, name, hook)


_bind()
_ipython.install()  # in a notebook: a shape error's traceback without our frames
