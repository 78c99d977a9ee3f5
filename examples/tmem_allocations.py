"""Several tensor-memory buffers in one kernel, and a TMEM tile whose width is no power of two.

``tmem_two_allocations``: ``acc`` (a (128, 64) float32 tile, 64 columns) and ``acc2`` ((128, 32), 32 columns) are
both allocated with ``tcgen05.alloc`` (warp 0, one after the other; ``relinquish_alloc_permit`` after the second),
96 columns together, and freed in the reverse order. ``A``'s first 64 columns go through ``acc``, the last 32 through
``acc2``, and ``B`` gets them back swapped, so the two allocations must not overlap.

``tmem_three_allocations``: 256 + 128 + 128 = 512 columns, the whole of a CTA's tensor memory.

``tmem_inferred_epilogue_112``: a (128, 112) accumulator (``tmem_datapath_layout("D", 128, 112)``) read into a
register fragment declared without a layout. Inference gives the fragment one row per thread, which
``tcgen05.ld .32x32b`` moves in three instructions (``.x64``, ``.x32``, ``.x16``): 112 is no power of two.
"""

from __future__ import annotations

import numpy as np
from tvm.script import tirx as T

import tirx_layout  # noqa: F401  (T.alloc_tmem, layout=..., T.tile_copy, the pipeline)
from tirx_layout import tmem_datapath_layout, wg_local_layout
from tirx_layout.tools.kernel_report import KernelTable


def two_allocations_kernel():
    """``A[:, 0:64]`` through ``acc``, ``A[:, 64:96]`` through ``acc2``; ``B`` is ``A`` with the two parts swapped."""

    @T.prim_func
    def two_allocations(A: T.Buffer((128, 96), "float32"), B: T.Buffer((128, 96), "float32")):
        T.device_entry()
        tx = T.thread_id([128])
        acc = T.alloc_tmem((128, 64), "float32", layout=tmem_datapath_layout("D", 128, 64))
        acc2 = T.alloc_tmem((128, 32), "float32", layout=tmem_datapath_layout("D", 128, 32))
        wide = T.alloc_local((128, 64), "float32", layout=wg_local_layout(64))
        narrow = T.alloc_local((128, 32), "float32", layout=wg_local_layout(32))
        T.tile_copy(wide, A[0:128, 0:64], "warpgroup")
        T.tile_copy(acc, wide, "warpgroup")
        T.tile_copy(narrow, A[0:128, 64:96], "warpgroup")
        T.tile_copy(acc2, narrow, "warpgroup")
        T.tile_copy(narrow, acc2, "warpgroup")
        T.tile_copy(B[0:128, 0:32], narrow, "warpgroup")
        T.tile_copy(wide, acc, "warpgroup")
        T.tile_copy(B[0:128, 32:96], wide, "warpgroup")

    return two_allocations


def swap_parts(a: np.ndarray) -> np.ndarray:
    """What ``tmem_two_allocations`` computes."""
    return np.concatenate([a[:, 64:96], a[:, 0:64]], axis=1)


def three_allocations_kernel():
    """Three accumulators filling the 512 columns: ``B[i]`` is ``A`` through allocation ``i`` (written at its
    column 0 and, for the wide one, also at its last columns)."""

    @T.prim_func
    def three_allocations(A: T.Buffer((128, 32), "float32"), B: T.Buffer((4, 128, 32), "float32")):
        T.device_entry()
        tx = T.thread_id([128])
        big = T.alloc_tmem((128, 256), "float32", layout=tmem_datapath_layout("D", 128, 256))
        mid = T.alloc_tmem((128, 128), "float32", layout=tmem_datapath_layout("D", 128, 128))
        low = T.alloc_tmem((128, 128), "float32", layout=tmem_datapath_layout("D", 128, 128))
        f = T.alloc_local((128, 32), "float32", layout=wg_local_layout(32))
        T.tile_copy(f, A, "warpgroup")
        T.tile_copy(big[0:128, 0:32], f, "warpgroup")
        T.tile_copy(big[0:128, 224:256], f, "warpgroup")
        T.tile_copy(mid[0:128, 96:128], f, "warpgroup")
        T.tile_copy(low[0:128, 0:32], f, "warpgroup")
        T.tile_copy(f, big[0:128, 0:32], "warpgroup")
        T.tile_copy(B[0, 0:128, 0:32], f, "warpgroup")
        T.tile_copy(f, big[0:128, 224:256], "warpgroup")
        T.tile_copy(B[1, 0:128, 0:32], f, "warpgroup")
        T.tile_copy(f, mid[0:128, 96:128], "warpgroup")
        T.tile_copy(B[2, 0:128, 0:32], f, "warpgroup")
        T.tile_copy(f, low[0:128, 0:32], "warpgroup")
        T.tile_copy(B[3, 0:128, 0:32], f, "warpgroup")

    return three_allocations


def inferred_epilogue_kernel(cols: int = 112):
    """``A`` -> fragment -> TMEM accumulator -> fragment -> ``B``, both fragments' layouts inferred."""

    @T.prim_func
    def inferred_epilogue(A: T.Buffer((128, cols), "float32"), B: T.Buffer((128, cols), "float32")):
        T.device_entry()
        tx = T.thread_id([128])
        acc = T.alloc_tmem((128, cols), "float32", layout=tmem_datapath_layout("D", 128, cols))
        into = T.alloc_local((128, cols), "float32")
        out = T.alloc_local((128, cols), "float32")
        T.tile_copy(into, A, "warpgroup")
        T.tile_copy(acc, into, "warpgroup")
        T.tile_copy(out, acc, "warpgroup")
        T.tile_copy(B, out, "warpgroup")

    return inferred_epilogue


KERNELS = KernelTable()  # each kernel built when first looked up
KERNELS.add("tmem_two_allocations", swap_parts, two_allocations_kernel)
KERNELS.add("tmem_three_allocations", lambda a: np.broadcast_to(a, (4, 128, 32)), three_allocations_kernel)
KERNELS.add("tmem_inferred_epilogue_112", lambda a: a.copy(), inferred_epilogue_kernel)

SHOWCASE = ["tmem_two_allocations", "tmem_inferred_epilogue_112"]
