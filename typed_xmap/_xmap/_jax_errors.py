"""JAX's errors in xmap's words: each names the axis, the argument and the way out, never our internals.

JAX reports some faults of an xmap call in terms of what xmap lowers to (``vmap`` levels, the internal
jitted function, ``shard_map``). Each function here turns one such error into ours (or returns the error
unchanged when it is something else); which error it is, JAX says only in its text, which
``_value/_compat.py`` reads.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax

from .._algebra import ErrorKind, NamedShapeError, UnboundAxisError
from .._value._compat import (
    is_incompatible_devices_error,
    is_multi_axis_permute_error,
    is_not_an_array_error,
    is_unlisted_by_vmap_error,
    unbound_axis_name,
)

__all__ = [
    "invalid_argument_error",
    "loop_axis_error",
    "multi_axis_permute_error",
    "on_other_devices_error",
    "unbound_axis_error",
    "unlisted_by_vmap_error",
]


def unbound_axis_error(error: NameError, scope: Sequence[str], fun_name: str) -> Exception:
    """JAX's "unbound axis name" (which suggests shard_map) in xmap's words; other NameErrors as they are."""
    name = unbound_axis_name(error)
    if name is None or isinstance(error, UnboundAxisError):
        return error
    return UnboundAxisError(
        f"a collective in {fun_name} uses axis {name!r}, which no enclosing xmap or vmap binds "
        f"(axes in scope: {', '.join(repr(n) for n in scope) or 'none'}). Fix: use one of those names, or "
        f"map {name!r} with an enclosing xmap (in_axes or axis_sizes)"
    )


def loop_axis_error(error: NameError, loop_axis: str | None, loop: Any) -> Exception:
    """A collective over the serial-loop axis, which no vmap level binds (JAX's error, or ours from it)."""
    jax_error = error.__cause__ if isinstance(error, UnboundAxisError) else error
    if loop_axis is None or jax_error is None or unbound_axis_name(jax_error) != loop_axis:
        return error
    return NamedShapeError(
        f"axis {loop_axis!r} is assigned the serial loop {loop!r}, so it cannot be "
        f"referenced inside the xmapped function (collectives, axis_index) by name. Fix: assign {loop_axis!r} "
        f"to a mesh axis, or loop over an axis that the body does not name",
        kind=ErrorKind.INVALID_ARGUMENT,
    )


def unlisted_by_vmap_error(error: ValueError, fun_name: str) -> Exception:
    """vmap's own out_axes check, should ours ever miss a carried axis."""
    if isinstance(error, NamedShapeError) or not is_unlisted_by_vmap_error(error):
        return error
    return NamedShapeError(
        f"an output of {fun_name} carries a named axis that its out_axes do not list ({error}). "
        f"Fix: list every named axis an output carries in its out_axes, or reduce it in the body",
        kind=ErrorKind.AXIS_MISSING,
    )


def _permutes(jaxpr: Any) -> list[Any]:
    """The ``ppermute`` equations of ``jaxpr`` and its sub-jaxprs."""
    found = []
    for eqn in jaxpr.eqns:
        if eqn.primitive.name == "ppermute":
            found.append(eqn)
        for param in eqn.params.values():
            for sub in param if isinstance(param, (tuple, list)) else (param,):
                inner = getattr(sub, "jaxpr", sub)
                if hasattr(inner, "eqns"):
                    found.extend(_permutes(inner))
    return found


def multi_axis_permute_error(
    error: AssertionError,
    element: Callable[..., Any],
    avals: Sequence[Any],
    axis_env: Sequence[tuple[str, int]],
    fun_name: str,
) -> Exception:
    """``lax.ppermute``/``pshuffle`` over several axes, which JAX's vmap rule asserts against."""
    if not is_multi_axis_permute_error(error):
        return error
    from ._inference import user_line

    axes: tuple[Any, ...] = ()
    where = ""
    try:
        jaxpr = jax.make_jaxpr(element, axis_env=list(axis_env))(*avals)
        for eqn in _permutes(jaxpr.jaxpr):
            if len(eqn.params["axis_name"]) > 1:
                axes, where = tuple(eqn.params["axis_name"]), f" at {user_line(eqn.source_info)}"
                break
    except Exception:
        pass
    over = f"axes {', '.join(repr(a) for a in axes)}" if axes else "several axes"
    return NamedShapeError(
        f"a lax.ppermute/pshuffle in {fun_name}{where} permutes over {over} together, which xmap's vmap levels "
        f"cannot do (each level permutes one axis). Fix: permute over one axis at a time (one ppermute per axis, "
        f"when the permutation factors), or merge the axes into one named axis before the xmap and permute over it",
        kind=ErrorKind.INVALID_ARGUMENT,
    )


def invalid_argument_error(error: TypeError, fun_name: str, args: tuple[Any, ...]) -> Exception:
    """jit's "not a valid JAX type" (which names our internal function) for the argument at fault."""
    if not is_not_an_array_error(error):
        return error
    for path, leaf in jax.tree_util.tree_flatten_with_path(args)[0]:
        try:
            jax.numpy.result_type(leaf)
        except TypeError:
            return NamedShapeError(
                f"xmap of {fun_name}: args{jax.tree_util.keystr(path)} is a {type(leaf).__name__} ({leaf!r:.40}), "
                f"not an array. Fix: pass arrays or numbers (jnp.asarray(...)); close over other values in the "
                f"function instead of passing them",
                kind=ErrorKind.INVALID_ARGUMENT,
            )
    return error


def on_other_devices_error(error: ValueError, fun_name: str, args: tuple[Any, ...], mesh: Any) -> Exception:
    """jit's "incompatible devices" (which names our internal function) in xmap's words."""
    if not is_incompatible_devices_error(error):
        return error
    devices = set(mesh.devices.flat) if mesh is not None else None
    for path, leaf in jax.tree_util.tree_flatten_with_path(args)[0]:
        sharding = getattr(leaf, "sharding", None)
        if sharding is None or getattr(leaf, "committed", getattr(leaf, "_committed", True)) is False:
            continue
        if devices is not None and set(sharding.device_set) != devices:
            ids = sorted(d.id for d in sharding.device_set)
            return NamedShapeError(
                f"xmap of {fun_name}: args{jax.tree_util.keystr(path)} is a jax.Array placed on devices {ids}, but "
                f"the call runs on the current mesh's {len(devices)} devices; xmap does not move committed arrays "
                f"between devices implicitly. Fix: create it under the same mesh, or move it first: "
                f"jax.device_put(x, jax.sharding.NamedSharding(mesh, jax.P()))",
                kind=ErrorKind.INVALID_ARGUMENT,
            )
    return error
