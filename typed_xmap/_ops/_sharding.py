"""Sharding by axis name: ``tx.shard``, ``tx.constrain`` and ``tx.resources_of``.

``axis_resources={'batch': 'x', 'features': ('y', 'z')}`` places each named axis on mesh axes of the
current mesh (``jax.set_mesh(mesh)``, or the deprecated ``with mesh:``). The partition spec follows
from where each named axis sits in the value, so callers never write positional ``PartitionSpec``s.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax
from jax.core import Tracer
from jax.sharding import NamedSharding, PartitionSpec

from .._algebra import (
    ErrorKind,
    NamedShapeError,
    SerialLoop,
    check_conflicts,
    check_divisible,
    check_fits,
    mesh_axis_names,
    normalize_axis_resources,
    parse_axis_map,
    partition_entry,
)
from .._value._compat import tracing
from .._value._named_array import NamedArray, wrap
from .._value._placement import by_dim, dim_resources
from .._xmap._mesh import concrete_mesh, explicit_axes

__all__ = ["constrain", "current_mesh", "dim_resources", "partition_spec", "resources_of", "shard"]


def current_mesh(*, purpose: str) -> jax.sharding.Mesh:
    """The mesh set by ``jax.set_mesh`` (or ``with mesh:``); ``purpose`` words the error."""
    mesh: jax.sharding.Mesh | None = concrete_mesh()
    if mesh is None:
        raise NamedShapeError(
            f"{purpose} needs a device mesh, but none is set. Fix: mesh = jax.make_mesh((4, 2), ('x', 'y')); "
            f"then jax.set_mesh(mesh), or `with jax.set_mesh(mesh): ...`",
            kind=ErrorKind.INVALID_ARGUMENT,
        )
    return mesh


def _mesh_resources(
    axis_resources: Mapping[str, Any], mesh_shape: Mapping[str, int], *, purpose: str
) -> dict[str, tuple[str, ...]]:
    """Validate ``axis_resources`` against a mesh: mesh axes only (no serial loops), all present."""
    resources = normalize_axis_resources(axis_resources)
    for axis, assigned in resources.items():
        for resource in assigned:
            if isinstance(resource, SerialLoop):
                raise NamedShapeError(
                    f"{purpose}: axis_resources[{axis!r}] is a SerialLoop; serial loops only exist inside xmap. "
                    f"Fix: assign mesh axes here",
                    kind=ErrorKind.INVALID_ARGUMENT,
                )
            if resource not in mesh_shape:
                raise NamedShapeError(
                    f"{purpose}: axis_resources[{axis!r}] names mesh axis {resource!r}, but the current mesh has "
                    f"axes {', '.join(repr(a) for a in mesh_shape)}. Fix: use one of those, or set another mesh",
                    kind=ErrorKind.INVALID_ARGUMENT,
                )
    return mesh_axis_names(resources)


def _check_placement(
    named_shape: Mapping[str, int],
    resources: Mapping[str, tuple[str, ...]],
    mesh_shape: Mapping[str, int],
    *,
    purpose: str,
) -> None:
    """Conflicts and divisibility, by axis name and worded as ``xmap`` words them, before JAX's errors."""
    check_conflicts(list(named_shape), resources, f"the value given to {purpose}")
    check_divisible(named_shape, resources, mesh_shape)


def partition_spec(ndim: int, dims: Mapping[str, int], resources: Mapping[str, tuple[str, ...]]) -> PartitionSpec:
    """The positional spec of ``ndim`` dims that puts the axis at each dim (``dims``: name -> dim) on its mesh axes."""
    entries: list[Any] = [None] * ndim
    for name, dim in dims.items():
        entries[dim] = partition_entry(resources.get(name, ()))
    return PartitionSpec(*entries)


def on_own_mesh(data: Any, spec: PartitionSpec) -> NamedSharding:
    """``spec`` on the mesh ``data`` lives on (its type's, a tracer's too). JAX takes a bare ``PartitionSpec``
    only under ``jax.set_mesh``; this also serves values placed on a mesh and used outside that block."""
    return NamedSharding(jax.typeof(data).sharding.mesh, spec)


def on_own_mesh_by_dim(data: Any, assigned: Sequence[tuple[str, ...]]) -> NamedSharding:
    """The sharding that splits each dim of a value over ``assigned[dim]`` (as ``dim_resources`` reads them),
    on ``data``'s own mesh."""
    return on_own_mesh(data, PartitionSpec(*(partition_entry(a) for a in assigned)))


def on_auto_axes(fn: Callable[..., Any], sharding: NamedSharding | None) -> Callable[..., Any]:
    """``fn`` run with the Explicit axes of ``sharding``'s mesh made Auto (XLA partitions what runs inside, as
    jnp's indexing runs its gathers and scatters) and its result placed by ``sharding``; ``fn`` as it is where
    ``sharding`` is ``None`` (off Explicit meshes)."""
    if sharding is None:
        return fn
    auto: Callable[..., Any] = jax.sharding.auto_axes(fn, out_sharding=sharding, axes=sharding.mesh.explicit_axes)
    return auto


def split_count(data: Any, assigned: tuple[str, ...]) -> int:
    """Into how many parts a dim of ``data`` split over the mesh axes ``assigned`` is cut, on its own mesh."""
    shape = jax.typeof(data).sharding.mesh.shape
    return math.prod(int(shape[axis]) for axis in assigned)


def dividing(data: Any, shape: Sequence[int], assigned: Sequence[tuple[str, ...]]) -> tuple[tuple[str, ...], ...]:
    """``assigned`` (each dim's mesh axes, on ``data``'s mesh) where ``shape`` still splits evenly over them,
    ``()`` (whole on every device) where it does not."""
    return tuple(e if not e or shape[d] % split_count(data, e) == 0 else () for d, e in enumerate(assigned))


class _Target:
    """What to place: the array, its named shape, and where each named axis sits among its dims."""

    def __init__(self, x: Any, axes: Any, purpose: str) -> None:
        self.named: NamedArray | None = None
        if isinstance(x, NamedArray):
            if axes is not None:
                raise NamedShapeError(
                    f"{purpose}: x is a NamedArray, it carries its axes. Fix: drop axes=",
                    kind=ErrorKind.INVALID_ARGUMENT,
                )
            self.named, self.data = x, x.data
            self.dims = {name: x.ndim + i for i, name in enumerate(x.axes)}
            self.named_shape = x.named_shape
            return
        if axes is None:
            raise NamedShapeError(
                f"{purpose}: x is a positional array, so say which dims are which axes. "
                f"Fix: {purpose}(x, axis_resources, axes=['batch', ...])",
                kind=ErrorKind.INVALID_ARGUMENT,
            )
        self.data = x if hasattr(x, "shape") else jax.numpy.asarray(x)
        spec = parse_axis_map(axes, where="axes")
        check_fits(spec, tuple(self.data.shape), where="axes")
        self.dims = {name: dim for dim, name in spec.dims}
        self.named_shape = {name: self.data.shape[dim] for dim, name in spec.dims}

    def partition_spec(self, resources: Mapping[str, tuple[str, ...]]) -> PartitionSpec:
        """The positional spec that puts each named axis on its mesh axes."""
        return partition_spec(len(self.data.shape), self.dims, resources)

    def rebuild(self, data: Any) -> Any:
        """The placed data, as the same kind of value as the input."""
        if self.named is None:
            return data
        return wrap(data, self.named.axes, self.named.mapped)


def _is_named(v: Any) -> bool:
    return isinstance(v, NamedArray)


def _over_tree(
    x: Any, axes: Any, axis_resources: Mapping[str, Any], purpose: str, place: Callable[[Any, Any, str], Any]
) -> Any:
    """Apply ``place(value, axes, label)`` to ``x``, or to every NamedArray of the pytree ``x``.

    One model-wide mapping serves every value: each takes the keys it carries and ignores the rest (the
    parameters ignore ``batch``, a batch ignores ``mlp``), as Haliax's ``shard`` does. Leaves that are not
    NamedArrays are left as they are.
    """
    if axes is not None or isinstance(x, NamedArray) or hasattr(x, "shape"):
        return place(x, axes, purpose)
    leaves = jax.tree_util.tree_leaves_with_path(x, is_leaf=_is_named)
    named = [(path, v) for path, v in leaves if isinstance(v, NamedArray)]
    if not named:
        return place(x, axes, purpose)  # the "say which dims are which axes" error
    placed = {id(v): place(v, None, f"{purpose} (at {jax.tree_util.keystr(path)})") for path, v in named}
    return jax.tree.map(lambda v: placed[id(v)] if isinstance(v, NamedArray) else v, x, is_leaf=_is_named)


def shard(x: Any, axis_resources: Mapping[str, Any], memory_kind: str | None = None, *, axes: Any = None) -> Any:
    """Place ``x`` on the current mesh by axis name; unassigned axes and positional dims are replicated.

    ``x`` is a ``NamedArray``, a positional array with ``axes`` (an xmap spec leaf, e.g. ``['batch', ...]``),
    or a pytree of NamedArrays (``tx.shard(params, RESOURCES)``: one model-wide mapping for every value,
    each taking the keys it carries; other leaves are left as they are). ``memory_kind``
    (``'device'``, ``'pinned_host'``, ...) picks the memory. Returns the same kind of value as ``x``.

    Args:
        x: a NamedArray, a positional array with ``axes``, or a pytree of NamedArrays.
        axis_resources: axis name -> mesh axis (or tuple of mesh axes) it is split over.
        memory_kind: the memory to place it in.
        axes: the names of a positional array's dims.

    Returns:
        ``x`` placed (the same kind of value).

    Raises:
        NamedShapeError: no mesh, a mesh axis the mesh lacks, a size the mesh axis does not divide.
        AxisResourceConflict: two axes of one value on one mesh axis.

    Examples:
        >>> with jax.set_mesh(tx.fitting_mesh((4, 2), ("x", "y"))):
        ...     w = tx.shard(tx.named(jnp.ones((8, 4)), ["batch", "embed"]), {"batch": "x"})
    """
    return _over_tree(
        x, axes, axis_resources, "tx.shard", lambda v, a, where: _shard(v, axis_resources, memory_kind, a, where)
    )


def _shard(x: Any, axis_resources: Mapping[str, Any], memory_kind: str | None, axes: Any, where: str) -> Any:
    if tracing():  # inside jax.jit: the concrete mesh (its devices) is out of reach, and jit places by shardings
        normalize_axis_resources(axis_resources)  # a malformed mapping is told as outside jit, before the advice
        given = dict(axis_resources or {})  # None (nothing split, as outside jit) is {} to tx.constrain
        raise NamedShapeError(
            f"{where} is called inside jax.jit (or another JAX transformation), where it cannot put a value on "
            f"devices. Fix: inside a jitted function use tx.constrain(x, {given!r}); call "
            f"tx.shard outside jax.jit, on the arguments you pass in",
            kind=ErrorKind.INVALID_ARGUMENT,
        )
    target = _Target(x, axes, "tx.shard")
    mesh = current_mesh(purpose="tx.shard")
    resources = _mesh_resources(axis_resources, mesh.shape, purpose="tx.shard")
    _check_placement(target.named_shape, resources, mesh.shape, purpose=where)
    if memory_kind is not None:
        kinds = {m.kind for m in mesh.devices.flat[0].addressable_memories()}
        if memory_kind not in kinds:
            raise NamedShapeError(
                f"tx.shard: memory_kind={memory_kind!r} is not a memory of this mesh's devices "
                f"({', '.join(sorted(kinds))}). Fix: use one of those",
                kind=ErrorKind.INVALID_ARGUMENT,
            )
    sharding = NamedSharding(mesh, target.partition_spec(resources), memory_kind=memory_kind)
    return target.rebuild(jax.device_put(target.data, sharding))


def constrain(x: Any, axis_resources: Mapping[str, Any], *, axes: Any = None) -> Any:
    """Inside ``jax.jit``: ask for ``x`` to be sharded by axis name from here on.

    A sharding constraint on Auto mesh axes, a ``jax.reshard`` on Explicit ones (what each mode
    accepts). Outside ``jit`` it behaves as ``tx.shard``. ``x`` may be a pytree of NamedArrays, as in
    ``tx.shard``; two axes on one mesh axis that meet in a value raise ``tx.AxisResourceConflict``.

    Args:
        x: a NamedArray, a positional array with ``axes``, or a pytree of NamedArrays.
        axis_resources: axis name -> mesh axis (or tuple of mesh axes).
        axes: the names of a positional array's dims.

    Returns:
        ``x`` with the sharding asked for (the same kind of value).

    Raises:
        NamedShapeError: no mesh, a mesh axis the mesh lacks, a size the mesh axis does not divide.
        AxisResourceConflict: two axes of one value on one mesh axis.

    Examples:
        >>> with jax.set_mesh(tx.fitting_mesh((4, 2), ("x", "y"))):
        ...     x = tx.named(jnp.ones((8, 4)), ["batch", "embed"])
        ...     h = jax.jit(lambda v: tx.constrain(v * 2, {"batch": "x"}))(x)
    """
    return _over_tree(
        x, axes, axis_resources, "tx.constrain", lambda v, a, where: _constrain(v, axis_resources, a, where)
    )


def _constrain(x: Any, axis_resources: Mapping[str, Any], axes: Any, where: str) -> Any:
    target = _Target(x, axes, "tx.constrain")
    if not isinstance(target.data, Tracer) and not tracing():  # outside jit: a placement, as tx.shard makes
        return _shard(x, axis_resources, None, axes, where)
    abstract = jax.sharding.get_abstract_mesh()
    if abstract.empty:
        current_mesh(purpose="tx.constrain")  # raises the "no mesh" error
    shape = dict(abstract.shape)
    resources = _mesh_resources(axis_resources, shape, purpose="tx.constrain")
    _check_placement(target.named_shape, resources, shape, purpose=where)
    pspec = target.partition_spec(resources)
    if explicit_axes(abstract):
        return target.rebuild(jax.reshard(target.data, pspec))
    return target.rebuild(jax.lax.with_sharding_constraint(target.data, pspec))


def resources_of(x: NamedArray) -> dict[str, str | tuple[str, ...]]:
    """Which mesh axes each named axis of ``x`` is split over (unsplit axes are left out; ``{}`` on one device).

    Inside ``jit`` it is read from the traced value's type, which carries Explicit mesh axes; a value on Auto
    axes (the current mesh's, or its own from an earlier ``tx.shard``) raises, as the compiler places it later.

    Args:
        x: the NamedArray.

    Returns:
        Axis name -> the mesh axis (or tuple of mesh axes) it is split over.

    Raises:
        NamedShapeError: inside ``jit``, a value on Auto mesh axes (its placement is not known yet).

    Examples:
        >>> with jax.set_mesh(tx.fitting_mesh((4, 2), ("x", "y"))):
        ...     x = tx.shard(tx.named(jnp.ones((8, 4)), ["batch", "embed"]), {"batch": "x"})
        ...     tx.resources_of(x)
        {'batch': 'x'}
    """
    if not isinstance(x, NamedArray):
        raise NamedShapeError(
            f"tx.resources_of takes a NamedArray, got {type(x).__name__}. Fix: tx.named(array, axes) first, "
            f"or read array.sharding",
            kind=ErrorKind.INVALID_ARGUMENT,
        )
    assigned = _traced_dims(x) if isinstance(x.data, Tracer) else _placed_dims(x)
    placed = zip(x.axes, assigned[x.ndim :], strict=True)
    return {name: entry for name, a in placed if (entry := partition_entry(a)) is not None}


def _placed_dims(x: NamedArray) -> tuple[tuple[str, ...], ...]:
    """The mesh axes each dim of a concrete value is split over (none without a ``NamedSharding``)."""
    return by_dim(getattr(getattr(x.data, "sharding", None), "spec", None), x.data.ndim)


def _traced_dims(x: NamedArray) -> tuple[tuple[str, ...], ...]:
    """Inside ``jit``: the placement a traced value's type carries (Explicit mesh axes); Auto axes raise, as
    the compiler places those values after tracing: those of the current mesh, and those of the value's own
    (placed by ``tx.shard`` on an Auto mesh, then passed to a ``jit`` called outside that mesh's block)."""
    assigned = dim_resources(x.data)
    if assigned is not None:
        return assigned
    meshes = (jax.sharding.get_abstract_mesh(), getattr(getattr(jax.typeof(x.data), "sharding", None), "mesh", None))
    auto = list(
        dict.fromkeys(
            name
            for mesh in meshes
            if mesh is not None and not mesh.empty
            for name in mesh.axis_names
            if name not in explicit_axes(mesh)
        )
    )
    if auto:
        raise NamedShapeError(
            f"tx.resources_of: inside jit, a value on Auto mesh axes ({', '.join(auto)}) is placed by the "
            f"compiler, so its placement is not part of its type while tracing. Fix: call tx.resources_of "
            f"outside jit, or use a mesh with Explicit axes (jax.make_mesh's default), whose placement a traced "
            f"value carries",
            kind=ErrorKind.INVALID_ARGUMENT,
        )
    return ((),) * x.data.ndim  # no mesh, neither current nor the value's: one device, nothing is split
