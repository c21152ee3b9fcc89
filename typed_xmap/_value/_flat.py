"""What the pytree flatten of a NamedArray returns, made with the value: its leaf in canonical order (sorted
by name) and the aux naming the axes, shared per named shape and validated once, when it is made (``aux_of``:
it says whether a leaf needs more than a rank test to be unflattened). Knows no NamedArray (``_named_array``
calls ``flat_of``; ``_pytree`` registers the node)."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any

import jax
import numpy as np
from jax.core import Tracer

from ._compat import array_impl

__all__ = ["CACHE_SIZE", "CHECKED", "SORTED_AUX", "ArrayImpl", "Aux", "aux_of", "canonical_order", "flat_of"]

Aux = tuple[tuple[str, ...], tuple[tuple[str, int], ...], int]
"""(the leaf's named axes in its order, the mapped axes sorted, the rank a leaf needs to be unflattened at once
or ``CHECKED``): ``aux_of`` makes it."""

CHECKED = 1 << 62
"""An aux's third entry when its value cannot be made from the leaf by the unflatten's fast path (axes mapped
by an enclosing ``vmap`` level, or a placeholder's axes out of order): no leaf has that many dims."""


def aux_of(axes: tuple[str, ...], mapped: tuple[tuple[str, int], ...]) -> Aux:
    """The aux of a leaf laid out as ``axes`` (and these ``mapped`` axes, sorted): everything the unflatten needs
    decided once per named shape, not once per leaf. Its third entry is the number of named dims a leaf must
    have for the unflatten to build the value with no other check: ``len(axes)`` when the axes are in canonical
    order and nothing is mapped, else ``CHECKED``. A function of ``axes`` and ``mapped`` alone, so two auxes
    of one named shape are equal whether or not they are the shared one (``SORTED_AUX``)."""
    fast = not mapped and (len(axes) < 2 or canonical_order(axes) is None)
    return (axes, mapped, len(axes) if fast else CHECKED)


def flat_of(data: Any, axes: tuple[str, ...], mapped: tuple[tuple[str, int], ...]) -> tuple[Any, Aux]:
    """What the pytree flatten of this value returns, made with the value: ``((leaf,), aux)``.

    A named shape is a set, so the structure must not depend on the order an operation produced
    (``lax.scan``/``cond``/``while_loop`` carries and branches match): the aux holds the axes sorted by name
    (and the mapped axes, sorted), and the leaf is the data with its named dims in that order. A concrete value
    is laid out so when it is made (``wrap``), so its leaf is its data: a ``jit`` call runs no transpose at its
    boundary. Traced data laid out in another order gets a leaf that transposes, inside the trace, when the
    flatten reads it (``_Sorted``; most values inside a trace are never flattened). A placeholder (data with
    no dims) keeps its axes as they came.

    Every ``jit`` call flattens its arguments and unflattens its results, a few hundred NamedArrays for a
    model and its optimizer state; storing this result lets the flatten be a C attribute read
    (``_FLATTEN``), with no Python frame per NamedArray."""
    if not mapped:
        aux = SORTED_AUX.get(axes)
        if aux is not None:
            return (data,), aux
        unsorted = _UNSORTED.get(axes)
        if unsorted is not None and isinstance(data, _ARRAY_TYPES):
            return _Sorted(data, unsorted[0]), unsorted[1]
    order = canonical_order(axes) if len(axes) > 1 else None
    if order is not None and not isinstance(getattr(data, "ndim", None), int):
        order = None  # a placeholder: no named dims to sort
    sorted_axes = axes if order is None else order[0]
    aux = aux_of(sorted_axes, tuple(sorted(mapped)) if len(mapped) > 1 else mapped)
    shared = not mapped and len(SORTED_AUX) < CACHE_SIZE
    if shared and aux[2] != CHECKED:  # not a placeholder's unsorted axes
        aux = SORTED_AUX.setdefault(sorted_axes, aux)
    if order is None:
        return (data,), aux
    if shared:
        _UNSORTED[axes] = (order[1], aux)
    return _Sorted(data, order[1]), aux


# sorted axes -> (axes, (), len(axes)), the one aux of every unmapped NamedArray with these axes: jit's comparison
# of a call's pytree structure with its cache's is then an identity check
SORTED_AUX: dict[tuple[str, ...], Aux] = {}
# unsorted axes -> (the permutation that sorts them, the sorted axes' shared aux)
_UNSORTED: dict[tuple[str, ...], tuple[tuple[int, ...], Aux]] = {}
ArrayImpl = array_impl()  # a concrete jax array's type
_ARRAY_TYPES = (Tracer, ArrayImpl, np.ndarray)


class _Sorted:
    """The flatten's leaf of traced data whose named dims are not in sorted order: the data transposed to sorted
    order when the flatten reads it, not when the value is made (most values inside a trace are never flattened)."""

    __slots__ = ("data", "perm")

    def __init__(self, data: Any, perm: tuple[int, ...]) -> None:
        self.data, self.perm = data, perm

    def __iter__(self) -> Iterator[Any]:
        data, perm = self.data, self.perm
        rank = data.ndim - len(perm)
        yield jax.lax.transpose(data, (*range(rank), *(rank + p for p in perm)))

    def __len__(self) -> int:
        return 1


CACHE_SIZE = 4096
"""The most entries any of the value's caches (auxes, layout plans, fused jits, key names) holds."""


@functools.lru_cache(maxsize=4096)
def canonical_order(axes: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[int, ...]] | None:
    """``None`` when ``axes`` are in the canonical order (sorted by name), else (sorted axes, permutation)."""
    ordered = tuple(sorted(axes))
    return None if ordered == axes else (ordered, tuple(axes.index(a) for a in ordered))
