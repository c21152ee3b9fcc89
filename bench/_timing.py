"""Shared timing helpers for the benchmarks: interleaved rounds (from the package), ratio tables, pytree
flatten/unflatten per leaf, and the summary row a model family records for ``typed-xmap bench``'s closing table."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from typed_xmap._tools._summary import record
from typed_xmap._tools._timing import interleaved

__all__ = ["bench_mesh", "flatten_unflatten", "interleaved", "print_table", "record"]


def bench_mesh(shape: Sequence[int], names: Sequence[str], **kwargs: Any) -> Any:
    """``tx.fitting_mesh`` on the default backend (timings are the default backend's), and say what it got:
    a bench written for 8 devices runs its rows on a smaller mesh where there are fewer, and says so."""
    import typed_xmap as tx
    from typed_xmap._ops._devices import describe_mesh

    mesh = tx.fitting_mesh(shape, names, **kwargs)
    wanted = "x".join(map(str, shape))
    fitted = "" if tuple(mesh.shape.values()) == tuple(shape) else f" (written for {wanted}: fitted to the devices)"
    print(f"on {describe_mesh(mesh)}{fitted}")
    return mesh


def print_table(title: str, times: dict[str, float], baseline: str, *, goal: str = "") -> None:
    base = times[baseline]
    print(f"{title}" + (f"  (goal: {goal})" if goal else ""))
    for name, seconds in times.items():
        print(f"  {name:<48} {seconds * 1e6:10.2f} us   {seconds / base:6.2f}x   {(seconds - base) * 1e6:+9.2f} us")


def flatten_unflatten(trees: dict[str, Any], rounds: int = 21, calls: int = 20) -> dict[str, tuple[float, float]]:
    """name -> (flatten, unflatten) seconds per leaf of ``jax.tree.flatten`` and ``treedef.unflatten`` (a ``jit``
    call's host pytree work), interleaved; this thread's CPU time (host-only work: other processes on a shared
    machine do not count)."""
    import jax

    cases, counts = {}, {}
    for name, tree in trees.items():
        leaves, treedef = jax.tree.flatten(tree)
        counts[name] = len(leaves)
        cases[(name, "flatten")] = lambda tree=tree: jax.tree.flatten(tree)
        cases[(name, "unflatten")] = lambda leaves=leaves, treedef=treedef: treedef.unflatten(leaves)
    named = {f"{n} {op}": fn for (n, op), fn in cases.items()}
    times = interleaved(named, rounds=rounds, calls=calls, clock=time.thread_time)
    return {n: (times[f"{n} flatten"] / c, times[f"{n} unflatten"] / c) for n, c in counts.items()}
