"""The pipelined tcgen05 GEMM as upstream TVM 0.27 writes one (the structure of its source tree's
``apache/tvm:tests/python/tirx/benchmarks/bench_cuda_tcgen05_bf16_gemm.py``; that script is not in the wheel), written
here with upstream's API alone: one CTA per 128 x ``block_n`` output tile, lane 0 of warp 0 loading K tiles with
``Tx.copy_async(..., dispatch="tma_auto", mbar=...)`` into an S-stage ring, lane 0 of warp 1 issuing
``Tx.gemm_async(..., dispatch="tcgen05")`` and committing each stage to its empty mbarrier, one accumulator, then
the CTA draining it (``Tx.wg.copy_async`` = ``tcgen05.ld``) 128 columns at a time. M and N must be multiples of the
tile.

Run as a script (``python _upstream_pipelined_gemm.py M N K STAGES BLOCK_N``) it builds the kernel with TVM's
``"tirx"`` pipeline and prints its measurement (``KernelCode`` fields and its CUDA source, ``cuda``) as JSON;
``TVM_DEVICE_BACKEND_AUTOLOAD=0`` is required, as for ``_upstream_gemm.py`` (whose ``upstream_cuda`` it uses).
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _upstream_gemm import upstream_cuda
from tvm.backend.cuda.tile_primitive.tma_utils import SwizzleMode, mma_shared_layout
from tvm.script import tirx as T
from tvm.script.tirx import tile as Tx
from tvm.tirx import layout as upstream
from tvm.tirx.layout import S, TileLayout
from tvm.tirx.layout import tid_in_wg as axis_tid_in_wg

BLOCK_M, BLOCK_K, CHUNK = 128, 64, 128


def upstream_pipelined_gemm(m: int, n: int, k: int, stages: int = 4, block_n: int = 256):
    """The kernel of the module docstring for bf16 ``A (m, k)``, ``B (n, k)``, float32 ``C = A @ B.T``."""
    dtype = "bfloat16"
    grid_m, grid_n, k_tiles = m // BLOCK_M, n // block_n, k // BLOCK_K
    swizzle = SwizzleMode.SWIZZLE_128B_ATOM
    a_layout = mma_shared_layout(dtype, swizzle, (BLOCK_M, BLOCK_K)).tile_to(
        (stages, BLOCK_M, BLOCK_K), (1, BLOCK_M, BLOCK_K)
    )
    b_layout = mma_shared_layout(dtype, swizzle, (block_n, BLOCK_K)).tile_to(
        (stages, block_n, BLOCK_K), (1, block_n, BLOCK_K)
    )
    stage_bytes = (BLOCK_M + block_n) * BLOCK_K * 2
    chunks = block_n // CHUNK

    @T.prim_func
    def gemm(A: T.Buffer((m, k), dtype), B: T.Buffer((n, k), dtype), C: T.Buffer((m, n), "float32")):
        T.device_entry()
        block = T.cta_id([grid_m * grid_n])
        warp = T.warp_id([4])
        lane = T.lane_id([32])
        wg = T.warpgroup_id([1])
        tid = T.thread_id_in_wg([128])
        pool = T.SMEMPool()
        full = pool.alloc((stages,), "uint64", align=8)
        empty = pool.alloc((stages,), "uint64", align=8)
        tmem_pool = T.TMEMPool(pool, total_cols=block_n)
        pool.move_base_to(1024)
        As = pool.alloc((stages, BLOCK_M, BLOCK_K), dtype, layout=a_layout)
        Bs = pool.alloc((stages, block_n, BLOCK_K), dtype, layout=b_layout)
        pool.commit()
        accumulator = upstream.tmem_datapath_layout("D", BLOCK_M, block_n)
        acc = tmem_pool.alloc((BLOCK_M, block_n), "float32", layout=accumulator)
        if warp == 0:  # noqa: SIM102  (TVMScript: the inner condition is evaluated by warp 0 only)
            if lane == 0:
                for s in T.unroll(stages):
                    T.ptx.mbarrier.init.shared.b64(full.ptr_to([s]), T.uint32(1))
                    T.ptx.mbarrier.init.shared.b64(empty.ptr_to([s]), T.uint32(1))
        tmem_pool.commit()
        T.ptx.fence.mbarrier_init.release.cluster()
        T.cuda.cta_sync()
        row0 = block // grid_n * BLOCK_M
        col0 = block % grid_n * block_n
        if warp == 0:  # noqa: SIM102  (the producer; parity ^ 1: every stage starts free)
            if lane == 0:
                for kt in T.serial(k_tiles):
                    T.cuda.mbarrier_wait(empty.ptr_to([kt % stages]), (kt // stages) % 2 ^ 1)
                    Tx.copy_async(
                        As[kt % stages, :, :],
                        A[row0 : row0 + BLOCK_M, kt * BLOCK_K : kt * BLOCK_K + BLOCK_K],
                        dispatch="tma_auto",
                        mbar=full.ptr_to([kt % stages]),
                    )
                    Tx.copy_async(
                        Bs[kt % stages, :, :],
                        B[col0 : col0 + block_n, kt * BLOCK_K : kt * BLOCK_K + BLOCK_K],
                        dispatch="tma_auto",
                        mbar=full.ptr_to([kt % stages]),
                    )
                    T.ptx.mbarrier.arrive.expect_tx.shared.b64(full.ptr_to([kt % stages]), T.uint32(stage_bytes))
        if warp == 1:  # noqa: SIM102  (the MMA issuer)
            if lane == 0:
                for kt in T.serial(k_tiles):
                    T.cuda.mbarrier_wait(full.ptr_to([kt % stages]), (kt // stages) % 2)
                    Tx.gemm_async(
                        acc[:, :], As[kt % stages, :, :], Bs[kt % stages, :, :], dispatch="tcgen05", accum=kt != 0
                    )
                    T.ptx["tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64"](
                        empty.ptr_to([kt % stages])
                    )
                T.cuda.mbarrier_wait(empty.ptr_to([(k_tiles - 1) % stages]), ((k_tiles - 1) // stages) % 2)
        T.cuda.cta_sync()
        T.ptx["tcgen05.fence::after_thread_sync"]()
        out = T.alloc_local(CHUNK, dtype="float32")
        view = out.view(BLOCK_M, CHUNK, layout=TileLayout(S[(BLOCK_M, CHUNK) : (1 @ axis_tid_in_wg, 1)]))
        for c in T.unroll(chunks):
            if wg == 0:
                Tx.wg.copy_async(view[:, :], acc[:, c * CHUNK : c * CHUNK + CHUNK])
                T.ptx.tcgen05.wait__ld.sync.aligned()
            T.cuda.cta_sync()
            Tx.copy(C[row0 + tid, col0 + c * CHUNK : col0 + c * CHUNK + CHUNK], out[:])
        T.cuda.cta_sync()
        tmem_pool.dealloc()

    return gemm


def main(argv: list[str]) -> None:
    m, n, k, stages, block_n = (int(a) for a in argv[:5])
    cuda, lowered = upstream_cuda(upstream_pipelined_gemm(m, n, k, stages, block_n))
    from tirx_layout.tools import measurement  # only now: upstream has built the kernel with its own names

    dynamic = measurement.launch_values(lowered).get("tirx.use_dyn_shared_memory", 0)
    code = measurement.measure_cuda(cuda, "sm_100a", dynamic)
    json.dump({**dataclasses.asdict(code), "cuda": cuda}, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1:])
