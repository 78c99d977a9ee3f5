"""Tile copies between layouts: global -> swizzled shared -> register fragment -> global, and replica guards.

``T.tile_copy(dst, src)`` moves a whole tile; LowerTileOps decides who moves what. Memory-to-memory copies are
dealt to the CTA's threads in 16-byte vectors; a fragment is filled and drained by each thread through its own
register slots, found with the fragment layout's inverse. The fragments are the guide's warp layout (repeated along
the columns), ``wg_local_layout`` (one row per thread of a warpgroup) and the ``tcgen05.ld 16x64b`` fragment.

The replica kernels show the guards: a fragment replicated over lanes or warps is loaded by every replica and
stored by replica 0 only; a shared tile with a memory replica is written at both places.
"""

from __future__ import annotations

import numpy as np
from tvm.script import tirx as T

import tirx_layout  # noqa: F401  (registers T.tile_copy, layout=..., the pipeline)
from tirx_layout import R, S, TileLayout, laneid, mma_shared_layout, tcgen05_atom_layout, warpid, wg_local_layout
from tirx_layout.analysis import fragment_accesses, pick_swizzle
from tirx_layout.tools.kernel_report import KernelTable

COLS = 64


def warp_fragment(cols: int) -> TileLayout:
    """The guide's warp layout ``S[(8, 2, 4, 2):(4@laneid, 1@warpid, 1@laneid, 1)]`` repeated ``cols // 8`` times
    along the columns: a (16, cols) tile over two warps."""
    return TileLayout(S[(8, 2, cols // 8, 4, 2) : (4 @ laneid, 1 @ warpid, 2, 1 @ laneid, 1)])


#: fragment name -> (rows, threads, layout for (dtype, cols))
FRAGMENTS = {
    "warp": (16, 64, lambda dtype, cols: warp_fragment(cols)),
    "wg_local": (128, 128, lambda dtype, cols: wg_local_layout(cols)),
    "tcgen05_16x64b": (64, 128, lambda dtype, cols: tcgen05_atom_layout("16x64b", (64, cols), dtype)),
}


def staging_layout(dtype: str, swizzle: str, fragment: str):
    """The shared tile's layout: the MMA operand layout of a swizzle mode ("32B", "64B", "128B", "none"), or with
    ``"matched"`` the swizzle of a row-major tile that the bank analysis finds cheapest for filling this fragment
    (every XOR swizzle tried; used where the staging tile feeds registers, not an MMA)."""
    rows, _, make = FRAGMENTS[fragment]
    if swizzle != "matched":
        return mma_shared_layout(dtype, swizzle, (rows, COLS))
    accesses = fragment_accesses(make(dtype, COLS), (rows, COLS), dtype)
    return pick_swizzle(dtype, (rows, COLS), accesses, search="all")


def round_trip_kernel(dtype: str, swizzle: str, fragment: str):
    """Global ``A`` -> shared tile (``swizzle``d) -> register fragment -> global ``B``; so ``B == A``."""
    rows, threads, make = FRAGMENTS[fragment]
    shared_layout = staging_layout(dtype, swizzle, fragment)
    fragment_layout = make(dtype, COLS)

    @T.prim_func
    def round_trip(A: T.Buffer((rows, COLS), dtype), B: T.Buffer((rows, COLS), dtype)):
        T.device_entry()
        bx = T.cta_id([1])
        tx = T.thread_id([threads])
        tile = T.alloc_shared((rows, COLS), dtype, layout=shared_layout)
        frag = T.alloc_local((rows, COLS), dtype, layout=fragment_layout)
        T.tile_copy(tile, A)
        T.cuda.cta_sync()
        T.tile_copy(frag, tile)
        T.tile_copy(B, frag)

    return round_trip


def replicated_fragment_kernel(layout: TileLayout, shape: tuple, threads: int):
    """Global ``A`` -> a fragment replicated over threads -> global ``B``: every replica loads, replica 0 stores."""

    @T.prim_func
    def replicated(A: T.Buffer(shape, "float32"), B: T.Buffer(shape, "float32")):
        T.device_entry()
        bx = T.cta_id([1])
        tx = T.thread_id([threads])
        frag = T.alloc_local(shape, "float32", layout=layout)
        T.tile_copy(frag, A)
        T.tile_copy(B, frag)

    return replicated


SHARED_WITH_REPLICA = TileLayout(S[(16, 16) : (16, 1)] + R[2:256])


def shared_replica_kernel():
    """Global ``A`` -> a shared tile stored twice (``R[2:256]``); ``B`` reads the base copy and ``C`` the replica,
    through a window on the replica's half of the storage."""

    @T.prim_func
    def shared_replica(
        A: T.Buffer((16, 16), "float32"), B: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")
    ):
        T.device_entry()
        bx = T.cta_id([1])
        tx = T.thread_id([64])
        tile = T.alloc_shared((16, 16), "float32", layout=SHARED_WITH_REPLICA)
        replica = T.decl_buffer(
            (16, 16), "float32", data=tile.data, scope="shared", layout=TileLayout(S[(16, 16) : (16, 1)] + 256)
        )
        T.tile_copy(tile, A)
        T.cuda.cta_sync()
        T.tile_copy(B, tile)
        T.tile_copy(C, replica)

    return shared_replica


def same(a: np.ndarray) -> np.ndarray:
    """What the round trips compute."""
    return a.copy()


_SHORT = {"float16": "fp16", "bfloat16": "bf16", "float32": "fp32"}

KERNELS = KernelTable()  # each kernel built when first looked up
for fragment in FRAGMENTS:
    for dtype in ("float16", "bfloat16", "float32"):
        for swizzle in ("128B", "64B", "32B", "matched"):
            KERNELS.add(f"copy_{fragment}_{_SHORT[dtype]}_{swizzle}", same, round_trip_kernel, dtype, swizzle, fragment)
KERNELS.add(
    "replica_over_lanes",
    same,
    replicated_fragment_kernel,
    TileLayout(S[(16, 8) : (1 @ laneid, 1)] + R[2 : 16 @ laneid]),
    (16, 8),
    32,
)
KERNELS.add(
    "replica_over_warps",
    same,
    replicated_fragment_kernel,
    TileLayout(S[(4, 32, 4) : (1 @ warpid, 1 @ laneid, 1)] + R[2 : 4 @ warpid]),
    (128, 4),
    256,
)
KERNELS.add("shared_memory_replica", lambda a: {"B": a.copy(), "C": a.copy()}, shared_replica_kernel)

#: The kernels the main job shows in full; the rest get a verdict line.
SHOWCASE = ["copy_wg_local_fp16_128B", "copy_warp_fp16_matched", "replica_over_warps", "shared_memory_replica"]
