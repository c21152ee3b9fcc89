"""``tx.vmap(f, axis="batch")``: map a function over a named axis of its NamedArray arguments.

Each NamedArray leaf (of any argument pytree) that carries ``axis`` is mapped over it; every other leaf is
broadcast (the same value for each element). Inside ``f`` the mapped axis is held by a ``jax.vmap`` level,
as in an xmap body (``NamedArray.mapped``): ``tnp`` reductions and ``jax.lax`` collectives reach it by name.
Every output leaf gets the axis back as a named axis (a positional array becomes a NamedArray with that one
named axis). ``tx.vmap(jax.grad(loss), axis="batch")(params, batch)`` gives per-example gradients.

On a mesh (``jax.set_mesh``), ``axis_resources={"batch": "data"}`` passes ``spmd_axis_name`` to
``jax.vmap``, so values computed per element stay split over ``data`` (per-example gradients stay sharded).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
from jax.tree_util import keystr, tree_flatten, tree_flatten_with_path, tree_unflatten

from .._algebra import ErrorKind, NamedShapeError, mapped_axes, mapped_axis_size, unknown_resource_keys
from .._value._named_array import NamedArray, wrap
from .._value._tracebacks import entry_point

__all__ = ["vmap"]


def _is_named(value: Any) -> bool:
    return isinstance(value, NamedArray)


def vmap(
    f: Callable[..., Any],
    axis: str | Sequence[str],
    *,
    axis_resources: Mapping[str, str | tuple[str, ...]] | None = None,
) -> Callable[..., Any]:
    """``f`` mapped over the named axis ``axis`` (or several, the first outermost) of its NamedArray arguments.

    ``axis_resources`` maps an axis name to the mesh axis (or tuple of mesh axes) it is split over; it is
    ``jax.vmap``'s ``spmd_axis_name``, so intermediate and per-element results keep that sharding.

    Args:
        f: the per-example function (it may be ``@tx.typed``, annotated without the mapped axes).
        axis: the axis name to map over, or several (the first outermost).
        axis_resources: mesh axis (or axes) each mapped axis is split over.

    Returns:
        ``f`` mapped: arguments carrying ``axis`` are sliced along it, others broadcast; each result gains
        ``axis``.

    Raises:
        NamedShapeError: no axis, an axis given twice, no argument carrying it, two sizes for it, or
            resources for an axis not mapped.

    Examples:
        >>> norms = tx.vmap(lambda v: tnp.sum(v * v, "embed"), axis="batch")
        >>> norms(tx.named(jnp.ones((4, 3)), ["batch", "embed"])).named_shape == {'batch': 4}
        True
    """
    names = mapped_axes(axis)
    resources = dict(axis_resources or {})
    unknown = unknown_resource_keys(resources, names)
    if unknown:
        raise NamedShapeError(
            f"tx.vmap: axis_resources names axis {unknown[0]!r}, which is not mapped (mapped: "
            f"{', '.join(map(repr, names))}). Fix: give resources only to the mapped axes",
            kind=ErrorKind.AXIS_MISSING,
        )
    mapped = f
    for name in reversed(names):
        mapped = _map_one(mapped, name, resources.get(name))
    return entry_point(functools.wraps(f)(mapped))


def _map_one(f: Callable[..., Any], name: str, spmd: str | tuple[str, ...] | None) -> Callable[..., Any]:
    operation = f"tx.vmap(..., axis={name!r})"

    def mapped(*args: Any, **kwargs: Any) -> Any:
        pairs, treedef = tree_flatten_with_path((args, kwargs), is_leaf=_is_named)
        labels = [_label(path) for path, _ in pairs]
        leaves = [leaf for _, leaf in pairs]
        shapes = [
            (lab, leaf.named_shape if isinstance(leaf, NamedArray) else None)
            for lab, leaf in zip(labels, leaves, strict=True)
        ]
        size = mapped_axis_size(name, shapes, operation=operation)
        moved = [i for i, leaf in enumerate(leaves) if isinstance(leaf, NamedArray) and name in leaf.axes]
        data = [_to_front(leaves[i], name) for i in moved]
        out_tree: list[Any] = []

        def body(*parts: Any) -> list[Any]:
            values = list(leaves)
            for i, part in zip(moved, parts, strict=True):
                leaf = leaves[i]
                values[i] = wrap(part, tuple(a for a in leaf.axes if a != name), (*leaf.mapped, (name, size)))
            call_args, call_kwargs = tree_unflatten(treedef, values)
            outs, tree = tree_flatten(f(*call_args, **call_kwargs), is_leaf=_is_named)
            out_tree[:] = [tree, [(o.axes, o.mapped) if isinstance(o, NamedArray) else None for o in outs]]
            return [o.data if isinstance(o, NamedArray) else jnp.asarray(o) for o in outs]

        results = jax.vmap(body, in_axes=0, out_axes=0, axis_name=name, axis_size=size, spmd_axis_name=spmd)(*data)
        tree, layouts = out_tree
        return tree_unflatten(tree, [_from_front(r, layout, name) for r, layout in zip(results, layouts, strict=True)])

    return mapped


def _label(path: Any) -> str:
    """``args[0]['w']`` for a leaf of the positional arguments, ``kwargs['x']`` for a keyword's."""
    if not path:
        return "the argument"
    head, rest = path[0], path[1:]
    where = "args" if getattr(head, "idx", None) == 0 else "kwargs"
    return where + keystr(rest)


def _to_front(x: NamedArray, name: str) -> Any:
    """``x``'s data with the named dim ``name`` moved to the front (where ``jax.vmap`` maps)."""
    return jnp.moveaxis(x.data, x.ndim + x.axes.index(name), 0)


def _from_front(data: Any, layout: tuple[tuple[str, ...], tuple[tuple[str, int], ...]] | None, name: str) -> Any:
    """An output leaf with ``jax.vmap``'s new front dim as the named axis ``name``."""
    axes, mapped = layout if layout is not None else ((), ())
    positional = data.ndim - 1 - len(axes)
    data = jnp.moveaxis(data, 0, positional) if positional else data
    return wrap(data, (name, *axes), tuple((n, s) for n, s in mapped if n != name))
