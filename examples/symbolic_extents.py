"""Global buffers whose extent is a kernel argument, and copies whose start moves with a loop.

``symbolic_rows``: ``A = T.match_buffer(a, (M, 64))``; four CTAs of 128 threads copy 32 rows each through shared
memory. ``M`` is only known at launch, so every access to ``A`` and ``B`` is guarded by ``row < M`` (the region
``bx * 32 : bx * 32 + 32`` may pass the end); the accesses are still 16-byte vectors, since the row length (64) is
static. The demo runs it with ``M = 100``: the last CTA copies 4 rows, and no thread touches rows 100..127.

``k_loop_staging``: the K loop of a GEMM's operand staging: ``A[0:128, kt * 64 : kt * 64 + 64]`` into shared memory,
for ``kt`` in ``range(4)``. The start ``kt * 64`` is symbolic but provably a multiple of 8 elements, so the copy moves
16-byte vectors (1024 of them per step: 8 warp instructions per warp, 128 per CTA and step).
"""

from __future__ import annotations

from tvm.script import tirx as T

import tirx_layout  # noqa: F401  (registers T.tile_copy, layout=..., the pipeline)
from tirx_layout.tools.kernel_report import KernelTable


def symbolic_rows_kernel():
    """``B[:M] = A[:M]`` through a (32, 64) shared tile per CTA, for any ``M <= 128``."""

    @T.prim_func
    def symbolic_rows(a: T.handle, b: T.handle):
        M = T.int32()
        A = T.match_buffer(a, (M, 64), "float16")
        B = T.match_buffer(b, (M, 64), "float16")
        T.device_entry()
        bx = T.cta_id([4])
        tx = T.thread_id([128])
        tile = T.alloc_shared((32, 64), "float16")
        T.tile_copy(tile, A[bx * 32 : bx * 32 + 32, 0:64])
        T.cuda.cta_sync()
        T.tile_copy(B[bx * 32 : bx * 32 + 32, 0:64], tile)

    return symbolic_rows


def k_loop_kernel():
    """Each K step: ``A``'s (128, 64) slice into shared memory, then into the same columns of ``B``."""

    @T.prim_func
    def k_loop(A: T.Buffer((128, 256), "float16"), B: T.Buffer((128, 256), "float16")):
        T.device_entry()
        tx = T.thread_id([128])
        tile = T.alloc_shared((128, 64), "float16")
        for kt in T.serial(4):
            T.tile_copy(tile, A[0:128, kt * 64 : kt * 64 + 64])
            T.cuda.cta_sync()
            T.tile_copy(B[0:128, kt * 64 : kt * 64 + 64], tile)
            T.cuda.cta_sync()

    return k_loop


KERNELS = KernelTable()  # each kernel built when first looked up
KERNELS.add_entry("symbolic_rows", lambda: (symbolic_rows_kernel(), lambda a: a.copy(), {"M": 100}))
KERNELS.add("k_loop_staging", lambda a: a.copy(), k_loop_kernel)

SHOWCASE = ["symbolic_rows", "k_loop_staging"]
