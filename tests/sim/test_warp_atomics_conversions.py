"""Warp shuffles (``shfl.sync`` in its four modes, member masks, widths), atomics (counted apart from stores, no
race among themselves), conversions (rounding, saturation) and grids sized by scalar parameters, each run by the
simulator on a small kernel against numpy."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from tirx_layout import sim
from tirx_layout.sim import DataRace, SimulationError

from kernels import parse

SHUFFLES = """
@T.prim_func
def k(A: T.Buffer((64,), "int32"), B: T.Buffer((64, 6), "int32")):
    T.device_entry()
    tx = T.thread_id([64])
    v = A[tx]
    B[tx, 0] = T.tvm_warp_shuffle(T.uint32(0xffffffff), v, 35, 32, 32)
    B[tx, 1] = T.tvm_warp_shuffle_xor(T.uint32(0xffffffff), v, 5, 32, 32)
    B[tx, 2] = T.tvm_warp_shuffle_up(T.uint32(0xffffffff), v, 3, 16, 32)
    B[tx, 3] = T.tvm_warp_shuffle_down(T.uint32(0xffffffff), v, 2, 8, 32)
    B[tx, 4] = T.cuda.__shfl_xor_sync(T.uint32(0xffffffff), v, 8, 8)
    B[tx, 5] = T.tvm_warp_shuffle(T.uint32(0xffffffff), v, 9, 4, 32)
"""


def expected_shuffles(a: np.ndarray) -> np.ndarray:
    """CUDA's documented __shfl*_sync results, lane by lane (Programming Guide, "Warp Shuffle Functions")."""
    out = np.zeros((64, 6), np.int32)
    for t in range(64):
        warp, lane = t // 32 * 32, t % 32
        out[t, 0] = a[warp + 35 % 32]  # srcLane wraps modulo width
        out[t, 1] = a[warp + (lane ^ 5)]
        out[t, 2] = a[t - 3] if lane % 16 >= 3 else a[t]  # no source below the segment: own value
        out[t, 3] = a[t + 2] if lane % 8 + 2 < 8 else a[t]
        # xor within 8-lane segments: a lane may read an earlier segment, a later one gives its own value
        out[t, 4] = a[warp + (lane ^ 8)] if lane ^ 8 <= lane // 8 * 8 + 7 else a[t]
        out[t, 5] = a[warp + lane // 4 * 4 + 9 % 4]
    return out


def test_every_shuffle_mode_with_widths_matches_cuda():
    a = np.arange(64, dtype=np.int32) * 7 + 1
    assert (sim.run(parse(SHUFFLES), {"A": a})["B"] == expected_shuffles(a)).all()


def test_a_lane_outside_the_member_mask_is_reported():
    kernel = parse("""
@T.prim_func
def k(A: T.Buffer((32,), "float32")):
    T.device_entry()
    tx = T.thread_id([32])
    A[tx] = T.tvm_warp_shuffle_xor(T.uint32(0x0000ffff), A[tx], 1, 32, 32)
""")
    with pytest.raises(SimulationError, match="lane 16 of warp 0 executes it with member mask 0x0000ffff"):
        sim.run(kernel)


def test_a_member_that_does_not_take_part_is_reported():
    kernel = parse("""
@T.prim_func
def k(A: T.Buffer((32,), "float32")):
    T.device_entry()
    tx = T.thread_id([32])
    if tx < 16:
        A[tx] = T.tvm_warp_shuffle_xor(T.uint32(0xffffffff), A[tx], 1, 32, 32)
""")
    with pytest.raises(SimulationError, match="lane 16 of warp 0 is in member mask 0xffffffff but does not execute"):
        sim.run(kernel)


def test_reading_a_lane_outside_the_mask_is_reported_and_a_half_warp_mask_works():
    text = """
@T.prim_func
def k(A: T.Buffer((32,), "float32")):
    T.device_entry()
    tx = T.thread_id([32])
    if tx < 16:
        A[tx] = T.tvm_warp_shuffle_xor(T.uint32(0x0000ffff), A[tx], XOR, 32, 32)
"""
    a = np.arange(32, dtype=np.float32)
    ok = sim.run(parse(text.replace("XOR", "1")), {"A": a})["A"]
    assert ok[:16].tolist() == (np.arange(16) ^ 1).tolist() and ok[16:].tolist() == a[16:].tolist()
    with pytest.raises(SimulationError, match="lane 0 of warp 0 reads lane 16, which is outside member mask"):
        sim.run(parse(text.replace("XOR", "16")), {"A": a})


ATOMICS = """
@T.prim_func
def k(A: T.Buffer((256,), "float32"), S: T.Buffer((4,), "float32"), C: T.Buffer((2,), "int32")):
    T.device_entry()
    bx = T.cta_id([2])
    tx = T.thread_id([128])
    T.evaluate(T.cuda.atomic_add(T.address_of(S[tx % 4]), A[bx * 128 + tx]))
    T.evaluate(T.cuda.atomic_add(T.address_of(C[0]), 1))
    T.evaluate(T.cuda.atomic_cas(T.address_of(C[1]), 0, bx * 128 + tx + 1))
"""


def test_atomics_from_every_thread_of_every_cta_add_up_and_are_counted_apart_from_stores():
    a = np.arange(256, dtype=np.float32)
    result = sim.run(parse(ATOMICS), {"A": a})
    assert result["S"].tolist() == [a[i::4].sum() for i in range(4)]  # small integers: exact in any order
    assert result["C"].tolist() == [256, 1]  # the first compare-and-swap (thread 0 of CTA 0) wins
    assert result.atomics["S"].tolist() == [64] * 4 and result.atomics["C"].tolist() == [256, 256]
    assert (result.writes["S"] == 0).all() and (result.writes["C"] == 0).all()


def test_a_plain_store_against_another_threads_atomic_is_a_race():
    kernel = parse("""
@T.prim_func
def k(C: T.Buffer((1,), "int32")):
    T.device_entry()
    tx = T.thread_id([32])
    T.evaluate(T.cuda.atomic_add(T.address_of(C[0]), 1))
    if tx == 5:
        C[0] = 0
""")
    with pytest.raises(DataRace, match="a store after an atomic"):
        sim.run(kernel)


def test_shared_memory_atomics_then_a_barrier_then_reads():
    kernel = parse("""
@T.prim_func
def k(B: T.Buffer((64,), "int32")):
    T.device_entry()
    tx = T.thread_id([64])
    S = T.alloc_shared((2,), "int32")
    if tx < 2:
        S[tx] = 0
    T.cuda.cta_sync()
    T.evaluate(T.cuda.atomic_add(T.address_of(S[tx % 2]), tx))
    T.cuda.cta_sync()
    B[tx] = S[tx % 2]
""")
    b = sim.run(kernel)["B"]
    assert b[0] == sum(range(0, 64, 2)) and b[1] == sum(range(1, 64, 2))


CASTS = """
@T.prim_func
def k(A: T.Buffer((8,), "float32"), E: T.Buffer((8,), "float8_e4m3fn"), F: T.Buffer((8,), "float8_e5m2"),
      H: T.Buffer((8,), "bfloat16"), I: T.Buffer((8,), "int32"), J: T.Buffer((8,), "int8"), U: T.Buffer((8,), "uint8")):
    T.device_entry()
    tx = T.thread_id([8])
    E[tx] = T.Cast("float8_e4m3fn", A[tx])
    F[tx] = T.Cast("float8_e5m2", A[tx])
    H[tx] = T.Cast("bfloat16", A[tx])
    I[tx] = T.Cast("int32", A[tx])
    J[tx] = T.Cast("int8", A[tx])
    U[tx] = T.Cast("uint8", T.Cast("int32", A[tx]))
"""


def test_casts_round_to_nearest_even_saturate_fp8_and_truncate_to_integers():
    a = np.float32([1 + 2**-8, 1 + 3 * 2**-8, 460.0, 1e6, -np.inf, np.nan, -2.7, 3e9])
    r = sim.run(parse(CASTS), {"A": a})
    assert r["H"].astype(np.float32)[:2].tolist() == [1.0, 1 + 2**-6]  # ties to even, in bfloat16
    e = r["E"].astype(np.float32)
    assert e[[2, 3, 4]].tolist() == [448.0, 448.0, -448.0] and np.isnan(e[5])  # satfinite; NaN stays
    f = r["F"].astype(np.float32)
    assert f[[3, 4]].tolist() == [57344.0, -57344.0] and np.isnan(f[5])
    assert r["I"].tolist() == [1, 1, 460, 1000000, -(2**31), 0, -2, 2**31 - 1]  # cvt.rzi.s32.f32 saturates
    assert r["J"].tolist() == np.int32([1, 1, 460, 1000000, -(2**31), 0, -2, 2**31 - 1]).astype(np.int8).tolist()
    assert r["U"].tolist() == np.int32(r["I"]).astype(np.uint8).tolist()  # int -> int narrowing wraps
    assert r["E"].dtype == ml_dtypes.float8_e4m3fn


def test_a_grid_sized_by_a_scalar_parameter_runs():
    kernel = parse("""
@T.prim_func
def k(a: T.handle, M: T.int32):
    A = T.match_buffer(a, (M, 32), "float32")
    T.device_entry()
    bx = T.cta_id([M // 4])
    tx = T.thread_id([128])
    A[bx * 4 + tx // 32, tx % 32] = T.Cast("float32", bx)
""")
    result = sim.run(kernel, {"A": np.zeros((12, 32), np.float32), "M": 12})
    assert result["A"][:, 0].tolist() == [r // 4 for r in range(12)] and (result.writes["A"] == 1).all()


def test_the_ptx_shfl_sync_instruction_with_its_raw_c_operand_and_predicate():
    kernel = parse("""
@T.prim_func
def k(A: T.Buffer((32,), "float32"), B: T.Buffer((32,), "float32"), V: T.Buffer((32,), "float32"),
      P: T.Buffer((32,), "int32")):
    T.device_entry()
    tx = T.thread_id([32])
    f = T.alloc_local((1,), "float32")
    g = T.alloc_local((1,), "float32")
    p = T.alloc_local((1,), "uint32")
    T.ptx.shfl_sync.bfly.b32(f[0], A[tx], T.uint32(1), T.uint32(31), T.uint32(0xffffffff))
    T.ptx.shfl_sync.up.b32(g[0], p[0], A[tx], T.uint32(2), T.uint32(0x1800), T.uint32(0xffffffff))
    B[tx] = f[0]
    V[tx] = g[0]
    P[tx] = T.Cast("int32", p[0])
""")
    a = np.arange(32, dtype=np.float32)
    r = sim.run(kernel, {"A": a})
    assert r["B"].tolist() == (np.arange(32) ^ 1).tolist()
    # c = 0x1800: segments of 8 lanes (segmask 24), clamp 0; up by 2 is in range from lane 2 of each segment
    lane = np.arange(32)
    assert r["V"].tolist() == np.where(lane % 8 >= 2, lane - 2, lane).tolist()
    assert r["P"].tolist() == (lane % 8 >= 2).astype(int).tolist()


def test_ptx_atom_and_red_with_their_operations_and_types():
    kernel = parse("""
@T.prim_func
def k(A: T.Buffer((32,), "int32"), C: T.Buffer((3,), "int32"), U: T.Buffer((2,), "uint32"),
      F: T.Buffer((1,), "float32"), D: T.Buffer((32,), "int32")):
    T.device_entry()
    tx = T.thread_id([32])
    d = T.alloc_local((1,), "int32")
    u = T.alloc_local((1,), "uint32")
    e = T.alloc_local((1,), "float32")
    T.ptx.atom.max.s32(d[0], T.address_of(C[0]), A[tx])
    T.ptx.atom.max.u32(u[0], T.address_of(U[0]), T.Cast("uint32", A[tx]))
    T.ptx.atom.add.f32(e[0], T.address_of(F[0]), T.float32(0.5))
    T.ptx.red.min.s32(T.address_of(C[1]), A[tx])
    T.ptx.atom.inc.u32(u[0], T.address_of(U[1]), T.uint32(4))
    T.ptx.atom.cas.b32(d[0], T.address_of(C[2]), T.int32(0), tx + 100)
    D[tx] = d[0]
""")
    a = np.arange(32, dtype=np.int32) - 16  # -16 .. 15: as u32 the negatives are the largest
    r = sim.run(kernel, {"A": a})
    assert r["C"].tolist() == [15, -16, 100]  # max.s32, red.min.s32 from 0, the first cas (thread 0) wins
    assert r["U"].tolist() == [0xFFFFFFFF, 32 % 5]  # max.u32 of -1; inc wraps to 0 past 4: 32 increments leave 2
    assert r["D"].tolist() == [0] + [100] * 31  # the old value each cas saw
    assert r["F"].tolist() == [16.0] and r.atomics["C"].tolist() == [32, 32, 32] and (r.writes["C"] == 0).all()


CTA_SUM = """
@T.prim_func
def k(A: T.Buffer((128,), "float32"), B: T.Buffer((1,), "float32")):
    T.device_entry()
    tx = T.thread_id([128])
    S = T.alloc_shared((4,), "float32")
    v = T.alloc_local((1,), "float32")
    v[0] = A[tx]
    for i in T.unroll(5):
        v[0] = v[0] + T.tvm_warp_shuffle_xor(T.uint32(0xffffffff), v[0], 16 >> i, 32, 32)
    if tx % 32 == 0:
        S[tx // 32] = v[0]
    BARRIER
    if tx == 0:
        B[0] = S[0] + S[1] + S[2] + S[3]
"""


def test_a_butterfly_reduction_through_a_cross_warp_scratch_and_its_missing_barrier():
    a = np.arange(128, dtype=np.float32)
    result = sim.run(parse(CTA_SUM.replace("BARRIER", "T.cuda.cta_sync()")), {"A": a})
    assert result["B"].tolist() == [a.sum()]
    with pytest.raises(DataRace, match="data race on shared S"):
        sim.run(parse(CTA_SUM.replace("BARRIER", "T.evaluate(0)")), {"A": a})


def _exchange(sync: str):
    """Each warpgroup of 256 threads writes its shared row, syncs (``sync``), then reads its neighbour's value."""
    return parse(f"""
@T.prim_func
def k(A: T.Buffer((256,), "float32"), B: T.Buffer((256,), "float32")):
    T.device_entry()
    tx = T.thread_id([256])
    scratch = T.alloc_shared((256,), "float32")
    scratch[tx] = A[tx]
    {sync}
    B[tx] = scratch[tx // 128 * 128 + (tx + 64) % 128]
""")


def test_a_named_barrier_of_each_warpgroup_orders_its_shared_exchange():
    a = np.arange(256, dtype=np.float32)
    out = sim.run(_exchange("T.cuda.warpgroup_sync(tx // 128 + 1)"), {"A": a})["B"]
    tx = np.arange(256)
    np.testing.assert_array_equal(out, a[tx // 128 * 128 + (tx + 64) % 128])
    with pytest.raises(DataRace, match="scratch"):
        sim.run(_exchange("T.evaluate(0)"), {"A": a})


def test_a_named_barrier_reached_by_other_than_its_count_is_reported():
    kernel = _exchange("if tx < 192:\n        T.cuda.warpgroup_sync(1)")
    with pytest.raises(SimulationError, match=r"named barrier 1 \(bar.sync 1, 128\) is reached by 192 threads"):
        sim.run(kernel, {"A": np.zeros(256, np.float32)})
