"""Timing shared by the benchmarks: best per-call time over repeated rounds."""

from __future__ import annotations

import argparse
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


def print_ratios(cases, other: str, repeats: int = 15) -> None:
    """Time every ``(operation, input, ours, theirs)`` case (thunks, interleaved) and print microseconds per call for
    both and the ratio ``theirs / ours`` (above 1: ours is faster)."""
    rows = list(cases)
    op_width = max(len("operation"), *(len(r[0]) for r in rows))
    in_width = max(len("input"), *(len(r[1]) for r in rows))
    print(
        f"{'operation':{op_width}s} {'input':{in_width}s} {'ours us':>9s} {other + ' us':>12s} {other + '/ours':>14s}"
    )
    for op, what, ours, theirs in rows:
        mine, theirs_time = best_times_interleaved([ours, theirs], repeats)
        print(
            f"{op:{op_width}s} {what:{in_width}s} {mine * 1e6:9.2f} {theirs_time * 1e6:12.2f} "
            f"{theirs_time / mine:13.2f}x"
        )


def ratio_main(cases, other: str, description: str) -> None:
    """Command line of a side-by-side benchmark: ``--repeats``, then :func:`print_ratios` over ``cases()``."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--repeats", type=int, default=15)
    print_ratios(cases(), other, parser.parse_args().repeats)
