"""Timing shared by the benchmarks: best per-call time over repeated rounds."""

from __future__ import annotations

import time


def best_time(fn, repeats: int, min_seconds: float = 0.05) -> float:
    """Best per-call time of ``fn`` over ``repeats`` rounds; each round runs it enough times to last
    ``min_seconds``, after one warm-up call (per-layout caches, imports) outside the measurement."""
    fn()
    start = time.perf_counter()
    fn()
    number = max(1, int(min_seconds / max(time.perf_counter() - start, 1e-9)))
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - start) / number)
    return best


def best_times_interleaved(fns, repeats: int = 15, min_seconds: float = 0.02) -> list[float]:
    """Best per-call time of each of ``fns``, measured in alternating rounds so that load from other processes
    on a shared machine hits every function alike."""
    numbers = []
    for fn in fns:
        fn()
        start = time.perf_counter()
        fn()
        numbers.append(max(1, int(min_seconds / max(time.perf_counter() - start, 1e-9))))
    best = [float("inf")] * len(fns)
    for _ in range(repeats):
        for k, (fn, number) in enumerate(zip(fns, numbers, strict=True)):
            start = time.perf_counter()
            for _ in range(number):
                fn()
            best[k] = min(best[k], (time.perf_counter() - start) / number)
    return best
