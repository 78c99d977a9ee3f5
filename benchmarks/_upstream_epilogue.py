"""The fused epilogues of ``examples/epilogues.py`` written with upstream TVM 0.27's tile primitives alone, for
``bench_epilogue.py`` to compare with ours.

Both kernels do what ours do, on the same layouts and shapes, with upstream's element-wise ops on register
fragments (``Tx.add``, ``Tx.maximum``, ``Tx.silu``, ``Tx.mul``, ``Tx.fma``, ``Tx.exp``, ``Tx.fdiv``, ``Tx.cast``:
``tvm/backend/cuda/tile_primitive/elementwise``, whose register path partitions the op per thread through the
destination fragment's layout):

* ``tmem``: a (128, cols) float32 accumulator in TMEM (datapath D), filled from ``Acc`` (``Tx.wg.copy`` into a
  ``T.alloc_tcgen05_ldst_frag`` fragment, ``Tx.wg.copy_async`` = ``tcgen05.st``), drained 32 columns at a time
  (``Tx.wg.copy_async`` = ``tcgen05.ld.32x32b.x32``), bias added, activated, cast to bfloat16
  (``T.alloc_cast_frag``), written to a 64B-swizzled shared tile (``Tx.wg.copy``) and stored by TMA, one 32-row box
  per warp (``Tx.copy_async(..., dispatch="tma_auto")`` by lane 0, then ``cp.async.bulk.commit_group`` /
  ``wait_group.read 0``).
* ``wgmma`` (sm_90a): the (64, n) float32 fragment of ``wgmma.m64nN`` (upstream has no helper for that layout; it is
  written here as a ``TileLayout`` over ``tid_in_wg`` from the PTX ISA's accumulator figure), loaded from ``Acc``,
  biased, activated, cast, copied to ``D``.

The bias: upstream's register element-wise ops take only register operands with layouts, so the bias row is first
loaded into registers with a thread-scope ``Tx.thread.copy`` (the 32 values of a TMEM chunk; the 2 x n/8 columns a
Hopper thread holds) and viewed as a fragment of the accumulator's shape: for TMEM with the accumulator fragment's
own layout (each thread holds a whole row, so its slot j is column j for every row), for wgmma with a stride-0 row
iterator (one value serves the two rows a thread holds).

Upstream's packed ``add.f32x2`` (sm_100) rounds toward zero unless told otherwise; ours rounds to nearest, so the
adds here pass ``rounding_mode="rn"`` (the packed ops stay ``.ftz``). Upstream has no ``tanh``: GELU's tanh form is
written through ``0.5 (1 + tanh(u)) = 1 / (1 + exp(-2u))`` as ``x / (1 + exp(-2c (x + 0.044715 x^3)))`` (``Tx.mul``,
``Tx.fma``, ``Tx.exp``, ``Tx.add``, ``Tx.fdiv``): the same function, other instructions.

Run as a script (``python _upstream_epilogue.py KERNEL ACTIVATION SIZE``: KERNEL ``tmem`` or ``wgmma``, SIZE the
columns) it builds the kernel with TVM's ``"tirx"`` pipeline and prints its measurement (``KernelCode`` fields) and
CUDA source as JSON; ``TVM_DEVICE_BACKEND_AUTOLOAD=0`` is required, as for ``_upstream_gemm.py`` (whose
``upstream_cuda`` it uses).
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

CHUNK = 32  # TMEM columns drained per tcgen05.ld, as in examples/epilogues.py
GELU_C = 0.7978845608028654  # sqrt(2 / pi)
ARCH = {"tmem": "sm_100a", "wgmma": "sm_90a"}


def activate(frag, activation: str, scratch):
    """Emit ``frag = act(frag)`` with upstream's tile ops; ``scratch`` is a fragment of the same layout."""
    if activation == "relu":
        Tx.wg.maximum(frag, frag, T.float32(0))
    elif activation == "silu":
        Tx.wg.silu(frag, frag)
    elif activation == "gelu":
        k = -2.0 * GELU_C
        Tx.wg.mul(scratch, frag, frag, rounding_mode="rn")  # x^2
        Tx.wg.fma(scratch, scratch, T.float32(k * 0.044715), T.float32(k))  # -2c (1 + 0.044715 x^2)
        Tx.wg.mul(scratch, scratch, frag, rounding_mode="rn")  # -2u
        Tx.wg.exp(scratch, scratch)
        Tx.wg.add(scratch, scratch, T.float32(1), rounding_mode="rn")
        Tx.wg.fdiv(frag, frag, scratch)  # x * sigmoid(2u) = 0.5 x (1 + tanh(u))
    else:
        raise ValueError(f"activation {activation!r}; expected relu, silu or gelu")


def tmem_epilogue(activation: str, cols: int = 64):
    """The TMEM epilogue of the module docstring: ``D = bf16(act(acc + bias))``, ``acc`` (128, cols) in TMEM."""
    staging_layout = mma_shared_layout("bfloat16", SwizzleMode.SWIZZLE_64B_ATOM, (128, CHUNK))

    @T.prim_func
    def epilogue(
        Acc: T.Buffer((128, cols), "float32"), bias: T.Buffer((cols,), "float32"), D: T.Buffer((128, cols), "bfloat16")
    ):
        T.device_entry()
        wg = T.warpgroup_id([1])
        warp = T.warp_id_in_wg([4])
        lane = T.lane_id([32])
        pool = T.SMEMPool()
        tmem_pool = T.TMEMPool(pool, total_cols=cols)
        pool.move_base_to(1024)
        staging = pool.alloc((128, CHUNK), "bfloat16", layout=staging_layout)
        pool.commit()
        acc = tmem_pool.alloc((128, cols), "float32", layout=upstream.tmem_datapath_layout("D", 128, cols))
        tmem_pool.commit()
        T.cuda.cta_sync()
        staged = T.alloc_tcgen05_ldst_frag("32x32b", (128, cols), "float32")
        Tx.wg.copy(staged[:, :], Acc[:, :])
        Tx.wg.copy_async(acc[:, :], staged[:, :])
        T.ptx.tcgen05.wait__st.sync.aligned()
        out = T.alloc_tcgen05_ldst_frag("32x32b", (128, CHUNK), "float32")
        scratch = T.alloc_tcgen05_ldst_frag("32x32b", (128, CHUNK), "float32")
        bias_row = T.alloc_local((CHUNK,), "float32")
        bias_frag = bias_row.view(128, CHUNK, layout=out.layout)  # slot j: column j of every row
        result = T.alloc_cast_frag(out, "bfloat16")
        for c in T.unroll(cols // CHUNK):
            Tx.wg.copy_async(out[:, :], acc[:, c * CHUNK : c * CHUNK + CHUNK])
            T.ptx.tcgen05.wait__ld.sync.aligned()
            Tx.thread.copy(bias_row[:], bias[c * CHUNK : c * CHUNK + CHUNK])
            Tx.wg.add(out[:, :], out[:, :], bias_frag[:, :], rounding_mode="rn")
            activate(out[:, :], activation, scratch[:, :])
            Tx.wg.cast(result[:, :], out[:, :])
            Tx.wg.copy(staging[:, :], result[:, :])
            T.ptx.fence.proxy.async_.shared__cta()
            T.cuda.warpgroup_sync(8)
            if lane == 0:
                Tx.copy_async(
                    D[warp * 32 : warp * 32 + 32, c * CHUNK : c * CHUNK + CHUNK],
                    staging[warp * 32 : warp * 32 + 32, :],
                    dispatch="tma_auto",
                )
                T.ptx["cp.async.bulk.commit_group"]()
                T.ptx["cp.async.bulk.wait_group.read"](0)
            T.cuda.warpgroup_sync(8)
        T.cuda.cta_sync()
        tmem_pool.dealloc()

    return epilogue


def wgmma_accumulator(n: int) -> TileLayout:
    """The (64, n) float32 accumulator of ``wgmma.m64nNk*`` across a warpgroup (PTX ISA, "Matrix fragments for
    wgmma .m64nNk*", accumulator D): row ``16 w + 8 r + lane / 4``, column ``8 i + 2 (lane % 4) + c``, thread
    ``32 w + lane`` holding slot ``4 i + 2 r + c``."""
    return TileLayout(
        S[(4, 2, 8, n // 8, 4, 2) : (32 @ axis_tid_in_wg, 2, 4 @ axis_tid_in_wg, 4, 1 @ axis_tid_in_wg, 1)]
    )


def wgmma_epilogue(activation: str, n: int = 64):
    """The Hopper epilogue of the module docstring: ``D = bf16(act(acc + bias))``, ``acc`` the (64, n) fragment."""
    acc_layout = wgmma_accumulator(n)
    # the bias fragment: the accumulator's placement with the row bit r read from the same register (stride 0)
    bias_layout = TileLayout(
        S[(4, 2, 8, n // 8, 4, 2) : (32 @ axis_tid_in_wg, 0, 4 @ axis_tid_in_wg, 2, 1 @ axis_tid_in_wg, 1)]
    )

    @T.prim_func
    def epilogue(Acc: T.Buffer((64, n), "float32"), bias: T.Buffer((n,), "float32"), D: T.Buffer((64, n), "bfloat16")):
        T.device_entry()
        wg = T.warpgroup_id([1])
        warp = T.warp_id_in_wg([4])
        lane = T.lane_id([32])
        acc_regs = T.alloc_local((n // 2,), "float32")
        acc = acc_regs.view(64, n, layout=acc_layout)
        scratch_regs = T.alloc_local((n // 2,), "float32")
        scratch = scratch_regs.view(64, n, layout=acc_layout)
        result_regs = T.alloc_local((n // 2,), "bfloat16")
        result = result_regs.view(64, n, layout=acc_layout)
        bias_regs = T.alloc_local((n // 8, 1, 2), "float32")
        bias_frag = bias_regs.view(64, n, layout=bias_layout)
        bias_quads = T.decl_buffer((n // 8, 4, 2), "float32", data=bias.data)  # column 8 i + 2 q + c
        Tx.wg.copy(acc[:, :], Acc[:, :])
        Tx.thread.copy(bias_regs[:, :, :], bias_quads[:, lane % 4 : lane % 4 + 1, :])
        Tx.wg.add(acc[:, :], acc[:, :], bias_frag[:, :], rounding_mode="rn")
        activate(acc[:, :], activation, scratch[:, :])
        Tx.wg.cast(result[:, :], acc[:, :])
        Tx.wg.copy(D[:, :], result[:, :])

    return epilogue


KERNELS = {"tmem": tmem_epilogue, "wgmma": wgmma_epilogue}


def main(argv: list[str]) -> None:
    kernel, activation, size = argv[0], argv[1], int(argv[2])
    cuda, lowered = upstream_cuda(KERNELS[kernel](activation, size), ARCH[kernel])
    from tirx_layout.tools import measurement  # only now: upstream has built the kernel with its own names

    dynamic = measurement.launch_values(lowered).get("tirx.use_dyn_shared_memory", 0)
    code = measurement.measure_cuda(cuda, ARCH[kernel], dynamic)
    json.dump({**dataclasses.asdict(code), "cuda": cuda}, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1:])
