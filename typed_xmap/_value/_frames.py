"""The xmaps being traced right now (for nesting), and which named axes a traced value carries.

Each named axis of an xmap is one ``jax.vmap(axis_name=...)`` level; while that level traces, its
``BatchTrace`` is recorded here. A value carries the axis iff it is batched at that trace: exactly
the "named shape" of the original (``vmap`` batches the union of its operands, and collectives such
as ``psum`` return unbatched values). Which trace is current and what a tracer is batched at are private
JAX, read in ``_compat`` (which fails loudly when JAX changes them).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ._compat import batched_at as compat_batched_at, current_trace as compat_current_trace

__all__ = ["Frame", "active_frames", "carries", "current_trace", "outer_carried", "thread_frames", "varying_mapped"]


@dataclass
class Frame:
    """One xmap being traced: its axes, their sizes and resources, the vmap trace of each axis."""

    names: tuple[str, ...]
    sizes: dict[str, int]
    resources: dict[str, tuple[Any, ...]]
    mesh: Any
    traces: dict[str, Any] = field(default_factory=dict)
    # values inner xmaps returned to this one's body, by id: (the value, kept alive; its PartitionSpec entries)
    placed: dict[int, tuple[Any, tuple[Any, ...]]] = field(default_factory=dict)


class _Frames(threading.local):
    stack: list[Frame]

    def __init__(self) -> None:
        self.stack = []


thread_frames = _Frames()  # this thread's stack of xmap bodies being traced


def active_frames() -> list[Frame]:
    return thread_frames.stack


def current_trace() -> Any:
    return compat_current_trace()


def varying_mapped(data: Any, mapped: tuple[tuple[str, int], ...]) -> tuple[tuple[str, int], ...]:
    """The mapped axes of a NamedArray whose ``data`` still varies along them.

    After ``jax.lax.psum(x, 'i')`` (or pmean, pmax, all_gather...) the data is no longer batched at
    axis ``i``'s vmap level, so ``i`` leaves the named shape, as in the original xmap. Where that
    cannot be seen (inside an inner ``jit``, outside xmap), the axes are kept.
    """
    frames = active_frames()
    if not frames:
        return mapped
    traces = {name: trace for frame in frames for name, trace in frame.traces.items()}
    if not any(current_trace() is trace for trace in traces.values()):
        return mapped  # e.g. inside a jit within the body: the vmap levels are not visible from here
    return tuple((name, size) for name, size in mapped if name not in traces or carries(data, traces[name]))


def carries(value: Any, trace: Any) -> bool:
    """Whether ``value`` is batched at ``trace`` (a vmap level), looking through the levels inside it."""
    return compat_batched_at(value, trace)


def outer_carried(outer: Sequence[Frame], value: Any) -> list[str]:
    """The enclosing xmaps' axes that ``value`` carries (is batched along), outermost first."""
    return [n for f in outer for n in f.names if n in f.traces and carries(value, f.traces[n])]
