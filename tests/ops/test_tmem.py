"""Tensor memory: the exact tcgen05 instructions each round trip emits, the allocation, the simulator's TMEM model
checked against the PTX ISA figures, and the errors for layouts the hardware cannot serve. (Building, assembling and
simulating every example kernel is test_examples.py's job.)"""

import re

import numpy as np
import pytest
import tvm

from tirx_layout import (
    R,
    S,
    TCol,
    TileLayout,
    TLane,
    laneid,
    mma_shared_layout,
    sim,
    tcgen05_atom_layout,
    tid_in_wg,
    tmem_datapath_layout,
    warpid,
    wg_local_layout,
)
from tirx_layout.ops.tmem import allocation_columns, fence_barriers_between_accesses
from tirx_layout.sim.tmem import TensorMemory, fragment_offsets
from tirx_layout.tools.kernel_report import kernel_source
from tirx_layout.transform import build

from kernels import example_kernels, parse

KERNELS = example_kernels()
ROUND_TRIPS = sorted(name for name in KERNELS if re.fullmatch(r"tmem_\d+x\d+b_\w+_[DF]", name))
REGISTERS_PER_NUM = {"32x32b": 1, "16x64b": 1, "16x128b": 2, "16x256b": 4}
COLUMNS_PER_NUM = {"32x32b": 1, "16x64b": 2, "16x128b": 4, "16x256b": 8}


def calls(cuda: str) -> list[str]:
    """The tcgen05 helper calls of a kernel body, in order, as ``ld_32x32b_x16`` etc."""
    return re.findall(r"tirx_layout_tcgen05_(\w+)\(", kernel_source(cuda))


def test_every_shape_dtype_datapath_the_isa_allows_is_an_example():
    assert len(ROUND_TRIPS) == 4 * 3 + 3 * 3  # 32x32b has no datapath F (it moves 32 rows per warp)


@pytest.mark.parametrize("name", ROUND_TRIPS)
def test_round_trip_emits_exactly_the_expected_tcgen05_instructions(name):
    _, shape, dtype, datapath = name.split("_")
    pack = 1 if dtype == "float32" else 2
    num = 32 // (COLUMNS_PER_NUM[shape] * pack)  # 32 elements per row
    issues = 2 if datapath == "D" and shape != "32x32b" else 1  # 16-lane shapes cover 128 rows in two halves
    cuda = build(KERNELS[name][0]).imports[0].inspect_source()
    ld, st = f"ld_{shape}_x{num}", f"st_{shape}_x{num}"
    # no tcgen05 fences: no barrier separates one warp's TMEM accesses from another's (alloc and dealloc are
    # synchronous, PTX ISA 9.7.16.6.1)
    assert calls(cuda) == [
        "alloc",
        "relinquish_alloc_permit",
        *[st] * issues,
        "wait_st",
        *[ld] * issues,
        "wait_ld",
        "dealloc",
    ]
    for kind in ("ld", "st"):
        assert cuda.count(f"tcgen05.{kind}.sync.aligned.{shape}.x{num}.b32 ") == 1  # one helper definition
    assert "tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32" in cuda
    assert "(uint)32)" in kernel_source(cuda)  # 32 columns is the smallest allocation
    registers = REGISTERS_PER_NUM[shape] * num
    assert f"unsigned int r[{registers}];" in cuda


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_datapath_B_moves_as_one_128_lane_32x32b_tile(dtype):
    num = 16 if dtype == "float32" else 8  # 16 columns of each 32-column row on each lane half
    cuda = build(KERNELS[f"tmem_32x32b_{dtype}_B"][0]).imports[0].inspect_source()
    assert [c for c in calls(cuda) if c[:3] in ("ld_", "st_")] == [f"st_32x32b_x{num}", f"ld_32x32b_x{num}"]


def test_the_16_lane_halves_and_warps_get_their_own_lane_bases():
    cuda = kernel_source(build(KERNELS["tmem_16x64b_float32_D"][0]).imports[0].inspect_source())
    # warp w: lanes 32w (first 16 rows) and 32w + 16 (next 16): lane << 16 in the address
    assert "((((int)threadIdx.x) >> 5) * 2097152)" in cuda
    assert "((((int)threadIdx.x) >> 5) * 2097152) + 1048576)" in cuda


def test_two_stage_accumulator_allocates_256_columns_and_reads_each_stage_with_32x32b():
    assert (
        allocation_columns(TileLayout(S[(2, 128, 112) : (112 @ TCol, 1 @ TLane, 1 @ TCol)]), (2, 128, 112), "float32")
        == 256
    )
    cuda = build(KERNELS["tmem_two_stage_accumulator"][0]).imports[0].inspect_source()
    body = kernel_source(cuda)
    assert "tirx_layout_tcgen05_alloc((&(acc_taddr_ptr[0])), (uint)256)" in body
    loads = [c for c in calls(cuda) if c.startswith("ld_")]
    assert loads == ["ld_32x32b_x64", "ld_32x32b_x32", "ld_32x32b_x16"] * 2
    # stage 1 starts at column 112
    assert "ld_32x32b_x64((acc_taddr + ((uint)(((((int)threadIdx.x) >> 5) * 2097152) + 112)))" in body


def test_accumulator_stage_as_a_loop_variable_moves_the_address_by_112_columns():
    body = kernel_source(build(KERNELS["tmem_two_stage_accumulator_loop"][0]).imports[0].inspect_source())
    stage_1_x32 = "ld_32x32b_x32((acc_taddr + ((uint)((((((int)threadIdx.x) >> 5) * 2097152) + (stage_1 * 112)) + 64)))"
    assert stage_1_x32 in body


def test_symbolic_tmem_start_on_a_dimension_that_moves_lanes_is_an_error():
    tmem = TileLayout(S[(2, 64, 32) : (64 @ TLane, 1 @ TLane, 1 @ TCol)])
    kernel = parse(f"""
@T.prim_func
def k(A: T.Buffer((64, 32), "float32")):
    T.device_entry()
    tx = T.thread_id([128])
    acc = T.alloc_tmem((2, 64, 32), "float32", layout={tmem!r})
    f = T.alloc_local((64, 32), "float32", layout={tcgen05_atom_layout("16x64b", (64, 32), "float32")!r})
    T.tile_copy(f, A[0:64, 0:32], "warpgroup")
    for s in T.serial(2):
        T.tile_copy(acc[s, 0:64, 0:32], f, "warpgroup")
""")
    with pytest.raises(
        ValueError, match=r"by a fixed number of columns \(on the same lanes\), so the region acc\[s, 0:64, 0:32\]"
    ):
        build(kernel)


@pytest.mark.parametrize("stored", ["16x64b", "16x128b", "16x256b"])
def test_cross_shape_round_trips_store_with_one_shape_and_load_with_32x32b(stored):
    # test_examples.py simulates these and compares with the input; here: the instructions they use.
    cuda = build(KERNELS[f"tmem_cross_{stored}_to_32x32b"][0]).imports[0].inspect_source()
    num = 32 // COLUMNS_PER_NUM[stored]
    assert [c for c in calls(cuda) if c[:3] in ("ld_", "st_")] == [f"st_{stored}_x{num}"] * 2 + ["ld_32x32b_x32"]


def test_fragment_offsets_follow_the_isa_figures():
    lanes, cols = fragment_offsets("32x32b", 2)
    assert (lanes[7] == 7).all() and list(cols[7]) == [0, 1]
    lanes, cols = fragment_offsets("16x128b", 1)  # lane 5: rows 1 and 9, column 1
    assert list(lanes[5]) == [1, 9] and list(cols[5]) == [1, 1]
    lanes, cols = fragment_offsets("16x256b", 1)  # lane 6: rows 1,1,9,9; columns 4,5,4,5
    assert list(lanes[6]) == [1, 1, 9, 9] and list(cols[6]) == [4, 5, 4, 5]
    # every shape covers its 16 or 32 lanes x columns exactly once
    for shape, lanes_per in (("32x32b", 32), ("16x64b", 16), ("16x128b", 16), ("16x256b", 16)):
        lanes, cols = fragment_offsets(shape, 4)
        cells = set(zip(lanes.ravel().tolist(), cols.ravel().tolist(), strict=True))
        assert len(cells) == lanes.size == lanes_per * (cols.max() + 1)


def test_tensor_memory_allocation_rules():
    tm = TensorMemory()
    assert tm.alloc(256) == 0 and tm.alloc(32) == 256 and tm.alloc(64) == 320
    with pytest.raises(sim.SimulationError, match="power of two"):
        tm.alloc(48)
    with pytest.raises(sim.SimulationError, match="not an allocation"):
        tm.dealloc(256, 64)
    with pytest.raises(sim.SimulationError, match=r"lanes 32\.\.63 only"):
        tm.check(1, np.array([5]), np.array([0]), "tcgen05.ld")
    with pytest.raises(sim.OutOfBounds, match="not allocated"):
        tm.check(0, np.array([5]), np.array([400]), "tcgen05.ld")


_RAW = """
@T.prim_func
def k(A: T.Buffer((128,), "float32")):
    T.device_entry()
    tx = T.thread_id([128])
    slot = T.alloc_shared((1,), "uint32")
    r = T.alloc_local((1,), "float32")
    if tx < 32:
        T.evaluate(T.call_intrin("void", "tirx.cuda.func_call", "tirx_layout_tcgen05_alloc", T.address_of(slot[0]),
                                 T.uint32(32), ""))
    T.cuda.cta_sync()
    T.evaluate(T.call_intrin("void", "tirx.cuda.func_call", "tirx_layout_tcgen05_ld_32x32b_x1", LANE_BASE,
                             T.address_of(r[0]), ""))
    T.evaluate(T.call_intrin("void", "tirx.cuda.func_call", "tirx_layout_tcgen05_wait_ld", ""))
    A[tx] = r[0]
    T.cuda.cta_sync()
    if tx < 32:
        T.evaluate(T.call_intrin("void", "tirx.cuda.func_call", "tirx_layout_tcgen05_dealloc", slot[0],
                                 T.uint32(32), ""))
"""


def test_simulator_rejects_a_warp_reaching_outside_its_lane_window():
    ok = parse(_RAW.replace("LANE_BASE", "slot[0] + T.Cast('uint32', tx // 32 * 32 * 65536)"))
    assert (sim.run(ok)["A"] == 0).all()
    bad = parse(_RAW.replace("LANE_BASE", "slot[0] + T.Cast('uint32', (tx // 32 + 1) % 4 * 32 * 65536)"))
    with pytest.raises(sim.SimulationError, match="warp 0 of its warpgroup touches TMEM lane 32"):
        sim.run(bad)


def test_simulator_rejects_a_kernel_that_leaks_tmem():
    # the dealloc call renamed to a wait (which ignores operands): the CTA exits holding its 32 columns
    leak = parse(
        _RAW.replace("LANE_BASE", "slot[0] + T.Cast('uint32', tx // 32 * 32 * 65536)").replace(
            '"tirx_layout_tcgen05_dealloc"', '"tirx_layout_tcgen05_wait_ld"'
        )
    )
    with pytest.raises(sim.SimulationError, match="still allocated"):
        sim.run(leak)


def _copy_kernel(tmem_layout, fragment, rows=128, cols=32, tmem_shape=None):
    tmem_shape = tmem_shape or (rows, cols)
    return parse(f"""
@T.prim_func
def k(A: T.Buffer(({rows}, {cols}), "float32")):
    T.device_entry()
    tx = T.thread_id([128])
    acc = T.alloc_tmem({tmem_shape}, "float32", layout={tmem_layout!r})
    f = T.alloc_local(({rows}, {cols}), "float32", layout={fragment!r})
    T.tile_copy(f, A[0:{rows}, 0:{cols}], "warpgroup")
    T.tile_copy(acc, f, "warpgroup")
""")


def test_fragment_that_is_no_tcgen05_image_is_an_error_naming_both_layouts():
    tmem = tmem_datapath_layout("D", 128, 32)
    fragment = TileLayout(S[(128, 32) : (1, 1 @ tid_in_wg)])  # transposed: column c on thread c
    with pytest.raises(
        ValueError,
        match=r"no tcgen05.ld/st shape moves TMEM S\[.*\] and fragment S\[.*32x32b: "
        r"the element at TMEM lane 0 column 1",
    ):
        build(_copy_kernel(tmem, fragment))


def test_tmem_rows_outside_the_moving_warps_window_are_an_error():
    # rows 32..63 (held by warp 1 in the fragment) placed on lanes 64..95, which only warp 2 may reach
    tmem = TileLayout(S[(2, 2, 32, 32) : (32 @ TLane, 64 @ TLane, 1 @ TLane, 1 @ TCol)])
    with pytest.raises(
        ValueError,
        match=r"32x32b: the element at TMEM lane 32 column 0 would be in thread 32 slot 0, "
        r"the fragment has it in thread 64 .* moves TMEM lanes 32w..32w\+31",
    ):
        build(_copy_kernel(tmem, wg_local_layout(32)))


def test_datapath_F_with_a_32x32b_fragment_is_an_error():
    with pytest.raises(ValueError, match="32x32b: takes \\(128,\\) rows"):
        build(_copy_kernel(tmem_datapath_layout("F", 64, 32), wg_local_layout(32, rows=64), rows=64))


def test_allocation_errors():
    with pytest.raises(ValueError, match="spans 1024 32-bit columns"):
        allocation_columns(TileLayout(S[(128, 1024) : (1 @ TLane, 1 @ TCol)]), (128, 1024), "float32")
    with pytest.raises(ValueError, match="only TLane and TCol"):
        allocation_columns(TileLayout(S[(128, 4) : (1, 128)]), (128, 4), "float32")
    assert allocation_columns(TileLayout(S[(128, 64) : (1 @ TLane, 1 @ TCol)]), (128, 64), "float16") == 32


def test_alloc_tmem_prints_and_parses_back():
    func = KERNELS["tmem_two_stage_accumulator"][0]
    text = func.script()
    assert "scope=\"tmem\", layout=T.layout('S[(2, 128, 112):(112@TCol, 1@TLane, 1@TCol)]')" in text
    tvm.ir.assert_structural_equal(parse(text), func)


# ---- tcgen05.cp ------------------------------------------------------------------------------------------------


def _cp_kernel(tmem_layout, rows, cols, dtype, shared_layout=None):
    shared = "" if shared_layout is None else f", layout={shared_layout!r}"
    return parse(f"""
@T.prim_func
def k(A: T.Buffer(({rows}, {cols}), "{dtype}")):
    T.device_entry()
    tx = T.thread_id([128])
    sm = T.alloc_shared(({rows}, {cols}), "{dtype}"{shared})
    t = T.alloc_tmem(({rows}, {cols}), "{dtype}", layout={tmem_layout!r})
    T.tile_copy(sm, A[0:{rows}, 0:{cols}])
    T.tile_copy(t, sm)
""")


@pytest.mark.parametrize("dtype, sf", [("uint8", 16), ("float32", 8)])
def test_guide_scale_factors_land_in_all_four_lane_windows_through_cp_warpx4(dtype, sf):
    layout = TileLayout(S[(32, sf) : (1 @ TLane, 1 @ TCol)] + R[4 : 32 @ TLane])  # the guide's scale-factor atom
    # uint8: one 16-byte piece per row, row-major is canonical; float32: two pieces, 8-row core matrices
    shared = None if dtype == "uint8" else TileLayout(S[(4, 8, 2, 4) : (64, 4, 32, 1)]).group([32, 8])[0]
    kernel = _cp_kernel(layout, 32, sf, dtype, shared)
    cuda = build(kernel).imports[0].inspect_source()
    copies = [c for c in calls(cuda) if c.startswith("cp_")]
    assert copies == ["cp_32x128b_warpx4"] * (sf * np.dtype(dtype).itemsize // 16)
    assert "tcgen05.cp.cta_group::1.32x128b.warpx4 [%0], %1;" in cuda
    a = (np.arange(32 * sf) % 251).astype(dtype).reshape(32, sf)
    cells = sim.run(kernel, [a]).tmem[0]
    words = a.view(np.uint32)
    for window in range(4):
        assert np.array_equal(cells[32 * window : 32 * window + 32, : words.shape[1]], words), window
    assert not cells[:, words.shape[1] :].any()


def _scale_factor_read_back(fragment, sf=8):
    """The guide's scale factors into all four lane windows by tcgen05.cp, then loaded into ``fragment`` and each
    warp's registers written to its own row block of B."""
    layout = TileLayout(S[(32, sf) : (1 @ TLane, 1 @ TCol)] + R[4 : 32 @ TLane])
    shared = TileLayout(S[(4, 8, 2, 4) : (64, 4, 32, 1)]).group([32, 8])[0]
    return parse(f"""
@T.prim_func
def k(A: T.Buffer((32, {sf}), "float32"), B: T.Buffer((4, 32, {sf}), "float32")):
    T.device_entry()
    tx = T.thread_id([128])
    sm = T.alloc_shared((32, {sf}), "float32", layout={shared!r})
    t = T.alloc_tmem((32, {sf}), "float32", layout={layout!r})
    f = T.alloc_local((32, {sf}), "float32", layout={fragment!r})
    T.tile_copy(sm, A[0:32, 0:{sf}])
    T.tile_copy(t, sm)
    T.tile_copy(f, t)
    mine = T.local_view(f)
    for j in range({sf}):
        B[tx // 32, tx % 32, j] = mine[j]
""")


def test_each_warp_loads_its_own_replica_of_the_scale_factors():
    kernel = _scale_factor_read_back(TileLayout(S[(32, 8) : (1 @ laneid, 1)] + R[4 : 1 @ warpid]))
    body = kernel_source(build(kernel).imports[0].inspect_source())
    assert [c for c in calls(body) if c[:3] in ("cp_", "ld_")] == [
        "cp_32x128b_warpx4",
        "cp_32x128b_warpx4",
        "ld_32x32b_x8",
    ]
    assert "ld_32x32b_x8((t_taddr + ((uint)((((int)threadIdx.x) >> 5) * 2097152)))" in body  # lane 32w: warp w
    a = np.arange(32 * 8, dtype=np.float32).reshape(32, 8)
    assert np.array_equal(sim.run(kernel, [a])["B"], np.broadcast_to(a, (4, 32, 8)))


def test_replicated_fragments_that_do_not_match_the_tmem_replicas_are_errors():
    two = TileLayout(S[(32, 8) : (1 @ laneid, 1)] + R[2 : 2 @ warpid])  # copies on warps 0 and 2; TMEM has four
    with pytest.raises(ValueError, match="the fragment's 2 replicas and the TMEM layout's 4 replicas do not pair"):
        build(_scale_factor_read_back(two))
    four = TileLayout(S[(32, 8) : (1 @ laneid, 1)] + R[4 : 1 @ warpid])
    plain = parse(f"""
@T.prim_func
def k(A: T.Buffer((32, 8), "float32")):
    T.device_entry()
    tx = T.thread_id([128])
    t = T.alloc_tmem((128, 8), "float32", layout={tmem_datapath_layout("D", 128, 8)!r})
    f = T.alloc_local((32, 8), "float32", layout={four!r})
    T.tile_copy(f, t[0:32, 0:8])
""")
    with pytest.raises(ValueError, match="a fragment replicated over threads is loaded from TMEM that holds one copy"):
        build(plain)


@pytest.mark.parametrize(
    "multicast, layout, lane_of",
    [
        ("02_13", TileLayout(S[(64, 4) : (1 @ TLane, 1 @ TCol)] + R[2 : 64 @ TLane]), lambda r: r),
        (
            "01_23",
            TileLayout(S[(2, 32, 4) : (64 @ TLane, 1 @ TLane, 1 @ TCol)] + R[2 : 32 @ TLane]),
            lambda r: 64 * (r // 32) + r % 32,
        ),
    ],
)
def test_cp_warpx2_multicasts(multicast, layout, lane_of):
    rows = 64
    tmem = layout if multicast == "02_13" else layout.group([64, 4])[0]
    kernel = _cp_kernel(tmem, rows, 4, "float32")
    assert [c for c in calls(build(kernel).imports[0].inspect_source()) if c.startswith("cp_")] == [
        f"cp_64x128b_warpx2_{multicast}"
    ]
    a = np.arange(rows * 4, dtype=np.float32).reshape(rows, 4)
    cells = sim.run(kernel, [a]).tmem[0]
    shift = 64 if multicast == "02_13" else 32
    for r in range(rows):
        for lane in (lane_of(r), lane_of(r) + shift):
            assert np.array_equal(cells[lane, :4], a[r].view(np.uint32)), (r, lane)


@pytest.mark.parametrize("mode, field, sbo", [("32B", 6, 256), ("64B", 4, 512), ("128B", 2, 1024)])
def test_swizzled_cp_descriptor_takes_the_shared_layouts_swizzle(mode, field, sbo):
    # test_examples.py simulates and assembles these; here: 8 copies of 16 bytes per row, the descriptor fields
    cuda = build(KERNELS[f"tmem_cp_128x128b_float16_{mode}"][0]).imports[0].inspect_source()
    body = kernel_source(cuda)
    copies = re.findall(r"tirx_layout_tcgen05_cp_128x128b\((.*)\);", body)
    assert len(copies) == 8
    assert all(c.endswith(f"(uint)16, (uint){sbo}, (uint){field}") for c in copies)
    assert f"__shared__ alignas({8 * int(mode[:-1])}) half staged_ptr" in body


def test_swizzled_cp_needs_the_buffer_aligned_to_the_swizzle_repeat():
    shared = mma_shared_layout("float16", "128B", (128, 64))
    with pytest.raises(ValueError, match=r"128B swizzle .* declare sm with align=1024 \(it has 64\)"):
        build(_cp_kernel(tmem_datapath_layout("D", 128, 64), 128, 64, "float16", shared))


def test_cp_4x256b_puts_four_rows_on_the_first_lane_of_each_warp_window():
    kernel = _cp_kernel(
        TileLayout(S[(4, 8) : (32 @ TLane, 1 @ TCol)]),
        4,
        8,
        "float32",
        TileLayout(S[(4, 2, 4) : (4, 32, 1)]).group([4, 8])[0],
    )
    assert [c for c in calls(build(kernel).imports[0].inspect_source()) if c.startswith("cp_")] == ["cp_4x256b"]
    a = np.arange(1, 33, dtype=np.float32).reshape(4, 8)
    cells = sim.run(kernel, [a]).tmem[0]
    for r in range(4):
        assert np.array_equal(cells[32 * r, :8], a[r].view(np.uint32))
    assert int((cells != 0).sum()) == 32


def test_cp_from_a_non_canonical_shared_layout_is_an_error_naming_both_layouts():
    tmem = TileLayout(S[(128, 8) : (1 @ TLane, 1 @ TCol)])
    with pytest.raises(
        ValueError,
        match=r"tcgen05.cp from sm \(shared, layout S\[.*\]\) into t \(tmem, layout "
        r"S\[.*canonical K-major image",
    ):
        build(_cp_kernel(tmem, 128, 8, "float32", TileLayout(S[(128, 8) : (8, 1)])))  # rows 32 bytes apart


def test_cp_into_a_lane_pattern_no_multicast_has_is_an_error():
    tmem = TileLayout(S[(32, 4) : (1 @ TLane, 1 @ TCol)] + R[2 : 32 @ TLane])
    with pytest.raises(ValueError, match=r"replicas \(0, 32\) lanes apart; tcgen05.cp moves 128 rows"):
        build(_cp_kernel(tmem, 32, 4, "float32"))


# ---- several warpgroups; TMEM races -------------------------------------------------------------------------


def _two_warpgroups(barrier: str):
    """The example ``tmem_warpgroup_exchange`` with ``barrier`` in place of its barrier."""
    script = KERNELS["tmem_warpgroup_exchange"][0].script()
    assert script.count("T.cuda.cta_sync()") == 1
    return parse(script.replace("T.cuda.cta_sync()", barrier))


def test_each_warpgroup_copies_its_own_stage_and_reads_the_other_after_a_barrier():
    kernel = _two_warpgroups("T.cuda.cta_sync()")
    a = np.arange(2 * 128 * 32, dtype=np.float32).reshape(2, 128, 32)
    assert np.array_equal(sim.run(kernel, [a])["B"], a[::-1])


def test_simulator_reports_a_tmem_race_between_warpgroups_without_a_barrier():
    with pytest.raises(sim.DataRace, match="data race on tmem TMEM"):
        sim.run(_two_warpgroups("T.evaluate(0)"))


def test_a_cta_scope_tmem_copy_in_a_kernel_of_several_warpgroups_is_an_error():
    kernel = parse(_two_warpgroups("T.evaluate(0)").script().replace('"warpgroup")', '"cta")'))
    with pytest.raises(ValueError, match='the kernel has 256 threads; with several warpgroups write scope="warpgroup"'):
        build(kernel)


# ---- tcgen05 ordering (PTX ISA 9.7.16.6): where the lowering puts fences, and what the simulator rejects -------


def test_a_barrier_between_two_warpgroups_tmem_accesses_is_fenced_on_both_sides():
    body = kernel_source(build(_two_warpgroups("T.cuda.cta_sync()")).imports[0].inspect_source())
    order = re.findall(r"tcgen05_(wait_st|fence_before|fence_after|dealloc)\(|(cta_sync)\(", body)
    assert ["".join(o) for o in order] == [
        "cta_sync",
        "wait_st",
        "fence_before",
        "cta_sync",
        "fence_after",
        "cta_sync",
        "dealloc",
    ]


def test_a_barrier_with_tmem_accesses_on_one_side_only_is_not_fenced():
    first = "    T.tile_copy(f[0:128, 0:32], A["
    kernel = parse(_two_warpgroups("T.evaluate(0)").script().replace(first, "    T.cuda.cta_sync()\n" + first, 1))
    body = kernel_source(build(kernel).imports[0].inspect_source())
    assert "fence" not in body and body.count("cta_sync();") == 3


def test_a_barrier_in_a_loop_with_tmem_accesses_is_fenced():
    def ld(name):
        return tvm.tirx.Evaluate(tvm.tirx.call_intrin("void", "tirx.cuda.func_call", name, 0, 0, ""))

    barrier = tvm.tirx.Evaluate(tvm.tirx.call_intrin("", "tirx.cuda.cta_sync"))
    i = tvm.tirx.Var("i", "int32")
    loop = tvm.tirx.For(
        i, 0, 2, tvm.tirx.ForKind.SERIAL, tvm.tirx.SeqStmt([ld("tirx_layout_tcgen05_ld_32x32b_x1"), barrier])
    )
    fenced = fence_barriers_between_accesses(loop)  # the access after the barrier is the next iteration's
    assert [str(s.value.args[0].value) if s.value.args else "cta_sync" for s in fenced.body.seq] == [
        "tirx_layout_tcgen05_ld_32x32b_x1",
        "tirx_layout_tcgen05_fence_before",
        "cta_sync",
        "tirx_layout_tcgen05_fence_after",
    ]
    once = tvm.tirx.SeqStmt([ld("tirx_layout_tcgen05_ld_32x32b_x1"), barrier])
    assert fence_barriers_between_accesses(once).same_as(once)


def _call(name, *args):
    operands = ", ".join([f'"tirx_layout_tcgen05_{name}"', *args, '""'])
    return f'T.evaluate(T.call_intrin("void", "tirx.cuda.func_call", {operands}))'


def _exchange(*, wait_st=True, fence_before=True, fence_after=True, barrier=True):
    """Warp 0 stores one TMEM column, warp 4 (the same 32-lane window, PTX ISA 9.7.16.8.1) loads it."""
    lines = [
        "if warp == 0:",
        "    " + _call("st_32x32b_x1", "slot[0]", "T.address_of(r[0])"),
        "    " + (_call("wait_st") if wait_st else "T.evaluate(0)"),
        "    " + (_call("fence_before") if fence_before else "T.evaluate(0)"),
        "T.cuda.cta_sync()" if barrier else "T.evaluate(0)",
        "if warp == 4:",
        "    " + (_call("fence_after") if fence_after else "T.evaluate(0)"),
        "    " + _call("ld_32x32b_x1", "slot[0]", "T.address_of(r[0])"),
        "    " + _call("wait_ld"),
        "    B[tx % 32] = r[0]",
    ]
    body = "\n    ".join(lines)
    return parse(f"""
@T.prim_func
def k(A: T.Buffer((32,), "float32"), B: T.Buffer((32,), "float32")):
    T.device_entry()
    tx = T.thread_id([256])
    warp = tx // 32
    slot = T.alloc_shared((1,), "uint32")
    r = T.alloc_local((1,), "float32")
    r[0] = A[tx % 32]
    if warp == 0:
        {_call("alloc", "T.address_of(slot[0])", "T.uint32(32)")}
    T.cuda.cta_sync()
    {body}
    T.cuda.cta_sync()
    if warp == 0:
        {_call("dealloc", "slot[0]", "T.uint32(32)")}
""")


def test_simulator_accepts_a_tmem_exchange_between_warps_ordered_as_the_isa_asks():
    a = np.arange(32, dtype=np.float32)
    assert np.array_equal(sim.run(_exchange(), [a])["B"], a)


@pytest.mark.parametrize("missing", ["wait_st", "fence_before", "fence_after", "barrier"])
def test_simulator_rejects_a_tmem_exchange_between_warps_missing_one_step(missing):
    with pytest.raises(sim.DataRace, match=r"store by warp 0, not ordered; .*fence::before_thread_sync, a barrier"):
        sim.run(_exchange(**{missing: False}))


def test_simulator_rejects_a_load_of_cells_the_same_warp_stored_without_wait_st():
    raw = _RAW.replace("LANE_BASE", "slot[0] + T.Cast('uint32', tx // 32 * 32 * 65536)").replace(
        '    T.evaluate(T.call_intrin("void", "tirx.cuda.func_call", "tirx_layout_tcgen05_ld_32x32b_x1"',
        '    T.evaluate(T.call_intrin("void", "tirx.cuda.func_call", "tirx_layout_tcgen05_st_32x32b_x1", '
        "slot[0] + T.Cast('uint32', tx // 32 * 32 * 65536), T.address_of(r[0]), \"\"))\n"
        '    T.evaluate(T.call_intrin("void", "tirx.cuda.func_call", "tirx_layout_tcgen05_ld_32x32b_x1"',
    )
    with pytest.raises(sim.SimulationError, match=r"its own tcgen05\.st has not finished with: put tcgen05\.wait::st"):
        sim.run(parse(raw))


def test_simulator_rejects_reading_registers_before_wait_ld_and_dealloc_before_completion():
    ok = _RAW.replace("LANE_BASE", "slot[0] + T.Cast('uint32', tx // 32 * 32 * 65536)")
    no_wait = ok.replace('"tirx_layout_tcgen05_wait_ld"', '"tirx_layout_tcgen05_fence_before"')
    with pytest.raises(sim.SimulationError, match=r"reads r\[0\], which its tcgen05.ld has not finished writing"):
        sim.run(parse(no_wait))
    unread = no_wait.replace("    A[tx] = r[0]\n", "")
    with pytest.raises(sim.SimulationError, match=r"tcgen05\.dealloc while warp 0's tcgen05\.ld .* has not completed"):
        sim.run(parse(unread))
    no_barrier = ok.replace("    A[tx] = r[0]\n    T.cuda.cta_sync()\n", "    A[tx] = r[0]\n")
    with pytest.raises(sim.SimulationError, match=r"tcgen05\.dealloc by warp 0 with no barrier after warp 1's last"):
        sim.run(parse(no_barrier))


def test_an_allocation_nothing_uses_is_still_allocated_and_freed():
    kernel = parse(f"""
@T.prim_func
def k(A: T.Buffer((128,), "float32")):
    T.device_entry()
    tx = T.thread_id([128])
    t = T.alloc_tmem((128, 8), "float32", layout={tmem_datapath_layout("D", 128, 8)!r})
""")
    assert calls(build(kernel).imports[0].inspect_source()) == ["alloc", "relinquish_alloc_permit", "dealloc"]
    assert not sim.run(kernel, [np.zeros(128, np.float32)]).tmem[0].any()
