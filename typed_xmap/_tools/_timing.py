"""Interleaved timing, shared by ``typed-xmap demo`` and the benchmarks in ``bench/``."""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Callable

__all__ = ["interleaved"]


def interleaved(
    cases: dict[str, Callable[[], object]],
    *,
    rounds: int = 7,
    calls: int = 200,
    clock: Callable[[], float] = time.perf_counter,
) -> dict[str, float]:
    """Median seconds per call of each case. Every round runs each case once, in a new random order, so
    drift hits all alike and no case always follows the same neighbour (which shifts caches and threads).
    ``clock=time.thread_time`` counts this thread's CPU time only: for host-only work on a shared machine,
    where other processes' time slices would land in wall-clock time."""
    samples: dict[str, list[float]] = {name: [] for name in cases}
    for fn in cases.values():  # warm up (compile, caches)
        fn()
    order = list(cases.items())
    shuffle = random.Random(0).shuffle
    for _ in range(rounds):
        shuffle(order)
        for name, fn in order:
            start = clock()
            for _ in range(calls):
                fn()
            samples[name].append((clock() - start) / calls)
    return {name: statistics.median(values) for name, values in samples.items()}
