"""LowerTileMma: ``T.tile_mma`` and the ``T.mbarrier_*`` operations lowered, compared structurally with TIR written
here by hand. The descriptor values are encoded in this file from the PTX ISA field tables ("Instruction descriptor",
"Shared memory descriptor"; restated in docs/notes/tcgen05-mma-facts.md §3-§4), not by ``hw/mma.py``. Every kind
builds for sm_100a and nvcc assembles it; every refusal is a clear error."""

import re

import pytest
import tvm
import tvm_ffi

from tirx_layout.tools.kernel_report import nvcc_assembles
from tirx_layout.transform import build, lower_tile_mma, lower_tile_ops

from kernels import parse

# ---- the ISA's field tables, encoded independently of hw/mma.py ------------------------------------------------

D_FORMAT = {"float16": 0, "float32": 1, "int32": 2}
AB_FORMAT = {
    "float16": 0,
    "bfloat16": 1,
    "float32": 2,  # tf32
    "float8_e4m3fn": 0,
    "float8_e5m2": 1,
    "uint8": 0,
    "int8": 1,
}
SWIZZLE_FIELD = {"none": 0, "128B": 2, "64B": 4, "32B": 6}


def isa_idesc(a, b, d, m, n, a_mn=False, b_mn=False):
    """Instruction descriptor, dense kinds: D format at 4-5, A at 7-9, B at 10-12, transpose A/B at 15/16,
    N >> 3 at 17-22, M >> 4 at 24-28."""
    return (
        D_FORMAT[d] << 4
        | AB_FORMAT[a] << 7
        | AB_FORMAT[b] << 10
        | int(a_mn) << 15
        | int(b_mn) << 16
        | (n >> 3) << 17
        | (m >> 4) << 24
    )


def isa_sdesc(lbo, sbo, swizzle, start=0):
    """Shared memory descriptor: start >> 4 at 0-13, LBO >> 4 at 16-29, SBO >> 4 at 32-45, 0b001 at 46-48,
    base offset 0 at 49-51, swizzle mode at 61-63."""
    return (start >> 4) | (lbo >> 4) << 16 | (sbo >> 4) << 32 | 1 << 46 | SWIZZLE_FIELD[swizzle] << 61


def test_the_test_encoders_reproduce_the_worked_values_of_the_facts_note():
    assert isa_idesc("bfloat16", "bfloat16", "float32", 128, 128) == 0x08200490
    assert isa_idesc("float16", "float16", "float16", 64, 200) == 0x04320000
    assert isa_sdesc(16, 1024, "128B", start=0x400) == 0x4000404000010040


# ---- comparing lowered TIR ------------------------------------------------------------------------------------


def _without_sources(node):
    """The helper calls with their CUDA source (the last argument) blanked: the structure is compared, the
    sources are checked by the nvcc tests."""

    def blank(call):
        if getattr(call.op, "name", "") != "tirx.cuda.func_call":
            return call
        return tvm.ir.Call(call.op, [*call.args[:-1], tvm.ir.StringImm("")], ret_ty=call.ty)

    return tvm_ffi.structural_map(node, [(tvm.ir.Call, blank)], order="post")


def lowered(func):
    """``func`` through LowerTileMma, then LowerTileOps (which allocates TMEM and fills in its addresses)."""
    done = lower_tile_ops(lower_tile_mma(func))
    return done.with_body(_without_sources(done.body))


def assert_lowers_to(func, expected):
    tvm.ir.assert_structural_equal(
        lowered(func), expected.with_body(_without_sources(expected.body)), map_free_vars=True
    )


SWIZZLED_128B = 'T.layout("ComposeLayout(SwizzleLayout(3, 3, 3), TileLayout(S[(128, 64):(64, 1)]))")'

F16_SYNC = """
@T.prim_func
def gemm():
    T.device_entry()
    tx = T.thread_id([128])
    As = T.alloc_shared((128, 64), "float16", layout=mma_shared_layout("float16", "128B", (128, 64)), align=1024)
    Bs = T.alloc_shared((128, 64), "float16", layout=mma_shared_layout("float16", "128B", (128, 64)), align=1024)
    acc = T.alloc_tmem((128, 128), "float32", layout=tmem_datapath_layout("D", 128, 128))
    T.tile_mma(acc, As, Bs)
"""


def f16_sync_expected():
    # K-major 128B swizzle: SBO = 8 rows x 128 B between 8-row groups, LBO unused (the ISA: "assumed 1", 16 bytes);
    # each K step of 16 fp16 moves 32 bytes (16 elements) along the 128-byte atom row.
    desc = isa_sdesc(16, 1024, "128B")
    idesc = isa_idesc("float16", "float16", "float32", 128, 128)
    mma = "\n".join(
        f'        T.cuda.func_call("tirx_layout_tcgen05_mma_f16_ss", acc_taddr, T.address_of(As_flat[{16 * s}]), '
        f"T.uint64({desc}), T.address_of(Bs_flat[{16 * s}]), T.uint64({desc}), T.uint32({idesc}), "
        f'T.uint32({int(s > 0)}), source_code="")'
        for s in range(4)
    )
    return parse(f"""
@T.prim_func
def gemm():
    T.device_entry()
    tx = T.thread_id([128])
    bar = T.alloc_shared((1,), "uint64")
    phase = T.alloc_local((1,), "uint32")
    phase[0] = T.uint32(0)
    if tx == 0:
        T.cuda.func_call("tirx_layout_tcgen05_mbarrier_init", T.address_of(bar[0]), T.uint32(1), source_code="")
    T.cuda.cta_sync()
    As = T.alloc_shared((128, 64), "float16", align=1024, layout={SWIZZLED_128B})
    Bs = T.alloc_shared((128, 64), "float16", align=1024, layout={SWIZZLED_128B})
    slot = T.alloc_shared((1,), "uint32")
    if tx // 32 == 0:
        T.cuda.func_call("tirx_layout_tcgen05_alloc", T.address_of(slot[0]), T.uint32(128), source_code="")
        T.cuda.func_call("tirx_layout_tcgen05_relinquish_alloc_permit", source_code="")
    T.cuda.cta_sync()
    acc_taddr: T.let[T.uint32] = slot[0]
    As_flat = T.decl_buffer((8192,), "float16", data=As.data, scope="shared", layout=None)
    Bs_flat = T.decl_buffer((8192,), "float16", data=Bs.data, scope="shared", layout=None)
    T.cuda.func_call("tirx_layout_tcgen05_fence_proxy_async", source_code="")
    T.cuda.func_call("tirx_layout_tcgen05_fence_before", source_code="")
    T.cuda.cta_sync()
    T.cuda.func_call("tirx_layout_tcgen05_fence_after", source_code="")
    if tx == 0:
{mma}
        T.cuda.func_call("tirx_layout_tcgen05_commit", T.address_of(bar[0]), source_code="")
    T.cuda.func_call("tirx_layout_tcgen05_mbarrier_wait", T.address_of(bar[0]), phase[0], source_code="")
    T.cuda.func_call("tirx_layout_tcgen05_fence_after", source_code="")
    phase[0] = phase[0] ^ T.uint32(1)
    T.cuda.cta_sync()
    if tx // 32 == 0:
        T.cuda.func_call("tirx_layout_tcgen05_dealloc", acc_taddr, T.uint32(128), source_code="")
""")


def test_f16_shared_shared_synchronous_128x128x64_lowers_to_the_hand_written_tir():
    assert_lowers_to(parse(F16_SYNC), f16_sync_expected())


# ---- every kind builds for sm_100a and assembles ---------------------------------------------------------------


def _body(cuda: str) -> str:
    return cuda[cuda.index('extern "C" __global__') :]


def test_f16_synchronous_kernel_builds_and_assembles():
    cuda = build(parse(F16_SYNC)).imports[0].inspect_source()
    assert len(re.findall(r"tirx_layout_tcgen05_mma_f16_ss\(", _body(cuda))) == 4
    assert "tcgen05.mma.cta_group::1.kind::f16 [%0], %1, %2, %3, p;" in cuda
    assembled = nvcc_assembles(cuda)
    if assembled is None:
        pytest.skip("nvcc is not installed")
    assert assembled[0], assembled[1]
