"""T.tile_mma on sm_90a becomes wgmma (its lowering ops/mma/wgmma.py), chosen from the target alone.

The lowered TIR of one SS and one RS GEMM is compared structurally with hand-written TIR whose descriptor values
are computed by the test-side ISA encoder (``oracles/wgmma_isa.py``, written from the PTX ISA "Matrix Descriptor
Format", not from hw/); the refusals of `T.tile_mma` on sm_90a (docs/decisions.md, issue 22) each name the operand or buffer, the rule and
the TVMScript line."""

import re

import pytest
import tvm
import tvm_ffi

import tirx_layout
from tirx_layout.transform import build, lower_tile_ops
from tirx_layout.transform.verify_layouts import LayoutVerificationError

from oracles import wgmma_isa

SM90 = '{"kind": "cuda", "arch": "sm_90a"}'


def isa_wgmma_desc(lbo: int, sbo: int, swizzle: str) -> int:
    """The descriptor the helpers take: the oracle's encoding with a zero start field (the helper ORs in the
    operand's shared address)."""
    return wgmma_isa.descriptor(0, lbo, sbo, swizzle)


def test_the_oracle_gives_the_known_128B_k_major_value():
    # 128B K-major: LBO unused ("assumed 1": 16 bytes), SBO = 8 rows x 128 bytes; swizzle code 1 at bit 62.
    assert isa_wgmma_desc(16, 1024, "128B") == 0x4000004000010000


def parse(text: str, **values):
    names = {"T": tvm.script.tirx, **values}
    names.update({n: getattr(tirx_layout, n) for n in tirx_layout.__all__})
    return tvm.script.from_source(text, extra_vars=names)


def _without_sources(node):
    """Helper calls with their CUDA source blanked: the structure is compared, nvcc checks the sources."""

    def blank(call):
        if getattr(call.op, "name", "") != "tirx.cuda.func_call":
            return call
        return tvm.ir.Call(call.op, [*call.args[:-1], tvm.ir.StringImm("")], ret_ty=call.ty)

    return tvm_ffi.structural_map(node, [(tvm.ir.Call, blank)], order="post")


def assert_lowers_to(func, expected):
    done = lower_tile_ops(func)
    tvm.ir.assert_structural_equal(
        done.with_body(_without_sources(done.body)),
        expected.with_body(_without_sources(expected.body)),
        map_free_vars=True,
    )


def _call(what: str, *args: str) -> str:
    return f'T.cuda.func_call("tirx_layout_{what}", {", ".join([*args, ""])}source_code="")'


def _descriptor(flat: str) -> str:
    """The full descriptor of the operand at ``flat[0]`` (bits ``desc``), made once by the smem_descriptor helper;
    each K step adds its start offset in 16-byte units (issue 34)."""
    call = f"T.address_of({flat}[0]), desc, "
    return f'T.cuda.func_call("tirx_layout_wgmma_smem_descriptor", {call}source_code="", return_type="uint64")'


SS_GEMM = f"""
@T.prim_func
def gemm():
    T.func_attr({{"target": T.target({SM90})}})
    T.device_entry()
    tx = T.thread_id([128])
    As = T.alloc_shared((64, 32), "bfloat16", layout=mma_shared_layout("bfloat16", "64B", (64, 32)), align=1024)
    Bs = T.alloc_shared((64, 32), "bfloat16", layout=mma_shared_layout("bfloat16", "64B", (64, 32)), align=1024)
    acc = T.alloc_local((64, 64), "float32", layout=wgmma_accumulator_layout(64))
    T.tile_mma(acc, As, Bs, accumulate=True)
"""


def test_an_ss_gemm_lowers_to_fence_two_k_steps_commit_and_wait():
    # 64B K-major bf16: a row of K is 64 bytes (32 elements) in one swizzle atom; SBO = 8 rows x 64 B = 512 between
    # 8-row groups, LBO unused (16); K steps of 16 elements move 32 bytes: step 1's descriptor is 2 16-byte units on.
    # D: 64 x 64 float32 over 128 threads is 32 registers each (m64n64k16, D f32 bf16 bf16).
    desc = isa_wgmma_desc(16, 512, "64B")
    mma = "wgmma_mma_m64n64k16_f32_bf16_bf16_ss_t00"
    expected = parse(
        f"""
@T.prim_func
def gemm():
    T.func_attr({{"target": T.target({SM90})}})
    T.device_entry()
    tx = T.thread_id([128])
    As = T.alloc_shared((64, 32), "bfloat16", layout=mma_shared_layout("bfloat16", "64B", (64, 32)), align=1024)
    Bs = T.alloc_shared((64, 32), "bfloat16", layout=mma_shared_layout("bfloat16", "64B", (64, 32)), align=1024)
    acc = T.alloc_local((64, 64), "float32", layout=wgmma_accumulator_layout(64))
    acc_flat = T.decl_buffer((32,), "float32", data=acc.data, scope="local", layout=None)
    As_flat = T.decl_buffer((2048,), "bfloat16", data=As.data, scope="shared", layout=None)
    Bs_flat = T.decl_buffer((2048,), "bfloat16", data=Bs.data, scope="shared", layout=None)
    {_call("sync_fence_proxy_async")}
    T.cuda.cta_sync()
    {_call("wgmma_keep_f32_x32", "T.address_of(acc_flat[0])")}
    a_desc: T.let[T.uint64] = {_descriptor("As_flat")}
    b_desc: T.let[T.uint64] = {_descriptor("Bs_flat")}
    {_call("wgmma_fence")}
    {_call(mma, "T.address_of(acc_flat[0])", "a_desc", "b_desc", "T.uint32(1)")}
    {_call(mma, "T.address_of(acc_flat[0])", "a_desc + T.uint64(2)", "b_desc + T.uint64(2)", "T.uint32(1)")}
    {_call("wgmma_commit_group")}
    {_call("wgmma_wait_group_0", "T.address_of(acc_flat[0])")}
    {_call("wgmma_keep_f32_x32", "T.address_of(acc_flat[0])")}
""",
        desc=tvm.tirx.const(desc, "uint64"),
    )
    assert_lowers_to(parse(SS_GEMM), expected)


RS_GEMM = f"""
@T.prim_func
def gemm():
    T.func_attr({{"target": T.target({SM90})}})
    T.device_entry()
    tx = T.thread_id([128])
    Ar = T.alloc_local((64, 32), "float16", layout=wgmma_operand_a_layout(32, "float16"))
    Bs = T.alloc_shared((128, 32), "float16", layout=mma_shared_layout("float16", "none", (128, 32)), align=1024)
    acc = T.alloc_local((64, 128), "float16", layout=wgmma_accumulator_layout(128, "float16"))
    T.tile_mma(acc, Ar, Bs)
"""


def test_an_rs_gemm_with_an_f16_accumulator_lowers_to_register_operands():
    # B unswizzled K-major: core matrices of 8 rows x 16 bytes (8 halves of K), stacked down the 128 rows first
    # (rows 16 bytes apart), then along K: LBO = the distance between the two core matrices of one K step along K
    # (128 rows x 16 B = 2048), SBO = the distance between 8-row groups (128 B); swizzle code 0. K step 1 starts
    # two core-matrix columns on: 2 x 2048 bytes, 256 16-byte units of the descriptor's start.
    # A in registers: each K step of 16 is 4 32-bit registers = 8 float16 slots; D f16: 128 x 64 / 128 threads = 64
    # halves = 32 packed registers.
    desc = isa_wgmma_desc(2048, 128, "none")
    mma = "wgmma_mma_m64n128k16_f16_f16_f16_rs_t0"
    expected = parse(
        f"""
@T.prim_func
def gemm():
    T.func_attr({{"target": T.target({SM90})}})
    T.device_entry()
    tx = T.thread_id([128])
    Ar = T.alloc_local((64, 32), "float16", layout=wgmma_operand_a_layout(32, "float16"))
    Bs = T.alloc_shared((128, 32), "float16", layout=mma_shared_layout("float16", "none", (128, 32)), align=1024)
    acc = T.alloc_local((64, 128), "float16", layout=wgmma_accumulator_layout(128, "float16"))
    acc_flat = T.decl_buffer((64,), "float16", data=acc.data, scope="local", layout=None)
    Ar_flat = T.decl_buffer((16,), "float16", data=Ar.data, scope="local", layout=None)
    Bs_flat = T.decl_buffer((4096,), "float16", data=Bs.data, scope="shared", layout=None)
    {_call("sync_fence_proxy_async")}
    T.cuda.cta_sync()
    {_call("wgmma_keep_b32_x32", "T.address_of(acc_flat[0])")}
    {_call("wgmma_keep_b32_x8", "T.address_of(Ar_flat[0])")}
    b_desc: T.let[T.uint64] = {_descriptor("Bs_flat")}
    {_call("wgmma_fence")}
    {_call(mma, "T.address_of(acc_flat[0])", "T.address_of(Ar_flat[0])", "b_desc", "T.uint32(0)")}
    {_call(mma, "T.address_of(acc_flat[0])", "T.address_of(Ar_flat[8])", "b_desc + T.uint64(256)", "T.uint32(1)")}
    {_call("wgmma_commit_group")}
    {_call("wgmma_wait_group_0", "T.address_of(acc_flat[0])")}
    {_call("wgmma_keep_b32_x32", "T.address_of(acc_flat[0])")}
""",
        desc=tvm.tirx.const(desc, "uint64"),
    )
    assert_lowers_to(parse(RS_GEMM), expected)


# ---- the asynchronous form ------------------------------------------------------------------------------------

ASYNC_LOOP = f"""
@T.prim_func
def gemm():
    T.func_attr({{"target": T.target({SM90})}})
    T.device_entry()
    tx = T.thread_id([128])
    As = T.alloc_shared((2, 64, 64), "bfloat16", layout=mma_shared_layout("bfloat16", "128B", (2, 64, 64)),
                        align=1024)
    Bs = T.alloc_shared((2, 64, 64), "bfloat16", layout=mma_shared_layout("bfloat16", "128B", (2, 64, 64)),
                        align=1024)
    acc = T.alloc_local((64, 64), "float32", layout=wgmma_accumulator_layout(64))
    for kt in range(4):
        T.tile_mma(acc, As[kt % 2], Bs[kt % 2], accumulate=kt > 0, wait=False)
        T.tile_mma_wait(1)
    T.tile_mma_wait(0)
"""


def test_the_asynchronous_form_commits_without_waiting_and_tile_mma_wait_waits_for_the_pending_count():
    text = lower_tile_ops(parse(ASYNC_LOOP)).script()
    calls = re.findall(r'func_call\("tirx_layout_(\w+)"', text)
    mma = "wgmma_mma_m64n64k16_f32_bf16_bf16_ss_t00"
    descriptors = ["wgmma_smem_descriptor"] * 2
    group = ["sync_fence_proxy_async", "wgmma_keep_f32_x32", *descriptors, "wgmma_fence", *[mma] * 4]
    group.append("wgmma_commit_group")
    assert calls == [*group, "wgmma_wait_group_1", "wgmma_keep_f32_x32", "wgmma_wait_group_0", "wgmma_keep_f32_x32"]
    # the stage moves A's and B's descriptors by 64 x 64 elements (whole 1024-byte swizzle repeats: 512 units of 16
    # bytes); K step 3 adds 6 units (96 bytes) to the stage's descriptor
    assert text.count('return_type="uint64") + T.Cast("uint64", kt % 2 * 512)') == 2
    assert "a_desc + T.uint64(6), b_desc + T.uint64(6)" in text


def test_a_printed_asynchronous_tile_mma_parses_back_to_the_same_op():
    func = parse(ASYNC_LOOP)
    printed = func.script()
    assert "accumulate=kt > 0, wait=False)" in printed and "T.tile_mma_wait(pending=1)" in printed
    tvm.ir.assert_structural_equal(parse(printed), func)


# ---- mbarriers and TMA on sm_90a carry no tcgen05 fence ----------------------------------------------------------


def test_mbarrier_ops_on_sm_90a_emit_no_tcgen05_fence():
    func = parse(f"""
@T.prim_func
def k():
    T.func_attr({{"target": T.target({SM90})}})
    T.device_entry()
    tx = T.thread_id([128])
    bars = T.alloc_shared((1,), "uint64")
    T.mbarrier_init(bars[0], 128)
    T.mbarrier_arrive(bars[0])
    T.mbarrier_arrive_expect_tx(bars[0], 64)
    T.mbarrier_wait(bars[0], 0)
""")
    calls = re.findall(r'func_call\("tirx_layout_(\w+)"', lower_tile_ops(func).script())
    assert calls == [
        "mbarrier_init",
        "sync_fence_proxy_async",
        "mbarrier_arrive",
        "sync_fence_proxy_async",
        "mbarrier_arrive_expect_tx",
        "mbarrier_wait",
    ]
    # the same kernel for sm_100a keeps its tcgen05 thread-sync fences
    sm100 = lower_tile_ops(func.with_attr("target", tvm.target.Target({"kind": "cuda", "arch": "sm_100a"})))
    assert "tcgen05_fence_before" in sm100.script() and "tcgen05_fence_after" in sm100.script()


# ---- refusals ---------------------------------------------------------------------------------------------------


def _kernel(decls: str, body: str, threads: int = 128) -> str:
    lines = "\n    ".join([*decls.strip().splitlines(), *body.strip().splitlines()])
    return f"""
@T.prim_func
def gemm():
    T.device_entry()
    tx = T.thread_id([{threads}])
    {lines}
"""


A16 = 'As = T.alloc_shared((64, 64), "float16", layout=mma_shared_layout("float16", "128B", (64, 64)), align=1024)'
B16 = 'Bs = T.alloc_shared((64, 64), "float16", layout=mma_shared_layout("float16", "128B", (64, 64)), align=1024)'
ACC = 'acc = T.alloc_local((64, 64), "float32", layout=wgmma_accumulator_layout(64))'
LINE = r" \(line \d+ of <str>\)"

REFUSALS = {
    "a TMEM accumulator": (
        f'{A16}\n{B16}\nacc = T.alloc_tmem((64, 64), "float32", layout=tmem_datapath_layout("F", 64, 64))',
        "T.tile_mma(acc, As, Bs)",
        r"buffer acc lives in tensor memory, which target sm_90a does not have .*on Hopper the accumulator is a "
        r"register fragment: T.alloc_local\(\(M, N\), dtype, layout=wgmma_accumulator_layout\(N\)\)",
    ),
    "D in shared memory": (
        f'{A16}\n{B16}\nacc = T.alloc_shared((64, 64), "float32")',
        "T.tile_mma(acc, As, Bs)",
        r"tile_mma's D \(acc, 'shared'\) must be a register fragment on sm_90a: T.alloc_local\(\(M, N\), "
        rf'"float32", layout=wgmma_accumulator_layout\(N\)\), not shared memory{LINE}',
    ),
    "D in another fragment layout": (
        f'{A16}\n{B16}\nacc = T.alloc_local((64, 64), "float32", layout=T.layout("S[(64, 64):(1@tid_in_wg, 1)]"))',
        "T.tile_mma(acc, As, Bs)",
        r"tile_mma's D \(acc\) is not in the wgmma accumulator layout: .* element \(0, 2\) sits on thread 0 slot 2; "
        rf"the ISA puts it on thread 1 slot 0{LINE}",
    ),
    "barrier=": (
        f'{A16}\n{B16}\n{ACC}\nbars = T.alloc_shared((1,), "uint64")',
        "T.tile_mma(acc, As, Bs, barrier=bars[0])",
        r"tile_mma\(barrier=...\) is a tcgen05 feature; on sm_90a \(wgmma\) write tile_mma\(..., wait=False\) and "
        rf"T.tile_mma_wait\(pending\) \(then T.mbarrier_arrive to release a stage\){LINE}",
    ),
    "scale factors": (
        f'{A16}\n{B16}\n{ACC}\nsf = T.alloc_shared((64, 2), "float8_e8m0fnu")',
        "T.tile_mma(acc, As, Bs, scale_a=sf, scale_b=sf)",
        rf"tile_mma with scale factors \(block-scaled\) needs tcgen05; sm_90a \(wgmma\) has none{LINE}",
    ),
    "scale factors in tensor memory": (
        f"{A16}\n{B16}\n{ACC}\n"
        'sf = T.alloc_tmem((64, 2), "float8_e8m0fnu", layout=T.layout("S[(64, 2):(1@TLane, 1@TCol)]"))',
        "T.tile_mma(acc, As, Bs, scale_a=sf, scale_b=sf)",
        r"buffer sf lives in tensor memory, which target sm_90a does not have",
    ),
    "scope warp": (
        f"{A16}\n{B16}\n{ACC}",
        'T.tile_mma(acc, As, Bs, scope="warp")',
        r"tile_mma scope 'warp' on sm_90a: wgmma is issued by whole warpgroups \(.sync.aligned over 128 threads\); "
        rf"write scope='cta' \(every warpgroup its own 64 rows\) or scope='warpgroup'{LINE}",
    ),
    "a condition splitting a warpgroup": (
        f"{A16}\n{B16}\n{ACC}",
        'if tx < 64:\n    T.tile_mma(acc, As, Bs, scope="warpgroup")',
        r"tile_mma on sm_90a runs on whole warpgroups \(wgmma is .sync.aligned over 128 threads\), but `if tx < 64` "
        rf"splits warpgroup 0 \(thread 64 differs from the others\); branch on the warpgroup index \(tx // 128\)"
        rf"{LINE}",
    ),
    "T.tile_mma_wait under a condition splitting a warpgroup": (
        f"{A16}\n{B16}\n{ACC}",
        "T.tile_mma(acc, As, Bs, wait=False)\nif tx % 2 == 0:\n    T.tile_mma_wait(0)",
        r"T.tile_mma_wait on sm_90a runs on whole warpgroups .* splits warpgroup 0 \(thread 1 differs",
    ),
    "a warpgroup-scope tile_mma reached by another warpgroup than D's": (
        f'{A16}\n{B16}\nacc = T.alloc_local((64, 64), "float32", layout=wgmma_accumulator_layout(64, first_warpgroup=1))',
        'if tx // 128 == 0:\n    T.tile_mma(acc, As, Bs, scope="warpgroup")',
        r"tile_mma's D \(acc\) lives on warpgroup\(s\) \[1\] of the CTA, but the warpgroup-scope tile_mma is reached by "
        rf"warpgroup\(s\) \[0\]: only D's own warpgroup can issue its wgmma .*{LINE}",
    ),
    "a warpgroup-scope tile_mma every warpgroup reaches, D on one": (
        f'{A16}\n{B16}\nacc = T.alloc_local((64, 64), "float32", layout=wgmma_accumulator_layout(64, first_warpgroup=1))',
        'T.tile_mma(acc, As, Bs, scope="warpgroup")',
        r"lives on warpgroup\(s\) \[1\] of the CTA, but the warpgroup-scope tile_mma is reached by warpgroup\(s\) "
        r"\[0, 1\]",
    ),
    "a cta scope over fewer warpgroups than the CTA": (
        f"{A16}\n{B16}\n{ACC}",
        "T.tile_mma(acc, As, Bs)",
        r"a cta-scope T.tile_mma on sm_90a has every warpgroup of the CTA issue its own 64 rows: D has M = 64 \(1 "
        rf"warpgroup\(s\), 128 threads\), the CTA has 256 threads; use scope='warpgroup' under a condition on the "
        rf"warpgroup for fewer{LINE}",
    ),
    "an int8 N wgmma does not take": (
        'As = T.alloc_shared((64, 64), "int8", layout=mma_shared_layout("int8", "64B", (64, 64)), align=1024)\n'
        'Bs = T.alloc_shared((40, 64), "int8", layout=mma_shared_layout("int8", "64B", (40, 64)), align=1024)\n'
        'acc = T.alloc_local((64, 40), "int32", layout=wgmma_accumulator_layout(40, "int32"))',
        "T.tile_mma(acc, As, Bs)",
        rf"tile_mma: wgmma kind int8 takes N in 8, 16, 24, 32, 48..256 step 16, got N=40{LINE}",
    ),
}


@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_sm_90a_refuses_what_wgmma_cannot_run(case):
    decls, body, message = REFUSALS[case]
    threads = 256 if "fewer warpgroups" in case or "warpgroup-scope" in case else 128
    with pytest.raises(LayoutVerificationError, match=message):
        build(parse(_kernel(decls, body, threads)), "sm_90a")


def test_an_mn_major_operand_of_a_non_16_bit_type_is_refused_naming_it():
    # int8 MN-major (which tcgen05 reads): wgmma transposes 16-bit types only
    mn = 'mma_shared_layout("int8", "64B", (64, 128), major="MN")'
    b = f'Bs = T.alloc_shared((64, 128), "int8", layout={mn}, align=1024)'
    a = 'As = T.alloc_shared((64, 128), "int8", layout=mma_shared_layout("int8", "128B", (64, 128)), align=1024)'
    acc = 'acc = T.alloc_local((64, 64), "int32", layout=wgmma_accumulator_layout(64, "int32"))'
    with pytest.raises(
        ValueError,
        match=r"B is MN-major int8: wgmma reads MN-major operands only for 16-bit types \(bfloat16, float16; the "
        r"imm-trans operands exist only there\); store B K-major \(line \d+ of <str>\)",
    ):
        build(parse(_kernel(f"{a}\n{b}\n{acc}", "T.tile_mma(acc, As, Bs)")), "sm_90a")


def test_the_asynchronous_forms_are_refused_where_they_do_not_exist():
    tmem_acc = 'acc = T.alloc_tmem((128, 64), "float32", layout=tmem_datapath_layout("D", 128, 64))'
    a = 'As = T.alloc_shared((128, 64), "float16", layout=mma_shared_layout("float16", "128B", (128, 64)), align=1024)'
    with pytest.raises(LayoutVerificationError, match=r"tile_mma\(..., wait=False\) is the asynchronous form of wgmma"):
        build(parse(_kernel(f"{a}\n{B16}\n{tmem_acc}", "T.tile_mma(acc, As, Bs, wait=False)")), "sm_100a")
    with pytest.raises(LayoutVerificationError, match=r"T.tile_mma_wait waits for wgmma groups \(sm_90a\); on "):
        build(parse(_kernel(f"{a}\n{B16}\n{tmem_acc}", "T.tile_mma(acc, As, Bs)\nT.tile_mma_wait(0)")), "sm_100a")
    with pytest.raises(ValueError, match=r"no T.tile_mma\(..., wait=False\) in this function"):
        build(parse(_kernel(f"{A16}\n{B16}\n{ACC}", "T.tile_mma(acc, As, Bs)\nT.tile_mma_wait(0)")), "sm_90a")
    with pytest.raises(ValueError, match=r"T.tile_mma_wait: pending must be in 0..7, got 8"):
        tvm.script.tirx.tile_mma_wait(8)


# ---- what orders the shared operands before the wgmma, by scope --------------------------------------------------


@pytest.mark.parametrize(
    ("scope", "threads", "condition", "before"),
    [
        # cta: every thread's proxy fence, then the CTA barrier that orders all writers before every warpgroup's wgmma
        ("cta", 128, None, ["sync_fence_proxy_async", "cta_sync"]),
        # warpgroup: nothing; the operands were published before the op (TMA + mbarrier wait, or a writer's arrive)
        ("warpgroup", 256, "tx // 128 == 1", []),
    ],
)
def test_only_a_cta_scope_wgmma_fences_the_proxy_and_syncs_the_cta(scope, threads, condition, before):
    acc = f'acc = T.alloc_local((64, 64), "float32", layout=wgmma_accumulator_layout(64, first_warpgroup={threads // 128 - 1}))'
    op = f'T.tile_mma(acc, As, Bs, scope="{scope}")'
    body = op if condition is None else f"if {condition}:\n    {op}"
    func = parse(
        _kernel(f"{A16}\n{B16}\n{acc}", body, threads).replace(
            "T.device_entry()", f'T.func_attr({{"target": T.target({SM90})}})\n    T.device_entry()'
        )
    )
    text = lower_tile_ops(func).script()
    found = re.findall(r'func_call\("tirx_layout_(\w+)"|(cta_sync)\(', text)
    mma = "wgmma_mma_m64n64k16_f32_f16_f16_ss_t00"
    descriptors = ["wgmma_smem_descriptor"] * 2
    group = ["wgmma_keep_f32_x32", *descriptors, "wgmma_fence", *[mma] * 4, "wgmma_commit_group"]
    assert ["".join(f) for f in found] == [*before, *group, "wgmma_wait_group_0", "wgmma_keep_f32_x32"]


# ---- conditions on the thread index: the conjunction of an elif's branches ---------------------------------------

PRODUCER_FIRST = """
if tx // 32 == 8:
    T.evaluate(0)
elif tx // 128 < 2:
    T.tile_mma(acc, As, Bs, scope="warpgroup")
"""


def test_a_warpgroup_scope_tile_mma_in_the_elif_after_a_producer_warp_branch_is_accepted():
    # warp 8 (in warpgroup 2) takes the if; `not tx // 32 == 8` alone splits warpgroup 2, but together with
    # `tx // 128 < 2` the threads reaching the op are warpgroups 0 and 1 whole
    acc = 'acc = T.alloc_local((64, 64), "float32", layout=wgmma_accumulator_layout(64))'
    build(parse(_kernel(f"{A16}\n{B16}\n{acc}", PRODUCER_FIRST, 384)), "sm_90a")
    # a genuinely splitting elif is still refused
    splitting = PRODUCER_FIRST.replace("tx // 128 < 2", "tx < 192")
    with pytest.raises(
        LayoutVerificationError,
        match=r"tile_mma on sm_90a runs on whole warpgroups .* `if not tx // 32 == 8` and `if tx < 192` splits "
        r"warpgroup 1 \(thread 192 differs from the others\)",
    ):
        build(parse(_kernel(f"{A16}\n{B16}\n{acc}", splitting, 384)), "sm_90a")
