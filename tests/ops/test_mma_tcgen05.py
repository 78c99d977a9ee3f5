"""``T.tile_mma`` and the ``T.mbarrier_*`` operations lowered by LowerTileOps, compared structurally with TIR written
here by hand. The descriptor values are encoded in this file from the PTX ISA field tables ("Instruction descriptor",
"Shared memory descriptor"; restated in docs/notes/tcgen05-mma-facts.md §3-§4), not by ``hw/tcgen05_mma.py`` and
``hw/smem_descriptor.py``. Every kind builds for sm_100a and nvcc assembles it; every refusal is a clear error."""

import re

import numpy as np
import pytest
import tvm
import tvm_ffi

import tirx_layout
from tirx_layout import sim
from tirx_layout.ops.tmem import fence_barriers_between_accesses
from tirx_layout.tools.kernel_report import nvcc_assembles, report
from tirx_layout.transform import (
    LayoutVerificationError,
    WrongPipelineError,
    build,
    lower_tile_ops,
)

from kernels import example_kernels, parse

SM100A = tvm.target.Target({"kind": "cuda", "arch": "sm_100a"})

# ---- the ISA's field tables, encoded independently of hw/tcgen05_mma.py and hw/smem_descriptor.py ---------------

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


def parse_with(text: str, **values):
    """``parse`` with ``values`` in scope (a 64-bit descriptor with bit 63 set cannot be spelled ``T.uint64(...)``
    in TVMScript, so the expected TIR names it)."""
    names = {"T": tvm.script.tirx, "tvm": tvm, "tirx_layout": tirx_layout, **values}
    names.update({n: getattr(tirx_layout, n) for n in tirx_layout.__all__})
    return tvm.script.from_source(text, extra_vars=names)


def u64(value: int):
    return tvm.tirx.const(value, "uint64")


def lowered(func):
    """``func`` through LowerTileOps (which also allocates TMEM and fills in its addresses)."""
    done = lower_tile_ops(func)
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
    # each K step of 16 fp16 moves 32 bytes (16 elements) along the 128-byte atom row: 2 in the descriptor's
    # 16-byte start units, added to the descriptor the elected lane makes once per operand.
    desc = isa_sdesc(16, 1024, "128B")
    idesc = isa_idesc("float16", "float16", "float32", 128, 128)
    binds = "\n".join(
        f'            {v}: T.let[T.uint64] = T.cuda.func_call("tirx_layout_tcgen05_smem_descriptor", '
        f'T.address_of({b}[0]), T.uint64({desc}), source_code="", return_type="uint64")'
        for v, b in (("a_desc", "As_flat"), ("b_desc", "Bs_flat"))
    )
    descs = ["a_desc, b_desc"] + [f"a_desc + T.uint64({2 * s}), b_desc + T.uint64({2 * s})" for s in (1, 2, 3)]
    mma = (
        binds
        + "\n"
        + "\n".join(
            f'            T.cuda.func_call("tirx_layout_tcgen05_mma_f16_ss", acc_taddr, {descs[s]}, T.uint32({idesc}), '
            f'T.uint32({int(s > 0)}), source_code="")'
            for s in range(4)
        )
    )
    return parse(f"""
@T.prim_func
def gemm():
    T.device_entry()
    tx = T.thread_id([128])
    bar = T.alloc_shared((1,), "uint64")
    phase = T.alloc_local((1,), "uint32")
    phase[0] = T.uint32(0)
    if tx == 0:  # no CTA barrier here: the one before the issue publishes the initialisation
        T.cuda.func_call("tirx_layout_mbarrier_init", T.address_of(bar[0]), T.uint32(1), source_code="")
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
    T.cuda.func_call("tirx_layout_sync_fence_proxy_async", source_code="")
    T.cuda.func_call("tirx_layout_tcgen05_fence_before", source_code="")
    T.cuda.cta_sync()
    T.cuda.func_call("tirx_layout_tcgen05_fence_after", source_code="")
    if tx < 32:
        if T.cuda.func_call("tirx_layout_sync_elect", source_code="", return_type="uint32") != T.uint32(0):
{mma}
            T.cuda.func_call("tirx_layout_tcgen05_commit", T.address_of(bar[0]), source_code="")
    T.cuda.func_call("tirx_layout_mbarrier_wait", T.address_of(bar[0]), phase[0], source_code="")
    T.cuda.func_call("tirx_layout_tcgen05_fence_after", source_code="")
    phase[0] = phase[0] ^ T.uint32(1)
    T.cuda.cta_sync()
    if tx // 32 == 0:
        T.cuda.func_call("tirx_layout_tcgen05_dealloc", acc_taddr, T.uint32(128), source_code="")
""")


def test_f16_shared_shared_synchronous_128x128x64_lowers_to_the_hand_written_tir():
    assert_lowers_to(parse(F16_SYNC), f16_sync_expected())


ASYNC_STAGED = """
@T.prim_func
def gemm():
    T.device_entry()
    tx = T.thread_id([128])
    bars = T.alloc_shared((2,), "uint64")
    As = T.alloc_shared((2, 128, 32), "bfloat16", layout=mma_shared_layout("bfloat16", "64B", (2, 128, 32)), align=1024)
    Bs = T.alloc_shared((2, 64, 32), "bfloat16", layout=mma_shared_layout("bfloat16", "64B", (2, 64, 32)), align=1024)
    acc = T.alloc_tmem((128, 64), "float32", layout=tmem_datapath_layout("D", 128, 64))
    T.mbarrier_init(bars[1], 1)
    for k in range(4):
        T.tile_mma(acc, As[k % 2, 0:128, 0:32], Bs[k % 2, 0:64, 0:32], accumulate=k > 0, barrier=bars[1])
        T.mbarrier_wait(bars[1], k % 2)
"""


def async_staged_expected():
    # bf16 K-major 64B swizzle: rows of 64 bytes, SBO = 8 rows x 64 B = 512; a stage is 128 x 32 (A) or 64 x 32
    # (B) elements further on; K step 1 (16 bf16) starts 32 bytes (16 elements) into the row.
    desc = isa_sdesc(16, 512, "64B")
    idesc = isa_idesc("bfloat16", "bfloat16", "float32", 128, 64)
    layout_a = 'T.layout("ComposeLayout(SwizzleLayout(3, 2, 3), TileLayout(S[(2, 128, 32):(4096, 32, 1)]))")'
    layout_b = 'T.layout("ComposeLayout(SwizzleLayout(3, 2, 3), TileLayout(S[(2, 64, 32):(2048, 32, 1)]))")'
    # The stage moves the descriptor, not its address: stage 0's descriptor plus the stage's bytes in 16-byte
    # units (A: 128 x 32 bf16 = 8192 bytes, B: 64 x 32 bf16 = 4096 bytes per stage).
    a0, b0 = "T.address_of(As_flat[0])", "T.address_of(Bs_flat[0])"
    a_stage, b_stage = (
        f'T.Cast("uint64", k % 2 * {128 * 32 * 2 // 16})',
        f'T.Cast("uint64", k % 2 * {64 * 32 * 2 // 16})',
    )
    d, i = "DESC", f"T.uint32({idesc})"  # K step 1 starts 32 bytes on: + 2 in 16-byte units
    return parse_with(
        f"""
@T.prim_func
def gemm():
    T.device_entry()
    tx = T.thread_id([128])
    bars = T.alloc_shared((2,), "uint64")
    As = T.alloc_shared((2, 128, 32), "bfloat16", align=1024, layout={layout_a})
    Bs = T.alloc_shared((2, 64, 32), "bfloat16", align=1024, layout={layout_b})
    slot = T.alloc_shared((1,), "uint32")
    if tx // 32 == 0:
        T.cuda.func_call("tirx_layout_tcgen05_alloc", T.address_of(slot[0]), T.uint32(64), source_code="")
        T.cuda.func_call("tirx_layout_tcgen05_relinquish_alloc_permit", source_code="")
    T.cuda.cta_sync()
    acc_taddr: T.let[T.uint32] = slot[0]
    if tx == 0:
        T.cuda.func_call("tirx_layout_mbarrier_init", T.address_of(bars[1]), T.uint32(1), source_code="")
    T.cuda.cta_sync()
    for k in range(4):
        As_flat = T.decl_buffer((8192,), "bfloat16", data=As.data, scope="shared", layout=None)
        Bs_flat = T.decl_buffer((4096,), "bfloat16", data=Bs.data, scope="shared", layout=None)
        T.cuda.func_call("tirx_layout_sync_fence_proxy_async", source_code="")
        T.cuda.func_call("tirx_layout_tcgen05_fence_before", source_code="")
        T.cuda.cta_sync()
        T.cuda.func_call("tirx_layout_tcgen05_fence_after", source_code="")
        if tx < 32:
            if T.cuda.func_call("tirx_layout_sync_elect", source_code="", return_type="uint32") != T.uint32(0):
                a_desc: T.let[T.uint64] = T.cuda.func_call("tirx_layout_tcgen05_smem_descriptor", {a0}, {d},
                                                           source_code="", return_type="uint64") + {a_stage}
                b_desc: T.let[T.uint64] = T.cuda.func_call("tirx_layout_tcgen05_smem_descriptor", {b0}, {d},
                                                           source_code="", return_type="uint64") + {b_stage}
                T.cuda.func_call("tirx_layout_tcgen05_mma_f16_ss", acc_taddr, a_desc, b_desc, {i},
                                 T.Cast("uint32", k > 0), source_code="")
                T.cuda.func_call("tirx_layout_tcgen05_mma_f16_ss", acc_taddr, a_desc + T.uint64(2),
                                 b_desc + T.uint64(2), {i}, T.uint32(1), source_code="")
                T.cuda.func_call("tirx_layout_tcgen05_commit", T.address_of(bars[1]), source_code="")
        T.cuda.func_call("tirx_layout_mbarrier_wait", T.address_of(bars[1]), k % 2,  # int32: see below
                         source_code="")
        T.cuda.func_call("tirx_layout_tcgen05_fence_after", source_code="")
    T.cuda.cta_sync()
    if tx // 32 == 0:
        T.cuda.func_call("tirx_layout_tcgen05_dealloc", acc_taddr, T.uint32(64), source_code="")
""",
        DESC=u64(desc),
    )


def test_asynchronous_form_with_a_user_mbarrier_and_staged_operands_lowers_to_the_hand_written_tir():
    # the commit arrives on bars[1]; the kernel's T.mbarrier_wait waits (then fences); no mbarrier of the op's own
    assert_lowers_to(parse(ASYNC_STAGED), async_staged_expected())


A_IN_TMEM = """
@T.prim_func
def gemm():
    T.device_entry()
    tx = T.thread_id([128])
    At = T.alloc_tmem((128, 32), "float16", layout=tmem_datapath_layout("D", 128, 32))
    Bs = T.alloc_shared((64, 32), "float16", layout=mma_shared_layout("float16", "64B", (64, 32)), align=1024)
    acc = T.alloc_tmem((128, 64), "float32", layout=tmem_datapath_layout("D", 128, 64))
    T.tile_mma(acc, At, Bs, accumulate=True)
"""


def a_in_tmem_expected():
    # A from TMEM: K-major, two fp16 per 32-bit column, so K step s (16 elements = 32 bytes) starts 8 columns on.
    desc = isa_sdesc(16, 512, "64B")
    idesc = isa_idesc("float16", "float16", "float32", 128, 64)
    layout_b = 'T.layout("ComposeLayout(SwizzleLayout(3, 2, 3), TileLayout(S[(64, 32):(32, 1)]))")'
    return parse_with(
        f"""
@T.prim_func
def gemm():
    T.device_entry()
    tx = T.thread_id([128])
    bar = T.alloc_shared((1,), "uint64")
    phase = T.alloc_local((1,), "uint32")
    phase[0] = T.uint32(0)
    if tx == 0:  # no CTA barrier here: the one before the issue publishes the initialisation
        T.cuda.func_call("tirx_layout_mbarrier_init", T.address_of(bar[0]), T.uint32(1), source_code="")
    a_slot = T.alloc_shared((1,), "uint32")
    if tx // 32 == 0:
        T.cuda.func_call("tirx_layout_tcgen05_alloc", T.address_of(a_slot[0]), T.uint32(32), source_code="")
    T.cuda.cta_sync()
    a_taddr: T.let[T.uint32] = a_slot[0]
    Bs = T.alloc_shared((64, 32), "float16", align=1024, layout={layout_b})
    d_slot = T.alloc_shared((1,), "uint32")
    if tx // 32 == 0:
        T.cuda.func_call("tirx_layout_tcgen05_alloc", T.address_of(d_slot[0]), T.uint32(64), source_code="")
        T.cuda.func_call("tirx_layout_tcgen05_relinquish_alloc_permit", source_code="")
    T.cuda.cta_sync()
    d_taddr: T.let[T.uint32] = d_slot[0]
    Bs_flat = T.decl_buffer((2048,), "float16", data=Bs.data, scope="shared", layout=None)
    T.cuda.func_call("tirx_layout_sync_fence_proxy_async", source_code="")
    T.cuda.func_call("tirx_layout_tcgen05_fence_before", source_code="")
    T.cuda.cta_sync()
    T.cuda.func_call("tirx_layout_tcgen05_fence_after", source_code="")
    if tx < 32:
        if T.cuda.func_call("tirx_layout_sync_elect", source_code="", return_type="uint32") != T.uint32(0):
            b_desc: T.let[T.uint64] = T.cuda.func_call("tirx_layout_tcgen05_smem_descriptor",
                                                       T.address_of(Bs_flat[0]), DESC, source_code="",
                                                       return_type="uint64")
            T.cuda.func_call("tirx_layout_tcgen05_mma_f16_ts", d_taddr, a_taddr, b_desc, T.uint32({idesc}),
                             T.uint32(1), source_code="")
            T.cuda.func_call("tirx_layout_tcgen05_mma_f16_ts", d_taddr, a_taddr + T.uint32(8), b_desc + T.uint64(2),
                             T.uint32({idesc}), T.uint32(1), source_code="")
            T.cuda.func_call("tirx_layout_tcgen05_commit", T.address_of(bar[0]), source_code="")
    T.cuda.func_call("tirx_layout_mbarrier_wait", T.address_of(bar[0]), phase[0], source_code="")
    T.cuda.func_call("tirx_layout_tcgen05_fence_after", source_code="")
    phase[0] = phase[0] ^ T.uint32(1)
    T.cuda.cta_sync()
    if tx // 32 == 0:
        T.cuda.func_call("tirx_layout_tcgen05_dealloc", d_taddr, T.uint32(64), source_code="")
    T.cuda.cta_sync()
    if tx // 32 == 0:
        T.cuda.func_call("tirx_layout_tcgen05_dealloc", a_taddr, T.uint32(32), source_code="")
""",
        DESC=u64(desc),
    )


def test_a_from_tensor_memory_lowers_to_the_ts_form_in_the_hand_written_tir():
    assert_lowers_to(parse(A_IN_TMEM), a_in_tmem_expected())


# ---- every kind builds for sm_100a and assembles ---------------------------------------------------------------


def _body(cuda: str) -> str:
    return cuda[cuda.index('extern "C" __global__') :]


def mma_kernel(m, n, k, dtype, acc_dtype, *, mode="128B", a_in="shared", scope="cta", form="sync"):
    """A kernel with one ``T.tile_mma`` (and what the scope and form need around it); no global operands."""
    if acc_dtype == "float16":  # one 32-bit column per element: TCol (16-bit halves) steps by 2
        d_layout = f'T.layout("S[({m}, {n}):(1@TLane, 2@TCol)]")' if m == 128 else None
    else:
        d_layout = f'tmem_datapath_layout("{"D" if m == 128 else "F"}", {m}, {n})'
    if a_in == "tmem":
        a_decl = f'A = T.alloc_tmem(({m}, {k}), "{dtype}", layout=tmem_datapath_layout("D", {m}, {k}))'
    else:
        a_decl = (
            f'A = T.alloc_shared(({m}, {k}), "{dtype}", layout=mma_shared_layout("{dtype}", "{mode}", ({m}, {k})), '
            "align=1024)"
        )
    barrier = ", barrier=bars[0]" if form == "async" else ""
    call = f'T.tile_mma(acc, A, B, accumulate=True{barrier}, scope="{scope}")'
    issue = {"cta": call, "warp": f"if tx // 32 == 2:\n        {call}", "thread": f"if tx == 5:\n        {call}"}
    wait = "\n    T.mbarrier_wait(bars[0], 0)" if form == "async" else ""
    return parse(f"""
@T.prim_func
def mma():
    T.device_entry()
    tx = T.thread_id([128])
    bars = T.alloc_shared((2,), "uint64")
    T.mbarrier_init(bars[0], 1)
    {a_decl}
    B = T.alloc_shared(({n}, {k}), "{dtype}", layout=mma_shared_layout("{dtype}", "{mode}", ({n}, {k})), align=1024)
    acc = T.alloc_tmem(({m}, {n}), "{acc_dtype}", layout={d_layout})
    {issue[scope]}{wait}
""")


KINDS = [  # (A/B dtype, D dtype, K, kind)
    ("float16", "float32", 64, "f16"),
    ("bfloat16", "float32", 64, "f16"),
    ("float16", "float16", 64, "f16"),
    ("float32", "float32", 32, "tf32"),
    ("float8_e4m3fn", "float32", 128, "f8f6f4"),
    ("float8_e5m2", "float16", 128, "f8f6f4"),
    ("int8", "int32", 128, "i8"),
    ("uint8", "int32", 128, "i8"),
]


def assembles(cuda: str) -> None:
    assembled = nvcc_assembles(cuda)
    if assembled is None:
        pytest.skip("nvcc is not installed")
    assert assembled[0], assembled[1]


@pytest.mark.parametrize("a_in", ["shared", "tmem"])
@pytest.mark.parametrize(("dtype", "acc_dtype", "k", "kind"), KINDS, ids=[f"{d}-{a}" for d, a, _, _ in KINDS])
def test_every_dense_kind_builds_and_assembles(dtype, acc_dtype, k, kind, a_in):
    cuda = build(mma_kernel(128, 64, k, dtype, acc_dtype, a_in=a_in)).imports[0].inspect_source()
    form = "ts" if a_in == "tmem" else "ss"
    steps = k * {"float32": 4, "float16": 2, "bfloat16": 2}.get(dtype, 1) // 32  # 32 bytes of K per instruction
    assert len(re.findall(rf"tirx_layout_tcgen05_mma_{kind}_{form}\(", _body(cuda))) == steps
    a_operand = "[%1]" if a_in == "tmem" else "%1"
    assert f"tcgen05.mma.cta_group::1.kind::{kind} [%0], {a_operand}, %2, %3, p;" in cuda
    assembles(cuda)


@pytest.mark.parametrize(
    ("m", "n", "mode", "scope", "form"),
    [
        (64, 200, "128B", "cta", "sync"),  # datapath F, N not a power of two
        (128, 112, "64B", "cta", "async"),
        (128, 64, "32B", "warp", "sync"),
        (128, 64, "none", "thread", "async"),
    ],
)
def test_shapes_swizzles_scopes_and_forms_build_and_assemble(m, n, mode, scope, form):
    cuda = build(mma_kernel(m, n, 64, "float16", "float32", mode=mode, scope=scope, form=form))
    cuda = cuda.imports[0].inspect_source()
    body = _body(cuda)
    assert len(re.findall(r"tirx_layout_tcgen05_mma_f16_ss\(", body)) == 4
    # "cta": an elect.sync lane of warp 0; "warp": an elect.sync lane of the warp reaching it; "thread": itself
    guard = {"cta": "threadIdx.x) < 32)", "warp": "tirx_layout_sync_elect()", "thread": "threadIdx.x) == 5)"}
    assert guard[scope] in body
    assert ("tirx_layout_sync_elect()" in body) == (scope != "thread")
    assert ("__syncwarp()" in cuda) == (scope == "warp")
    assert ("tile_mma_bar_0" in body) == (form == "sync")
    assembles(cuda)


# ---- the mbarrier operations ---------------------------------------------------------------------------------


def test_mbarrier_operations_lower_to_their_helpers_with_the_fences_they_need():
    func = parse("""
@T.prim_func
def bars_kernel():
    T.device_entry()
    tx = T.thread_id([128])
    bars = T.alloc_shared((2,), "uint64")
    T.mbarrier_init(bars[1], 128)
    T.mbarrier_expect_tx(bars[1], 4096)
    T.mbarrier_arrive(bars[1])
    T.mbarrier_arrive_expect_tx(bars[0], 64)
    T.mbarrier_wait(bars[1], tx % 2)
""")
    expected = parse("""
@T.prim_func
def bars_kernel():
    T.device_entry()
    tx = T.thread_id([128])
    bars = T.alloc_shared((2,), "uint64")
    if tx == 0:
        T.cuda.func_call("tirx_layout_mbarrier_init", T.address_of(bars[1]), T.uint32(128), source_code="")
    T.cuda.cta_sync()
    T.cuda.func_call("tirx_layout_mbarrier_expect_tx", T.address_of(bars[1]), T.uint32(4096), source_code="")
    T.cuda.func_call("tirx_layout_sync_fence_proxy_async", source_code="")
    T.cuda.func_call("tirx_layout_tcgen05_fence_before", source_code="")
    T.cuda.func_call("tirx_layout_mbarrier_arrive", T.address_of(bars[1]), source_code="")
    T.cuda.func_call("tirx_layout_sync_fence_proxy_async", source_code="")
    T.cuda.func_call("tirx_layout_tcgen05_fence_before", source_code="")
    T.cuda.func_call("tirx_layout_mbarrier_arrive_expect_tx", T.address_of(bars[0]), T.uint32(64),
                     source_code="")
    # an expression parity reaches the helper as the int32 it was written as (ops/mbarrier/lower._signed_parity: a uint32
    # cast that TVM's CSE hoists out of its guard can fail StmtSimplify)
    T.cuda.func_call("tirx_layout_mbarrier_wait", T.address_of(bars[1]), tx % 2, source_code="")
    T.cuda.func_call("tirx_layout_tcgen05_fence_after", source_code="")
""")
    assert_lowers_to(func, expected)
    cuda = build(func).imports[0].inspect_source()
    for ptx in (
        "mbarrier.init.shared::cta.b64 [%0], %1;",
        "mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;",
        "mbarrier.arrive.shared::cta.b64 _, [%0];",
        "mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;",
        "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;",
    ):
        assert ptx in cuda
    assembles(cuda)


INITS = """
@T.prim_func
def inits():
    T.device_entry()
    tx = T.thread_id([128])
    full = T.alloc_shared((2,), "uint64")
    empty = T.alloc_shared((2,), "uint64")
    late = T.alloc_shared((2,), "uint64")
    for s in T.unroll(2):
        T.mbarrier_init(full[s], 1)
        T.mbarrier_init(empty[s], 128)
    T.mbarrier_init(late[0], 1)
    T.mbarrier_arrive(late[0])
    T.mbarrier_init(late[1], 1)
"""


def test_a_run_of_mbarrier_inits_is_published_by_one_cta_barrier():
    # the loop of inits and the init after it form one run: thread 0 initialises all (loop kept), then ONE barrier;
    # an init after another statement starts a new run with its own barrier
    expected = parse("""
@T.prim_func
def inits():
    T.device_entry()
    tx = T.thread_id([128])
    full = T.alloc_shared((2,), "uint64")
    empty = T.alloc_shared((2,), "uint64")
    late = T.alloc_shared((2,), "uint64")
    if tx == 0:
        for s in T.unroll(2):
            T.cuda.func_call("tirx_layout_mbarrier_init", T.address_of(full[s]), T.uint32(1), source_code="")
            T.cuda.func_call("tirx_layout_mbarrier_init", T.address_of(empty[s]), T.uint32(128),
                             source_code="")
        T.cuda.func_call("tirx_layout_mbarrier_init", T.address_of(late[0]), T.uint32(1), source_code="")
    T.cuda.cta_sync()
    T.cuda.func_call("tirx_layout_sync_fence_proxy_async", source_code="")
    T.cuda.func_call("tirx_layout_tcgen05_fence_before", source_code="")
    T.cuda.func_call("tirx_layout_mbarrier_arrive", T.address_of(late[0]), source_code="")
    if tx == 0:
        T.cuda.func_call("tirx_layout_mbarrier_init", T.address_of(late[1]), T.uint32(1), source_code="")
    T.cuda.cta_sync()
""")
    assert_lowers_to(parse(INITS), expected)


def test_unrolled_inits_share_one_barrier_and_every_mbarrier_is_initialised_before_use():
    # written out by UnrollLoop (as the pipelined GEMMs do) the four inits are one run of statements
    with tvm.transform.PassContext(config={"tirx.UnrollLoop": {"explicit_unroll": True}}):
        unrolled = tvm.tirx.transform.UnrollLoop()(tvm.IRModule({"main": parse(INITS)}))["main"]
    script = lower_tile_ops(unrolled).script()
    order = re.findall(r'func_call\("tirx_layout_(mbarrier_init|mbarrier_arrive)"|(cta_sync)', script)
    assert ["".join(o) for o in order] == [
        *["mbarrier_init"] * 5,
        "cta_sync",
        "mbarrier_arrive",
        "mbarrier_init",
        "cta_sync",
    ]
    # the simulator checks each mbarrier's use is ordered after its init by a barrier: all 128 threads arrive on
    # empty[1] (128 arrivals) and wait for its phase
    use = INITS.replace(
        "    T.mbarrier_arrive(late[0])\n", "    T.mbarrier_arrive(empty[1])\n    T.mbarrier_wait(empty[1], 0)\n"
    )
    sim.run(parse(use), {})


# ---- simulated end to end: the lowering's instructions compute A @ B.T -----------------------------------------


def _gemm(m, n, k_tiles, *, staged: bool, a_in: str = "shared"):
    """global -> shared (or TMEM) tiles, a K loop of tile_mma (accumulate = kt > 0), tcgen05.ld, global."""
    path = "D" if m == 128 else "F"
    fragment = f"wg_local_layout({n})" if m == 128 else f'tcgen05_atom_layout("16x256b", ({m}, {n}), "float32")'
    stage = "kt % 2, " if staged else ""
    dims = "(2, " if staged else "("
    if a_in == "tmem":
        a_decl = f"""A_t = T.alloc_tmem(({m}, 64), "float16", layout=tmem_datapath_layout("D", {m}, 64))
    a_frag = T.alloc_local(({m}, 64), "float16", layout=tcgen05_atom_layout("32x32b", ({m}, 64), "float16"))"""
        a_fill = f"""T.tile_copy(a_frag, A[0:{m}, kt * 64 : kt * 64 + 64], "warpgroup")
        T.tile_copy(A_t, a_frag, "warpgroup")"""
        a_use = "A_t"
    else:
        a_decl = f"""A_s = T.alloc_shared({dims}{m}, 64), "float16", layout=mma_shared_layout("float16", "128B",
                                   {dims}{m}, 64)), align=1024)"""
        a_fill = f"T.tile_copy(A_s[{stage}0:{m}, 0:64], A[0:{m}, kt * 64 : kt * 64 + 64])"
        a_use = f"A_s[{stage}0:{m}, 0:64]"
    barrier = ", barrier=bars[0]" if staged else ""
    wait = "T.mbarrier_wait(bars[0], kt % 2)" if staged else ""
    k = 64 * k_tiles
    text = f"""
@T.prim_func
def gemm(A: T.Buffer(({m}, {k}), "float16"), B: T.Buffer(({n}, {k}), "float16"), C: T.Buffer(({m}, {n}), "float32")):
    T.device_entry()
    tx = T.thread_id([128])
    bars = T.alloc_shared((2,), "uint64")
    {a_decl}
    B_s = T.alloc_shared({dims}{n}, 64), "float16", layout=mma_shared_layout("float16", "128B", {dims}{n}, 64)),
                         align=1024)
    acc = T.alloc_tmem(({m}, {n}), "float32", layout=tmem_datapath_layout("{path}", {m}, {n}))
    frag = T.alloc_local(({m}, {n}), "float32", layout={fragment})
    T.mbarrier_init(bars[0], 1)
    for kt in range({k_tiles}):
        {a_fill}
        T.tile_copy(B_s[{stage}0:{n}, 0:64], B[0:{n}, kt * 64 : kt * 64 + 64])
        T.tile_mma(acc, {a_use}, B_s[{stage}0:{n}, 0:64], accumulate=kt > 0{barrier})
        {wait}
    T.tile_copy(frag, acc, "warpgroup")
    T.tile_copy(C, frag, "warpgroup")
"""
    return parse(text)


@pytest.mark.parametrize(
    ("m", "n", "k_tiles", "staged", "a_in"),
    [
        (128, 64, 3, False, "shared"),
        (128, 112, 2, True, "shared"),
        (64, 64, 2, False, "shared"),
        (128, 32, 2, False, "tmem"),
    ],
)
def test_lowered_gemm_simulates_to_a_times_b_transposed(m, n, k_tiles, staged, a_in):
    rng = np.random.default_rng(20)
    a = rng.integers(-4, 5, (m, 64 * k_tiles)).astype(np.float16)
    b = rng.integers(-4, 5, (n, 64 * k_tiles)).astype(np.float16)
    result = sim.run(_gemm(m, n, k_tiles, staged=staged, a_in=a_in), {"A": a, "B": b})
    np.testing.assert_array_equal(result["C"], a.astype(np.float32) @ b.astype(np.float32).T)


WARP_SCOPE_GEMM = """
@T.prim_func
def gemm(A: T.Buffer((128, 128), "float16"), B: T.Buffer((64, 128), "float16"), C: T.Buffer((128, 64), "float32")):
    T.device_entry()
    tx = T.thread_id([128])
    bars = T.alloc_shared((2,), "uint64")
    A_s = T.alloc_shared((128, 64), "float16", layout=mma_shared_layout("float16", "128B", (128, 64)), align=1024)
    B_s = T.alloc_shared((64, 64), "float16", layout=mma_shared_layout("float16", "128B", (64, 64)), align=1024)
    acc = T.alloc_tmem((128, 64), "float32", layout=tmem_datapath_layout("D", 128, 64))
    frag = T.alloc_local((128, 64), "float32", layout=wg_local_layout(64))
    T.mbarrier_init(bars[0], 1)
    T.mbarrier_init(bars[1], 128)
    for kt in range(2):
        T.tile_copy(A_s, A[0:128, kt * 64 : kt * 64 + 64])
        T.tile_copy(B_s, B[0:64, kt * 64 : kt * 64 + 64])
        T.mbarrier_arrive(bars[1])
        if tx // 32 == 1:
            T.mbarrier_wait(bars[1], kt % 2)
            T.tile_mma(acc, A_s, B_s, accumulate=kt > 0, barrier=bars[0], scope="warp")
        T.mbarrier_wait(bars[0], kt % 2)
    T.tile_copy(frag, acc, "warpgroup")
    T.tile_copy(C, frag, "warpgroup")
"""


def test_a_warp_scope_mma_fed_through_an_mbarrier_simulates_to_a_times_b_transposed():
    # Every thread fills the tiles and arrives (the lowering fences the proxy before the arrive); warp 1 waits,
    # runs its __syncwarp() and elects the lane that issues; everyone waits on the commit's mbarrier.
    rng = np.random.default_rng(21)
    a = rng.integers(-4, 5, (128, 128)).astype(np.float16)
    b = rng.integers(-4, 5, (64, 128)).astype(np.float16)
    kernel = parse(WARP_SCOPE_GEMM)
    assert "T.cuda.warp_sync()" in lower_tile_ops(kernel).script()
    result = sim.run(kernel, {"A": a, "B": b})
    np.testing.assert_array_equal(result["C"], a.astype(np.float32) @ b.astype(np.float32).T)


def test_a_warp_scope_mma_with_a_barrier_is_the_issuer_warp_without_a_proxy_fence():
    # Issue 34: the warp-specialised issuer warp (CUTLASS's MMA warp): its operands reach it through mbarriers, so
    # like the thread form it fences no proxy of its own (MEMBAR + FENCE.VIEW.ASYNC per K tile in SASS); it keeps
    # the tcgen05 fences around __syncwarp() and the elected lane issues, so ptxas needs no per-MMA election loop
    kernel = parse(WARP_SCOPE_GEMM)
    calls = re.findall(r'func_call\("tirx_layout_(\w+)"', lower_tile_ops(kernel).script())
    issue = calls[calls.index("mbarrier_arrive") + 1 : calls.index("tcgen05_commit")]
    descriptors = ["tcgen05_smem_descriptor"] * 2
    waits = ["mbarrier_wait", "tcgen05_fence_after"]
    fences = ["tcgen05_fence_before", "tcgen05_fence_after", "sync_elect"]
    assert issue == [*waits, *fences, *descriptors] + ["tcgen05_mma_f16_ss"] * 4
    assert calls.count("sync_fence_proxy_async") == 1  # the arrive's, in the loop body


THREAD_SCOPE_GEMM = WARP_SCOPE_GEMM.replace("if tx // 32 == 1:", "if tx == 32:").replace(
    'scope="warp"', 'scope="thread"'
)


def test_a_thread_scope_mma_fed_through_an_mbarrier_issues_without_a_proxy_fence_and_simulates():
    # The warp-specialised issuer: every writer fences the proxy before its arrive, so the issuing thread needs no
    # fence of its own (fence.proxy.async is MEMBAR + FENCE.VIEW.ASYNC in SASS, once per MMA in a K loop)
    rng = np.random.default_rng(22)
    a = rng.integers(-4, 5, (128, 128)).astype(np.float16)
    b = rng.integers(-4, 5, (64, 128)).astype(np.float16)
    kernel = parse(THREAD_SCOPE_GEMM)
    calls = re.findall(r'func_call\("tirx_layout_(\w+)"', lower_tile_ops(kernel).script())
    # per K tile: the arrive (proxy fence, fence before, arrive), the issuer's wait (+ fence after), its MMAs and
    # commit, everyone's wait on the commit (+ fence after): no other proxy fence
    issue = calls[calls.index("mbarrier_arrive") + 1 : calls.index("tcgen05_commit")]
    descriptors = ["tcgen05_smem_descriptor"] * 2
    assert issue == ["mbarrier_wait", "tcgen05_fence_after", *descriptors] + ["tcgen05_mma_f16_ss"] * 4
    assert calls.count("sync_fence_proxy_async") == 1  # the arrive's, in the loop body
    result = sim.run(kernel, {"A": a, "B": b})
    np.testing.assert_array_equal(result["C"], a.astype(np.float32) @ b.astype(np.float32).T)


@pytest.mark.parametrize("issuer", ["warp", "thread"])
def test_an_issuer_reading_unpublished_writes_is_a_data_race(issuer):
    # without the arrive (and its proxy fence) and the issuer's wait, the MMA reads the other threads' generic
    # writes (the issuing warp's lanes' own among them): the simulator names the missing fence.proxy.async
    kernel = parse(
        {"warp": WARP_SCOPE_GEMM, "thread": THREAD_SCOPE_GEMM}[issuer]
        .replace("        T.mbarrier_arrive(bars[1])\n", "")
        .replace("            T.mbarrier_wait(bars[1], kt % 2)\n", "")
    )
    with pytest.raises(sim.DataRace, match=r"wrote it with no fence.proxy.async after the store"):
        sim.run(kernel, {"A": np.ones((128, 128), np.float16), "B": np.ones((64, 128), np.float16)})


def test_a_warp_scope_mma_reached_by_part_of_a_warp_is_a_simulation_error():
    # elect.sync and __syncwarp() take the full member mask: lanes 32-47 alone cannot run them
    kernel = parse(WARP_SCOPE_GEMM.replace("if tx // 32 == 1:", "if tx // 16 == 2:"))
    with pytest.raises(sim.SimulationError, match=r"executed by only some lanes of warp 1 \(lanes \[16, 17,"):
        sim.run(kernel, {"A": np.zeros((128, 128), np.float16), "B": np.zeros((64, 128), np.float16)})


# ---- refusals --------------------------------------------------------------------------------------------------


def _one_mma(decls: str, call: str = "T.tile_mma(acc, A, B)"):
    return parse(f"""
@T.prim_func
def mma():
    T.device_entry()
    tx = T.thread_id([128])
    {decls}
    {call}
""")


SHARED_A = (
    'A = T.alloc_shared((128, 64), "float16", layout=mma_shared_layout("float16", "128B", (128, 64)), align=1024)'
)
SHARED_B = 'B = T.alloc_shared((64, 64), "float16", layout=mma_shared_layout("float16", "128B", (64, 64)), align=1024)'
ACC = 'acc = T.alloc_tmem((128, 64), "float32", layout=tmem_datapath_layout("D", 128, 64))'


def _decls(*lines: str) -> str:
    return "\n    ".join(lines)


VERIFY_REFUSALS = {
    "D in shared memory": (
        _decls(SHARED_A, SHARED_B, 'acc = T.alloc_shared((128, 64), "float32")'),
        "T.tile_mma(acc, A, B)",
        r"tile_mma's D must be in tensor memory; acc is in 'shared' \(line \d+ of <str>\) in mma",
    ),
    "B in tensor memory": (
        _decls(
            SHARED_A, ACC, 'B = T.alloc_tmem((64, 64), "float16", layout=T.layout("S[(64, 64):(1@TLane, 1@TCol)]"))'
        ),
        "T.tile_mma(acc, A, B)",
        r"tile_mma's B must be in shared memory; B is in 'tmem'",
    ),
    "A in registers": (
        _decls(SHARED_B, ACC, 'A = T.alloc_local((128, 64), "float16")'),
        "T.tile_mma(acc, A, B)",
        r"tile_mma's A must be in shared memory or tensor memory; A is in 'local'",
    ),
    "shapes that do not multiply": (
        _decls(SHARED_A, ACC, 'B = T.alloc_shared((64, 32), "float16")'),
        "T.tile_mma(acc, A, B)",
        r"D = A @ B.T: D is \(M, N\), A \(M, K\), B \(N, K\); got D \(128, 64\), A \(128, 64\), B \(64, 32\)",
    ),
    "an N the ISA does not allow": (
        _decls(
            SHARED_A,
            'B = T.alloc_shared((12, 64), "float16")',
            'acc = T.alloc_tmem((128, 12), "float32", layout=tmem_datapath_layout("D", 128, 12))',
        ),
        "T.tile_mma(acc, A, B)",
        r"kind f16 with M=128 takes N in 8..256 step 8, got N=12",
    ),
    "an M the ISA does not allow": (
        _decls(
            'A = T.alloc_shared((96, 64), "float16")',
            SHARED_B,
            'acc = T.alloc_tmem((96, 64), "float32", layout=T.layout("S[(96, 64):(1@TLane, 1@TCol)]"))',
        ),
        "T.tile_mma(acc, A, B)",
        r"takes M in \(64, 128\), got M=96",
    ),
    "operand types no kind multiplies": (
        _decls('A = T.alloc_shared((128, 64), "int8")', SHARED_B, ACC),
        "T.tile_mma(acc, A, B)",
        r"no tcgen05.mma kind multiplies A int8 by B float16",
    ),
    "a float16 accumulator of bfloat16 operands": (
        _decls(
            'A = T.alloc_shared((128, 64), "bfloat16")',
            'B = T.alloc_shared((64, 64), "bfloat16")',
            'acc = T.alloc_tmem((128, 64), "float16", layout=T.layout("S[(128, 64):(1@TLane, 2@TCol)]"))',
        ),
        "T.tile_mma(acc, A, B)",
        r"a float16 accumulator needs float16 A and B, got A bfloat16, B bfloat16",
    ),
    "K not whole instruction steps": (
        _decls('A = T.alloc_shared((128, 24), "float16")', 'B = T.alloc_shared((64, 24), "float16")', ACC),
        "T.tile_mma(acc, A, B)",
        r"tile_mma's K \(24\) must be whole instruction steps: kind f16 takes K = 16",
    ),
    "a region outside its buffer": (
        _decls(SHARED_A, SHARED_B, ACC),
        "T.tile_mma(acc, A[0:128, 32:96], B[0:64, 0:64])",
        r"T.tile_mma's A region A\[0:128, 32:96\] is outside buffer A",
    ),
    "a cta-scope MMA that only some threads reach": (
        _decls(SHARED_A, SHARED_B, ACC),
        "if tx < 64:\n        T.tile_mma(acc, A, B)",
        r"a cta-scope T.tile_mma has a CTA barrier that every thread must reach, but it sits under `if tx < 64`; "
        r'write scope="warp"',
    ),
    "an mbarrier initialised by some threads only": (
        _decls(SHARED_A, SHARED_B, ACC, 'bars = T.alloc_shared((2,), "uint64")'),
        "if tx // 32 == 1:\n        T.mbarrier_init(bars[0], 1)",
        r"T.mbarrier_init is CTA-wide .* but it sits under `if tx // 32 == 1`",
    ),
    "a barrier that is no shared uint64": (
        _decls(SHARED_A, SHARED_B, ACC, 'bars = T.alloc_local((2,), "uint64")'),
        "T.tile_mma(acc, A, B, barrier=bars[0])",
        r"tile_mma's barrier bars\[0\] must be an element of a shared uint64 buffer",
    ),
}


@pytest.mark.parametrize("case", sorted(VERIFY_REFUSALS))
def test_verify_layouts_refuses_a_tile_mma_the_hardware_cannot_run(case):
    decls, call, message = VERIFY_REFUSALS[case]
    with pytest.raises(LayoutVerificationError, match=message):
        build(_one_mma(decls, call))


def test_a_target_without_tcgen05_is_refused_for_a_tmem_accumulator():
    # On sm_90a tile_mma lowers to wgmma, whose accumulator is a register fragment: the TMEM one is refused.
    with pytest.raises(
        LayoutVerificationError,
        match=r"buffer acc lives in tensor memory, which target sm_90a does not have .*on Hopper the accumulator is "
        r"a register fragment: .*wgmma_accumulator_layout",
    ):
        build(_one_mma(_decls(SHARED_A, SHARED_B, ACC)), arch="sm_90a")


LOWERING_REFUSALS = {
    "a D layout that is no accumulator": (
        _decls(
            SHARED_A,
            SHARED_B,
            'acc = T.alloc_tmem((128, 64), "float32", layout=T.layout("S[(128, 64):(1@TCol, 1@TLane)]"))',
        ),
        "T.tile_mma(acc, A, B)",
        r"D's layout .* is not an MMA accumulator layout: element \(0, 1\) sits at lane 1 TCol 0, Layout D puts it "
        r"at lane 0 TCol 1",
    ),
    "an operand layout the MMA cannot read": (  # (row-major given: left out, inference would choose a legal one)
        _decls('A = T.alloc_shared((128, 64), "float16", layout=T.layout("S[(128, 64):(64, 1)]"))', SHARED_B, ACC),
        "T.tile_mma(acc, A, B)",
        r"A's layout",
    ),
    "a swizzled operand without its alignment": (
        _decls(
            'A = T.alloc_shared((128, 64), "float16", layout=mma_shared_layout("float16", "128B", (128, 64)))',
            SHARED_B,
            ACC,
        ),
        "T.tile_mma(acc, A, B)",
        r"A \(A\) is 128B-swizzled, .* declare it with align=1024",
    ),
    "A in tensor memory on other lanes than D": (
        _decls(
            'A = T.alloc_tmem((64, 64), "float16", layout=tmem_datapath_layout("F", 64, 64, 1))',
            SHARED_B,
            'acc = T.alloc_tmem((64, 64), "float32", layout=tmem_datapath_layout("F", 64, 64))',
        ),
        "T.tile_mma(acc, A, B)",
        r"A in TMEM starts at lane offset 16 and D at 0; the ISA reads A on D's lanes",
    ),
    "a symbolic start inside the tile": (
        _decls(SHARED_A, SHARED_B, ACC),
        "for kk in range(2):\n        T.tile_mma(acc, A[0:128, kk * 32 : kk * 32 + 32], B[0:64, 0:32])",
        r"A's region .* starts at kk \* 32 on dimension 1, which it takes 32 indices of",
    ),
}


@pytest.mark.parametrize("case", sorted(LOWERING_REFUSALS))
def test_lowering_refuses_layouts_the_mma_cannot_read(case):
    decls, call, message = LOWERING_REFUSALS[case]
    with pytest.raises(ValueError, match=message):
        build(_one_mma(decls, call))


def test_other_pipelines_refuse_a_kernel_with_tile_mma():
    plain = _decls(
        'A = T.alloc_shared((128, 64), "float16")',
        'B = T.alloc_shared((64, 64), "float16")',
        'acc = T.alloc_buffer((128, 64), "float32", scope="tmem")',
    )  # no layout anywhere: the op alone marks the kernel as ours
    with pytest.raises(WrongPipelineError, match=r"mma carries T\.tile_mma, which TIR pipeline 'tirx' does not lower"):
        tvm.tirx.build(_one_mma(plain), target=SM100A, pipeline="tirx")


MN_MAJOR = [  # (dtype, A major, B major, swizzle, K)
    ("float16", "MN", "MN", "128B", 64),
    ("bfloat16", "MN", "K", "64B", 32),
    ("float16", "K", "MN", "32B", 32),
    ("float16", "MN", "MN", "none", 32),
    ("float32", "MN", "MN", "128B_base32B", 16),
]


@pytest.mark.parametrize(("dtype", "a_major", "b_major", "mode", "k"), MN_MAJOR)
def test_mn_major_operands_set_the_transpose_bits_and_simulate_to_a_times_b_transposed(
    dtype, a_major, b_major, mode, k
):
    m, n = 128, 64
    k_mode = "128B" if mode == "128B_base32B" else mode  # the K-major side of a mixed pair

    def layout(rows, major):
        return f'mma_shared_layout("{dtype}", "{mode if major == "MN" else k_mode}", ({rows}, {k}), major="{major}")'

    func = parse(f"""
@T.prim_func
def gemm(A: T.Buffer(({m}, {k}), "{dtype}"), B: T.Buffer(({n}, {k}), "{dtype}"), C: T.Buffer(({m}, {n}), "float32")):
    T.device_entry()
    tx = T.thread_id([128])
    A_s = T.alloc_shared(({m}, {k}), "{dtype}", layout={layout(m, a_major)}, align=1024)
    B_s = T.alloc_shared(({n}, {k}), "{dtype}", layout={layout(n, b_major)}, align=1024)
    acc = T.alloc_tmem(({m}, {n}), "float32", layout=tmem_datapath_layout("D", {m}, {n}))
    frag = T.alloc_local(({m}, {n}), "float32", layout=wg_local_layout({n}))
    T.tile_copy(A_s, A)
    T.tile_copy(B_s, B)
    T.tile_mma(acc, A_s, B_s)
    T.tile_copy(frag, acc, "warpgroup")
    T.tile_copy(C, frag, "warpgroup")
""")
    cuda = build(func).imports[0].inspect_source()
    want_idesc = isa_idesc(dtype, dtype, "float32", m, n, a_mn=a_major == "MN", b_mn=b_major == "MN")
    assert f"(uint){want_idesc}, " in _body(cuda)
    rng = np.random.default_rng(7)
    a = rng.integers(-4, 5, (m, k)).astype(dtype)
    b = rng.integers(-4, 5, (n, k)).astype(dtype)
    np.testing.assert_array_equal(sim.run(func, {"A": a, "B": b})["C"], a.astype(np.float32) @ b.astype(np.float32).T)
    assembles(cuda)


def test_a_symbolic_accumulator_stage_moves_the_tmem_address_by_its_columns():
    # the guide's two-stage accumulator S[(2, 128, N):(N@TCol, 1@TLane, 1@TCol)]: stage s starts N columns on, so
    # d_taddr = base + s * N; each stage gets its own product (A's stage s times B)
    func = parse("""
@T.prim_func
def two_stages(A: T.Buffer((2, 128, 32), "float16"), B: T.Buffer((48, 32), "float16"),
               C: T.Buffer((2, 128, 48), "float32")):
    T.device_entry()
    tx = T.thread_id([128])
    A_s = T.alloc_shared((2, 128, 32), "float16", layout=mma_shared_layout("float16", "64B", (2, 128, 32)),
                         align=1024)
    B_s = T.alloc_shared((48, 32), "float16", layout=mma_shared_layout("float16", "64B", (48, 32)), align=1024)
    acc = T.alloc_tmem((2, 128, 48), "float32", layout=T.layout("S[(2, 128, 48):(48@TCol, 1@TLane, 1@TCol)]"))
    frag = T.alloc_local((128, 48), "float32", layout=wg_local_layout(48))
    T.tile_copy(A_s, A)
    T.tile_copy(B_s, B)
    for s in range(2):
        T.tile_mma(acc[s, 0:128, 0:48], A_s[s, 0:128, 0:32], B_s)
    for s in range(2):
        T.tile_copy(frag, acc[s, 0:128, 0:48], "warpgroup")
        T.tile_copy(C[s, 0:128, 0:48], frag, "warpgroup")
""")
    cuda = build(func).imports[0].inspect_source()
    assert "tirx_layout_tcgen05_mma_f16_ss((acc_taddr + ((uint)(s * 48)))" in _body(cuda)
    rng = np.random.default_rng(3)
    a = rng.integers(-4, 5, (2, 128, 32)).astype(np.float16)
    b = rng.integers(-4, 5, (48, 32)).astype(np.float16)
    got = sim.run(func, {"A": a, "B": b})["C"]
    for s in range(2):
        np.testing.assert_array_equal(got[s], a[s].astype(np.float32) @ b.astype(np.float32).T)
    assembles(cuda)


# ---- the thread-sync fences around barriers ---------------------------------------------------------------------


def _helper(name):
    return tvm.tirx.Evaluate(tvm.tirx.call_intrin("void", "tirx.cuda.func_call", f"tirx_layout_tcgen05_{name}", ""))


def _names(seq):
    return [str(s.value.args[0].value)[len("tirx_layout_tcgen05_") :] if s.value.args else "cta_sync" for s in seq]


def test_a_barrier_between_an_mma_and_a_tmem_load_is_fenced_and_an_already_fenced_barrier_is_left_alone():
    barrier = tvm.tirx.Evaluate(tvm.tirx.call_intrin("", "tirx.cuda.cta_sync"))
    # an MMA is an asynchronous tcgen05 access (PTX ISA, tcgen05 memory consistency): the barrier between it and
    # another warp's tcgen05.ld needs both fences
    bare = tvm.tirx.SeqStmt([_helper("mma_f16_ss"), barrier, _helper("ld_32x32b_x1")])
    assert _names(fence_barriers_between_accesses(bare).seq) == [
        "mma_f16_ss",
        "fence_before",
        "cta_sync",
        "fence_after",
        "ld_32x32b_x1",
    ]
    # the MMA lowering fences its own barrier; the pass does not fence it twice
    fenced = tvm.tirx.SeqStmt(
        [_helper("ld_32x32b_x1"), _helper("fence_before"), barrier, _helper("fence_after"), _helper("mma_f16_ss")]
    )
    assert fence_barriers_between_accesses(fenced).same_as(fenced)


def test_a_user_barrier_after_a_warp_scope_mma_is_fenced_in_the_built_kernel():
    func = parse("""
@T.prim_func
def mma():
    T.device_entry()
    tx = T.thread_id([128])
    A = T.alloc_shared((128, 64), "float16", layout=mma_shared_layout("float16", "128B", (128, 64)), align=1024)
    B = T.alloc_shared((64, 64), "float16", layout=mma_shared_layout("float16", "128B", (64, 64)), align=1024)
    acc = T.alloc_tmem((128, 64), "float32", layout=tmem_datapath_layout("D", 128, 64))
    frag = T.alloc_local((128, 64), "float32", layout=wg_local_layout(64))
    if tx // 32 == 0:
        T.tile_mma(acc, A, B, scope="warp")
    T.cuda.cta_sync()
    T.tile_copy(frag, acc, "warpgroup")
""")
    body = _body(build(func).imports[0].inspect_source())
    order = re.findall(r"tcgen05_(fence_before|fence_after|mma_f16_ss|ld_32x32b_x64)\(|(cta_sync|warp_sync)\(", body)
    steps = ["".join(o) for o in order]
    after_mma = steps[len(steps) - 1 - steps[::-1].index("mma_f16_ss") + 1 :]
    # the MMA warp waits (then fence_after); the user's barrier gets fence_before / fence_after; then the load, and
    # the barrier before the deallocation
    assert after_mma == ["fence_after", "fence_before", "cta_sync", "fence_after", "ld_32x32b_x64", "cta_sync"]


# ---- a float16 accumulator read back -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "loads"),
    [
        ("gemm_f16_accumulate", ["32x32b.x64.pack::16b"]),  # 128 columns, two float16 per register: 64 registers
        ("gemm_f16_accumulate_m64_n112", ["16x64b.x16.pack::16b", "16x64b.x8.pack::16b", "16x64b.x4.pack::16b"]),
    ],
)
def test_an_f16_accumulator_is_read_with_pack_16b_and_simulates_within_fp16_tolerance(name, loads):
    kernel, expected = example_kernels()[name]
    cuda = build(kernel).imports[0].inspect_source()
    assert sorted(set(re.findall(r"tcgen05\.ld\.sync\.aligned\.([\w.:]+)\.b32", cuda))) == sorted(loads)
    assert "tcgen05_mma_f16_ss" in _body(cuda)
    result = report(name, kernel, expected)
    assert result.matches
    if result.assembled is not None:
        assert result.assembled[0], result.assembled[1]


@pytest.mark.parametrize(("scope", "barrier_after_init"), [("cta", False), ("warp", True), ("thread", True)])
def test_the_own_mbarrier_is_published_by_a_cta_barrier_only_where_the_site_has_none(scope, barrier_after_init):
    # A "cta" site's CTA barrier before its issue orders the initialisation before its commit and its waits; a
    # "warp" or "thread" site has no CTA barrier, so the prologue keeps one.
    guard = {"cta": "", "warp": "if tx // 32 == 1:\n        ", "thread": "if tx == 40:\n        "}[scope]
    kernel = parse(f"""
@T.prim_func
def mma():
    T.device_entry()
    tx = T.thread_id([128])
    A = T.alloc_shared((128, 64), "float16", layout=mma_shared_layout("float16", "128B", (128, 64)), align=1024)
    B = T.alloc_shared((64, 64), "float16", layout=mma_shared_layout("float16", "128B", (64, 64)), align=1024)
    acc = T.alloc_tmem((128, 64), "float32", layout=tmem_datapath_layout("D", 128, 64))
    {guard}T.tile_mma(acc, A, B, scope="{scope}")
""")
    lines = [line.strip() for line in lower_tile_ops(kernel).script().splitlines()]
    init = next(i for i, line in enumerate(lines) if "tirx_layout_mbarrier_init" in line)
    assert (lines[init + 1] == "T.cuda.cta_sync()") == barrier_after_init
