"""A block-scaled (MX) FP8 GEMM on consumer Blackwell (sm_120a), which has no tensor memory and no tcgen05: the same
``T.tile_mma(D, A, B, accumulate, scale_a=SFA, scale_b=SFB)`` the datacenter parts lower to
``tcgen05.mma.kind::mxf8f6f4.block_scale`` (examples/block_scaled_gemm.py) lowers here to the warp-level
``mma.sync.aligned.m16n8k32.row.col.kind::mxf8f6f4.block_scale.scale_vec::1X.f32.e4m3.e4m3.f32.ue8m0`` when D, A, B
and the scale factors are register fragments:

``D = (A * 2^(SFA - 127)) @ (B * 2^(SFB - 127)).T``, A ``(64, K)`` and B ``(64, K)`` e4m3, one ue8m0 scale per row
and per 32 K elements (``SFA (64, K/32)``, ``SFB (64, K/32)``), float32 D.

* a CTA of 4 warps (2 x 2) computes the ``64 x 64`` tile; A and B go K tile by K tile (128 e4m3 = 128 bytes, four
  scale chunks) through a 3-stage ``cp.async`` ring of 128B-swizzled shared tiles, exactly as ``ampere_gemm``'s
  ``sm120_gemm_fp8``: ``T.tile_copy_async`` issues, ``T.tile_copy_async_wait`` retires, ``T.tile_copy`` reads a stage
  into the ``mma_sync_a_layout`` / ``mma_sync_b_layout`` fragments (4-byte loads: ldmatrix moves 16-bit rows, and an
  8-bit fragment's four bytes of a row per lane are one 32-bit load already);
* the scales of a K tile go from global memory straight into their fragments (``mma_sync_scale_layout``): each lane
  holds one 32-bit register of each, the four K chunks of the tile in its four bytes, the two 16-row blocks of a warp's
  A in the two lane pairs of a quad and the four 8-column blocks of its B in the four lanes of a quad, so one 4-byte
  load per lane and operand feeds all 8 instructions of the K tile; the layouts give every instruction its register,
  ``byte-id`` (the chunk) and ``thread-id`` (the block);
* inputs are exact (``INPUTS``): small integers and scales 2^-1..2^1, so every float32 sum is exact and the result is
  compared with numpy's exactly.

Built for ``ARCH`` (the block-scaled forms need the architecture-specific target), assembled by ptxas with no local
memory, simulated (the simulator's own model of the block-scaled ``mma.sync``, from the ISA) equal to numpy.
"""

from __future__ import annotations

import numpy as np
from tvm.script import tirx as T

import tirx_layout  # (also registers T.tile_mma, T.tile_copy_async, layout=..., the pipeline)
from tirx_layout import (
    mma_shared_layout,
    mma_sync_a_layout,
    mma_sync_b_layout,
    mma_sync_c_layout,
    mma_sync_scale_layout,
)
from tirx_layout.tools.kernel_report import Expected, KernelTable

ARCH = "sm_120a"
FP8, UE8M0 = "float8_e4m3fn", "float8_e8m0fnu"
#: The CTA's tile of D, its warp grid, the shared stages, K elements per tile and per scale.
TILE_M, TILE_N, WARPS, STAGES, BK, CHUNK = 64, 64, (2, 2), 3, 128, 32
TILES = 4
K = TILES * BK


def exact_inputs(tiles: int = TILES) -> dict:
    """A, B with values in -3..3 and SFA, SFB with scales 2^-1..2^1 (bytes 126..128), deterministic: every product
    is a multiple of 2^-2 below 2^6, so a float32 sum of ``K`` of them is exact."""
    k = tiles * BK
    rng = np.random.default_rng(120)
    a = rng.integers(-3, 4, (TILE_M, k)).astype(np.float32)
    b = rng.integers(-3, 4, (TILE_N, k)).astype(np.float32)
    sfa = rng.integers(126, 129, (TILE_M, k // CHUNK)).astype(np.uint8)
    sfb = rng.integers(126, 129, (TILE_N, k // CHUNK)).astype(np.uint8)
    to = tirx_layout.sim.numpy_dtype
    return {
        "A": a.astype(to(FP8)),
        "B": b.astype(to(FP8)),
        "SFA": sfa.view(to(UE8M0)),
        "SFB": sfb.view(to(UE8M0)),
    }


def block_scaled_reference(a, b, sfa, sfb):
    """``(A * SFA) @ (B * SFB).T`` in float64, each scale over its 32 K elements."""
    scale_a = np.repeat(sfa.astype(np.float64), CHUNK, axis=-1)
    scale_b = np.repeat(sfb.astype(np.float64), CHUNK, axis=-1)
    return (a.astype(np.float64) * scale_a) @ (b.astype(np.float64) * scale_b).T


def block_scaled_gemm(tiles: int = TILES):
    """The 3-stage cp.async + mma.sync block-scaled GEMM of ``64 x 64`` of D over ``tiles`` K tiles of 128."""
    m, n, bk, s_, k = TILE_M, TILE_N, BK, STAGES, tiles * BK
    chunks = bk // CHUNK  # scale chunks per K tile
    a_shared = mma_shared_layout(FP8, "128B", (s_, m, bk))
    b_shared = mma_shared_layout(FP8, "128B", (s_, n, bk))
    a_frag = mma_sync_a_layout((m, bk), FP8, WARPS)
    b_frag = mma_sync_b_layout((n, bk), FP8, WARPS)
    sfa_frag = mma_sync_scale_layout("A", (m, chunks), WARPS)
    sfb_frag = mma_sync_scale_layout("B", (n, chunks), WARPS)
    accumulator = mma_sync_c_layout((m, n), "float32", WARPS)

    @T.prim_func
    def gemm(
        A: T.Buffer((m, k), FP8),
        B: T.Buffer((n, k), FP8),
        SFA: T.Buffer((m, k // CHUNK), UE8M0),
        SFB: T.Buffer((n, k // CHUNK), UE8M0),
        D: T.Buffer((m, n), "float32"),
    ):
        T.device_entry()
        tx = T.thread_id([128])
        As = T.alloc_shared((s_, m, bk), FP8, layout=a_shared, align=1024)
        Bs = T.alloc_shared((s_, n, bk), FP8, layout=b_shared, align=1024)
        a = T.alloc_local((m, bk), FP8, layout=a_frag)
        b = T.alloc_local((n, bk), FP8, layout=b_frag)
        sfa = T.alloc_local((m, chunks), UE8M0, layout=sfa_frag)
        sfb = T.alloc_local((n, chunks), UE8M0, layout=sfb_frag)
        acc = T.alloc_local((m, n), "float32", layout=accumulator)
        T.tile_fill(acc, 0)
        for s in T.unroll(s_ - 1):  # the prologue: the first two K tiles in flight
            T.tile_copy_async(As[s], A[0:m, s * bk : s * bk + bk])
            T.tile_copy_async(Bs[s], B[0:n, s * bk : s * bk + bk])
        for kt in T.serial(tiles):
            if kt + 1 < tiles:  # tile kt + 1 (two groups) may stay in flight
                T.tile_copy_async_wait(2)
            else:
                T.tile_copy_async_wait(0)
            if kt + s_ - 1 < tiles:  # into the stage tile kt - 1 used, which every thread is done with
                T.tile_copy_async(As[(kt + s_ - 1) % s_], A[0:m, (kt + s_ - 1) * bk : (kt + s_ - 1) * bk + bk])
                T.tile_copy_async(Bs[(kt + s_ - 1) % s_], B[0:n, (kt + s_ - 1) * bk : (kt + s_ - 1) * bk + bk])
            T.tile_copy(sfa, SFA[0:m, kt * chunks : kt * chunks + chunks])
            T.tile_copy(sfb, SFB[0:n, kt * chunks : kt * chunks + chunks])
            T.tile_copy(a, As[kt % s_])
            T.tile_copy(b, Bs[kt % s_])
            T.tile_mma(acc, a, b, accumulate=True, scale_a=sfa, scale_b=sfb)
        T.tile_copy(D, acc)

    return gemm


KERNELS = KernelTable()  # each kernel built when first looked up, for ARCH
KERNELS.add(
    "sm120_block_scaled_gemm_mxf8",
    Expected(block_scaled_reference, inputs=4, given=exact_inputs()),
    block_scaled_gemm,
)
#: What the demo shows of this module.
SHOWCASE = ["sm120_block_scaled_gemm_mxf8"]
