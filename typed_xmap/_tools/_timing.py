"""Interleaved timing, shared by ``typed-xmap demo`` and the benchmarks in ``bench/``."""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Callable

__all__ = ["interleaved"]


def interleaved(cases: dict[str, Callable[[], object]], *, rounds: int = 7, calls: int = 200) -> dict[str, float]:
    """Median seconds per call of each case. Every round runs each case once, in a new random order, so
    drift hits all alike and no case always follows the same neighbour (which shifts caches and threads)."""
    samples: dict[str, list[float]] = {name: [] for name in cases}
    for fn in cases.values():  # warm up (compile, caches)
        fn()
    order = list(cases.items())
    shuffle = random.Random(0).shuffle
    for _ in range(rounds):
        shuffle(order)
        for name, fn in order:
            start = time.perf_counter()
            for _ in range(calls):
                fn()
            samples[name].append((time.perf_counter() - start) / calls)
    return {name: statistics.median(values) for name, values in samples.items()}
