"""Per-call latency of the CuTe algebra: tirx_layout.cute against pycute (CuTe's algebra in Python) on the same inputs.

Run ``python benchmarks/bench_cute.py`` (or ``./dev.sh bench``). Prints microseconds per call for both and the ratio
pycute / ours (above 1: ours is faster). Both sides take and return layout objects; ours checks every precondition
exactly, pycute asserts a weaker one.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pycute

sys.path.insert(0, str(Path(__file__).parent))
from _timing import ratio_main

from tirx_layout import cute


def pair(text: str):
    """Our layout and pycute's for one CuTe spelling."""
    ours = cute.Layout.parse(text)
    return ours, pycute.Layout(ours.shape, ours.stride)


def cases():
    """(operation, input description, ours as a thunk, pycute as a thunk)."""
    a, pa = pair("(6,2):(8,2)")
    b, pb = pair("(4,3):(3,1)")
    yield "composition", "(6,2):(8,2) o (4,3):(3,1)", lambda: cute.composition(a, b), lambda: pycute.composition(pa, pb)
    big, pbig = pair("((4,8),(2,2),(8,4)):((1,512),(4,64),(8,128))")
    tv, ptv = pair("((4,8),(2,2)):((64,1),(16,8))")
    yield (
        "composition",
        "rank-3 layout o TV layout",
        lambda: cute.composition(big, tv),
        lambda: pycute.composition(pbig, ptv),
    )
    c, pc = pair("4:2")
    yield "complement", "4:2 in 24", lambda: cute.complement(c, 24), lambda: pycute.complement(pc, 24)
    d, pd = pair("((2,2),(4,8)):((1,16),(2,64))")
    yield (
        "complement",
        "((2,2),(4,8)):((1,16),(2,64)) in 4096",
        lambda: cute.complement(d, 4096),
        lambda: pycute.complement(pd, 4096),
    )
    e, pe = pair("(4,8):(8,1)")
    yield "right_inverse", "(4,8):(8,1)", lambda: cute.right_inverse(e), lambda: pycute.right_inverse(pe)
    f, pf = pair("((4,8),(2,4)):((2,64),(1,8))")
    yield (
        "right_inverse",
        "((4,8),(2,4)):((2,64),(1,8))",
        lambda: cute.right_inverse(f),
        lambda: pycute.right_inverse(pf),
    )
    yield "left_inverse", "4:2", lambda: cute.left_inverse(c), lambda: pycute.left_inverse(pc)
    yield "left_inverse", "((2,2),(4,8)):((1,16),(2,64))", lambda: cute.left_inverse(d), lambda: pycute.left_inverse(pd)
    g, pg = pair("(2,(1,6)):(1,(6,2))")
    yield "coalesce", "(2,(1,6)):(1,(6,2))", lambda: cute.coalesce(g), lambda: pycute.coalesce(pg)
    h, ph = pair("(4,2,3):(2,1,8)")
    yield (
        "logical_divide",
        "(4,2,3):(2,1,8) / 4:2",
        lambda: cute.logical_divide(h, c),
        lambda: pycute.logical_divide(ph, pc),
    )

    L, pL = pair("(4,8):(8,1)")
    yield "call", "(4,8):(8,1) at 9", lambda: L(9), lambda: pL(9)
    yield "call", "(4,8):(8,1) at (1,2)", lambda: L((1, 2)), lambda: pL((1, 2))
    yield "call", "(4,8):(8,1) at 1, 2", lambda: L(1, 2), lambda: pL(1, 2)
    yield (
        "composition + fields",
        "(6,2):(8,2) o (4,3):(3,1), .shape and .stride",
        lambda: fields(cute.composition(a, b)),
        lambda: fields(pycute.composition(pa, pb)),
    )


def fields(layout):
    return layout.shape, layout.stride


def field_read_cost(rounds: int = 400, calls: int = 100) -> None:
    """Microseconds to read ``.shape`` and ``.stride`` of a fresh CuTe result: composing and reading, less composing.
    The best of many short rounds, alternating the two, so that a round fits between other processes' time slices on
    a shared machine (long rounds measure the contention, not the call)."""
    a, b = cute.Layout.parse("(6,2):(8,2)"), cute.Layout.parse("(4,3):(3,1)")
    big = cute.Layout.parse("((4,8),(2,2),(8,4)):((1,512),(4,64),(8,128))")
    cases = (("(6,2):(8,2) o (4,3):(3,1)", lambda: cute.composition(a, b)), ("rank-3", lambda: cute.make_layout(big)))
    for what, make in cases:
        best = {"alone": float("inf"), "with fields": float("inf")}
        for _ in range(rounds):
            for key, fn in (("alone", make), ("with fields", lambda: fields(make()))):
                start = time.perf_counter()
                for _ in range(calls):
                    fn()
                best[key] = min(best[key], (time.perf_counter() - start) / calls)
        cost = (best["with fields"] - best["alone"]) * 1e6
        print(f"fields of a fresh result ({what}): {cost:.2f} us (target: under 2 us)")


if __name__ == "__main__":
    ratio_main(cases, "pycute", __doc__)
    field_read_cost()
