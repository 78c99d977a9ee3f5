"""A 64x64 tile staged through a swizzled shared-memory buffer and written back transposed.

Every thread copies global rows into the shared tile, the CTA synchronises, and then each thread reads a column of
the tile and writes it as a row of the output, so ``B == A.T``. The shared tile's layout is the MMA operand layout
for the data type and swizzle mode: the 128-byte swizzle, for instance, XORs each 16-byte chunk's index with the row,
so both the row writes and the column reads spread over all 32 banks.
"""

from __future__ import annotations

import numpy as np
from tvm.script import tirx as T

import tirx_layout  # noqa: F401  (registers layout=..., the pipeline and the printer rules)
from tirx_layout import mma_shared_layout
from tirx_layout.tools.kernel_report import KernelTable

ROWS = COLS = 64
THREADS = 128


def staging_kernel(dtype: str = "float16", swizzle: str = "128B"):
    """The staging kernel for ``dtype`` through a ``swizzle``-swizzled shared tile ("32B", "64B" or "128B")."""
    tile_layout = mma_shared_layout(dtype, swizzle, (ROWS, COLS))
    steps = ROWS * COLS // THREADS

    @T.prim_func
    def staging(A: T.Buffer((ROWS, COLS), dtype), B: T.Buffer((ROWS, COLS), dtype)):
        T.device_entry()
        bx = T.cta_id([1])
        tx = T.thread_id([THREADS])
        tile = T.alloc_shared((ROWS, COLS), dtype, layout=tile_layout)
        for i in T.serial(steps):
            tile[i * 2 + tx // COLS, tx % COLS] = A[i * 2 + tx // COLS, tx % COLS]
        T.cuda.cta_sync()
        for i in T.serial(steps):
            B[i * 2 + tx // COLS, tx % COLS] = tile[tx % COLS, i * 2 + tx // COLS]

    return staging


def expected(a: np.ndarray) -> np.ndarray:
    """What the kernel computes."""
    return a.T.copy()


_SHORT = {"float16": "fp16", "bfloat16": "bf16", "float32": "fp32"}

#: Every data type with every swizzle width (each kernel built when first looked up).
KERNELS = KernelTable()
for swizzle in ("128B", "64B", "32B"):
    for dtype in ("float16", "bfloat16", "float32"):
        KERNELS.add(f"staging_{_SHORT[dtype]}_{swizzle}", expected, staging_kernel, dtype, swizzle)

#: The kernels the main job shows in full; the rest get a verdict line.
SHOWCASE = ["staging_fp16_128B"]
