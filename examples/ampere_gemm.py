"""GEMMs on the GPUs most people have (sm_80/86 A100 and A10, sm_89 L4/L40/RTX 40, sm_120 consumer Blackwell): the
same ``T.tile_mma(D, A, B, accumulate)`` (``D[m, n] (+)= sum_k A[m, k] * B[n, k]``, numpy ``D = A @ B.T``) lowers
to the warp-level ``mma.sync.m16n8k*`` when its operands are register fragments in the ``mma.sync`` layouts, fed
from shared memory by ``ldmatrix`` (16-bit types) and a 3-stage ``cp.async`` ring:

* a CTA of 4 warps (2 x 2) computes a ``64 x 64`` tile of D; A ``(64, K)`` and B ``(64, K)`` go K tile by K tile
  (128 bytes of K: 64 16-bit or 128 8-bit elements) through three 128B-swizzled shared stages;
* the prologue issues the first two tiles (``T.tile_copy_async`` without a barrier: ``cp.async``, one group per
  copy); iteration ``kt`` waits until tile ``kt`` has landed (``T.tile_copy_async_wait(2)``: the newest tile's two
  groups may stay in flight; ``0`` on the last iteration, when none is newer), issues tile ``kt + 2`` into the stage
  tile ``kt - 1`` used, then walks its stage one ``mma.sync`` K step (32 bytes) at a time: copies the step's
  columns into the A and B fragments (``mma_sync_a_layout`` / ``mma_sync_b_layout`` over the 2 x 2 warps:
  ``ldmatrix.x4`` for 16-bit types, 4-byte loads for 8-bit and tf32) and multiplies into the accumulator fragment
  (``mma_sync_c_layout``), zeroed once before the loop (``T.tile_fill``: clearing it on the first tile instead,
  ``accumulate=kt > 0``, costs a select per accumulator register in every K tile's code). Fragments of one K step,
  not of the whole tile, as CUTLASS's warp-level loop has them: ptxas keeps fewer registers live and overlaps a
  step's loads with the MMAs before it (90 registers instead of 102: benchmarks/bench_mma_sync.py);
* ``ampere_gemm_<dtype>_<accumulator>`` on sm_80: float16 and bfloat16 into float32, int8 into int32, tf32
  (float32 storage) (a float16 accumulator would overflow on these sums: tests/ops/test_mma_sync.py covers it);
  ``ada_gemm_fp8`` on sm_89 (e4m3 into float32); ``sm120_gemm_<dtype>`` on sm_120 (bfloat16, e4m3): sm_120 has
  no tcgen05, so its MMA is this one.

Each kernel is built for its architecture (the fourth item of its entry), assembled with ``nvcc -cubin`` for it and
simulated (the simulator's own models of ``cp.async`` groups, ``ldmatrix`` and ``mma.sync``, from the ISA) equal to
numpy in the main job and the tests; the inputs are small integers, so every float32 and int32 sum is exact.
"""

from __future__ import annotations

import numpy as np
from tvm.script import tirx as T

import tirx_layout  # (also registers T.tile_mma, T.tile_copy_async, layout=..., the pipeline)
from tirx_layout import mma_shared_layout, mma_sync_a_layout, mma_sync_b_layout, mma_sync_c_layout
from tirx_layout.tools.kernel_report import Expected, KernelTable

#: (rtol, atol) of the comparison with numpy per accumulator dtype.
TOLERANCES = {"float32": (0.0, 0.0), "int32": (0.0, 0.0), "float16": (2.0**-9, 1.0)}
#: The CTA's tile of D, its warp grid, the shared stages.
TILE_M, TILE_N, WARPS, STAGES = 64, 64, (2, 2), 3


def gemm_reference(acc_dtype: str):
    """``D = A @ B.T`` in float64 (exact for the sample inputs), within ``TOLERANCES[acc_dtype]``."""
    rtol, atol = TOLERANCES[acc_dtype]
    return Expected(lambda a, b: a.astype(np.float64) @ b.astype(np.float64).T, inputs=2, rtol=rtol, atol=atol)


def pipelined_gemm(dtype: str = "float16", acc_dtype: str = "float32", tiles: int = 4):
    """The 3-stage cp.async + ldmatrix + mma.sync GEMM of ``64 x 64`` of D over ``tiles`` K tiles of 128 bytes."""
    bk = 128 // np.dtype(tirx_layout.sim.numpy_dtype(dtype)).itemsize
    k, m, n, s_ = tiles * bk, TILE_M, TILE_N, STAGES
    a_shared = mma_shared_layout(dtype, "128B", (s_, m, bk))
    b_shared = mma_shared_layout(dtype, "128B", (s_, n, bk))
    kb = bk // 4  # one mma.sync K step: 32 bytes of K
    a_frag = mma_sync_a_layout((m, kb), dtype, WARPS)
    b_frag = mma_sync_b_layout((n, kb), dtype, WARPS)
    accumulator = mma_sync_c_layout((m, n), acc_dtype, WARPS)

    @T.prim_func
    def gemm(A: T.Buffer((m, k), dtype), B: T.Buffer((n, k), dtype), D: T.Buffer((m, n), acc_dtype)):
        T.device_entry()
        tx = T.thread_id([128])
        As = T.alloc_shared((s_, m, bk), dtype, layout=a_shared, align=1024)
        Bs = T.alloc_shared((s_, n, bk), dtype, layout=b_shared, align=1024)
        a = T.alloc_local((m, kb), dtype, layout=a_frag)
        b = T.alloc_local((n, kb), dtype, layout=b_frag)
        acc = T.alloc_local((m, n), acc_dtype, layout=accumulator)
        T.tile_fill(acc, 0)  # once, before the loop: every K tile then accumulates (no per-tile select)
        for s in T.unroll(s_ - 1):  # the prologue: the first two K tiles in flight
            T.tile_copy_async(As[s], A[0:m, s * bk : s * bk + bk])
            T.tile_copy_async(Bs[s], B[0:n, s * bk : s * bk + bk])
        # the K loop stays a loop, its K steps unrolled by nvcc (``#pragma unroll``) rather than by TVM: unrolled
        # whole (TVM's steps, then ptxas's 4 tiles), ptxas keeps 99 registers instead of 90
        for kt in T.serial(tiles, annotations={"pragma_unroll_explicit": 0}):
            if kt + 1 < tiles:  # tile kt + 1 (two groups) may stay in flight
                T.tile_copy_async_wait(2)
            else:
                T.tile_copy_async_wait(0)
            if kt + s_ - 1 < tiles:  # into the stage tile kt - 1 used, which every thread is done with
                T.tile_copy_async(As[(kt + s_ - 1) % s_], A[0:m, (kt + s_ - 1) * bk : (kt + s_ - 1) * bk + bk])
                T.tile_copy_async(Bs[(kt + s_ - 1) % s_], B[0:n, (kt + s_ - 1) * bk : (kt + s_ - 1) * bk + bk])
            for kk in T.unroll(4):  # one mma.sync K step of the stage at a time
                T.tile_copy(a, As[kt % s_, 0:m, kk * kb : kk * kb + kb])
                T.tile_copy(b, Bs[kt % s_, 0:n, kk * kb : kk * kb + kb])
                T.tile_mma(acc, a, b, accumulate=True)
        T.tile_copy(D, acc)

    return gemm


KERNELS = KernelTable()  # each kernel built when first looked up; entries (kernel, expected, sizes, arch)


def _add(name: str, arch: str, dtype: str, acc_dtype: str) -> None:
    KERNELS.add_entry(name, lambda: (pipelined_gemm(dtype, acc_dtype), gemm_reference(acc_dtype), None, arch))


for _dtype, _acc in (
    ("float16", "float32"),
    ("bfloat16", "float32"),
    ("int8", "int32"),
    ("float32", "float32"),
):
    _add(f"ampere_gemm_{_dtype}_{_acc}", "sm_80", _dtype, _acc)
_add("ada_gemm_fp8", "sm_89", "float8_e4m3fn", "float32")
_add("sm120_gemm_bfloat16", "sm_120", "bfloat16", "float32")
_add("sm120_gemm_fp8", "sm_120", "float8_e4m3fn", "float32")
#: What the demo shows of this module.
SHOWCASE = ["ampere_gemm_float16_float32", "ampere_gemm_int8_int32", "ada_gemm_fp8", "sm120_gemm_bfloat16"]
