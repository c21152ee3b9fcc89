"""Shared timing helpers for the benchmarks: interleaved rounds, medians, ratio tables."""

from __future__ import annotations

import statistics
import time
from typing import Callable


def interleaved(cases: dict[str, Callable[[], object]], *, rounds: int = 7, calls: int = 200) -> dict[str, float]:
    """Median seconds per call of each case, the cases run round-robin so drift hits all alike."""
    samples: dict[str, list[float]] = {name: [] for name in cases}
    for fn in cases.values():  # warm up (compile, caches)
        fn()
    for _ in range(rounds):
        for name, fn in cases.items():
            start = time.perf_counter()
            for _ in range(calls):
                fn()
            samples[name].append((time.perf_counter() - start) / calls)
    return {name: statistics.median(values) for name, values in samples.items()}


def print_table(title: str, times: dict[str, float], baseline: str, *, goal: str = "") -> None:
    base = times[baseline]
    print(f"{title}" + (f"  (goal: {goal})" if goal else ""))
    for name, seconds in times.items():
        print(f"  {name:<48} {seconds * 1e6:10.2f} us   {seconds / base:6.2f}x   {(seconds - base) * 1e6:+9.2f} us")
