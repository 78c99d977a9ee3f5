"""TMA kernels built by the pipeline and run in the simulator: a box loaded from global memory into a swizzled
shared tile (through the host-encoded tensor map), read back by threads, equals numpy, a tail box filled with zeros;
every element lands where the shared layout puts it (enumerated here); TMA-loaded stages feed tile_mma;
a TMA store writes only the rows inside the tensor; reading the tile before its mbarrier phase is seen is a
DataRace; a producer refilling a ring stage after the MMA's commit is ordered after the stage's previous load, and
one that did not wait for that commit races. Expected values are numpy slices of the inputs."""

import ml_dtypes
import numpy as np
import pytest

from tirx_layout import sim
from tirx_layout.hw.constructors import mma_shared_layout
from tirx_layout.sim import DataRace, SimulationError
from tirx_layout.tools.kernel_report import nvcc_assembles
from tirx_layout.transform import build, lower_tile_ops

from kernels import parse

SIZE = {"float16": 2, "bfloat16": 2, "float32": 4, "float8_e4m3fn": 1}
SPAN = {"32B": 32, "64B": 64, "128B": 128}
NUMPY = {
    "float16": np.float16,
    "bfloat16": ml_dtypes.bfloat16,
    "float32": np.float32,
    "float8_e4m3fn": ml_dtypes.float8_e4m3fn,
}


def kernel(dtype, mode, *, wait="T.mbarrier_wait(bars[0], 0)", before_copy="", store=False):
    cols = SPAN[mode] // SIZE[dtype] if mode != "none" else 32
    layout = f'mma_shared_layout("{dtype}", "{mode}", (128, {cols}))' if mode != "none" else "None"
    out = f"T.tile_copy_async(C[128:256, 0:{cols}], As)\n    T.tma_store_wait()" if store else "T.tile_copy(B, As)"
    return (
        f"""
@T.prim_func
def k(a: T.handle, c: T.handle, B: T.Buffer((128, {cols}), "{dtype}")):
    M = T.int32()
    A = T.match_buffer(a, (M, {cols}), "{dtype}")
    C = T.match_buffer(c, (M, {cols}), "{dtype}")
    T.device_entry()
    tx = T.thread_id([128])
    As = T.alloc_shared((128, {cols}), "{dtype}", layout={layout}, align=1024)
    bars = T.alloc_shared((1,), "uint64")
    T.mbarrier_init(bars[0], 1)
    {before_copy}
    T.tile_copy_async(As, A[128:256, 0:{cols}], bars[0])
    {wait}
    {out}
""",
        cols,
    )


def inputs(dtype, rows, cols):
    values = (np.arange(rows * cols) % 97 - 48).astype(np.float32).reshape(rows, cols) / 4
    return values.astype(NUMPY[dtype])


@pytest.mark.parametrize(
    "dtype, mode",
    [("bfloat16", "128B"), ("float16", "64B"), ("float32", "32B"), ("float8_e4m3fn", "128B"), ("float16", "none")],
)
def test_a_tail_box_loads_the_rows_inside_the_tensor_and_zeros_below(dtype, mode):
    text, cols = kernel(dtype, mode)
    a = inputs(dtype, 200, cols)  # rows 128..199 inside, 200..255 past the end
    out = sim.run(parse(text), {"A": a, "C": np.zeros_like(a)}).outputs["B"]
    want = np.zeros((128, cols), a.dtype)
    want[:72] = a[128:]
    np.testing.assert_array_equal(out.view(np.uint8), want.view(np.uint8))


def test_a_store_writes_the_box_back_clipped_to_the_tensor():
    text, cols = kernel("bfloat16", "128B", store=True)
    a = inputs("bfloat16", 200, cols)
    out = sim.run(parse(text), {"A": a, "C": np.zeros_like(a)}).outputs["C"]
    want = np.zeros_like(a)
    want[128:] = a[128:]
    np.testing.assert_array_equal(out.view(np.uint8), want.view(np.uint8))


def test_reading_the_tile_without_waiting_on_its_barrier_is_a_data_race():
    text, cols = kernel("bfloat16", "128B", wait="")
    a = inputs("bfloat16", 256, cols)
    with pytest.raises(DataRace, match=r"As\[\d+\]: a load \(thread \d+\) before it has seen the TMA load"):
        sim.run(parse(text), {"A": a, "C": np.zeros_like(a)})


def test_a_wait_on_the_wrong_parity_before_the_copy_returns_at_once_and_the_read_is_a_data_race():
    # parity 1 on a fresh mbarrier is "the phase before", complete: the wait returns before the copy is issued
    text, cols = kernel("bfloat16", "128B", wait="", before_copy="T.mbarrier_wait(bars[0], 1)")
    a = inputs("bfloat16", 256, cols)
    with pytest.raises(DataRace, match=r"wait on bars\[0\] for phase 0"):
        sim.run(parse(text), {"A": a, "C": np.zeros_like(a)})


def test_a_wait_on_the_wrong_parity_after_the_copy_never_returns():
    text, cols = kernel("bfloat16", "128B", wait="T.mbarrier_wait(bars[0], 1)")
    a = inputs("bfloat16", 256, cols)
    with pytest.raises(SimulationError, match="never returns"):
        sim.run(parse(text), {"A": a, "C": np.zeros_like(a)})


GEMM = """
@T.prim_func
def gemm(a: T.handle, B: T.Buffer((64, 128), "float16"), C: T.Buffer((128, 64), "float32")):
    M = T.int32()
    A = T.match_buffer(a, (M, 128), "float16")
    T.device_entry()
    tx = T.thread_id([128])
    bars = T.alloc_shared((2,), "uint64")
    A_s = T.alloc_shared((2, 128, 64), "float16", layout=mma_shared_layout("float16", "128B", (2, 128, 64)),
                         align=1024)
    B_s = T.alloc_shared((2, 64, 64), "float16", layout=mma_shared_layout("float16", "128B", (2, 64, 64)),
                         align=1024)
    acc = T.alloc_tmem((128, 64), "float32", layout=tmem_datapath_layout("D", 128, 64))
    frag = T.alloc_local((128, 64), "float32", layout=wg_local_layout(64))
    T.mbarrier_init(bars[0], 2)
    T.mbarrier_init(bars[1], 1)
    for kt in range(2):
        T.tile_copy_async(A_s[kt % 2, 0:128, 0:64], A[0:128, kt * 64 : kt * 64 + 64], bars[0])
        T.tile_copy_async(B_s[kt % 2, 0:64, 0:64], B[0:64, kt * 64 : kt * 64 + 64], bars[0])
        WAIT
        T.tile_mma(acc, A_s[kt % 2, 0:128, 0:64], B_s[kt % 2, 0:64, 0:64], accumulate=kt > 0, barrier=bars[1])
        T.mbarrier_wait(bars[1], kt % 2)
    T.tile_copy(frag, acc, "warpgroup")
    T.tile_copy(C, frag, "warpgroup")
"""


def test_tma_loaded_128b_stages_feed_tile_mma_and_a_tail_of_a_reads_as_zero_rows():
    rng = np.random.default_rng(21)
    a = rng.integers(-4, 5, (100, 128)).astype(np.float16)  # M = 100: rows 100..127 of the box are fill
    b = rng.integers(-4, 5, (64, 128)).astype(np.float16)
    out = sim.run(parse(GEMM.replace("WAIT", "T.mbarrier_wait(bars[0], kt % 2)")), {"A": a, "B": b}).outputs["C"]
    want = np.zeros((128, 64), np.float32)
    want[:100] = a.astype(np.float32) @ b.astype(np.float32).T
    np.testing.assert_array_equal(out, want)


def test_an_mma_reading_a_stage_before_its_full_barrier_is_waited_on_is_a_data_race():
    rng = np.random.default_rng(22)
    a = rng.integers(-4, 5, (128, 128)).astype(np.float16)
    b = rng.integers(-4, 5, (64, 128)).astype(np.float16)
    with pytest.raises(DataRace, match=r"A_s\[0\]: the tcgen05.mma.* before it has seen the TMA load into A_s"):
        sim.run(parse(GEMM.replace("WAIT", "")), {"A": a, "B": b})


def test_the_tma_gemm_builds_for_sm100a_and_assembles():
    cuda = build(parse(GEMM.replace("WAIT", "T.mbarrier_wait(bars[0], kt % 2)"))).imports[0].inspect_source()
    (signature,) = [line for line in cuda.splitlines() if line.startswith('extern "C" __global__') and "{" in line]
    assert signature.count("const __grid_constant__ CUtensorMap") == 2  # one map for A, one for B
    assembled = nvcc_assembles(cuda)
    if assembled is not None:
        assert assembled[0], assembled[1]


def test_a_k_tile_wider_than_the_swizzle_span_loads_as_one_box_per_64_column_block():
    text = """
@T.prim_func
def k(A: T.Buffer((128, 128), "bfloat16"), B: T.Buffer((128, 128), "bfloat16")):
    T.device_entry()
    tx = T.thread_id([128])
    As = T.alloc_shared((128, 128), "bfloat16", layout=mma_shared_layout("bfloat16", "128B", (128, 128)), align=1024)
    bars = T.alloc_shared((2,), "uint64")
    T.mbarrier_init(bars[0], 2)
    T.tile_copy_async(As[0:128, 0:64], A[0:128, 0:64], bars[0])
    T.tile_copy_async(As[0:128, 64:128], A[0:128, 64:128], bars[0])
    T.mbarrier_wait(bars[0], 0)
    T.tile_copy(B, As)
"""
    a = inputs("bfloat16", 128, 128)
    out = sim.run(parse(text), {"A": a}).outputs["B"]
    np.testing.assert_array_equal(out.view(np.uint16), a.view(np.uint16))


def test_overwriting_a_stored_tile_before_tma_store_wait_and_ending_without_it_are_refused():
    text, cols = kernel("bfloat16", "128B", store=True)
    a = inputs("bfloat16", 256, cols)
    early = text.replace("T.tma_store_wait()", "As[tx, 0] = T.bfloat16(0)\n    T.tma_store_wait()")
    with pytest.raises(DataRace, match=r"while the TMA store issued by thread 0 still reads it; T.tma_store_wait"):
        sim.run(parse(early), {"A": a, "C": np.zeros_like(a)})
    with pytest.raises(SimulationError, match="the kernel ends while the TMA store issued by thread 0"):
        sim.run(parse(text.replace("T.tma_store_wait()", "")), {"A": a, "C": np.zeros_like(a)})
    after = text.replace("T.tma_store_wait()", "T.tma_store_wait()\n    As[tx, 0] = T.bfloat16(0)")
    sim.run(parse(after), {"A": a, "C": np.zeros_like(a)})  # waited, and a barrier after the wait: no race


def test_reloading_a_stage_the_mma_still_reads_is_a_data_race():
    # one stage reused by both K tiles, and the MMA's completion barrier never waited on
    text = GEMM.replace("WAIT", "T.mbarrier_wait(bars[0], kt % 2)").replace("kt % 2, 0:", "0, 0:")
    text = text.replace("T.mbarrier_wait(bars[1], kt % 2)", "")
    rng = np.random.default_rng(23)
    a = rng.integers(-4, 5, (128, 128)).astype(np.float16)
    b = rng.integers(-4, 5, (64, 128)).astype(np.float16)
    with pytest.raises(DataRace, match=r"A_s\[\d+\]: a store by thread 0 while the tcgen05.mma"):
        sim.run(parse(text), {"A": a, "B": b})


def _shared_image_kernel(dtype, mode, cols, rows=128):
    layout = f'mma_shared_layout("{dtype}", "{mode}", ({rows}, {cols}))' if mode != "none" else "None"
    words = rows * cols
    return f"""
@T.prim_func
def k(A: T.Buffer(({rows}, {cols}), "{dtype}"), R: T.Buffer(({words},), "{dtype}")):
    T.device_entry()
    tx = T.thread_id([128])
    As = T.alloc_shared(({rows}, {cols}), "{dtype}", layout={layout}, align=1024)
    bars = T.alloc_shared((2,), "uint64")
    T.mbarrier_init(bars[0], 1)
    T.tile_copy_async(As, A[0:{rows}, 0:{cols}], bars[0])
    T.mbarrier_wait(bars[0], 0)
    raw = T.decl_buffer(({words},), "{dtype}", data=As.data, scope="shared", layout=None)
    for i in range({words // 128}):
        R[i * 128 + tx] = raw[i * 128 + tx]
"""


@pytest.mark.parametrize(
    "dtype, mode",
    [("bfloat16", "128B"), ("float16", "64B"), ("float32", "32B"), ("float8_e4m3fn", "128B"), ("float8_e4m3fn", "64B")],
)
def test_the_simulated_tma_puts_every_element_where_the_shared_layout_says(dtype, mode):
    cols = SPAN[mode] // SIZE[dtype]
    a = inputs(dtype, 128, cols)
    raw = sim.run(parse(_shared_image_kernel(dtype, mode, cols)), {"A": a}).outputs["R"]
    layout = mma_shared_layout(dtype, mode, (128, cols))
    rows, columns = np.meshgrid(np.arange(128), np.arange(cols), indexing="ij")
    where = np.asarray(layout.apply(rows, columns, shape=(128, cols))["m"])  # enumerate every element
    want = np.zeros_like(raw)
    want[where.ravel()] = a.ravel()
    np.testing.assert_array_equal(raw.view(np.uint8), want.view(np.uint8))


@pytest.mark.parametrize("nbytes", [16384, 8192])
def test_with_expect_tx_false_the_users_byte_count_completes_the_phase_only_if_it_is_the_boxs(nbytes):
    text, cols = kernel("bfloat16", "128B")
    copy = "T.tile_copy_async(As, A[128:256, 0:64], bars[0])"
    assert copy in text
    user = f"if tx == 0:\n        T.mbarrier_arrive_expect_tx(bars[0], {nbytes})\n    {copy[:-1]}, expect_tx=False)"
    text = text.replace(copy, user)
    a = inputs("bfloat16", 256, cols)
    if nbytes == 16384:  # 128 x 64 bf16
        out = sim.run(parse(text), {"A": a, "C": np.zeros_like(a)}).outputs["B"]
        np.testing.assert_array_equal(out.view(np.uint16), a[128:].view(np.uint16))
    else:
        with pytest.raises(SimulationError, match=r"never returns.*tx-count of -8192"):
            sim.run(parse(text), {"A": a, "C": np.zeros_like(a)})


RING = """
@T.prim_func
def ring(A: T.Buffer((128, 256), "float16"), B: T.Buffer((64, 256), "float16"), C: T.Buffer((128, 64), "float32")):
    T.device_entry()
    tx = T.thread_id([256])
    full = T.alloc_shared((2,), "uint64")
    empty = T.alloc_shared((2,), "uint64")
    done = T.alloc_shared((1,), "uint64")
    A_s = T.alloc_shared((2, 128, 64), "float16", layout=mma_shared_layout("float16", "128B", (2, 128, 64)),
                         align=1024)
    B_s = T.alloc_shared((2, 64, 64), "float16", layout=mma_shared_layout("float16", "128B", (2, 64, 64)),
                         align=1024)
    acc = T.alloc_tmem((128, 64), "float32", layout=tmem_datapath_layout("D", 128, 64))
    frag = T.alloc_local((128, 64), "float32", layout=wg_local_layout(64))
    T.mbarrier_init(full[0], 2)
    T.mbarrier_init(full[1], 2)
    T.mbarrier_init(empty[0], 1)
    T.mbarrier_init(empty[1], 1)
    T.mbarrier_init(done[0], 1)
    if tx // 32 == 4:  # the producer warp: four K tiles through two stages, so stages 0 and 1 are refilled
        for kt in range(4):
            if kt >= 2:
                EMPTY_WAIT
            T.tile_copy_async(A_s[kt % 2], A[0:128, kt * 64 : kt * 64 + 64], full[kt % 2], scope="warp")
            T.tile_copy_async(B_s[kt % 2], B[0:64, kt * 64 : kt * 64 + 64], full[kt % 2], scope="warp")
    elif tx == 160:  # the MMA thread (warp 5): it waits on full[s]; the MMA's commit completes empty[s]
        for kt in range(4):
            T.mbarrier_wait(full[kt % 2], kt // 2 % 2)
            T.tile_mma(acc, A_s[kt % 2], B_s[kt % 2], kt > 0, barrier=empty[kt % 2], scope="thread")
        T.mbarrier_wait(empty[1], 1)
        T.mbarrier_arrive(done[0])
    elif tx < 128:  # the epilogue warpgroup
        T.mbarrier_wait(done[0], 0)
        T.tile_copy(frag, acc, "warpgroup")
        T.tile_copy(C, frag, "warpgroup")
"""


def _ring_inputs():
    rng = np.random.default_rng(24)
    return rng.integers(-4, 5, (128, 256)).astype(np.float16), rng.integers(-4, 5, (64, 256)).astype(np.float16)


def test_a_producer_refilling_a_stage_after_the_mmas_commit_is_ordered_after_the_stages_previous_load():
    # TMA write -> full[s] -> the MMA thread's wait -> MMA -> commit -> empty[s] -> the producer's wait -> the next
    # TMA write into stage s: ordered (PTX ISA: arrive and complete-tx release, a successful wait acquires)
    a, b = _ring_inputs()
    text = RING.replace("EMPTY_WAIT", "T.mbarrier_wait(empty[kt % 2], 0)")
    out = sim.run(parse(text), {"A": a, "B": b}).outputs["C"]
    np.testing.assert_array_equal(out, a.astype(np.float32) @ b.astype(np.float32).T)


def test_a_refill_without_waiting_for_the_mmas_commit_is_a_data_race():
    a, b = _ring_inputs()
    text = RING.replace("EMPTY_WAIT", "T.evaluate(0)")
    with pytest.raises(DataRace, match=r"A_s\[\d+\]: a store \(thread 128\) before it has seen the TMA load into A_s"):
        sim.run(parse(text), {"A": a, "B": b})


def test_a_refill_after_waiting_on_the_wrong_empty_phase_is_a_data_race():
    # parity 1 of a fresh empty[s] returns at once (the phase before phase 0): no commit was seen
    a, b = _ring_inputs()
    text = RING.replace("EMPTY_WAIT", "T.mbarrier_wait(empty[kt % 2], 1)")
    with pytest.raises(DataRace, match=r"A_s\[\d+\]: a store \(thread 128\) before it has seen the TMA load into A_s"):
        sim.run(parse(text), {"A": a, "B": b})


def _transposed_image_kernel(dtype, mode, k, rows=128):
    words = rows * k
    return f"""
@T.prim_func
def k(At: T.Buffer(({k + 16}, {rows + 64}), "{dtype}"), R: T.Buffer(({words},), "{dtype}")):
    T.device_entry()
    tx = T.thread_id([128])
    As = T.alloc_shared(({rows}, {k}), "{dtype}", layout=mma_shared_layout("{dtype}", "{mode}", ({rows}, {k}),
                        major="MN"), align=1024)
    bars = T.alloc_shared((2,), "uint64")
    T.mbarrier_init(bars[0], 1)
    T.tile_copy_async(As, At[16:{16 + k}, 64:{64 + rows}], bars[0], transposed=True)
    T.mbarrier_wait(bars[0], 0)
    raw = T.decl_buffer(({words},), "{dtype}", data=As.data, scope="shared", layout=None)
    for i in range({words // 128}):
        R[i * 128 + tx] = raw[i * 128 + tx]
"""


@pytest.mark.parametrize(
    "dtype, mode, k",
    [
        ("float32", "128B_base32B", 32),
        ("bfloat16", "128B", 64),
        ("float16", "64B", 32),
        ("bfloat16", "32B", 16),
        ("float8_e4m3fn", "128B", 64),
    ],
)
def test_a_transposed_load_puts_each_element_of_the_mn_major_operand_where_its_layout_says(dtype, mode, k):
    at = inputs(dtype, k + 16, 128 + 64)  # stored (K, rows), rows contiguous; the copy takes K 16.., rows 64..
    raw = sim.run(parse(_transposed_image_kernel(dtype, mode, k)), {"At": at}).outputs["R"]
    layout = mma_shared_layout(dtype, mode, (128, k), major="MN")
    rows, ks = np.meshgrid(np.arange(128), np.arange(k), indexing="ij")
    where = np.asarray(layout.apply(rows, ks, shape=(128, k))["m"])  # enumerate every element of (rows, K)
    want = np.zeros_like(raw)
    want[where.ravel()] = at[16 + ks.ravel(), 64 + rows.ravel()]
    np.testing.assert_array_equal(raw.view(np.uint8), want.view(np.uint8))


def test_transposed_loads_into_a_ring_stage_chosen_at_run_time_read_back_as_the_operand():
    # two K tiles of (32, 128) from At (K, M) into the stages of an MN-major tf32 ring; stage kt % 2 is a run-time
    # index, each copy four atom-column boxes; read back through the layout they equal the transposed tiles
    text = """
@T.prim_func
def k(At: T.Buffer((64, 256), "float32"), R: T.Buffer((2, 128, 32), "float32")):
    T.device_entry()
    tx = T.thread_id([128])
    As = T.alloc_shared((2, 128, 32), "float32",
                        layout=mma_shared_layout("float32", "128B_base32B", (2, 128, 32), major="MN"), align=1024)
    bars = T.alloc_shared((2,), "uint64")
    T.mbarrier_init(bars[0], 1)
    T.mbarrier_init(bars[1], 1)
    for kt in range(2):
        T.tile_copy_async(As[kt % 2, 0:128, 0:32], At[kt * 32 : kt * 32 + 32, 128:256], bars[kt % 2], transposed=True)
    for kt in range(2):
        T.mbarrier_wait(bars[kt], 0)
        T.tile_copy(R[kt, 0:128, 0:32], As[kt, 0:128, 0:32])
"""
    at = inputs("float32", 64, 256)
    out = sim.run(parse(text), {"At": at}).outputs["R"]
    want = np.stack([at[0:32, 128:256].T, at[32:64, 128:256].T])
    np.testing.assert_array_equal(out, want)


def test_a_warp_scope_store_wait_orders_the_whole_warp_after_the_store():
    """Warp 1 stores its 32 rows by TMA; lane 0 waits for the bulk group and __syncwarp() passes that on, so lane 5
    may then rewrite the rows; without the wait the rewrite races with the store."""
    box = 'T.tile_copy_async(C[tx // 32 * 32 : tx // 32 * 32 + 32, 0:64], Bs[tx // 32, 0:32, 0:64], scope="warp")'
    text = f"""
@T.prim_func
def k(A: T.Buffer((64, 64), "bfloat16"), C: T.Buffer((64, 64), "bfloat16")):
    T.device_entry()
    tx = T.thread_id([64])
    As = T.alloc_shared((64, 64), "bfloat16", layout=mma_shared_layout("bfloat16", "128B", (64, 64)), align=1024)
    Bs = T.decl_buffer((2, 32, 64), "bfloat16", data=As.data,
                       layout=mma_shared_layout("bfloat16", "128B", (2, 32, 64)), align=1024)
    T.tile_copy(As, A)
    T.cuda.cta_sync()
    {box}
    WAIT
    As[tx // 32 * 32 + 5, tx % 32] = T.bfloat16(0)
"""
    a = inputs("bfloat16", 64, 64)
    ordered = parse(text.replace("WAIT", 'T.tma_store_wait("warp")'))
    out = sim.run(ordered, {"A": a})["C"]
    np.testing.assert_array_equal(out.view(np.uint16), a.view(np.uint16))
    with pytest.raises(DataRace, match=r"a store by thread \d+ while the TMA store issued by thread (0|32) still"):
        sim.run(parse(text.replace("WAIT", "")), {"A": a})


def test_a_warpgroup_scope_store_is_fenced_synchronised_and_issued_by_one_lane_of_its_warpgroup():
    """Each of two warpgroups writes its 64 rows of a tile in registers to shared memory and stores them by TMA with
    scope="warpgroup": every thread fences its writes to the async proxy, the warpgroup meets at its named barrier
    (bar.sync 1 + warpgroup, 128), the elected lane of its first warp issues, and T.tma_store_wait("warpgroup")
    lets the warpgroup rewrite the rows; without the wait the rewrite races with the store."""
    text = """
@T.prim_func
def k(A: T.Buffer((128, 64), "bfloat16"), C: T.Buffer((128, 64), "bfloat16")):
    T.device_entry()
    tx = T.thread_id([256])
    Bs = T.alloc_shared((2, 64, 64), "bfloat16", layout=mma_shared_layout("bfloat16", "128B", (2, 64, 64)),
                        align=1024)
    w = T.meta_var(tx // 128)
    for r in range(32):
        Bs[w, tx % 128 // 2, (tx % 2) * 32 + r] = A[w * 64 + tx % 128 // 2, (tx % 2) * 32 + r]
    T.tile_copy_async(C[w * 64 : w * 64 + 64, 0:64], Bs[w, 0:64, 0:64], scope="warpgroup")
    WAIT
    Bs[w, tx % 128 // 2, (tx % 2) * 32] = T.bfloat16(0)
"""
    a = inputs("bfloat16", 128, 64)
    lowered = lower_tile_ops(parse(text.replace("WAIT", 'T.tma_store_wait("warpgroup")'))).script()
    fence, barrier = "tirx_layout_sync_fence_proxy_async", "T.cuda.warpgroup_sync(tx // 128 + 1)"
    assert lowered.index(fence) < lowered.index(barrier) < lowered.index("tx % 128 < 32")
    out = sim.run(parse(text.replace("WAIT", 'T.tma_store_wait("warpgroup")')), {"A": a}, "sm_90a")
    np.testing.assert_array_equal(out["C"].view(np.uint16), a.view(np.uint16))
    assert (out.writes["C"] == 1).all()
    with pytest.raises(DataRace, match=r"while the TMA store issued by thread (0|128) still"):
        sim.run(parse(text.replace("WAIT", "")), {"A": a}, "sm_90a")
