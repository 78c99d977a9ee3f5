"""The one-CTA GEMM of ``bench_mma.py`` written with upstream TVM alone: ``Tx.gemm_async(..., dispatch="tcgen05")``.

``D[m, n] = sum_k A[m, k] * B[n, k]`` (A is (M, K), B is (N, K), both K-major and 128B-swizzled in shared memory, D
float32 in global memory), one CTA of 128 threads: every thread copies A and B into shared memory (``Tx.cta.copy``),
one elected thread of warp 0 issues the MMAs (``Tx.gemm_async``, which steps K itself) and commits them to an
mbarrier, every thread waits on it, then the warpgroup reads the accumulator out of tensor memory
(``Tx.wg.copy_async``, ``tcgen05.ld``) and writes D, 128 columns at a time.

Run as a script (``python _upstream_gemm.py M N K DTYPE``) it builds that kernel with TVM's ``"tirx"`` pipeline and
prints its measurement (``tirx_layout.tools.measurement.KernelCode``) as JSON. The caller must set
``TVM_DEVICE_BACKEND_AUTOLOAD=0``: otherwise ``import tvm`` loads tirx_layout, whose TVMScript names take over
``T.alloc_local(layout=...)`` and friends and turn upstream's layouts into ours, which upstream's dispatch does not
read. tirx_layout is imported here only after the kernel has been lowered, to measure it.

What upstream 0.27 needs (found by building this kernel):
* the shared operands in a ``T.SMEMPool`` (dynamic shared memory) with upstream's
  ``tma_utils.mma_shared_layout(dtype, SwizzleMode.SWIZZLE_128B_ATOM, (rows, K))``, aligned to 1024 bytes;
* the accumulator from a ``T.TMEMPool``: its ``allocated_addr`` is the COLUMN the buffer starts at, and the MMA's
  D address is that column with lane 0, not the address ``tcgen05.alloc`` wrote: correct only while the CTA's one
  allocation starts at TMEM address 0 (as it does when nothing else allocates);
* ``gemm_async`` only at single-thread or warp scope (``if warp == 0: if T.cuda.elect_sync():``); the commit, the
  mbarrier init/wait, the fences and the ``fence.proxy.async`` after the generic-proxy copy are the kernel's to write;
* PTX ops spelled as 0.27's ``T.ptx`` chains (``T.ptx.mbarrier.init.shared.b64``, ``T.ptx["tcgen05.commit..."]``).
"""

from __future__ import annotations

import dataclasses
import json
import sys

import tvm
from tvm.backend.loader import load

load("cuda")  # with TVM_DEVICE_BACKEND_AUTOLOAD=0, nothing loads the CUDA backend's TVMScript names but this

from tvm.backend.cuda.tile_primitive.tma_utils import SwizzleMode, mma_shared_layout  # noqa: E402
from tvm.script import tirx as T  # noqa: E402
from tvm.script.tirx import tile as Tx  # noqa: E402
from tvm.tirx import layout as upstream  # noqa: E402
from tvm.tirx.build import codegen_build, split_host_device_mods  # noqa: E402

EPILOGUE_COLUMNS = 128  # the accumulator is read 128 columns (128 registers per thread) at a time


def upstream_gemm(m: int, n: int, k: int, dtype: str = "float16"):
    """``D = A @ B.T`` for one (m, n, k) tile with ``Tx.gemm_async(..., dispatch="tcgen05")``; m is 128 (the
    accumulator in TMEM datapath layout D, read with ``tcgen05.ld.32x32b``) or 64 (layout F, ``16x256b``)."""
    swizzle = SwizzleMode.SWIZZLE_128B_ATOM
    a_layout, b_layout = mma_shared_layout(dtype, swizzle, (m, k)), mma_shared_layout(dtype, swizzle, (n, k))
    chunk = min(n, EPILOGUE_COLUMNS)
    assert n in (chunk, 2 * chunk), "one or two 128-column pieces of the accumulator"
    datapath, shape = ("D", "32x32b") if m == 128 else ("F", "16x256b")
    fragment = upstream.tcgen05_atom_layout(shape, (m, chunk), "float32")
    acc_layout = upstream.tmem_datapath_layout(datapath, m, n)
    columns = max(32, 1 << (n - 1).bit_length())  # tcgen05.alloc takes a power of two >= 32

    @T.prim_func
    def gemm(A: T.Buffer((m, k), dtype), B: T.Buffer((n, k), dtype), D: T.Buffer((m, n), "float32")):
        T.device_entry()
        wg = T.warpgroup_id([1])
        warp = T.warp_id_in_wg([4])
        lane = T.lane_id([32])
        pool = T.SMEMPool()
        bar = pool.alloc((1,), "uint64", align=8)
        tmem_pool = T.TMEMPool(pool, total_cols=columns)
        pool.move_base_to(1024)
        As = pool.alloc((m, k), dtype, layout=a_layout)
        Bs = pool.alloc((n, k), dtype, layout=b_layout)
        pool.commit()
        acc = tmem_pool.alloc((m, n), "float32", layout=acc_layout)
        if warp == 0:  # noqa: SIM102  (TVMScript: the inner condition is evaluated by warp 0 only)
            if lane == 0:
                T.ptx.mbarrier.init.shared.b64(bar.ptr_to([0]), T.uint32(1))
        tmem_pool.commit()
        T.ptx.fence.mbarrier_init.release.cluster()
        T.cuda.cta_sync()
        Tx.cta.copy(As[:, :], A[:, :])
        Tx.cta.copy(Bs[:, :], B[:, :])
        T.ptx.fence.proxy.async_.shared__cta()
        T.cuda.cta_sync()
        if warp == 0:  # noqa: SIM102  (TVMScript: the inner condition is evaluated by warp 0 only)
            if T.cuda.elect_sync():
                Tx.gemm_async(acc[:, :], As[:, :], Bs[:, :], accum=False, dispatch="tcgen05", cta_group=1)
                T.ptx["tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64"](bar.ptr_to([0]))
        T.cuda.mbarrier_wait(bar.ptr_to([0]), 0)
        T.ptx["tcgen05.fence::after_thread_sync"]()
        out = T.alloc_local((m, chunk), "float32", layout=fragment)
        Tx.wg.copy_async(out[:, :], acc[:, 0:chunk])
        T.ptx.tcgen05.wait__ld.sync.aligned()
        Tx.wg.copy(D[:, 0:chunk], out[:, :])
        if n > chunk:  # a Python condition: the second half exists in the kernel or not
            Tx.wg.copy_async(out[:, :], acc[:, chunk:n])
            T.ptx.tcgen05.wait__ld.sync.aligned()
            Tx.wg.copy(D[:, chunk:n], out[:, :])
        T.cuda.cta_sync()
        tmem_pool.dealloc()

    return gemm


def upstream_cuda(kernel, arch: str = "sm_100a") -> tuple[str, tvm.IRModule]:
    """The CUDA source of ``kernel`` built with TVM's ``"tirx"`` pipeline, and the module before host/device
    finalisation (its host function holds the launch). The steps of ``tirx_layout.tools.measurement.lower`` and
    ``device_source``, repeated here because importing tirx_layout before upstream's dispatch has run would change
    what that dispatch builds (its internal ``decl_buffer(layout=...)`` calls would meet our TVMScript names)."""
    host = "llvm" if tvm.runtime.enabled("llvm") else "c"
    target = tvm.target.Target({"kind": "cuda", "arch": arch}).with_host(tvm.target.Target(host))
    passes, _finalize_host, finalize_device = tvm.tirx.get_tir_pipeline("tirx")
    lowered = passes(tvm.tirx.transform.BindTarget(target)(tvm.IRModule({"main": kernel})))
    _host, devices = split_host_device_mods(lowered)
    ((device_target, device),) = devices.items()
    return codegen_build(finalize_device()(device), device_target).inspect_source(), lowered


def main(argv: list[str]) -> None:
    m, n, k, dtype = int(argv[0]), int(argv[1]), int(argv[2]), argv[3]
    cuda, lowered = upstream_cuda(upstream_gemm(m, n, k, dtype))
    from tirx_layout.tools import measurement  # only now: upstream has built the kernel with its own names

    dynamic = measurement.launch_values(lowered).get("tirx.use_dyn_shared_memory", 0)
    json.dump(dataclasses.asdict(measurement.measure_cuda(cuda, "sm_100a", dynamic)), sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1:])
