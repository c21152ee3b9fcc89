"""Shared timing helpers for the benchmarks: interleaved rounds (from the package), ratio tables."""

from __future__ import annotations

from typed_xmap._tools._timing import interleaved

__all__ = ["interleaved", "print_table"]


def print_table(title: str, times: dict[str, float], baseline: str, *, goal: str = "") -> None:
    base = times[baseline]
    print(f"{title}" + (f"  (goal: {goal})" if goal else ""))
    for name, seconds in times.items():
        print(f"  {name:<48} {seconds * 1e6:10.2f} us   {seconds / base:6.2f}x   {(seconds - base) * 1e6:+9.2f} us")
