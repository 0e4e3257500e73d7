"""Shared timing helper for the benchmarks (not a test)."""
from __future__ import annotations

import time
from statistics import median
from typing import Callable


def timeit(fn: Callable[[], object], repeat: int = 5, warmup: int = 1) -> float:
    """Median wall time of ``fn()`` in seconds."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return median(times)
