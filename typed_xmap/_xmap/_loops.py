"""Serial loops: ``serial_loop(name, n)`` contexts, and a loop axis traced as ``lax.scan`` over chunks.

``axis_resources={'i': SerialLoop(4)}`` (or the name of an active ``serial_loop``) runs axis ``i`` in 4
sequential chunks, each chunk vmapped. A loop must be an axis's last resource and an xmap has one loop axis.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

import jax
import jax.numpy as jnp
from jax.tree_util import tree_map

from .._algebra import Resource, SerialLoop, loop_conflict_error, resource_conflicts

if TYPE_CHECKING:
    from ._plan import Plan

__all__ = ["active_loop_key", "loop_axis", "loop_level", "resolve_loops", "serial_loop", "thread_loops"]

Resources = Mapping[str, tuple[Resource, ...]]


class _Loops(threading.local):
    def __init__(self) -> None:
        self.active: dict[str, SerialLoop] = {}


thread_loops = _Loops()  # this thread's active serial_loop contexts


@contextlib.contextmanager
def serial_loop(name: str, length: int) -> Iterator[SerialLoop]:
    """A named loop resource: inside, ``axis_resources={'i': name}`` runs axis ``i`` in ``length`` chunks."""
    loop = SerialLoop(length, name)
    previous = thread_loops.active.get(name)
    thread_loops.active[name] = loop
    try:
        yield loop
    finally:
        if previous is None:
            del thread_loops.active[name]
        else:
            thread_loops.active[name] = previous


def active_loop_key(names: frozenset[str]) -> tuple[tuple[str, int], ...]:
    """The active ``serial_loop`` contexts among ``names`` (``()`` when none): what a program depends on."""
    active = thread_loops.active
    if not active or not names or not active.keys() & names:  # no loop at all: the common case, cheaply
        return ()
    return tuple(sorted((n, active[n].length) for n in names if n in active))


def resolve_loops(resources: Resources) -> dict[str, tuple[Resource, ...]]:
    """``axis_resources`` with names of active ``serial_loop`` contexts replaced by their loops."""
    active = thread_loops.active
    return {
        axis: tuple(active.get(r, r) if isinstance(r, str) else r for r in assigned)
        for axis, assigned in resources.items()
    }


def loop_axis(resources: Resources) -> str | None:
    """The one axis run as a serial loop, or ``None``; checks where loops may appear."""
    loops = []
    for axis, assigned in resources.items():
        kinds = [isinstance(r, SerialLoop) for r in assigned]
        if any(kinds):
            if sum(kinds) > 1 or not kinds[-1]:
                mesh_axes = ", ".join(repr(r) for r in assigned if not isinstance(r, SerialLoop))
                raise NotImplementedError(
                    f"axis_resources[{axis!r}] = {assigned!r}: a serial loop must be the last resource of "
                    f"an axis, and an axis has at most one loop. Fix: write ({mesh_axes}, SerialLoop(n))"
                )
            loops.append(axis)
    shared = [c for c in resource_conflicts(loops, resources) if c.loop is not None]
    if shared:
        raise loop_conflict_error(shared[0])
    if len(loops) > 1:
        raise NotImplementedError(
            f"axes {loops[0]!r} and {loops[1]!r} both have serial-loop resources; only one loop per xmap is "
            f"supported. Fix: loop over one axis, or nest two xmaps"
        )
    return loops[0] if loops else None


def loop_level(plan: Plan, level_body: Callable[..., Any], k: int) -> Callable[..., Any]:
    """A serial-loop axis: ``lax.scan`` over ``n`` chunks, each chunk a vmap over its slice of the axis.

    The axis (size S, mesh part m, n loop steps) is viewed as (m, n, S/(m n)), so each step
    processes a device-local chunk; outputs are put back in the same order.
    """
    name = plan.names[k]
    loop = plan.resources[name][-1]
    assert isinstance(loop, SerialLoop)
    steps = loop.length
    mesh_part = plan.mesh_part(name)
    chunk = plan.sizes[name] // (mesh_part * steps)
    in_pos, out_pos = plan.in_positions[k], plan.out_positions[k]
    chunk_body = jax.vmap(  # axis_size: the axis may come from axis_sizes alone, mapping no input
        level_body,
        in_axes=in_pos,
        out_axes=out_pos,
        spmd_axis_name=plan.spmd_axis_name(name),
        axis_size=mesh_part * chunk,
    )

    def run(*values: Any) -> Any:
        fixed = [v for v, p in zip(values, in_pos, strict=False) if p is None]
        mapped = [
            _chunked(v, p, steps, mesh_part, chunk) for v, p in zip(values, in_pos, strict=False) if p is not None
        ]

        def step(carry: Any, xs: Any) -> Any:
            chunks, constants = iter(xs), iter(fixed)
            args = [next(constants) if p is None else jnp.moveaxis(next(chunks), 0, p) for p in in_pos]
            return carry, chunk_body(*args)

        _, stacked = jax.lax.scan(step, None, mapped, length=steps)
        return tuple(_unloop(sub, p, steps, mesh_part, chunk) for sub, p in zip(stacked, out_pos, strict=False))

    return run


def _chunked(value: Any, pos: int, steps: int, mesh_part: int, chunk: int) -> Any:
    """The loop axis at ``pos`` as (steps, mesh_part * chunk, ...): one device-local chunk per step."""
    value = jnp.moveaxis(value, pos, 0)
    value = value.reshape((mesh_part, steps, chunk, *value.shape[1:])).swapaxes(0, 1)
    return value.reshape((steps, mesh_part * chunk, *value.shape[3:]))


def _unloop(sub: Any, pos: int | None, steps: int, mesh_part: int, chunk: int) -> Any:
    """Undo the loop's chunking for one output subtree: stacked (steps, ...) back to the axis at ``pos``."""

    def one(value: Any) -> Any:
        if pos is None:
            return value[0]  # not carrying the loop axis: the same in every step
        value = jnp.moveaxis(value, pos + 1, 1)  # (steps, mesh_part * chunk, ...)
        rest = value.shape[2:]
        value = value.reshape((steps, mesh_part, chunk, *rest)).swapaxes(0, 1)
        value = value.reshape((mesh_part * steps * chunk, *rest))
        return jnp.moveaxis(value, 0, pos)

    return tree_map(one, sub)
