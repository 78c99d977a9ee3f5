"""Scale factors of a block-scaled MMA in tensor memory (issue 20): several TMEM buffers in ONE allocation
(``T.alloc_tmem(..., within=acc)``) and ``tcgen05.cp .32x128b.warpx4`` of a ``(rows, k_blocks)`` ue8m0 matrix
laid out by ``mma_scale_factor_layout``. Expected TMEM contents are the placement of facts §5 (row ``r`` on lane
``r % 32`` of every warp window, byte ``b % 4`` of column ``r // 32``, the next four K-blocks ``rows / 32`` columns
on), written here without the constructors."""

import re

import ml_dtypes
import numpy as np
import pytest

from tirx_layout import layout_of, mma_scale_factor_shared_layout, sim
from tirx_layout.tools.kernel_report import kernel_source, nvcc_assembles
from tirx_layout.transform import build, infer_layouts

from kernels import parse

ONE_ALLOCATION = """
@T.prim_func
def k(SA: T.Buffer((128, 8), "DT"), SB: T.Buffer((128, 8), "DT")):
    T.device_entry()
    tx = T.thread_id([128])
    acc = T.alloc_tmem((2, 128, 112), "float32", layout=TileLayout(S[(2, 128, 112):(112@TCol, 1@TLane, 1@TCol)]))
    sfa = T.alloc_tmem((128, 8), "DT", layout=mma_scale_factor_layout(128, 8, column=COLA), within=acc)
    sfb = T.alloc_tmem((128, 8), "DT", layout=mma_scale_factor_layout(128, 8, column=COLB), within=acc)
    sa = T.alloc_shared((128, 8), "DT"SHARED)
    sb = T.alloc_shared((128, 8), "DT"SHARED)
    T.tile_copy(sa, SA)
    T.tile_copy(sb, SB)
    T.tile_copy(sfa, sa)
    T.tile_copy(sfb, sb)
"""


def kernel_text(dtype="uint8", cola=224, colb=232, shared=""):
    text = ONE_ALLOCATION.replace("COLA", str(cola)).replace("COLB", str(colb)).replace("SHARED", shared)
    return text.replace("DT", dtype)


def kernel(*args, **kwargs):
    return parse(kernel_text(*args, **kwargs))


def expected_bytes(tmem_words: np.ndarray, column: int, rows: int, k_blocks: int) -> np.ndarray:
    """The (4 windows, rows, k_blocks) scale factors read back from a CTA's TMEM words by the facts §5 placement."""
    cells = np.ascontiguousarray(tmem_words).view(np.uint8).reshape(128, 512, 4)
    out = np.zeros((4, rows, k_blocks), np.uint8)
    for q in range(4):
        for r in range(rows):
            for b in range(k_blocks):
                col = column + r // 32 + (rows // 32) * (b // 4)
                out[q, r, b] = cells[32 * q + r % 32, col, b % 4]
    return out


@pytest.mark.parametrize("dtype", ["uint8", "float8_e8m0fnu"])
def test_scale_factors_land_where_the_mma_reads_them_in_one_allocation(dtype):
    rng = np.random.default_rng(0)
    a, b = (rng.integers(100, 160, (128, 8)).astype(np.uint8) for _ in range(2))
    inputs = [x.view(ml_dtypes.float8_e8m0fnu) if dtype != "uint8" else x for x in (a, b)]
    result = sim.run(kernel(dtype), inputs)
    (tmem,) = result.tmem
    np.testing.assert_array_equal(expected_bytes(tmem, 224, 128, 8), np.broadcast_to(a, (4, 128, 8)))
    np.testing.assert_array_equal(expected_bytes(tmem, 232, 128, 8), np.broadcast_to(b, (4, 128, 8)))


def test_one_tcgen05_alloc_covers_the_accumulator_and_both_scale_matrices():
    source = build(kernel("float8_e8m0fnu")).imports[0].inspect_source()
    body = kernel_source(source)
    assert re.findall(r"tcgen05_alloc\(\(&\((\w+)_taddr_ptr\[0\]\)\), \(uint\)(\d+)\)", body) == [("acc", "256")]
    assert body.count("tcgen05_dealloc(") == 1
    # Two 32x128b.warpx4 copies per matrix (K-blocks 0-3 and 4-7), at the columns the layouts name.
    copies = re.findall(r"cp_32x128b_warpx4\(\(acc_taddr \+ \(uint\)(\d+)\), \(&\((\w+)_ptr\[(\d+)\]\)\)", body)
    assert copies == [("224", "sa", "0"), ("228", "sa", "512"), ("232", "sb", "0"), ("236", "sb", "512")]
    assembled = nvcc_assembles(source)
    assert assembled is None or assembled[0], assembled


def test_the_allocation_grows_to_cover_what_is_placed_within_it():
    body = kernel_source(build(kernel(cola=224, colb=260)).imports[0].inspect_source())
    assert re.findall(r"tcgen05_alloc\(\(&\(\w+_taddr_ptr\[0\]\)\), \(uint\)(\d+)\)", body) == ["512"]


def test_the_shared_image_is_inferred_for_the_copy():
    func = infer_layouts(kernel())
    assert layout_of("sa", func) == mma_scale_factor_shared_layout(128, 8)


@pytest.mark.parametrize(
    ("text", "error", "match"),
    [
        (
            ONE_ALLOCATION.replace("COLA", "220").replace("COLB", "232"),
            ValueError,
            r"sfa within acc's allocation uses 32-bit columns 220..223, which acc uses too",
        ),
        (
            ONE_ALLOCATION.replace("COLA", "224").replace("COLB", "228"),
            ValueError,
            r"sfb within acc's allocation uses 32-bit columns 228..231, which sfa uses too",
        ),
    ],
)
def test_overlapping_buffers_in_one_allocation_are_refused(text, error, match):
    func = parse(text.replace("SHARED", "").replace("DT", "uint8"))
    with pytest.raises(error, match=match):
        build(func)


def test_within_takes_a_tmem_buffer_declared_as_an_allocation():
    with pytest.raises(Exception, match=r"within=\.\.\.\) takes a TMEM buffer"):
        parse(kernel_text().replace("within=acc)", "within=SA)", 1))
    nested = ONE_ALLOCATION.replace("COLB", "232), within=sfa)#").replace("SHARED", "").replace("DT", "uint8")
    with pytest.raises(ValueError, match=r"sfb is placed within sfa, which is no TMEM allocation of its own"):
        build(parse(nested.replace("COLA", "224")))


# ---- who issues the copy: scope "cta" (synchronous), "warp" and "thread" (asynchronous) -------------------------

SCOPED = """
@T.prim_func
def k(SA: T.Buffer((128, 4), "float8_e8m0fnu")):
    T.device_entry()
    tx = T.thread_id([128])
    acc = T.alloc_tmem((128, 32), "float32", layout=tmem_datapath_layout("D", 128, 32))
    sfa = T.alloc_tmem((128, 4), "float8_e8m0fnu", layout=mma_scale_factor_layout(128, 4, column=32), within=acc)
    sa = T.alloc_shared((128, 4), "float8_e8m0fnu")
    T.tile_copy(sa, SA)
    T.cuda.cta_sync()
    if tx // 32 == 1:
        T.tile_copy(sfa, sa, "SCOPE")
"""


def _helpers(func) -> list:
    body = kernel_source(build(func).imports[0].inspect_source())
    start = body.index("if ((((int)threadIdx.x) >> 5) == 1)")
    # tcgen05 helpers by their what, the others (mbarrier_wait, sync_fence_proxy_async) with their family
    return [a or b for a, b in re.findall(r"tirx_layout_(?:tcgen05_)?(\w+)\(|tvm_builtin_cuda_(\w+)\(", body[start:])]


def test_a_warp_copy_publishes_the_warps_writes_then_lane_0_issues_and_nothing_waits():
    calls = _helpers(parse(SCOPED.replace("SCOPE", "warp")))
    assert calls[:5] == ["sync_fence_proxy_async", "fence_before", "warp_sync", "fence_after", "cp_32x128b_warpx4"]
    assert "mbarrier_wait" not in calls[:6] and "commit" not in calls[:6]


def test_a_thread_copy_is_issued_by_the_thread_with_no_proxy_fence_of_its_own():
    # its source reaches it through an mbarrier whose writers' arrive fenced the proxy (or a TMA load)
    calls = _helpers(parse(SCOPED.replace("SCOPE", "thread")))
    assert calls[:1] == ["cp_32x128b_warpx4"]
    assert "sync_fence_proxy_async" not in calls and "mbarrier_wait" not in calls[:2] and "commit" not in calls[:2]


def test_writers_publishing_through_an_mbarrier_arrive_need_no_fence_at_the_copy_and_a_bare_write_races():
    # the arrive is the writers' proxy fence: the thread-scope copy after the wait reads every write
    fenced = SCOPED.replace("SCOPE", "thread").replace(
        "    T.cuda.cta_sync()\n    if tx // 32 == 1:",
        '    bars = T.alloc_shared((1,), "uint64")\n    T.mbarrier_init(bars[0], 128)\n    T.cuda.cta_sync()\n'
        "    T.mbarrier_arrive(bars[0])\n    if tx == 32:\n        T.mbarrier_wait(bars[0], 0)",
    )
    fenced = fenced.replace("    T.tile_copy(sa, SA)\n", "    T.cuda.cta_sync()\n    T.tile_copy(sa, SA)\n", 1)
    # (no MMA commits the copy here, so the run stops at the TMEM dealloc -- past the copy's read, which raced
    # nothing; the block-scaled pipelined example runs this pattern to the end)
    with pytest.raises(sim.SimulationError, match=r"tcgen05.dealloc while warp 1's tcgen05.cp .* has not completed"):
        sim.run(parse(fenced), {"SA": np.ones((128, 4), ml_dtypes.float8_e8m0fnu)})
    # the issuing thread alone writes the tile and copies it at once: nothing fenced its generic stores
    alone = SCOPED.replace("SCOPE", "thread").replace("    T.tile_copy(sa, SA)\n    T.cuda.cta_sync()\n", "")
    alone = alone.replace(
        "if tx // 32 == 1:", "if tx == 32:\n        for r in range(128):\n            sa[r, 0] = SA[r, 0]"
    )
    with pytest.raises(sim.DataRace, match=r"tcgen05.cp.32x128b.warpx4 issued by thread 32 .*no fence.proxy.async"):
        sim.run(parse(alone), {"SA": np.ones((128, 4), ml_dtypes.float8_e8m0fnu)})


def test_scope_thread_is_for_tcgen05_cp_only():
    other = SCOPED.replace('T.tile_copy(sfa, sa, "SCOPE")', 'T.tile_copy(sa, SA, "thread")')
    with pytest.raises(ValueError, match=r"scope 'thread': that scope is for tcgen05.cp \(shared memory -> TMEM\)"):
        build(parse(other))
    warpgroup = SCOPED.replace("SCOPE", "warpgroup").replace("tx // 32 == 1", "tx < 128")
    with pytest.raises(ValueError, match=r"tcgen05.cp is issued by one thread; copy at scope 'cta' .* not 'warpgroup'"):
        build(parse(warpgroup))


def test_a_copy_reads_through_the_async_proxy_so_unfenced_writes_are_a_data_race():
    # every thread wrote sa with generic stores; only the issuing lane of warp 1 fences ("thread" scope): the copy
    # reads the other threads' writes, which no fence.proxy.async made visible to the async proxy
    func = parse(SCOPED.replace("SCOPE", "thread").replace("if tx // 32 == 1:", "if tx == 32:"))
    with pytest.raises(sim.DataRace, match=r"tcgen05.cp.32x128b.warpx4 issued by thread 32 reads it through the async"):
        sim.run(func, {"SA": np.ones((128, 4), ml_dtypes.float8_e8m0fnu)})


def test_a_copy_is_in_flight_until_a_commit_so_overwriting_its_source_is_a_data_race():
    # the warp's copy is asynchronous: a CTA barrier does not complete it, only a later tcgen05.commit of that warp
    # seen complete does (none here), so the CTA's next fill of sa races the copy's read
    text = SCOPED.replace("SCOPE", "warp") + "    T.cuda.cta_sync()\n    T.tile_copy(sa, SA)\n"
    with pytest.raises(sim.DataRace, match=r"sa\[.*tcgen05.cp.32x128b.warpx4 issued by thread 32"):
        sim.run(parse(text), {"SA": np.ones((128, 4), ml_dtypes.float8_e8m0fnu)})


STAGED = """
@T.prim_func
def k(SA: T.Buffer((4, 128, 4), "uint8")):
    T.device_entry()
    tx = T.thread_id([128])
    acc = T.alloc_tmem((128, 32), "float32", layout=tmem_datapath_layout("D", 128, 32))
    sfa = T.alloc_tmem((2, 128, 4), "uint8", layout=mma_scale_factor_layout(128, 4, column=32, stages=2), within=acc)
    sa = T.alloc_shared((2, 128, 4), "uint8", layout=TileLayout(S[(2, 4, 32, 4):(512, 4, 16, 1)]))
    for t in T.serial(4):
        T.tile_copy(sa[t % 2, 0:128, 0:4], SA[t, 0:128, 0:4])
        T.tile_copy(sfa[t % 2, 0:128, 0:4], sa[t % 2, 0:128, 0:4])
"""


def test_a_copy_into_a_stage_chosen_at_run_time():
    # Stage s of the scale factors is 4 columns on in TMEM and 512 bytes on in shared memory: the one copy of the
    # loop body moves both by (t % 2) times that. After the loop stage 0 holds tile 2 and stage 1 tile 3.
    func = parse(STAGED)
    body = kernel_source(build(func).imports[0].inspect_source())
    (call,) = re.findall(r"cp_32x128b_warpx4\(([^;]*)\);", body)
    assert call.startswith("((acc_taddr + (uint)32) + ((uint)((t & 1) * 4))), (&(sa_ptr[((t & 1) * 512)]))"), call
    tiles = np.random.default_rng(5).integers(0, 256, (4, 128, 4)).astype(np.uint8)
    (tmem,) = sim.run(func, [tiles]).tmem
    for stage, tile in ((0, 2), (1, 3)):
        np.testing.assert_array_equal(expected_bytes(tmem, 32 + 4 * stage, 128, 4)[0], tiles[tile])


def test_a_cta_copy_in_a_loop_initialises_its_mbarrier_once_and_tracks_the_phase():
    # Re-initialising the mbarrier in every iteration could reset a phase another thread is still waiting on.
    body = kernel_source(build(parse(STAGED)).imports[0].inspect_source())
    loop = body.index("for (int t = 0; t < 4; ++t)")
    assert body.count("mbarrier_init((&(sfa_cp_bar_0_ptr[0])), (uint)1)") == 1
    assert body.index("mbarrier_init((&(sfa_cp_bar_0_ptr[0]))") < loop
    assert "mbarrier_wait((&(sfa_cp_bar_0_ptr[0])), sfa_cp_bar_0_phase_ptr[0])" in body[loop:]
    assert "sfa_cp_bar_0_phase_ptr[0] = (sfa_cp_bar_0_phase_ptr[0] ^ (uint)1)" in body[loop:]
