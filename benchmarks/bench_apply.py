"""Full-domain apply: tirx_layout's numpy apply against per-element loops over upstream, ours and pycute.

Run ``python benchmarks/bench_apply.py`` (or ``./dev.sh bench``). Prints one row per (layout, method) with the best
of several repeats and the speed-up of the numpy apply over each loop.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from tvm.tirx import layout as upstream

sys.path.insert(0, str(Path(__file__).parent))
from _timing import best_times_interleaved

from tirx_layout import S, TCol, TileLayout, TLane, laneid, warpid

try:
    import pycute
except ImportError:  # pycute is optional here: it only adds a reference column
    pycute = None


def cases():
    u = upstream
    yield (
        "TMEM S[(128,256):(1@TLane,1@TCol)]",
        TileLayout(S[(128, 256) : (1 @ TLane, 1 @ TCol)]),
        u.TileLayout(u.S[(128, 256) : (1 @ u.Axis.get("TLane"), 1 @ u.Axis.get("TCol"))]),
        (128, 256),
        # the same 32768-element domain as one linear CuTe layout (column-major, so the strides are swapped)
        (pycute.Layout((256, 128), (1, 256)) if pycute else None),
    )
    yield (
        "warp fragment S[(8,2,4,2):(4@laneid,1@warpid,1@laneid,1)]",
        TileLayout(S[(8, 2, 4, 2) : (4 @ laneid, 1 @ warpid, 1 @ laneid, 1)]),
        u.TileLayout(
            u.S[(8, 2, 4, 2) : (4 @ u.Axis.get("laneid"), 1 @ u.Axis.get("warpid"), 1 @ u.Axis.get("laneid"), 1)]
        ),
        (8, 16),
        (pycute.Layout((2, 4, 2, 8), (1, 1, 1, 4)) if pycute else None),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    print(f"{'layout':60s} {'method':44s} {'elements':>9s} {'microseconds':>13s} {'(a) is':>14s} {'(a2) is':>14s}")
    for name, ours, theirs, shape, cute in cases():
        i, j = np.meshgrid(np.arange(shape[0]), np.arange(shape[1]), indexing="ij")
        coords = list(zip(i.ravel().tolist(), j.ravel().tolist(), strict=True))
        n = len(coords)
        flat = np.arange(n)
        methods = [
            ("(a) tirx_layout numpy apply, (i, j) arrays", lambda: ours.apply(i, j, shape=list(shape))),
            ("(a2) tirx_layout numpy apply, flat indices", lambda: ours.apply(flat)),
            (
                "(b) upstream tvm.tirx.layout, per element",
                lambda: [theirs.apply(a, b, shape=list(shape)) for a, b in coords],
            ),
            ("(c) tirx_layout, per element", lambda: [ours.apply(a, b, shape=list(shape)) for a, b in coords]),
        ]
        if cute is not None:
            methods.append(("(d) pycute, per element (one linear axis)", lambda: [cute(k) for k in range(n)]))
        times = best_times_interleaved([fn for _, fn in methods], args.repeats)
        rows = list(zip([label for label, _ in methods], times, strict=True))
        ours_numpy, ours_flat, upstream_loop, ours_loop = times[:4]
        for method, seconds in rows:
            ratios = (
                ("", "")
                if method.startswith("(a")
                else (f"{seconds / ours_numpy:,.0f}x faster", f"{seconds / ours_flat:,.0f}x faster")
            )
            print(f"{name:60s} {method:44s} {n:9d} {seconds * 1e6:13.1f} {ratios[0]:>14s} {ratios[1]:>14s}")
        speedup = upstream_loop / ours_loop
        print(f"{name:60s} {'(b)/(c): our per-element apply is':44s} {n:9d} {'':13s} {speedup:7.1f}x faster")


if __name__ == "__main__":
    main()
