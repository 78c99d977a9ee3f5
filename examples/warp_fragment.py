"""A register fragment in the guide's warp layout, filled per thread and written out through its per-thread view.

The fragment is a 16x8 tile spread over two warps: ``S[(8, 2, 4, 2):(4@laneid, 1@warpid, 1@laneid, 1)]`` splits
the row into (8, 2) -- lane group and warp -- and the column into (4, 2) -- lane within the group and register
slot. Each thread holds two elements; ``T.local_view(frag)`` is those two registers. The kernel loads each thread's
elements from ``A``, scales them, and stores them to ``B``, so ``B == 3 * A``.
"""

from __future__ import annotations

import numpy as np
from tvm.script import tirx as T

import tirx_layout  # noqa: F401  (registers layout=..., T.local_view, the pipeline and the printer rules)
from tirx_layout import S, TileLayout, laneid, warpid

ROWS, COLS = 16, 8
WARP_FRAGMENT = TileLayout(S[(8, 2, 4, 2) : (4 @ laneid, 1 @ warpid, 1 @ laneid, 1)])


def element_of(warp: int, lane: int, slot: int) -> tuple[int, int]:
    """The (row, column) a thread's slot holds in ``WARP_FRAGMENT``: the formula the kernel uses."""
    return 2 * (lane // 4) + warp, 2 * (lane % 4) + slot


def fragment_kernel():
    """The fragment kernel: 2 warps of 32 lanes, 2 registers each."""

    @T.prim_func
    def fragment(A: T.Buffer((ROWS, COLS), "float32"), B: T.Buffer((ROWS, COLS), "float32")):
        T.device_entry()
        bx = T.cta_id([1])
        warp = T.warp_id([2])
        lane = T.lane_id([32])
        frag = T.alloc_local((ROWS, COLS), "float32", layout=WARP_FRAGMENT)
        mine = T.local_view(frag)
        for slot in T.serial(2):
            mine[slot] = A[2 * (lane // 4) + warp, 2 * (lane % 4) + slot] * T.float32(3)
        for slot in T.serial(2):
            B[2 * (lane // 4) + warp, 2 * (lane % 4) + slot] = mine[slot]

    return fragment


def expected(a: np.ndarray) -> np.ndarray:
    """What the kernel computes."""
    return 3 * a


KERNELS = {"warp_fragment_fp32": (fragment_kernel(), expected)}
