"""Pointwise gathers and scatters by name through ``lax``'s batching dims.

``log_probs[{"vocab": targets}]``, ``targets`` over ``batch seq`` and ``log_probs`` over ``batch seq vocab``,
reads one element per (batch, seq): ``batch`` and ``seq`` are *pointwise* (the algebra's ``IndexPlan``).
numpy's way to write it (``take_along_axis``: an ``arange`` index per shared axis) is a gather whose shared
axes XLA's SPMD partitioner does not see as batched: with them split over a mesh it gathers the index blocks
and sums the result's over those mesh axes. ``lax.gather``'s ``operand_batching_dims`` and
``start_indices_batching_dims`` name them, so each device reads its own block (and a split indexed axis costs
only the lookup's sum); ``lax.scatter``'s do the same for ``x.at[{...}]``'s writes.

The values are jnp indexing's: an index is wrapped once when negative (in its own dtype), then read as int32
(int64 past int32's range); a read out of bounds is clamped to the axis (XLA's gather), a write out of bounds
is dropped (``jnp``'s scatter mode).

The operand's data is positional dims, then the named axes ``axes`` (any static slices already applied);
``columns`` maps each indexed axis (in ``axes`` order) to its index's data laid out over ``index_axes`` (size
1 where the index lacks one) or to a scalar; the result is positional dims, ``index_axes``, then the kept
axes (``axes`` neither indexed nor pointwise), in that order.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.sharding import NamedSharding

from ._sharding import on_auto_axes

__all__ = ["Pointwise", "batched_get", "batched_update"]

_SCATTERS: dict[str, Callable[..., Any]] = {
    "set": lax.scatter,
    "add": lax.scatter_add,
    "multiply": lax.scatter_mul,
    "min": lax.scatter_min,
    "max": lax.scatter_max,
}
"""``x.at[...]``'s methods and the scatter each is (as ``jax.Array.at``'s)."""


@dataclass(frozen=True)
class Pointwise:
    """One pointwise gather by name: which of the operand's axes are indexed, which are read pointwise, and
    the indices' axes (with their sizes) that lead the result."""

    rank: int
    axes: tuple[str, ...]
    shape: tuple[int, ...]
    """The named axes' sizes (after the key's static slices), in ``axes``' order."""
    indexed: tuple[str, ...]
    pointwise: tuple[str, ...]
    index_axes: tuple[str, ...]
    index_shape: tuple[int, ...]
    """The indices' axes' sizes, in ``index_axes``' order."""

    @property
    def sizes(self) -> dict[str, int]:
        return dict(zip(self.axes, self.shape, strict=True))

    @property
    def kept(self) -> tuple[str, ...]:
        return tuple(a for a in self.axes if a not in self.indexed and a not in self.pointwise)

    @property
    def result_axes(self) -> tuple[str, ...]:
        return (*self.index_axes, *self.kept)

    def _dim(self, axis: str) -> int:
        return self.rank + self.axes.index(axis)

    def gather_numbers(self) -> lax.GatherDimensionNumbers:
        leading = self.rank + len(self.index_axes)
        return lax.GatherDimensionNumbers(
            offset_dims=(*range(self.rank), *range(leading, leading + len(self.kept))),
            collapsed_slice_dims=tuple(self._dim(a) for a in self.indexed),
            start_index_map=tuple(self._dim(a) for a in self.indexed),
            operand_batching_dims=tuple(self._dim(a) for a in self.pointwise),
            start_indices_batching_dims=tuple(self.index_axes.index(a) for a in self.pointwise),
        )

    def scatter_numbers(self) -> lax.ScatterDimensionNumbers:
        gather = self.gather_numbers()  # the scatter is the gather's transpose (as jnp's indexed updates)
        return lax.ScatterDimensionNumbers(
            update_window_dims=gather.offset_dims,
            inserted_window_dims=gather.collapsed_slice_dims,
            scatter_dims_to_operand_dims=gather.start_index_map,
            operand_batching_dims=gather.operand_batching_dims,
            scatter_indices_batching_dims=gather.start_indices_batching_dims,
        )

    def slice_sizes(self, shape: Sequence[int]) -> tuple[int, ...]:
        read = {self._dim(a) for a in (*self.indexed, *self.pointwise)}
        return tuple(1 if d in read else size for d, size in enumerate(shape))

    def indices(self, columns: Sequence[Any]) -> Any:
        """The gather's start indices: one column per indexed axis, normalised as jnp's, over the index axes."""
        dtype = np.int64 if any(s > np.iinfo(np.int32).max for s in self.shape) else np.int32
        sizes = self.sizes
        laid = [
            jnp.broadcast_to(lax.convert_element_type(_wrapped(c, sizes[a]), dtype), self.index_shape)
            for a, c in zip(self.indexed, columns, strict=True)
        ]
        return jnp.stack(laid, axis=-1)

    def result_shape(self, positional: Sequence[int]) -> tuple[int, ...]:
        sizes = self.sizes
        return (*positional, *self.index_shape, *(sizes[a] for a in self.kept))


def _wrapped(index: Any, size: int) -> Any:
    """A negative index counted from the end, in the index's own dtype (``jnp``'s normalisation)."""
    index = jnp.asarray(index)
    if jnp.issubdtype(index.dtype, jnp.unsignedinteger):
        return index
    return lax.select(index < 0, lax.add(index, lax.full_like(index, size)), index)


@functools.lru_cache(maxsize=512)
def _reader(gather: Pointwise) -> Callable[..., Any]:
    """The gather as one jitted function of the data and the columns (one dispatch when called eagerly)."""

    def read(data: Any, *columns: Any) -> Any:
        numbers = gather.gather_numbers()
        return lax.gather(data, gather.indices(columns), numbers, gather.slice_sizes(data.shape))

    return jax.jit(read)


@functools.lru_cache(maxsize=512)
def _writer(gather: Pointwise, method: str) -> Callable[..., Any]:
    """The scatter as one jitted function of the data, the update and the columns."""
    scatter = _SCATTERS[method]

    def write(data: Any, update: Any, *columns: Any) -> Any:
        promoted = jnp.result_type(data, update)
        region = gather.result_shape(data.shape[: gather.rank])
        updates = jnp.broadcast_to(lax.convert_element_type(update, promoted), region)
        indices = gather.indices(columns)
        out = scatter(lax.convert_element_type(data, promoted), indices, updates, gather.scatter_numbers())
        return lax.convert_element_type(out, data.dtype)

    return jax.jit(write)


def batched_get(gather: Pointwise, data: Any, columns: Sequence[Any], spec: NamedSharding | None) -> Any:
    """``data`` read at ``columns``, pointwise along ``gather.pointwise`` (see the module's docstring)."""
    shape = gather.result_shape(data.shape[: gather.rank])
    if 0 in shape:
        return jnp.zeros(shape, data.dtype, out_sharding=spec)
    return on_auto_axes(_reader(gather), spec)(data, *columns)


def batched_update(
    gather: Pointwise, method: str, data: Any, columns: Sequence[Any], update: Any, spec: NamedSharding | None
) -> Any:
    """``data.at[...].method(update)`` at ``columns``, pointwise along ``gather.pointwise``; ``update`` is a
    scalar or an array laid out as the region (the gather's result). As ``jnp``'s indexed update: the write
    is made in the promoted dtype of ``data`` and ``update``, the result cast back to ``data``'s (with jnp's
    FutureWarning when that cast is unsafe)."""
    region = gather.result_shape(data.shape[: gather.rank])
    if 0 in region:
        return data
    integer = isinstance(update, int) and jnp.issubdtype(data.dtype, jnp.integer)
    if integer and np.iinfo(data.dtype).min <= update <= np.iinfo(data.dtype).max:
        update = jnp.asarray(update, data.dtype)
    update = jnp.asarray(update)
    if jnp.result_type(update, data.dtype) != data.dtype:  # jnp's deprecation of such writes, word for word
        promotion = jax.config.jax_numpy_dtype_promotion  # type: ignore[attr-defined]  # a flag read by name
        warnings.warn(
            f"scatter inputs have incompatible types: cannot safely cast value from dtype={update.dtype} to "
            f"dtype={data.dtype} with jax_numpy_dtype_promotion={promotion}. In future JAX releases this will "
            "result in an error.",
            FutureWarning,
            stacklevel=5,
        )
    return on_auto_axes(_writer(gather, method), spec)(data, update, *columns)
