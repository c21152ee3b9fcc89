"""``tx.named`` and ``tx.positional``: between positional arrays and NamedArrays, by xmap spec leaf."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding, PartitionSpec

from .._algebra import AxisMap, ErrorKind, NamedShapeError, check_named, check_positional, parse_axis_map
from .._value._named_array import NamedArray, wrap
from .._value._printing import shape_repr

__all__ = ["named", "positional", "to_named", "to_positional"]


def to_named(array: Any, spec: AxisMap, *, where: str) -> NamedArray:
    """Name the dims of ``array`` (a positional array or a NamedArray's positional dims)."""
    base_axes: tuple[str, ...] = ()
    mapped: tuple[tuple[str, int], ...] = ()
    data: Any
    if isinstance(array, NamedArray):
        base_axes, mapped, data = array.axes, array.mapped, array.data
    elif isinstance(array, jax.ShapeDtypeStruct):  # a restore target (orbax): a shape, no data
        data = array
    else:
        data = jnp.asarray(array)
    rank = len(data.shape) - len(base_axes)
    check_named(spec, tuple(data.shape[:rank]), (*base_axes, *dict(mapped)), where=where)
    named_dims = [d for d, _ in spec.dims]
    kept = [d for d in range(rank) if d not in named_dims]
    # One transpose to the canonical layout (positional dims, then the named dims sorted by name): the
    # layout the pytree flatten gives, so passing the value to ``jit`` transposes nothing.
    source = dict(zip(spec.names, named_dims, strict=True)) | {a: rank + i for i, a in enumerate(base_axes)}
    axes = tuple(sorted(source))
    perm = kept + [source[a] for a in axes]
    if perm != list(range(len(perm))):
        data = _transposed_struct(data, perm) if isinstance(data, jax.ShapeDtypeStruct) else jnp.transpose(data, perm)
    return wrap(data, axes, mapped)


def _transposed_struct(struct: Any, perm: list[int]) -> Any:
    """A ``jax.ShapeDtypeStruct`` with its dims (and a ``NamedSharding``'s spec) in the order ``perm`` gives."""
    sharding = struct.sharding
    if isinstance(sharding, NamedSharding):
        spec = (*sharding.spec, *([None] * (len(perm) - len(sharding.spec))))
        sharding = NamedSharding(sharding.mesh, PartitionSpec(*(spec[d] for d in perm)))
    elif sharding is not None and not sharding.is_fully_replicated:
        raise NamedShapeError(
            f"tx.named: the ShapeDtypeStruct's dims are moved to the canonical layout (named dims sorted by name), "
            f"but its sharding {type(sharding).__name__} cannot be moved with them. Fix: give the struct its named "
            f"dims sorted by name (then nothing moves), or a NamedSharding",
            kind=ErrorKind.INVALID_ARGUMENT,
        )
    return jax.ShapeDtypeStruct(tuple(struct.shape[d] for d in perm), struct.dtype, sharding=sharding)


def to_positional(x: NamedArray, spec: AxisMap, *, where: str) -> Any:
    """Put ``x``'s named axes at the dims ``spec`` gives; ``x`` must carry exactly the listed names."""
    if not isinstance(x, NamedArray):
        raise NamedShapeError(
            f"tx.positional takes a NamedArray, got {type(x).__name__}. Fix: tx.named(array, axes) first; "
            f"a positional array needs no conversion",
            kind=ErrorKind.INVALID_ARGUMENT,
        )
    mapped = [name for name in spec.names if name in dict(x.mapped)]
    if mapped:  # axes held by enclosing vmap levels (an xmap or tx.vmap body): gathered into the data first
        from ._tnp._mapped_axes import gather

        x = gather(x, mapped, operation="tx.positional")
    check_positional(spec, x.axes, x.ndim, where=where, value=lambda: shape_repr(x))
    p = x.ndim
    source = [p + x.axes.index(name) for _, name in spec.dims]
    destination = [d for d, _ in spec.dims]
    return jnp.moveaxis(x.data, source, destination) if source != destination else x.data


def named(array: Any, axes: Any) -> NamedArray:
    """Name the dims of ``array`` with an xmap spec leaf: ``['batch', 'feat', ...]`` or ``{0: 'batch'}``.

    Args:
        array: the array whose dims to name (a jax or numpy array, or anything ``jnp.asarray`` takes).
        axes: an xmap spec leaf: a list names the leading dims (``...`` leaves the rest positional; without it
            the list must cover every dim), a dict names dims by position.

    Returns:
        A NamedArray of ``array``'s values with those dims named.

    Raises:
        NamedShapeError: a name given twice, a dim named twice, a position beyond ``array``'s rank, or a list
            without ``...`` that does not cover every dim.

    Examples:
        >>> x = tx.named(jnp.ones((8, 3, 4)), {0: "batch", 2: "features"})
        >>> x.named_shape == {"batch": 8, "features": 4} and x.shape == (3,)
        True
    """
    return to_named(array, parse_axis_map(axes, where="axes"), where="axes")


def positional(x: NamedArray, axes: Any) -> Any:
    """A positional array with ``x``'s named axes at the dims ``axes`` gives (an xmap spec leaf).

    Args:
        x: the NamedArray to turn into a plain array.
        axes: an xmap spec leaf placing every named axis of ``x``: ``['features', 'batch', ...]`` (``...``: the
            positional dims after them) or ``{1: 'batch', ...}``.

    Returns:
        A ``jax.Array`` with ``x``'s named axes at those dims and its positional dims in order.

    Raises:
        NamedShapeError: ``axes`` leaves out a named axis of ``x``, or names one it lacks.

    Examples:
        >>> x = tx.named(jnp.ones((8, 3, 4)), {0: "batch", 2: "features"})
        >>> tx.positional(x, ["features", "batch", ...]).shape
        (4, 8, 3)
    """
    return to_positional(x, parse_axis_map(axes, where="axes"), where="axes")
