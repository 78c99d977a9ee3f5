"""The sm_80 GEMM of ``bench_mma_sync.py`` written with upstream TVM alone: its ``Tx`` ``gemm`` (dispatch
``"mma.m16n8k*"``, warp-level ``mma.sync``) fed by ``Tx.copy`` shared -> registers (dispatch ``"ldstmatrix"``)
and a 3-stage ring of ``Tx.copy_async`` global -> shared (dispatch ``"ldgsts"``, ``cp.async``).

The same problem and tiling as ``examples/ampere_gemm.py``'s ``ampere_gemm_float16_float32``: ``D = A @ B.T`` with
A ``(64, K)`` and B ``(64, K)`` float16, D float32, one CTA of 4 warps (2 x 2, each a 32 x 32 tile of D), K tiles
of 64 elements (128 bytes) through three 128B-swizzled shared stages (upstream's ``tma_utils.mma_shared_layout``).
Iteration ``kt`` waits for tile ``kt`` (``cp.async.wait_group 1``, a CTA barrier), issues tile ``kt + 2`` into the
stage tile ``kt - 1`` used, loads its warp's A and B fragments and multiplies into the accumulator.

What upstream 0.27's ``mma.m16n8k*`` dispatch reads (found by building this kernel): the operands' register layouts
on ONE thread axis (it declines a layout mixing ``laneid`` and a warp axis), so the fragments here are per warp
(``laneid`` only, the warp's rows chosen by slicing shared memory) and the copies and the GEMM run at warp scope;
``beta`` only 0 or 1 and constant, so the accumulator is zeroed before the loop (``Tx.fill``) and every K tile
accumulates (``beta=1``).

Run as a script (``python _upstream_mma_sync_gemm.py TILES``) it builds the kernel with TVM's ``"tirx"`` pipeline
and prints its measurement (``tirx_layout.tools.measurement.KernelCode``) as JSON; the caller sets
``TVM_DEVICE_BACKEND_AUTOLOAD=0`` (``_upstream_child.py`` says why).
"""

from __future__ import annotations

import dataclasses
import json
import sys

from tvm.backend.loader import load

load("cuda")  # with TVM_DEVICE_BACKEND_AUTOLOAD=0, nothing loads the CUDA backend's TVMScript names but this

from _upstream_gemm import upstream_cuda  # noqa: E402
from tvm.backend.cuda.tile_primitive.tma_utils import SwizzleMode, mma_shared_layout  # noqa: E402
from tvm.script import tirx as T  # noqa: E402
from tvm.script.tirx import tile as Tx  # noqa: E402
from tvm.tirx.layout import S, TileLayout, laneid  # noqa: E402

ARCH = "sm_80"
TILE_M, TILE_N, BK, STAGES, WARP_M, WARP_N = 64, 64, 64, 3, 32, 32


def fragment_layouts() -> tuple[TileLayout, TileLayout, TileLayout]:
    """One warp's A ``(32, 64)``, B ``(32, 64)`` (both K-major) and accumulator ``(32, 32)`` in the ``mma.sync``
    m16n8k16 fragments (PTX ISA 9.7.14.5.8): lane ``l`` has ``g = l // 4`` and ``t = l % 4``; A's row is
    ``16 mo + 8 rM + g`` and its column ``16 ko + 8 kHi + 2 t + p``, B's row (N) ``8 no + g`` and its column as
    A's, the accumulator's row as A's and its column ``8 no + 2 t + rN``. Registers are numbered in the order the
    instruction takes them (A: p, then rM, then kHi; the accumulator: rN, then rM), then by tile."""
    a = TileLayout(S[(2, 2, 8, 4, 2, 4, 2) : (32, 2, 4 @ laneid, 8, 4, 1 @ laneid, 1)])
    b = TileLayout(S[(4, 8, 4, 2, 4, 2) : (16, 4 @ laneid, 4, 2, 1 @ laneid, 1)])
    c = TileLayout(S[(2, 2, 8, 4, 4, 2) : (16, 2, 4 @ laneid, 4, 1 @ laneid, 1)])
    return a, b, c


def upstream_mma_sync_gemm(tiles: int = 4):
    """``D = A @ B.T`` over ``tiles`` K tiles of 64 float16, upstream's dispatch doing every copy and MMA."""
    k, m, n, s_, bk = tiles * BK, TILE_M, TILE_N, STAGES, BK
    swizzle = SwizzleMode.SWIZZLE_128B_ATOM
    a_shared, b_shared = (
        mma_shared_layout("float16", swizzle, (s_, m, bk)),
        mma_shared_layout("float16", swizzle, (s_, n, bk)),
    )
    a_frag, b_frag, c_frag = fragment_layouts()

    @T.prim_func
    def gemm(A: T.Buffer((m, k), "float16"), B: T.Buffer((n, k), "float16"), D: T.Buffer((m, n), "float32")):
        T.device_entry()
        _wg = T.warpgroup_id([1])
        warp = T.warp_id_in_wg([4])
        _lane = T.lane_id([32])
        pool = T.SMEMPool()
        As = pool.alloc((s_, m, bk), "float16", layout=a_shared, align=1024)
        Bs = pool.alloc((s_, n, bk), "float16", layout=b_shared, align=1024)
        pool.commit()
        a = T.alloc_local((WARP_M, bk), "float16", layout=a_frag)
        b = T.alloc_local((WARP_N, bk), "float16", layout=b_frag)
        acc = T.alloc_local((WARP_M, WARP_N), "float32", layout=c_frag)
        wm = warp // 2
        wn = warp % 2
        Tx.warp.fill(acc[:, :], T.float32(0))
        for s in T.unroll(s_ - 1):  # the prologue: the first two K tiles in flight, one group each
            Tx.cta.copy_async(As[s, :, :], A[:, s * bk : s * bk + bk], dispatch="ldgsts")
            Tx.cta.copy_async(Bs[s, :, :], B[:, s * bk : s * bk + bk], dispatch="ldgsts")
            T.ptx["cp.async.commit_group"]()
        for kt in T.serial(tiles):
            T.ptx["cp.async.wait_group"](s_ - 2)  # tile kt has landed; tile kt + 1 may stay in flight
            T.cuda.cta_sync()
            if kt + s_ - 1 < tiles:  # into the stage tile kt - 1 used, which every warp is done with
                nxt = kt + s_ - 1
                Tx.cta.copy_async(As[nxt % s_, :, :], A[:, nxt * bk : nxt * bk + bk], dispatch="ldgsts")
                Tx.cta.copy_async(Bs[nxt % s_, :, :], B[:, nxt * bk : nxt * bk + bk], dispatch="ldgsts")
            T.ptx["cp.async.commit_group"]()  # (an empty group at the tail keeps the wait count uniform)
            Tx.warp.copy(a[:, :], As[kt % s_, wm * WARP_M : wm * WARP_M + WARP_M, :])
            Tx.warp.copy(b[:, :], Bs[kt % s_, wn * WARP_N : wn * WARP_N + WARP_N, :])
            Tx.warp.gemm(acc[:, :], a[:, :], b[:, :], acc[:, :], transpose_B=True, beta=1.0)
        Tx.warp.copy(D[wm * WARP_M : wm * WARP_M + WARP_M, wn * WARP_N : wn * WARP_N + WARP_N], acc[:, :])

    return gemm


def main(argv: list[str]) -> None:
    cuda, lowered = upstream_cuda(upstream_mma_sync_gemm(int(argv[0])), ARCH)
    from tirx_layout.tools import measurement  # only now: upstream has built the kernel with its own names

    dynamic = measurement.launch_values(lowered).get("tirx.use_dyn_shared_memory", 0)
    fields = dataclasses.asdict(measurement.measure_cuda(cuda, ARCH, dynamic))
    json.dump({**fields, "cuda": cuda}, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1:])
