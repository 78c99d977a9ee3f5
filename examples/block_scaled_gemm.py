"""Example (f) of issue 20: the layout guide's block-scaled FP8 GEMM, with two accumulator stages and the scale
factors in ONE tensor-memory allocation, stage 0 computed while stage 1 drains.

``block_scaled_gemm_two_stages`` computes, for four M tiles ``t`` of 128 rows,
``D[t] = (A[t] * 2^(SFA[t]-127)) @ (B * 2^(SFB-127)).T`` with ``tcgen05.mma.kind::mxf8f6f4.block_scale`` (fp8
e4m3 operands, one ue8m0 scale per row and per 32 K elements, float32 accumulation):

* TMEM: ``acc`` is the guide's two-stage accumulator ``S[(2,128,112):(112@TCol,1@TLane,1@TCol)]`` (224 columns);
  ``sfa`` (two stages) and ``sfb`` are placed ``within=acc`` at columns 224-231 and 232-235, laid out as the MMA
  reads them (``mma_scale_factor_layout``: row r on lane r % 32 of all four warp windows, K-block b in byte b of
  column r // 32): one ``tcgen05.alloc`` of 256 columns holds all three.
* Roles (256 threads), one software-pipelined loop; tile ``t`` uses stage ``s = t % 2``. Step ``t``: every thread
  waits until stage ``s`` is empty (from tile ``t - 2`` on: the epilogue has read it), stages A's tile and its scale
  factors in shared memory, and ``tcgen05.cp``s the scale factors into ``sfa[s]`` (one K block of 128: one
  ``.32x128b.warpx4``); one thread of warp 4 then issues the asynchronous MMA, committing to ``full[s]``; the
  epilogue warpgroup waits on ``full`` of the other stage, reads tile ``t - 1`` with ``tcgen05.ld``, writes it and
  arrives on that stage's ``empty``. So while the epilogue drains one stage, the MMA of the next tile fills the
  other; the roles hand over through the mbarriers only.
* ``B`` and ``SFB`` are shared by every tile: copied once, before the loop.

The reference is numpy in float64; the fp32 accumulation of up to 128 differently scaled products is compared
within fp32 tolerance.
"""

from __future__ import annotations

import numpy as np
from tvm.script import tirx as T

import tirx_layout  # noqa: F401  (T.tile_mma, T.mbarrier_*, T.alloc_tmem(within=...), layout=..., the pipeline)
from tirx_layout import (
    Iter,
    S,
    TCol,
    TileLayout,
    TLane,
    mma_scale_factor_layout,
    mma_scale_factor_shared_layout,
    mma_shared_layout,
    wg_local_layout,
)
from tirx_layout.tools.kernel_report import Expected, KernelTable

TILES, M, N, K = 4, 128, 112, 128
K_BLOCKS = K // 32  # one ue8m0 scale per 32 K elements
FP8 = "float8_e4m3fn"
UE8M0 = "float8_e8m0fnu"
#: The guide's two-stage accumulator: stage s at columns 112 s .. 112 s + 111.
ACCUMULATOR = TileLayout(S[(2, M, N) : (N @ TCol, 1 @ TLane, 1 @ TCol)])
#: Scale factors after the accumulator's 224 columns: A's two stages (4 columns each), then B's.
SFA_COLUMN, SFB_COLUMN = 2 * N, 2 * N + 2 * (M // 32)
#: The thread that issues the MMAs: lane 0 of warp 4, outside the epilogue warpgroup.
MMA_THREAD = 128


def block_scaled_reference(a, b, sfa, sfb):
    """``D[t] = (A[t] * 2^(SFA[t]-127)) @ (B * 2^(SFB-127)).T`` in float64, each scale over its 32 K elements."""
    scale_a = np.repeat(sfa.astype(np.float64), 32, axis=-1)
    scale_b = np.repeat(sfb[:N].astype(np.float64), 32, axis=-1)
    return (a.astype(np.float64) * scale_a) @ (b.astype(np.float64) * scale_b).T


def two_stage_kernel():
    """Example (f): the block-scaled GEMM with two accumulator stages (see the module docstring)."""
    a_layout = mma_shared_layout(FP8, "128B", (2, M, K))
    b_layout = mma_shared_layout(FP8, "128B", (N, K))
    sfa_layout = mma_scale_factor_layout(M, K_BLOCKS, column=SFA_COLUMN, stages=2)
    sfb_layout = mma_scale_factor_layout(M, K_BLOCKS, column=SFB_COLUMN)
    sf_shared = mma_scale_factor_shared_layout(M, K_BLOCKS)
    # Two stages of the scale factors' tcgen05.cp image, one 512-byte chunk each.
    sfa_shared = TileLayout.from_iters([Iter(2, M * K_BLOCKS), *sf_shared.shard])
    epilogue = wg_local_layout(N)

    @T.macro
    def drain(t, acc, out, full, empty, D):
        """The epilogue warpgroup reads tile ``t`` out of stage ``t % 2`` once its MMA has completed."""
        T.mbarrier_wait(full[t % 2], (t // 2) % 2)
        T.tile_copy(out, acc[t % 2, 0:M, 0:N], "warpgroup")
        T.tile_copy(D[t, 0:M, 0:N], out, "warpgroup")
        T.mbarrier_arrive(empty[t % 2])

    @T.prim_func
    def gemm(
        A: T.Buffer((TILES, M, K), FP8),
        B: T.Buffer((N, K), FP8),
        SFA: T.Buffer((TILES, M, K_BLOCKS), UE8M0),
        SFB: T.Buffer((M, K_BLOCKS), UE8M0),
        D: T.Buffer((TILES, M, N), "float32"),
    ):
        T.device_entry()
        tx = T.thread_id([256])
        As = T.alloc_shared((2, M, K), FP8, layout=a_layout, align=1024)
        Bs = T.alloc_shared((N, K), FP8, layout=b_layout, align=1024)
        sas = T.alloc_shared((2, M, K_BLOCKS), UE8M0, layout=sfa_shared)
        sbs = T.alloc_shared((M, K_BLOCKS), UE8M0, layout=sf_shared)
        full = T.alloc_shared((2,), "uint64")
        empty = T.alloc_shared((2,), "uint64")
        acc = T.alloc_tmem((2, M, N), "float32", layout=ACCUMULATOR)
        sfa = T.alloc_tmem((2, M, K_BLOCKS), UE8M0, layout=sfa_layout, within=acc)
        sfb = T.alloc_tmem((M, K_BLOCKS), UE8M0, layout=sfb_layout, within=acc)
        out = T.alloc_local((M, N), "float32", layout=epilogue)
        for s in range(2):
            T.mbarrier_init(full[s], 1)  # one arrival: the MMA thread's commit
            T.mbarrier_init(empty[s], 128)  # every epilogue thread arrives once it has read the stage
        T.tile_copy(Bs, B)
        T.tile_copy(sbs, SFB)
        T.tile_copy(sfb, sbs)
        # Software-pipelined: in step t tile t is staged and its MMA issued into stage t % 2, then the epilogue
        # drains tile t - 1 from the other stage while that MMA runs.
        for t in T.serial(TILES):
            if t >= 2:
                T.mbarrier_wait(empty[t % 2], (t // 2 + 1) % 2)  # tile t - 2 is drained: stage t % 2 is free
            T.tile_copy(As[t % 2, 0:M, 0:K], A[t, 0:M, 0:K])
            T.tile_copy(sas[t % 2, 0:M, 0:K_BLOCKS], SFA[t, 0:M, 0:K_BLOCKS])
            T.tile_copy(sfa[t % 2, 0:M, 0:K_BLOCKS], sas[t % 2, 0:M, 0:K_BLOCKS])  # tcgen05.cp, one K block
            if tx == MMA_THREAD:
                T.tile_mma(
                    acc[t % 2, 0:M, 0:N],
                    As[t % 2, 0:M, 0:K],
                    Bs,
                    accumulate=False,
                    barrier=full[t % 2],
                    scale_a=sfa[t % 2, 0:M, 0:K_BLOCKS],
                    scale_b=sfb[0:N, 0:K_BLOCKS],
                    scope="thread",
                )
            if tx < 128 and t >= 1:
                drain(t - 1, acc, out, full, empty, D)
        if tx < 128:
            drain(TILES - 1, acc, out, full, empty, D)

    return gemm


KERNELS = KernelTable()  # each kernel built when first looked up
KERNELS.add(
    "block_scaled_gemm_two_stages",
    Expected(block_scaled_reference, inputs=4, rtol=2.0**-16, atol=1.0),
    two_stage_kernel,
)

#: The kernel the main job shows in full.
SHOWCASE = ["block_scaled_gemm_two_stages"]
