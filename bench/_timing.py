"""Shared timing helpers for the benchmarks: interleaved rounds (from the package), ratio tables."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from typed_xmap._tools._timing import interleaved

__all__ = ["bench_mesh", "interleaved", "print_table"]


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
