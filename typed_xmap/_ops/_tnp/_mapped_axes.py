"""Named axes held by enclosing ``vmap(axis_name=...)`` levels: what ``xmap`` bodies see.

Inside ``xmap`` a named axis is not a dim of the per-element value but a ``vmap`` level around it.
``typed_xmap.numpy`` treats a plain (positional) array there as a ``NamedArray`` whose named axes are all
*mapped*, and reaches a mapped axis through ``lax.all_gather``: under ``vmap`` that moves the mapped dim
into the value without a copy (reference/named-contraction.md, route B), so reductions and contractions
over it become ordinary positional work: one ``reduce``, one ``dot_general``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import jax.numpy as jnp
from jax import lax

from ..._algebra import ErrorKind, NamedShapeError, UnboundAxisError
from ..._value._named_array import NamedArray, wrap

__all__ = ["UnboundAxisError", "as_mapped", "bound_size", "gather"]


def _unbound(name: str, operation: str) -> UnboundAxisError:
    return UnboundAxisError(
        f"{operation}: axis {name!r} is not bound by any enclosing xmap/vmap. Outside a NamedArray, a named "
        f"axis is an xmap (or jax.vmap(..., axis_name={name!r})) level around the code. Fix: call this inside "
        f"an xmap that maps {name!r}, or pass a NamedArray that carries {name!r} (tx.named(array, axes))"
    )


def bound_size(name: str, *, operation: str) -> int:
    """The size of the enclosing ``vmap`` axis ``name``; an ``UnboundAxisError`` if there is none."""
    if not isinstance(name, str):
        raise NamedShapeError(
            f"{operation}: axis names are strings, got {name!r}. Fix: pass the axis name as a str",
            kind=ErrorKind.INVALID_ARGUMENT,
        )
    try:
        return int(lax.axis_size(name))
    except NameError:
        raise _unbound(name, operation) from None


def as_mapped(value: Any, names: Iterable[str], *, operation: str) -> NamedArray:
    """A per-element positional value as a NamedArray whose axes ``names`` are the enclosing vmap levels.

    The value need not vary along them: then it is constant along the axis (``psum`` semantics).
    """
    mapped = tuple((n, bound_size(n, operation=operation)) for n in names)
    return wrap(jnp.asarray(value), (), mapped)


def gather(x: NamedArray, names: Iterable[str], *, operation: str) -> NamedArray:
    """Turn the mapped axes ``names`` of ``x`` into trailing dims of its data (free under ``vmap``)."""
    names = tuple(names)
    if not names:
        return x
    data = x.data
    for name in names:
        try:
            data = lax.all_gather(data, name, axis=data.ndim)
        except NameError:
            raise _unbound(name, operation) from None
    mapped = tuple((n, s) for n, s in x.mapped if n not in names)
    return wrap(data, x.axes + names, mapped)
