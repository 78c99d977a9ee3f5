"""Fragment-to-fragment copies that move elements between threads (issue 29, point 4): warp shuffles whose source
lanes are computed from the two layouts, a shared-memory scratch between CTA barriers across warps, and the Hopper
accumulator -> wgmma A operand conversion FlashAttention-3 needs (bf16: the same placement, a register copy with a
cast; e4m3: a permutation inside each quad). Pass-level against hand-written TIR, end to end in the simulator, and
the refusals."""

import ml_dtypes
import numpy as np
import pytest
import tvm
from tvm.script import tirx as T

from tirx_layout import sim, wgmma_accumulator_layout, wgmma_operand_a_layout
from tirx_layout.ops.copy.exchange import SharedExchange, WarpShuffle, plan_exchange
from tirx_layout.ops.operands import operand
from tirx_layout.script import parse_layout
from tirx_layout.tools.kernel_report import nvcc_assembles
from tirx_layout.transform import build, lower_tile_ops

from kernels import parse


def test_a_lane_permutation_is_one_shuffle_per_slot_from_the_computed_lane():
    # f: row r on lane r; g: row 16 * (l % 2) + l // 2 on lane l. Slot s of lane l is f's slot s of lane
    # 16 * (l % 2) + l // 2.
    before = """
@T.prim_func
def k():
    T.device_entry()
    tx = T.thread_id([32])
    f = T.alloc_local((32, 2), "float32", layout=T.layout("S[(32, 2):(1@laneid, 1)]"))
    g = T.alloc_local((32, 2), "float32", layout=T.layout("S[(2, 16, 2):(1@laneid, 2@laneid, 1)]"))
    T.tile_copy(g, f)
"""
    after = """
@T.prim_func
def k():
    T.device_entry()
    tx = T.thread_id([32])
    f = T.alloc_local((32, 2), "float32", layout=T.layout("S[(32, 2):(1@laneid, 1)]"))
    g = T.alloc_local((32, 2), "float32", layout=T.layout("S[(2, 16, 2):(1@laneid, 2@laneid, 1)]"))
    g_flat = T.decl_buffer((2,), data=g.data, scope="local", layout=None)
    f_flat = T.decl_buffer((2,), data=f.data, scope="local", layout=None)
    g_0_from_0: T.let[T.float32] = T.tvm_warp_shuffle(T.uint32(4294967295), f_flat[0], tx % 2 * 16 + tx // 2, 32, 32)
    g_flat[0] = g_0_from_0
    g_1_from_1: T.let[T.float32] = T.tvm_warp_shuffle(T.uint32(4294967295), f_flat[1], tx % 2 * 16 + tx // 2, 32, 32)
    g_flat[1] = g_1_from_1
"""
    tvm.ir.assert_structural_equal(lower_tile_ops(parse(before)), parse(after), map_free_vars=True)


def hopper_conversion(dtype: str):
    @T.prim_func
    def k(A: T.Buffer((64, 64), "float32"), B: T.Buffer((64, 64), dtype)):
        T.device_entry()
        tx = T.thread_id([128])
        acc = T.alloc_local((64, 64), "float32", layout=wgmma_accumulator_layout(64))
        a = T.alloc_local((64, 64), dtype, layout=wgmma_operand_a_layout(64, dtype))
        T.tile_copy(acc, A)
        T.tile_copy(a, acc)
        T.tile_copy(B, a)

    return k


def _plan(dst_layout, src_layout, dtype, shape=(64, 64), threads=128, scope="cta"):
    d = tvm.tirx.decl_buffer(shape, dtype, "d", scope="local")
    s = tvm.tirx.decl_buffer(shape, "float32", "s", scope="local")
    layouts = {d: dst_layout, s: src_layout}
    region = tuple(slice(0, e) for e in shape)
    return plan_exchange(operand(d[region], layouts, "dst"), operand(s[region], layouts, "src"), scope, threads)


def test_hopper_accumulator_to_an_e4m3_operand_is_two_shuffles_an_element_inside_each_quad():
    plan = _plan(wgmma_operand_a_layout(64, "float8_e4m3fn"), wgmma_accumulator_layout(64), "float8_e4m3fn")
    assert isinstance(plan, WarpShuffle)
    # 32 elements a thread; each comes from one of two accumulator registers, by the lane's place in its quad
    assert [len(k) for k in plan.source_slots()] == [2] * 32 and plan.shuffles() == 64
    thread, _, _ = plan.tables()
    assert (thread // 4 == np.arange(128) // 4).all()  # inside the quad


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float8_e4m3fn"])
def test_hopper_accumulator_converts_to_the_wgmma_a_operand_in_the_simulator(dtype):
    func = hopper_conversion(dtype)
    lowered = lower_tile_ops(func).script()
    assert ("tvm_warp_shuffle" in lowered) == (dtype == "float8_e4m3fn")  # 16-bit: the same placement
    a = (np.arange(64 * 64) % 33 - 16).reshape(64, 64).astype(np.float32)  # exact in e4m3 too
    got = np.asarray(sim.run(func, [a])["B"]).view(np.dtype(getattr(ml_dtypes, dtype, dtype)))
    np.testing.assert_array_equal(got.astype(np.float32), a)


def test_hopper_e4m3_conversion_assembles_for_sm_90a():
    assembled = nvcc_assembles(
        build(hopper_conversion("float8_e4m3fn"), "sm_90a").imports[0].inspect_source(), "sm_90a"
    )
    assert assembled is None or assembled[0], assembled


def exchange_kernel(src: str, dst: str, shape=(64, 8), threads=64, dtype="bfloat16", copy="T.tile_copy(g, f)"):
    """``A`` -> fragment ``f`` (layout ``src``) -> ``copy`` into fragment ``g`` (layout ``dst``, ``dtype``) -> ``B``."""
    return parse(f"""
@T.prim_func
def k(A: T.Buffer({shape}, "float32"), B: T.Buffer({shape}, "{dtype}")):
    T.device_entry()
    tx = T.thread_id([{threads}])
    f = T.alloc_local({shape}, "float32", layout=T.layout("{src}"))
    g = T.alloc_local({shape}, "{dtype}", layout=T.layout("{dst}"))
    T.tile_copy(f, A)
    {copy}
    T.tile_copy(B, g)
""")


# rows over (warp, lane) into rows over (lane, warp): half of the rows change warps; converted twice, in a loop
WARP_ROWS, LANE_ROWS = "S[(2, 32, 8):(1@warpid, 1@laneid, 1)]", "S[(32, 2, 8):(1@laneid, 1@warpid, 1)]"
LOOPED = "for i in range(2):\n        T.tile_copy(g, f{scope})"


#: a row per lane into a column per lane
TRANSPOSE = ("S[(32, 32):(1@laneid, 1)]", "S[(32, 32):(1, 1@laneid)]")


def across_warps(scope: str = ""):
    return exchange_kernel(WARP_ROWS, LANE_ROWS, copy=LOOPED.format(scope=scope))


def test_across_warps_the_exchange_goes_through_a_shared_scratch_between_barriers():
    func = across_warps()
    after = """
@T.prim_func
def k(A: T.Buffer((64, 8), "float32"), B: T.Buffer((64, 8), "bfloat16")):
    T.device_entry()
    tx = T.thread_id([64])
    f = T.alloc_local((64, 8), "float32", layout=T.layout("S[(2, 32, 8):(1@warpid, 1@laneid, 1)]"))
    g = T.alloc_local((64, 8), "bfloat16", layout=T.layout("S[(32, 2, 8):(1@laneid, 1@warpid, 1)]"))
    f_flat = T.decl_buffer((8,), data=f.data, scope="local", layout=None)
    A_flat = T.decl_buffer((512,), data=A.data, layout=None)
    for slot in T.unroll(2):
        f_flat[slot * 4:slot * 4 + 4] = A_flat[T.Ramp(tx * 8 + slot * 4, 1, 4)]
    for i in range(2):
        g_exchange = T.alloc_shared((64, 8), "bfloat16")
        T.cuda.cta_sync()
        g_exchange_flat = T.decl_buffer((512,), "bfloat16", data=g_exchange.data, scope="shared", layout=None)
        f_flat_1 = T.decl_buffer((8,), data=f.data, scope="local", layout=None)
        g_exchange_flat[tx * 8:tx * 8 + 8] = T.Cast("bfloat16x8", f_flat_1[T.Ramp(0, 1, 8)])
        T.cuda.cta_sync()
        g_exchange_flat_1 = T.decl_buffer((512,), "bfloat16", data=g_exchange.data, scope="shared", layout=None)
        g_flat = T.decl_buffer((8,), "bfloat16", data=g.data, scope="local", layout=None)
        g_flat[0:8] = g_exchange_flat_1[T.Ramp(tx % 32 * 16 + tx // 32 * 8, 1, 8)]
    B_flat = T.decl_buffer((512,), "bfloat16", data=B.data, layout=None)
    g_flat_1 = T.decl_buffer((8,), "bfloat16", data=g.data, scope="local", layout=None)
    B_flat[tx % 32 * 16 + tx // 32 * 8:tx % 32 * 16 + tx // 32 * 8 + 8] = g_flat_1[T.Ramp(0, 1, 8)]
"""
    tvm.ir.assert_structural_equal(lower_tile_ops(func), parse(after), map_free_vars=True)
    a = (np.arange(64 * 8) % 61 - 30).reshape(64, 8).astype(np.float32)
    got = np.asarray(sim.run(func, [a])["B"]).view(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(got.astype(np.float32), a)  # and no race: the barriers order every turn


def test_a_transpose_inside_a_warp_goes_through_shared_memory_rather_than_32_shuffles_a_slot():
    row, column = (parse_layout(text) for text in TRANSPOSE)
    assert isinstance(_plan(column, row, "float32", (32, 32), 32), SharedExchange)
    # at scope "warp" no CTA barrier is allowed: shuffles, 32 per slot, still correct
    shuffles = _plan(column, row, "float32", (32, 32), 32, "warp")
    assert isinstance(shuffles, WarpShuffle) and shuffles.shuffles() == 32 * 32


def test_a_transpose_simulates_both_ways():
    a = np.arange(32 * 32, dtype=np.float32).reshape(32, 32)
    for scope in ("cta", "warp"):
        copy = f'T.tile_copy(g, f, "{scope}")'
        func = exchange_kernel(TRANSPOSE[0], TRANSPOSE[1], (32, 32), 32, "float32", copy)
        np.testing.assert_array_equal(sim.run(func, [a])["B"], a)


def test_a_conversion_across_warps_below_cta_scope_is_refused_naming_the_element():
    # g's row 32 (thread 16: lane 16 of warp 0) is f's row 32, on thread 32 (lane 0 of warp 1)
    message = (
        r"layout S\[\(2, 32, 8\).* to g .* at scope 'warp': thread 16 slot 0 of the destination holds the element "
        r"that thread 32 slot 0 of the source holds, in another warp; .* write it at scope 'cta'"
    )
    with pytest.raises(ValueError, match=message):
        lower_tile_ops(across_warps(', "warp"'))


def test_inference_keeps_two_declared_placements_and_the_copy_exchanges():
    # Sm is open, so inference runs; f and g are declared with different placements: no conflict, a conversion.
    copy = 'Sm = T.alloc_shared((64, 8), "float32")\n    T.tile_copy(g, f)\n    T.tile_copy(Sm, g)'
    func = exchange_kernel(WARP_ROWS, LANE_ROWS, dtype="float32", copy=copy)
    a = np.arange(512, dtype=np.float32).reshape(64, 8)
    np.testing.assert_array_equal(sim.run(func, [a])["B"], a)


@pytest.mark.parametrize("which", [0, 1])
def test_each_barrier_of_the_exchange_is_needed(which):
    # Planted: without the barrier before the stores, the second turn overwrites the scratch while the first turn's
    # reads may still be pending (a write after a read); without the one after, the loads race the stores.
    lines = lower_tile_ops(across_warps()).script().splitlines()
    barriers = [n for n, line in enumerate(lines) if line.strip() == "T.cuda.cta_sync()"]
    assert len(barriers) == 2
    planted = "\n".join(line for n, line in enumerate(lines) if n != barriers[which])
    with pytest.raises(sim.DataRace, match="g_exchange"):
        sim.run(parse(planted), [np.zeros((64, 8), np.float32)])


def test_a_tail_layout_with_a_gap_reads_each_row_from_its_lane():
    # g: 24 rows, row 2i + j on lane i + 16j (lanes 12..15 and 28..31 hold nothing); f: row r on lane r
    rows, gapped = parse_layout("S[(24, 2):(1@laneid, 1)]"), parse_layout("S[(12, 2, 2):(1@laneid, 16@laneid, 1)]")
    plan = _plan(gapped, rows, "float32", (24, 2), 32)
    thread, slot, holds = plan.tables()
    assert isinstance(plan, WarpShuffle)
    lanes = np.arange(32)
    assert (holds[0] == ((lanes % 16) < 12)).all()
    held = holds[0]
    np.testing.assert_array_equal(thread[0][held], (2 * (lanes % 16) + lanes // 16)[held])  # lane 16: row 1
    assert (slot[0][held] == 0).all()
    func = exchange_kernel("S[(24, 2):(1@laneid, 1)]", "S[(12, 2, 2):(1@laneid, 16@laneid, 1)]", (24, 2), 32, "float32")
    a = np.arange(48, dtype=np.float32).reshape(24, 2)
    result = sim.run(func, [a])
    np.testing.assert_array_equal(result["B"], a)
    assert (result.writes["B"] == 1).all()
