"""Interleaved timing, shared by ``typed-xmap demo`` and the benchmarks in ``bench/``."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

__all__ = ["interleaved"]


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
