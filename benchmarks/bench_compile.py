"""Time to build each example kernel to CUDA with the "tirx_layout" pipeline, against the same kernel written with
TVM's own layouts (or, for the register fragment, a plain local array) built by TVM's `pipeline="tirx"`, in one run.

Usage: python benchmarks/bench_compile.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import tvm
import tvm.tirx.layout as upstream
from _timing import best_times_interleaved
from tvm.script import tirx as T

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
import swizzled_staging
import warp_fragment

import tirx_layout
from tirx_layout import swizzle_mode

SM100A = tvm.target.Target({"kind": "cuda", "arch": "sm_100a"})
ROWS, COLS, THREADS = swizzled_staging.ROWS, swizzled_staging.COLS, swizzled_staging.THREADS


def upstream_staging(dtype: str, mode: str):
    """The staging kernel with TVM's own ComposeLayout on the shared tile (same swizzle as ours)."""
    ours = tirx_layout.mma_shared_layout(dtype, mode, (ROWS, COLS))
    sw = ours.swizzle
    tile = upstream.TileLayout(upstream.S[tuple(int(e) for e in (ROWS, COLS))])
    theirs = upstream.ComposeLayout(sw.per_element, sw.swizzle_len, sw.atom_len, tile)
    steps = ROWS * COLS // THREADS

    @T.prim_func
    def staging(A: T.Buffer((ROWS, COLS), dtype), B: T.Buffer((ROWS, COLS), dtype)):
        T.device_entry()
        bx = T.cta_id([1])
        tx = T.thread_id([THREADS])
        tile = T.alloc_buffer((ROWS, COLS), dtype, scope="shared", layout=theirs)
        for i in T.serial(steps):
            tile[i * 2 + tx // COLS, tx % COLS] = A[i * 2 + tx // COLS, tx % COLS]
        T.cuda.cta_sync()
        for i in T.serial(steps):
            B[i * 2 + tx // COLS, tx % COLS] = tile[tx % COLS, i * 2 + tx // COLS]

    assert swizzle_mode(ours, dtype) == mode
    return staging


def upstream_fragment():
    """The fragment kernel with a plain per-thread array of two registers."""

    @T.prim_func
    def fragment(A: T.Buffer((16, 8), "float32"), B: T.Buffer((16, 8), "float32")):
        T.device_entry()
        bx = T.cta_id([1])
        warp = T.warp_id([2])
        lane = T.lane_id([32])
        mine = T.alloc_buffer((2,), "float32", scope="local")
        for slot in T.serial(2):
            mine[slot] = A[2 * (lane // 4) + warp, 2 * (lane % 4) + slot] * T.float32(3)
        for slot in T.serial(2):
            B[2 * (lane // 4) + warp, 2 * (lane % 4) + slot] = mine[slot]

    return fragment


def pairs():
    kernels = dict(swizzled_staging.KERNELS)
    kernels.update(warp_fragment.KERNELS)
    for name, (ours, _) in kernels.items():
        if name.startswith("staging_"):
            _, short, mode = name.split("_")
            dtype = {"fp16": "float16", "bf16": "bfloat16", "fp32": "float32"}[short]
            yield name, ours, upstream_staging(dtype, mode)
        else:
            yield name, ours, upstream_fragment()


def main() -> None:
    print(f"{'kernel':24} {'tirx_layout (ms)':>17} {'upstream tirx (ms)':>19} {'ratio':>7}")
    for name, ours, theirs in pairs():
        t_ours, t_theirs = best_times_interleaved(
            [
                lambda: tvm.tirx.build(ours, target=SM100A, pipeline="tirx_layout"),
                lambda: tvm.tirx.build(theirs, target=SM100A, pipeline="tirx"),
            ],
            repeats=5,
        )
        print(f"{name:24} {t_ours * 1e3:17.1f} {t_theirs * 1e3:19.1f} {t_ours / t_theirs:7.2f}")


if __name__ == "__main__":
    main()
