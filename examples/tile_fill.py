"""``T.tile_fill``: every element of a tile set to one value -- in shared memory, global memory, a register fragment, a
per-thread array and tensor memory.

* ``fill_shared_then_copy``: a 128B-swizzled shared tile filled with 1.5 by the CTA, its first 8 rows then
  overwritten by a warp's copy of ``A``: the fill deals 16-byte vectors as a copy into the tile does.
* ``fill_global_with_tail``: a 100 x 64 global tile filled by 128 threads (the last round guarded).
* ``fill_inferred_fragment``: a fragment left to inference, filled and copied out: the fill neither opens nor
  constrains its layout, the copy picks it.
* ``fill_per_thread_array``: a per-thread array (no layout) filled with the thread's own index, an expression.
* ``fill_int8_extremes``: the int8 tile filled with -128, the smallest value the type holds.
* ``fill_tmem_accumulator``: a 128 x 64 fp32 TMEM accumulator filled through registers (``tcgen05.st``), read back
  with ``tcgen05.ld``.
* ``fill_tmem_per_warpgroup``: two warpgroups, each filling its own stage of a TMEM buffer with its number.
"""

from __future__ import annotations

import numpy as np
from tvm.script import tirx as T

import tirx_layout  # noqa: F401  (registers T.tile_fill, layout=..., the pipeline and the printer rules)
from tirx_layout import S, TCol, TileLayout, TLane, mma_shared_layout, tmem_datapath_layout, wg_local_layout
from tirx_layout.tools.kernel_report import KernelTable


def shared_then_copy_kernel():
    """A swizzled shared tile filled, partly overwritten by a copy, then copied out."""
    tile_layout = mma_shared_layout("float16", "128B", (64, 64))

    @T.prim_func
    def fill_shared(A: T.Buffer((64, 64), "float16"), B: T.Buffer((64, 64), "float16")):
        T.device_entry()
        tx = T.thread_id([128])
        tile = T.alloc_shared((64, 64), "float16", layout=tile_layout, align=1024)
        T.tile_fill(tile, 1.5)
        T.cuda.cta_sync()
        if tx < 32:
            T.tile_copy(tile[0:8, 0:64], A[0:8, 0:64], "warp")
        T.cuda.cta_sync()
        T.tile_copy(B, tile)

    return fill_shared


def global_with_tail_kernel():
    """A global tile whose elements are not a whole number of rounds of 128 threads' vectors."""

    @T.prim_func
    def fill_global(A: T.Buffer((100, 64), "float32"), B: T.Buffer((100, 64), "float32")):
        T.device_entry()
        tx = T.thread_id([128])
        T.tile_fill(B, 2.0)

    return fill_global


def inferred_fragment_kernel():
    """A fragment without a layout: filled, then copied to global memory."""

    @T.prim_func
    def fill_fragment(A: T.Buffer((128, 64), "float32"), B: T.Buffer((128, 64), "float32")):
        T.device_entry()
        tx = T.thread_id([128])
        frag = T.alloc_local((128, 64), "float32")
        T.tile_fill(frag, -7.0)
        T.tile_copy(B, frag)

    return fill_fragment


def per_thread_array_kernel():
    """Each thread's own array of 4 filled with its thread index, then stored."""

    @T.prim_func
    def fill_array(A: T.Buffer((64, 4), "int32"), B: T.Buffer((64, 4), "int32")):
        T.device_entry()
        tx = T.thread_id([64])
        mine = T.alloc_local((4,), "int32")
        T.tile_fill(mine, tx, "thread")
        for i in range(4):
            B[tx, i] = mine[i]

    return fill_array


def int8_extremes_kernel():
    """The int8 tile filled with -128 in shared memory, copied out by the CTA."""

    @T.prim_func
    def fill_int8(A: T.Buffer((32, 128), "int8"), B: T.Buffer((32, 128), "int8")):
        T.device_entry()
        tx = T.thread_id([64])
        tile = T.alloc_shared((32, 128), "int8")
        T.tile_fill(tile, -128)
        T.cuda.cta_sync()
        T.tile_copy(B, tile)

    return fill_int8


def tmem_accumulator_kernel():
    """A TMEM accumulator filled (``tcgen05.st`` of a filled register image), loaded back and stored."""

    @T.prim_func
    def fill_tmem(A: T.Buffer((128, 64), "float32"), B: T.Buffer((128, 64), "float32")):
        T.device_entry()
        tx = T.thread_id([128])
        acc = T.alloc_tmem((128, 64), "float32", layout=tmem_datapath_layout("D", 128, 64))
        out = T.alloc_local((128, 64), "float32", layout=wg_local_layout(64))
        T.tile_fill(acc, 0.25)
        T.tile_copy(out, acc)
        T.tile_copy(B, out)

    return fill_tmem


def tmem_per_warpgroup_kernel():
    """Two warpgroups, each filling its stage of a two-stage TMEM buffer with its warpgroup number plus one."""
    stages = TileLayout(S[(2, 128, 32) : (32 @ TCol, 1 @ TLane, 1 @ TCol)])

    @T.prim_func
    def fill_stages(A: T.Buffer((2, 128, 32), "float32"), B: T.Buffer((2, 128, 32), "float32")):
        T.device_entry()
        tx = T.thread_id([256])
        acc = T.alloc_tmem((2, 128, 32), "float32", layout=stages)
        out = T.alloc_local((128, 32), "float32", layout=wg_local_layout(32))
        T.tile_fill(acc[tx // 128, 0:128, 0:32], T.Cast("float32", tx // 128 + 1), "warpgroup")
        T.tile_copy(out, acc[tx // 128, 0:128, 0:32], "warpgroup")
        T.tile_copy(B[tx // 128, 0:128, 0:32], out, "warpgroup")

    return fill_stages


KERNELS = KernelTable()  # each kernel built when first looked up
KERNELS.add(
    "fill_shared_then_copy",
    lambda a: np.where(np.arange(64)[:, None] < 8, a, np.float16(1.5)).astype(np.float16),
    shared_then_copy_kernel,
)
KERNELS.add("fill_global_with_tail", lambda a: np.full((100, 64), 2.0, np.float32), global_with_tail_kernel)
KERNELS.add("fill_inferred_fragment", lambda a: np.full((128, 64), -7.0, np.float32), inferred_fragment_kernel)
KERNELS.add(
    "fill_per_thread_array", lambda a: np.repeat(np.arange(64, dtype=np.int32)[:, None], 4, 1), per_thread_array_kernel
)
KERNELS.add("fill_int8_extremes", lambda a: np.full((32, 128), -128, np.int8), int8_extremes_kernel)
KERNELS.add("fill_tmem_accumulator", lambda a: np.full((128, 64), 0.25, np.float32), tmem_accumulator_kernel)
KERNELS.add(
    "fill_tmem_per_warpgroup",
    lambda a: np.broadcast_to(np.array([1, 2], np.float32)[:, None, None], (2, 128, 32)),
    tmem_per_warpgroup_kernel,
)

#: The kernels the main job shows in full; the rest get a verdict line.
SHOWCASE = ["fill_shared_then_copy", "fill_tmem_accumulator"]
