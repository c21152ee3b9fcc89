"""A serial-loop axis traced as ``lax.scan`` over device-local chunks, each chunk vmapped.

Kept apart from ``_loops`` (which ``_plan`` imports) because it takes a ``Plan``: the imports run one way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from jax.tree_util import tree_map

from .._algebra import SerialLoop
from ._plan import Plan

__all__ = ["loop_level"]


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
