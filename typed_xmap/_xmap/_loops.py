"""Serial loops: ``serial_loop(name, n)`` contexts, and which axis of an xmap loops (``_loop_level`` traces it).

``axis_resources={'i': SerialLoop(4)}`` (or the name of an active ``serial_loop``) runs axis ``i`` in 4
sequential chunks, each chunk vmapped. A loop must be an axis's last resource and an xmap has one loop axis.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Mapping

from .._algebra import Resource, SerialLoop, loop_conflict_error, resource_conflicts

__all__ = ["active_loop_key", "loop_axis", "resolve_loops", "serial_loop", "thread_loops"]

Resources = Mapping[str, tuple[Resource, ...]]


class _Loops(threading.local):
    def __init__(self) -> None:
        self.active: dict[str, SerialLoop] = {}


thread_loops = _Loops()  # this thread's active serial_loop contexts


@contextlib.contextmanager
def serial_loop(name: str, length: int) -> Iterator[SerialLoop]:
    """A named loop resource: inside, ``axis_resources={'i': name}`` runs axis ``i`` in ``length`` chunks.

    Args:
        name: the loop resource's name, used in ``axis_resources``.
        length: how many chunks the axis runs in (it must divide the axis's size).

    Returns:
        A context manager; inside it, xmaps may name the loop in ``axis_resources``.

    Raises:
        NamedShapeError: a length that is not a positive int.

    Examples:
        >>> with tx.serial_loop("l", 2):
        ...     doubled = tx.xmap(lambda v: v * 2, in_axes=["i", ...], out_axes=["i", ...], axis_resources={"i": "l"})
        ...     doubled(jnp.ones(4)).shape
        (4,)
    """
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
