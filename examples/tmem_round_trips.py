"""Round trips through tensor memory: global -> registers -> TMEM -> registers -> global, so ``B == A``.

For every ``tcgen05.ld/st`` shape the PTX ISA allows with a datapath (D: 128 rows, row i on lane i; F: 64 rows,
16 per warp slab; ``32x32b`` moves 32 rows per warp, so it needs D) and every 32/16-bit dtype, the kernel stages
``A`` in the register fragment of that shape (``tcgen05_atom_layout``), stores it into a TMEM buffer laid out by
``tmem_datapath_layout``, loads it back into a second fragment and writes ``B``.

``tmem_two_stage_accumulator`` is the guide's two-stage accumulator ``S[(2,128,112):(112@TCol,1@TLane,1@TCol)]``:
224 columns, so 256 are allocated; each stage's (128, 112) window goes through ``32x32b`` loads/stores (.x64, .x32,
.x16: 112 is no power of two).

``tmem_32x32b_<dtype>_B`` is datapath B (two column halves on the two lane halves) through 32x32b.
``tmem_cp_128x256b_float32`` fills TMEM from shared memory with ``tcgen05.cp`` and reads it back with ``32x32b``;
``tmem_cp_128x128b_float16_<mode>`` does the same from a 32B/64B/128B-swizzled MMA operand tile.

``tmem_scale_factors_per_warp`` copies the guide's scale-factor atom ``S[(32,8):(1@TLane,1@TCol)] + R[4:32@TLane]``
into all four lane windows with ``tcgen05.cp .32x128b.warpx4``, then every warp loads its own window's copy into a
fragment replicated over warps and writes it to its own block of ``B``.

``tmem_warpgroup_exchange``: two warpgroups each store one accumulator stage and, after a barrier, load the other
warpgroup's stage; the barrier gets ``tcgen05.fence::before_thread_sync`` / ``after_thread_sync`` around it, which
is what orders one warp's TMEM writes before another warp's reads (PTX ISA 9.7.16.6.4.4).
"""

from __future__ import annotations

import numpy as np
from tvm.script import tirx as T

import tirx_layout  # noqa: F401  (T.alloc_tmem, layout=..., T.tile_copy, the pipeline)
from tirx_layout import (
    R,
    S,
    TCol,
    TileLayout,
    TLane,
    laneid,
    mma_shared_layout,
    tcgen05_atom_layout,
    tid_in_wg,
    tmem_datapath_layout,
    warpid,
    wg_local_layout,
)
from tirx_layout.tools.kernel_report import KernelTable

SHAPES = ("32x32b", "16x64b", "16x128b", "16x256b")
DTYPES = ("float32", "float16", "bfloat16")
COLS = 32  # elements: 32 fp32 columns, or 16 32-bit columns of packed 16-bit pairs


def combinations() -> list[tuple[str, str, str]]:
    """Every (shape, dtype, datapath) the PTX ISA allows: 32x32b takes 128 rows (datapath D) only."""
    return [(s, d, p) for p in "DF" for s in SHAPES for d in DTYPES if not (p == "F" and s == "32x32b")]


def round_trip_kernel(shape: str, dtype: str, datapath: str, cols: int = COLS, load_shape: str | None = None):
    """The round trip through a ``datapath`` TMEM tile, stored from a ``shape`` fragment and loaded into a
    ``load_shape`` one (the same shape by default)."""
    rows = 128 if datapath == "D" else 64
    tmem_layout = tmem_datapath_layout(datapath, rows, cols)
    fragment = tcgen05_atom_layout(shape, (rows, cols), dtype)
    loaded = tcgen05_atom_layout(load_shape or shape, (rows, cols), dtype)

    @T.prim_func
    def round_trip(A: T.Buffer((rows, cols), dtype), B: T.Buffer((rows, cols), dtype)):
        T.device_entry()
        tx = T.thread_id([128])
        acc = T.alloc_tmem((rows, cols), dtype, layout=tmem_layout)
        into = T.alloc_local((rows, cols), dtype, layout=fragment)
        out = T.alloc_local((rows, cols), dtype, layout=loaded)
        T.tile_copy(into, A[0:rows, 0:cols], "warpgroup")
        T.tile_copy(acc, into, "warpgroup")
        T.tile_copy(out, acc, "warpgroup")
        T.tile_copy(B[0:rows, 0:cols], out, "warpgroup")

    return round_trip


ACCUMULATOR = TileLayout(S[(2, 128, 112) : (112 @ TCol, 1 @ TLane, 1 @ TCol)])


def accumulator_kernel():
    """Both stages of the guide's two-stage accumulator, each written and read back with 32x32b."""
    fragment = wg_local_layout(112)

    @T.prim_func
    def accumulator(A: T.Buffer((2, 128, 112), "float32"), B: T.Buffer((2, 128, 112), "float32")):
        T.device_entry()
        tx = T.thread_id([128])
        acc = T.alloc_tmem((2, 128, 112), "float32", layout=ACCUMULATOR)
        into = T.alloc_local((128, 112), "float32", layout=fragment)
        out = T.alloc_local((128, 112), "float32", layout=fragment)
        T.tile_copy(into, A[0, 0:128, 0:112], "warpgroup")
        T.tile_copy(acc[0, 0:128, 0:112], into, "warpgroup")
        T.tile_copy(into, A[1, 0:128, 0:112], "warpgroup")
        T.tile_copy(acc[1, 0:128, 0:112], into, "warpgroup")
        T.tile_copy(out, acc[0, 0:128, 0:112], "warpgroup")
        T.tile_copy(B[0, 0:128, 0:112], out, "warpgroup")
        T.tile_copy(out, acc[1, 0:128, 0:112], "warpgroup")
        T.tile_copy(B[1, 0:128, 0:112], out, "warpgroup")

    return accumulator


# A (128, 8) float32 tile in shared memory as the tcgen05 descriptor's canonical no-swizzle K-major image: 8-row x
# 16-byte core matrices, rows 16 bytes apart, the second 16 bytes of each row 128 bytes on (LBO), the next 8 rows
# 256 bytes on (SBO).
CANONICAL = TileLayout(S[(16, 8, 2, 4) : (64, 4, 32, 1)]).group([128, 8])[0]


def cp_kernel():
    """global -> shared (canonical image) -> ``tcgen05.cp .128x256b`` -> TMEM (datapath D) -> 32x32b -> global."""
    fragment = wg_local_layout(8)
    tmem_layout = tmem_datapath_layout("D", 128, 8)

    @T.prim_func
    def cp_round_trip(A: T.Buffer((128, 8), "float32"), B: T.Buffer((128, 8), "float32")):
        T.device_entry()
        tx = T.thread_id([128])
        staged = T.alloc_shared((128, 8), "float32", layout=CANONICAL)
        acc = T.alloc_tmem((128, 8), "float32", layout=tmem_layout)
        out = T.alloc_local((128, 8), "float32", layout=fragment)
        T.tile_copy(staged, A[0:128, 0:8])
        T.tile_copy(acc, staged)
        T.tile_copy(out, acc, "warpgroup")
        T.tile_copy(B[0:128, 0:8], out, "warpgroup")

    return cp_round_trip


def datapath_b_kernel(dtype: str, cols: int = COLS):
    """Datapath B (64 rows, column halves on lanes 0-63 and 64-127) through 32x32b: thread ``r + 64h`` holds row
    ``r``'s half ``h``, which is TMEM lane ``r + 64h``."""
    tmem_layout = tmem_datapath_layout("B", 64, cols)
    fragment = TileLayout(S[(64, 2, cols // 2) : (1 @ tid_in_wg, 64 @ tid_in_wg, 1)])

    @T.prim_func
    def datapath_b(A: T.Buffer((64, cols), dtype), B: T.Buffer((64, cols), dtype)):
        T.device_entry()
        tx = T.thread_id([128])
        acc = T.alloc_tmem((64, cols), dtype, layout=tmem_layout)
        into = T.alloc_local((64, cols), dtype, layout=fragment)
        out = T.alloc_local((64, cols), dtype, layout=fragment)
        T.tile_copy(into, A[0:64, 0:cols], "warpgroup")
        T.tile_copy(acc, into, "warpgroup")
        T.tile_copy(out, acc, "warpgroup")
        T.tile_copy(B[0:64, 0:cols], out, "warpgroup")

    return datapath_b


def swizzled_cp_kernel(mode: str):
    """A (128, 64) fp16 tile in the ``mode``-swizzled MMA operand layout (``mma_shared_layout``), into TMEM by
    ``tcgen05.cp .128x128b`` with the descriptor's swizzle, back out with 32x32b. The buffer is aligned to the
    swizzle's repeat (8 rows of the swizzle width), as the hardware swizzles absolute addresses."""
    shared = mma_shared_layout("float16", mode, (128, 64))
    tmem_layout = tmem_datapath_layout("D", 128, 64)
    fragment = wg_local_layout(64)
    repeat = 8 * int(mode[:-1])

    @T.prim_func
    def swizzled_cp(A: T.Buffer((128, 64), "float16"), B: T.Buffer((128, 64), "float16")):
        T.device_entry()
        tx = T.thread_id([128])
        staged = T.alloc_shared((128, 64), "float16", layout=shared, align=repeat)
        acc = T.alloc_tmem((128, 64), "float16", layout=tmem_layout)
        out = T.alloc_local((128, 64), "float16", layout=fragment)
        T.tile_copy(staged, A[0:128, 0:64])
        T.tile_copy(acc, staged)
        T.tile_copy(out, acc, "warpgroup")
        T.tile_copy(B[0:128, 0:64], out, "warpgroup")

    return swizzled_cp


def accumulator_loop_kernel():
    """The two-stage accumulator with the stage as a loop variable: the stage moves the TMEM address by 112
    columns, added to the address at run time."""
    fragment = wg_local_layout(112)

    @T.prim_func
    def accumulator_loop(A: T.Buffer((2, 128, 112), "float32"), B: T.Buffer((2, 128, 112), "float32")):
        T.device_entry()
        tx = T.thread_id([128])
        acc = T.alloc_tmem((2, 128, 112), "float32", layout=ACCUMULATOR)
        into = T.alloc_local((128, 112), "float32", layout=fragment)
        out = T.alloc_local((128, 112), "float32", layout=fragment)
        for stage in T.serial(2):
            T.tile_copy(into, A[stage, 0:128, 0:112], "warpgroup")
            T.tile_copy(acc[stage, 0:128, 0:112], into, "warpgroup")
        for stage in T.serial(2):
            T.tile_copy(out, acc[stage, 0:128, 0:112], "warpgroup")
            T.tile_copy(B[stage, 0:128, 0:112], out, "warpgroup")

    return accumulator_loop


def scale_factors_per_warp_kernel():
    """The guide's scale factors into the four lane windows (``.warpx4``), then each warp reads its own copy."""
    scale_layout = TileLayout(S[(32, 8) : (1 @ TLane, 1 @ TCol)] + R[4 : 32 @ TLane])
    per_warp = TileLayout(S[(32, 8) : (1 @ laneid, 1)] + R[4 : 1 @ warpid])  # every warp holds the whole tile
    core_matrices = TileLayout(S[(4, 8, 2, 4) : (64, 4, 32, 1)]).group([32, 8])[0]  # the descriptor's canonical image

    @T.prim_func
    def scale_factors(A: T.Buffer((32, 8), "float32"), B: T.Buffer((4, 32, 8), "float32")):
        T.device_entry()
        tx = T.thread_id([128])
        staged = T.alloc_shared((32, 8), "float32", layout=core_matrices)
        sf = T.alloc_tmem((32, 8), "float32", layout=scale_layout)
        mine = T.alloc_local((32, 8), "float32", layout=per_warp)
        T.tile_copy(staged, A[0:32, 0:8])
        T.tile_copy(sf, staged)
        T.tile_copy(mine, sf)
        registers = T.local_view(mine)
        for j in range(8):
            B[tx // 32, tx % 32, j] = registers[j]

    return scale_factors


def warpgroup_exchange_kernel():
    """Warpgroup g stores stage g of a two-stage accumulator, then loads stage 1 - g after a barrier."""
    stages = TileLayout(S[(2, 128, 32) : (32 @ TCol, 1 @ TLane, 1 @ TCol)])
    fragment = wg_local_layout(32)

    @T.prim_func
    def exchange(A: T.Buffer((2, 128, 32), "float32"), B: T.Buffer((2, 128, 32), "float32")):
        T.device_entry()
        tx = T.thread_id([256])
        acc = T.alloc_tmem((2, 128, 32), "float32", layout=stages)
        f = T.alloc_local((128, 32), "float32", layout=fragment)
        T.tile_copy(f, A[tx // 128, 0:128, 0:32], "warpgroup")
        T.tile_copy(acc[tx // 128, 0:128, 0:32], f, "warpgroup")
        T.cuda.cta_sync()
        T.tile_copy(f, acc[1 - tx // 128, 0:128, 0:32], "warpgroup")
        T.tile_copy(B[tx // 128, 0:128, 0:32], f, "warpgroup")

    return exchange


def identity(a: np.ndarray) -> np.ndarray:
    """What every kernel here computes."""
    return a


KERNELS = KernelTable()  # each kernel built when first looked up
for s, d, p in combinations():
    KERNELS.add(f"tmem_{s}_{d}_{p}", identity, round_trip_kernel, s, d, p)
# Stored with a 16-lane shape, loaded with 32x32b: the simulator's fragment figures (from the PTX ISA) and
# tcgen05_atom_layout were written separately, and must agree on where every element lands.
for s in SHAPES[1:]:
    KERNELS.add(f"tmem_cross_{s}_to_32x32b", identity, round_trip_kernel, s, "float32", "D", load_shape="32x32b")
KERNELS.add("tmem_two_stage_accumulator", identity, accumulator_kernel)
KERNELS.add("tmem_two_stage_accumulator_loop", identity, accumulator_loop_kernel)
for d in DTYPES:
    KERNELS.add(f"tmem_32x32b_{d}_B", identity, datapath_b_kernel, d)
KERNELS.add("tmem_cp_128x256b_float32", identity, cp_kernel)
for mode in ("32B", "64B", "128B"):
    KERNELS.add(f"tmem_cp_128x128b_float16_{mode}", identity, swizzled_cp_kernel, mode)
KERNELS.add("tmem_scale_factors_per_warp", lambda a: np.broadcast_to(a, (4, 32, 8)), scale_factors_per_warp_kernel)
KERNELS.add("tmem_warpgroup_exchange", lambda a: a[::-1], warpgroup_exchange_kernel)

#: The kernels the main job shows in full; the rest get a verdict line.
SHOWCASE = [
    "tmem_16x64b_float16_F",
    "tmem_two_stage_accumulator",
    "tmem_cp_128x128b_float16_128B",
    "tmem_scale_factors_per_warp",
    "tmem_warpgroup_exchange",
]
