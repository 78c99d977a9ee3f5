"""The simulator runs ``tcgen05.mma`` helpers, commits and mbarriers (``sim/tcgen05_mma.py``, ``sim/mbarrier.py``).

Every kernel here is hand-built TIR calling the helpers of ``ops/helpers/tcgen05.py``'s ABI by name (never our lowering). The operand
images in shared memory, the descriptors and the instruction descriptors are computed here from the PTX ISA's
canonical layouts and field tables; the expected results come from numpy. Values are chosen exactly representable,
so every comparison is exact.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from tirx_layout import sim
from tirx_layout.sim.tmem_order import TmemOrder

from kernels import parse
from kernels.helper_calls import call, u32, u64, value
from oracles.canonical_operands import Operand

# --- the ISA's field tables, restated for the tests ---

TYPE_CODE = {"float16": 0, "bfloat16": 1, "tf32": 2, "e4m3": 0, "e5m2": 1, "uint8": 0, "int8": 1}
D_CODE = {"float16": 0, "float32": 1, "int32": 2}
SWIZZLE_CODE = {"none": 0, "128B": 2, "64B": 4, "32B": 6}  # bits 61-63 of the shared-memory descriptor
ELEMENT = {
    "float16": np.float16,
    "bfloat16": ml_dtypes.bfloat16,
    "tf32": np.float32,
    "e4m3": ml_dtypes.float8_e4m3fn,
    "e5m2": ml_dtypes.float8_e5m2,
    "uint8": np.uint8,
    "int8": np.int8,
}
KIND_OF = {"float16": "f16", "bfloat16": "f16", "tf32": "tf32", "e4m3": "f8f6f4", "e5m2": "f8f6f4", "int8": "i8"}
KIND_OF["uint8"] = "i8"


def idesc_dense(m, n, a, b, d, a_mn=False, b_mn=False):
    """Dense instruction descriptor: D type 4-5, A/B type 7-9/10-12, transpose 15/16, N>>3 17-22, M>>4 24-28."""
    return (
        D_CODE[d] << 4 | TYPE_CODE[a] << 7 | TYPE_CODE[b] << 10 | a_mn << 15 | b_mn << 16 | n >> 3 << 17 | m >> 4 << 24
    )


def idesc_scaled(m, n, a, b, sf_a, sf_b):
    """Block-scaled descriptor: SF B id 4-5, A/B type 7-9/10-12, N>>3 17-22, UE8M0 bit 23, M>>7 27-28, SF A id 29-30."""
    return sf_b << 4 | TYPE_CODE[a] << 7 | TYPE_CODE[b] << 10 | n >> 3 << 17 | 1 << 23 | m >> 7 << 27 | sf_a << 29


def sdesc(lbo, sbo, swizzle):
    """Shared-memory descriptor with start 0: LBO 16-29 and SBO 32-45 in 16-byte units, 0b001 at 46-48, mode 61-63."""
    return (lbo >> 4) << 16 | (sbo >> 4) << 32 | 1 << 46 | SWIZZLE_CODE[swizzle] << 61


def pow2_chunks(n):
    """``n`` columns as power-of-two pieces (tcgen05.ld/st .num is a power of two)."""
    chunks, start = [], 0
    while n:
        size = 1 << (n.bit_length() - 1)
        chunks.append((start, min(size, 128)))
        start, n = start + min(size, 128), n - min(size, 128)
    return chunks


def smem_desc(buffer, index, descriptor):
    """The full descriptor of the operand at ``buffer[index]``: ``smem_descriptor`` ORs the element's shared address
    >> 4 into ``descriptor`` (start field 0), the helper ABI as tuned."""
    pointer = f"T.address_of({buffer}[{index}])"
    return value("tcgen05", "smem_descriptor", "uint64", pointer, u64(descriptor))


def kernel_source(
    *,
    mmas,
    n_read,
    a_words,
    b_words,
    preload_cols=0,
    store_then_sync=True,
    fence_proxy=True,
    barrier_before_mma=True,
    issue_guard="tx == 0",
    wait="all",
    fence_after_wait=True,
    after_issue="",
    after_wait="",
    after_read="",
):
    """A 128-thread kernel: copy the operand images A, B into shared memory, optionally preload TMEM columns
    ``[0, preload_cols)`` of every lane from ``P`` (tcgen05.st), issue ``mmas`` from one thread, commit, wait,
    read ``n_read`` columns of every lane back (tcgen05.ld) into ``D``. Switches drop or add one step each.
    ``bars[0]`` (count 1) takes the commit, ``bars[1]`` (count 128) and ``bars[2]`` (count 32) are free for the
    tests."""
    ncols = 32
    while ncols < max(n_read, preload_cols):
        ncols *= 2
    regs = max(n_read, preload_cols, 1)
    lane_base = "slot[0] + T.Cast('uint32', warp * 32 * 65536)"
    lines = []
    lines.append("for i in range(A_WORDS // 128):\n        sA[i * 128 + tx] = A[i * 128 + tx]")
    lines.append("for i in range(B_WORDS // 128):\n        sB[i * 128 + tx] = B[i * 128 + tx]")
    if preload_cols:
        lines.append(f"for j in range({preload_cols}):\n        r[j] = P[tx * {preload_cols} + j]")
        for start, size in pow2_chunks(preload_cols):
            lines.append(
                call("tcgen05", f"st_32x32b_x{size}", f"{lane_base} + T.uint32({start})", f"T.address_of(r[{start}])")
            )
        lines.append(call("tcgen05", "wait_st"))
        lines.append(call("tcgen05", "fence_before"))
        lines.append("T.cuda.cta_sync()")
    if fence_proxy:
        lines.append(call("sync", "fence_proxy_async"))
    if barrier_before_mma:
        lines.append("T.cuda.cta_sync()")
    lines.append(call("tcgen05", "fence_after"))
    issue = "\n        ".join([*mmas, call("tcgen05", "commit", "T.address_of(bars[0])")])
    lines.append(f"if {issue_guard}:\n        {issue}")
    if after_issue:
        lines.append(after_issue)
    waited = call("mbarrier", "wait", "T.address_of(bars[0])", u32(0))
    if wait == "all":
        lines.append(waited)
    elif wait == "warp0":
        lines.append(f"if warp == 0:\n        {waited}")
    if after_wait:
        lines.append(after_wait)
    if fence_after_wait:
        lines.append(call("tcgen05", "fence_after"))
    for start, size in pow2_chunks(n_read):
        lines.append(
            call("tcgen05", f"ld_32x32b_x{size}", f"{lane_base} + T.uint32({start})", f"T.address_of(r[{start}])")
        )
    lines.append(call("tcgen05", "wait_ld"))
    lines.append(f"for j in range({n_read}):\n        D[tx * {n_read} + j] = r[j]")
    if after_read:
        lines.append(after_read)
    lines.append(call("tcgen05", "fence_before"))
    lines.append("T.cuda.cta_sync()")
    lines.append(f"if warp == 0:\n        {call('tcgen05', 'dealloc', 'slot[0]', u32(ncols))}")
    body = "\n    ".join(lines)
    body = body.replace("A_WORDS", str(a_words)).replace("B_WORDS", str(b_words))
    return f"""
@T.prim_func
def k(A: T.Buffer(({a_words},), "uint32"), B: T.Buffer(({b_words},), "uint32"),
      P: T.Buffer(({128 * max(preload_cols, 1)},), "uint32"), D: T.Buffer(({128 * n_read},), "uint32")):
    T.device_entry()
    tx = T.thread_id([128])
    warp = tx // 32
    slot = T.alloc_shared((1,), "uint32")
    bars = T.alloc_shared((3,), "uint64")
    sA = T.alloc_shared(({a_words},), "uint32", align=1024)
    sB = T.alloc_shared(({b_words},), "uint32", align=1024)
    r = T.alloc_local(({regs},), "uint32")
    if warp == 0:
        {call("tcgen05", "alloc", "T.address_of(slot[0])", u32(ncols))}
    if tx == 0:
        {call("mbarrier", "init", "T.address_of(bars[0])", u32(1))}
        {call("mbarrier", "init", "T.address_of(bars[1])", u32(128))}
        {call("mbarrier", "init", "T.address_of(bars[2])", u32(32))}
    T.cuda.cta_sync()
    {body}
"""


def small_values(rng, shape, dtype):
    """Values every operand type holds exactly and whose products and sums fp32 (and f16) hold exactly."""
    if dtype in ("int8", "uint8"):
        low = -128 if dtype == "int8" else 0
        return rng.integers(low, low + 256, shape).astype(ELEMENT[dtype])
    return (rng.integers(-4, 5, shape) * 0.5).astype(np.float32).astype(ELEMENT[dtype])


def dense_gemm(
    m=128,
    n=64,
    steps=2,
    a_dtype="float16",
    b_dtype=None,
    d_dtype="float32",
    a=("K", "128B"),
    b=("K", "128B"),
    accumulate=False,
    d_lane=0,
    a_in_tmem=False,
    seed=0,
    **switches,
):
    """Source, inputs and the numpy expectation of D (``m x n``, as TMEM cells) of one dense GEMM."""
    b_dtype = b_dtype or a_dtype
    rng = np.random.default_rng(seed)
    k = steps * 32 // np.dtype(ELEMENT[a_dtype]).itemsize
    av, bv = small_values(rng, (m, k), a_dtype), small_values(rng, (n, k), b_dtype)
    a_op, b_op = Operand(av, *a, sdesc), Operand(bv, *b, sdesc)
    kind = KIND_OF[a_dtype]
    idesc = idesc_dense(m, n, a_dtype, b_dtype, d_dtype, a[0] == "MN", b[0] == "MN")
    lanes = np.arange(m) if m == 128 else 32 * (np.arange(m) // 16) + np.arange(m) % 16 + d_lane
    d_np = np.dtype(ELEMENT.get(d_dtype, d_dtype))
    start = small_values(rng, (m, n), "float16").astype(d_np) if d_dtype != "int32" else rng.integers(-9, 9, (m, n))
    start = start.astype(d_np)
    image = np.zeros((128, n + 8 * steps if a_in_tmem else n), np.uint32)
    if accumulate:
        image[lanes, :n] = start.view(np.uint16).astype(np.uint32) if d_np.itemsize == 2 else start.view(np.uint32)
    if a_in_tmem:  # A's row i on D's lane, 32 bytes of K per 8 columns, low element in the low bits
        image[lanes, n:] = np.ascontiguousarray(av).view(np.uint8).reshape(m, -1).view(np.uint32)
    mmas = []
    for s in range(steps):
        enable = u32(int(accumulate) if s == 0 else 1)
        d_addr = f"slot[0] + T.uint32({d_lane << 16})"
        b_args = [smem_desc("sB", b_op.starts[s] // 4, b_op.descriptor)]
        if a_in_tmem:
            a_args = [f"slot[0] + T.uint32({d_lane << 16 | n + 8 * s})"]
        else:
            a_args = [smem_desc("sA", a_op.starts[s] // 4, a_op.descriptor)]
        form = "ts" if a_in_tmem else "ss"
        mmas.append(call("tcgen05", f"mma_{kind}_{form}", d_addr, *a_args, *b_args, u32(idesc), enable))
    preload = image.shape[1] if (accumulate or a_in_tmem) else 0
    source = kernel_source(
        mmas=mmas, n_read=n, a_words=a_op.words.size, b_words=b_op.words.size, preload_cols=preload, **switches
    )
    expected = av.astype(np.float64) @ bv.astype(np.float64).T + (start.astype(np.float64) if accumulate else 0)
    inputs = {
        "A": a_op.words,
        "B": b_op.words,
        "P": image[:, :preload].ravel() if preload else np.zeros(128, np.uint32),
    }
    return source, inputs, expected.astype(d_np), lanes


def run_gemm(**kwargs):
    source, inputs, expected, lanes = dense_gemm(**kwargs)
    out = sim.run(parse(source), inputs)["D"].reshape(128, -1)[lanes]
    return out, expected


def as_d(cells, dtype):
    """D's values from its 32-bit TMEM cells (an f16 D in the low 16 bits)."""
    if np.dtype(dtype).itemsize == 2:
        return (cells & 0xFFFF).astype(np.uint16).view(dtype)
    return cells.view(dtype)


def test_f16_ss_128_by_n_by_32_with_128b_k_major_operands_equals_numpy():
    out, expected = run_gemm(m=128, n=64, steps=2, a_dtype="float16")
    np.testing.assert_array_equal(as_d(out, np.float32), expected)


@pytest.mark.parametrize("mode", ["none", "32B", "64B", "128B"])
@pytest.mark.parametrize("a_major, b_major", [("K", "K"), ("MN", "K"), ("K", "MN"), ("MN", "MN")])
def test_every_swizzle_and_majorness_reads_the_operands_the_isa_layouts_place(mode, a_major, b_major):
    # N = 64: an MN-major 128B atom row is 64 bf16 wide
    out, expected = run_gemm(m=128, n=64, steps=4, a_dtype="bfloat16", a=(a_major, mode), b=(b_major, mode))
    np.testing.assert_array_equal(as_d(out, np.float32), expected)


@pytest.mark.parametrize("d_lane", [0, 16])
def test_m64_writes_layout_f_half_of_each_sub_partition_chosen_by_the_lane_field(d_lane):
    source, inputs, expected, lanes = dense_gemm(m=64, n=48, steps=2, d_lane=d_lane)
    cells = sim.run(parse(source), inputs)["D"].reshape(128, -1)
    np.testing.assert_array_equal(as_d(cells[lanes], np.float32), expected)
    untouched = np.setdiff1d(np.arange(128), lanes)  # the other half of every sub-partition stays zero
    assert not cells[untouched].any()
    assert sorted(lanes[:17].tolist()) == [*range(d_lane, d_lane + 16), 32 + d_lane]


def test_tf32_reads_32_bit_operands_eight_k_per_step():
    out, expected = run_gemm(m=128, n=24, steps=3, a_dtype="tf32", a=("K", "64B"), b=("K", "32B"))
    np.testing.assert_array_equal(as_d(out, np.float32), expected)


def test_tf32_ignores_the_13_low_mantissa_bits():
    source, inputs, _, lanes = dense_gemm(m=128, n=8, steps=1, a_dtype="tf32", a=("K", "none"), b=("K", "none"))
    nearly_one = np.float32(1.0) + np.float32(2.0**-20)  # below tf32's 10-bit mantissa: read as exactly 1.0
    ones = {name: np.full(inputs[name].size, nearly_one).view(np.uint32) for name in ("A", "B")}
    out = sim.run(parse(source), {**ones, "P": inputs["P"]})
    assert (out["D"].reshape(128, -1)[lanes].view(np.float32) == 8.0).all()  # 8 K elements of 1 x 1


@pytest.mark.parametrize("a_dtype, b_dtype", [("e4m3", "e4m3"), ("e5m2", "e4m3")])
def test_fp8_kinds_multiply_in_their_own_formats(a_dtype, b_dtype):
    out, expected = run_gemm(m=128, n=64, steps=2, a_dtype=a_dtype, b_dtype=b_dtype, a=("K", "128B"), b=("MN", "64B"))
    np.testing.assert_array_equal(as_d(out, np.float32), expected)


def test_i8_signed_by_unsigned_is_exact_in_int32():
    out, expected = run_gemm(m=128, n=48, steps=2, a_dtype="int8", b_dtype="uint8", d_dtype="int32")
    np.testing.assert_array_equal(as_d(out, np.int32), expected)
    assert np.abs(expected).max() > 2**15  # large enough that a narrower sum would be wrong


def test_f16_accumulator_sits_unpacked_in_the_low_half_of_each_cell_and_accumulates():
    out, expected = run_gemm(m=128, n=32, steps=3, a_dtype="float16", d_dtype="float16", accumulate=True)
    np.testing.assert_array_equal(as_d(out, np.float16), expected)
    assert not (out >> 16).any()


def test_enable_input_d_on_the_first_step_adds_what_tcgen05_st_put_in_d():
    out, expected = run_gemm(m=128, n=16, steps=2, a_dtype="bfloat16", accumulate=True, b=("MN", "32B"))
    np.testing.assert_array_equal(as_d(out, np.float32), expected)


@pytest.mark.parametrize("m, d_lane", [(128, 0), (64, 16)])
def test_a_from_tensor_memory_on_the_lanes_of_d_packed_along_columns(m, d_lane):
    out, expected = run_gemm(m=m, n=32, steps=2, a_dtype="float16", a_in_tmem=True, d_lane=d_lane)
    np.testing.assert_array_equal(as_d(out, np.float32), expected)


# --- block scaling ---


def scaled_gemm(n=112, steps=2, seed=1, break_replica=None, a_in_tmem=False, scales_by_cp=False):
    """mxf8f6f4 e4m3 x e5m2 -> f32, M = 128: D in columns [0, n), SFA in 4 columns from n, SFB in 4 after it (put
    there by tcgen05.st, or by tcgen05.cp.32x128b.warpx4 from shared memory right before the MMAs), A in shared
    memory or in the columns after the scales; K step s takes scale byte s (the idesc's SF ids)."""
    m, rng = 128, np.random.default_rng(seed)
    av, bv = small_values(rng, (m, 32 * steps), "e4m3"), small_values(rng, (n, 32 * steps), "e5m2")
    a_op, b_op = Operand(av, "K", "128B", sdesc), Operand(bv, "K", "64B", sdesc)
    ea, eb = rng.integers(124, 131, (m, steps)), rng.integers(124, 131, (n, steps))  # 2^-3 .. 2^3
    image = np.zeros((128, n + 8 + (8 * steps if a_in_tmem else 0)), np.uint32)
    sf_rows = np.zeros((2, 32, 4), np.uint32)  # what tcgen05.cp reads: row l, word c = the cell of lane l, column c
    for which, (first, exps) in enumerate(((n, ea), (n + 4, eb))):
        for row in range(exps.shape[0]):
            word = sum(int(e) << 8 * s for s, e in enumerate(exps[row]))
            image[row % 32 + 32 * np.arange(4), first + row // 32] = word  # duplicated into every sub-partition
            sf_rows[which, row % 32, row // 32] = word
    if a_in_tmem:
        image[:, n + 8 :] = np.ascontiguousarray(av).view(np.uint32)
    if break_replica is not None:
        image[break_replica] ^= 1
    a_words = np.concatenate([a_op.words, sf_rows.ravel()]) if scales_by_cp else a_op.words
    issue = []
    if scales_by_cp:  # no swizzle, 16-byte rows 16 bytes apart: SBO = 8 rows x 16 B
        for which, column in enumerate((n, n + 4)):
            source = f"T.address_of(sA[{a_op.words.size + 128 * which}])"
            issue.append(
                call("tcgen05", "cp_32x128b_warpx4", f"slot[0] + T.uint32({column})", source, u32(0), u32(128), u32(0))
            )
    for s in range(steps):
        idesc = idesc_scaled(m, n, "e4m3", "e5m2", sf_a=s, sf_b=s)
        if a_in_tmem:
            a_args = [f"slot[0] + T.uint32({n + 8 + 8 * s})"]
        else:
            a_args = [smem_desc("sA", a_op.starts[s] // 4, a_op.descriptor)]
        issue.append(
            call(
                "tcgen05",
                f"mma_mxf8f6f4_{'ts' if a_in_tmem else 'ss'}",
                "slot[0]",
                *a_args,
                smem_desc("sB", b_op.starts[s] // 4, b_op.descriptor),
                u32(idesc),
                f"slot[0] + T.uint32({n})",
                f"slot[0] + T.uint32({n + 4})",
                u32(int(s > 0)),
            )
        )
    preload = 0 if scales_by_cp and not a_in_tmem else image.shape[1]
    source = kernel_source(mmas=issue, n_read=n, a_words=a_words.size, b_words=b_op.words.size, preload_cols=preload)
    expected = np.zeros((m, n))
    for s in range(steps):
        k = slice(32 * s, 32 * s + 32)
        a_scaled = av[:, k].astype(np.float64) * 2.0 ** (ea[:, s] - 127)[:, None]
        b_scaled = bv[:, k].astype(np.float64) * 2.0 ** (eb[:, s] - 127)[:, None]
        expected += a_scaled @ b_scaled.T
    inputs = {"A": a_words, "B": b_op.words, "P": image[:, :preload].ravel() if preload else np.zeros(128, np.uint32)}
    return source, inputs, expected.astype(np.float32)


@pytest.mark.parametrize("a_in_tmem, scales_by_cp", [(False, False), (True, False), (False, True), (True, True)])
def test_mxf8f6f4_scales_each_row_of_a_and_column_of_b_per_32_k_by_ue8m0_bytes(a_in_tmem, scales_by_cp):
    # with tcgen05.cp, the copy and the MMAs that read what it wrote are a pipelined pair: no wait between them
    source, inputs, expected = scaled_gemm(a_in_tmem=a_in_tmem, scales_by_cp=scales_by_cp)
    out = sim.run(parse(source), inputs)["D"].reshape(128, -1)
    np.testing.assert_array_equal(out.view(np.float32), expected)


def test_mxf8f6f4_refuses_scale_factors_that_differ_between_sub_partitions():
    source, inputs, _ = scaled_gemm(break_replica=(64 + 5, 112 + 1))  # SFA row 37's replica on lane 69
    with pytest.raises(sim.SimulationError, match=r"scale factor of A row 37 .* duplicated into all four"):
        sim.run(parse(source), inputs)


# --- ordering: what a kernel must do between an MMA and what touches its operands or its result ---


def race_kernel(**switches):
    source, inputs, _, _ = dense_gemm(m=128, n=32, steps=2, **switches)
    return parse(source), inputs


def test_reading_d_with_no_wait_at_all_is_a_data_race_naming_the_missing_wait():
    kernel, inputs = race_kernel(wait=None)
    with pytest.raises(
        sim.DataRace,
        match=r"tcgen05\.ld by warp 0 .* its own tcgen05\.mma has not finished with: put an mbarrier wait that "
        r"sees the phase its tcgen05\.commit arrives at",
    ):
        sim.run(kernel, inputs)


def test_reading_d_with_no_commit_and_no_wait_is_a_data_race_naming_both():
    source, inputs, _, _ = dense_gemm(m=128, n=32, steps=2, wait=None)
    kernel = parse(source.replace(call("tcgen05", "commit", "T.address_of(bars[0])"), "T.evaluate(0)"))
    with pytest.raises(sim.DataRace, match=r"its own tcgen05\.mma has not finished with: put tcgen05\.commit and an "):
        sim.run(kernel, inputs)


def test_a_warp_that_did_not_wait_reads_d_in_a_data_race_naming_the_wait():
    kernel, inputs = race_kernel(wait="warp0")
    with pytest.raises(
        sim.DataRace,
        match=r"TMEM cell \(lane 32, column 0\): a tcgen05\.ld by warp 1 .* tcgen05\.mma "
        r"issued by warp 0 writes, .* missing: an mbarrier wait",
    ):
        sim.run(kernel, inputs)


def test_reading_d_after_the_wait_without_fence_after_thread_sync_is_a_data_race_naming_the_fence():
    kernel, inputs = race_kernel(fence_after_wait=False)
    with pytest.raises(sim.DataRace, match=r"warp 1 .* missing: tcgen05\.fence::after_thread_sync after the mbarrier"):
        sim.run(kernel, inputs)


SA_STORE = "for i in range(8):\n        sA[i * 128 + tx] = T.uint32(0)"


def test_overwriting_an_operand_an_mma_still_reads_is_a_data_race_until_the_wait():
    kernel, inputs = race_kernel(after_issue=SA_STORE)
    with pytest.raises(
        sim.DataRace,
        match=r"shared sA\[0\]: a store by thread 0 while the tcgen05\.mma\.kind::f16 "
        r"\(SS\) issued by thread 0 still reads it; wait on the mbarrier",
    ):
        sim.run(kernel, inputs)
    kernel, inputs = race_kernel(after_wait=SA_STORE)  # after every thread's wait: allowed
    sim.run(kernel, inputs)


def test_a_thread_may_overwrite_an_operand_once_an_arrive_by_a_thread_that_saw_the_mma_complete_reaches_it():
    def handoff(warp0_waits):
        wait0 = call("mbarrier", "wait", "T.address_of(bars[0])", u32(0)) if warp0_waits else "T.evaluate(0)"
        return "\n    ".join(
            [
                f"if warp == 0:\n        {wait0}\n        {call('mbarrier', 'arrive', 'T.address_of(bars[2])')}",
                call("mbarrier", "wait", "T.address_of(bars[2])", u32(0)),
                SA_STORE,
            ]
        )

    kernel, inputs = race_kernel(after_issue=handoff(warp0_waits=True))
    sim.run(kernel, inputs)
    kernel, inputs = race_kernel(after_issue=handoff(warp0_waits=False))
    with pytest.raises(sim.DataRace, match=r"sA\[0\]: a store by thread 0 while the tcgen05\.mma"):
        sim.run(kernel, inputs)


def test_an_mma_reading_generic_stores_needs_fence_proxy_async_and_a_barrier():
    kernel, inputs = race_kernel(fence_proxy=False)
    with pytest.raises(
        sim.DataRace,
        match=r"sA\[0\]: the tcgen05\.mma.* reads it through the async proxy, but "
        r"thread 0 wrote it with no fence\.proxy\.async",
    ):
        sim.run(kernel, inputs)
    kernel, inputs = race_kernel(barrier_before_mma=False)
    with pytest.raises(sim.DataRace, match=r"sA\[1\]: the tcgen05\.mma.* reads what thread 1 wrote, with no barrier"):
        sim.run(kernel, inputs)


def test_mmas_into_one_accumulator_from_two_threads_are_a_data_race():
    kernel, inputs = race_kernel(issue_guard="tx < 2")  # the guard that should pick one thread picks two
    with pytest.raises(sim.DataRace, match=r"tcgen05\.mma issued by thread 1 and by thread 0 touch it"):
        sim.run(kernel, inputs)
    kernel, inputs = race_kernel(issue_guard="tx % 32 == 0")  # one thread per warp
    with pytest.raises(
        sim.DataRace,
        match=r"tcgen05\.mma by warp 1 of a cell a tcgen05\.mma issued by warp 0 writes, before its completion was "
        r"observed; missing: a tcgen05\.commit by warp 0 and an mbarrier wait",
    ):
        sim.run(kernel, inputs)


def test_a_wait_on_a_phase_nothing_completes_never_returns():
    kernel, inputs = race_kernel(after_wait=call("mbarrier", "wait", "T.address_of(bars[0])", u32(1)))
    with pytest.raises(
        sim.SimulationError,
        match=r"bars\[0\] for phase parity 1 never returns: phase 1 \(parity 1\) "
        r"has 1 of 1 arrivals pending",
    ):
        sim.run(kernel, inputs)


SECOND_MMA = call(
    "tcgen05",
    "mma_f16_ss",
    "slot[0]",
    smem_desc("sA", 0, sdesc(16, 1024, "128B")),
    smem_desc("sB", 0, sdesc(16, 1024, "128B")),
    u32(idesc_dense(128, 32, "float16", "float16", "float32")),
    u32(0),
)


def test_the_next_mma_into_d_waits_for_every_reader_through_an_mbarrier():
    unordered = f"if tx == 0:\n        {SECOND_MMA}\n        {call('tcgen05', 'commit', 'T.address_of(bars[0])')}"
    kernel, inputs = race_kernel(after_read=unordered)
    with pytest.raises(sim.DataRace, match=r"an MMA's write after a load by warp 1"):
        sim.run(kernel, inputs)
    handshake = "\n    ".join(
        [
            call("tcgen05", "fence_before"),
            call("mbarrier", "arrive", "T.address_of(bars[1])"),  # all 128 threads: the readers are done with D
            f"if tx == 0:\n        {call('mbarrier', 'wait', 'T.address_of(bars[1])', u32(0))}",
            call("tcgen05", "fence_after"),
            unordered,
            call("mbarrier", "wait", "T.address_of(bars[0])", u32(1)),
        ]
    )
    kernel, inputs = race_kernel(after_read=handshake)
    sim.run(kernel, inputs)


def test_arrive_expect_tx_in_a_kernel_holds_the_phase_until_the_bytes_arrive():
    wait = call("mbarrier", "wait", "T.address_of(bars[1])", u32(0))
    expect = call("mbarrier", "arrive_expect_tx", "T.address_of(bars[1])", u32(16))
    kernel, inputs = race_kernel(after_read=f"{expect}\n    {wait}")
    with pytest.raises(
        sim.SimulationError,
        match=r"bars\[1\] .* never returns: phase 0 \(parity 0\) has 0 of 128 "
        r"arrivals pending and a tx-count of 2048",
    ):
        sim.run(kernel, inputs)
    plain = call("mbarrier", "expect_tx", "T.address_of(bars[1])", u32(0))
    arrive = call("mbarrier", "arrive", "T.address_of(bars[1])")
    kernel, inputs = race_kernel(after_read=f"{plain}\n    {arrive}\n    {wait}")
    sim.run(kernel, inputs)


# --- instructions the ISA does not define, or arguments the helper ABI does not allow, are errors ---


def _f16_source(**kwargs):
    source, inputs, _, _ = dense_gemm(m=kwargs.pop("m", 128), n=32, steps=1, **kwargs)
    return source, inputs


F16_IDESC = u32(idesc_dense(128, 32, "float16", "float16", "float32"))


@pytest.mark.parametrize(
    "kwargs, old, new, error",
    [
        (  # a start address past every shared buffer: the last 16-byte unit of the 2^18-byte window
            {},
            smem_desc("sA", 0, sdesc(16, 1024, "128B")),
            u64(sdesc(16, 1024, "128B") | 0x3FFF),
            r"A \(descriptor 0x[0-9a-f]+\): shared address 262128 is in no shared buffer \(buffers: slot at 0\.\.3",
        ),
        (  # B starting at the last 16 bytes of A (128 rows of one 128-byte atom): its rows run out of sA
            {},
            smem_desc("sB", 0, sdesc(16, 1024, "128B")),
            smem_desc("sA", 128 * 128 // 4 - 4, sdesc(16, 1024, "128B")),
            r"B \(descriptor 0x[0-9a-f]+\) reads shared bytes \d+\.\.\d+, outside sA \(bytes 1024\.\.17407\)",
        ),
        ({}, "slot[0] + T.uint32(0)", "slot[0] + T.uint32(1048576)", r"an M = 128 accumulator starts at lane 0"),
        (
            {},
            "slot[0] + T.uint32(0)",
            "slot[0] + T.uint32(200)",
            r"D: TMEM column 200 is not allocated \(allocated {0: 32}\)",
        ),
        ({}, F16_IDESC, u32(idesc_dense(256, 32, "float16", "float16", "float32")), r"M = 256 needs cta_group::2"),
        ({}, F16_IDESC, u32(idesc_dense(128, 32, "float16", "float16", "float32") | 4), r"sparse MMAs"),
        ({}, ', T.uint32(0), "")', ', "")', r"tcgen05\.mma\.kind::f16 \(SS\) takes 5 arguments"),
        (
            {"m": 64, "d_lane": 16, "a_in_tmem": True},
            "slot[0] + T.uint32(1048608)",
            "slot[0] + T.uint32(32)",
            r"A's TMEM address 0x00000020 starts at lane 0, D's at lane 16; A from tensor memory uses D's lanes",
        ),
        (
            {"a_dtype": "int8", "d_dtype": "int32"},
            u32(idesc_dense(128, 32, "int8", "int8", "int32")),
            u32(idesc_dense(128, 40, "int8", "int8", "int32")),
            r"kind::i8 takes N = 8, 16, 24, 32 or 48\.\.256 in steps of 16, not 40",
        ),
    ],
)
def test_mma_arguments_the_isa_or_the_helper_abi_does_not_allow_are_errors(kwargs, old, new, error):
    source, inputs = _f16_source(**kwargs)
    assert old in source
    with pytest.raises(sim.SimulationError, match=error):
        sim.run(parse(source.replace(old, new, 1)), inputs)


def test_block_scale_factors_start_at_lane_0_of_their_columns():
    source, inputs, _ = scaled_gemm(steps=1)
    with pytest.raises(sim.SimulationError, match=r"scale factors of A at TMEM address 0x00200070 start at lane 32"):
        sim.run(parse(source.replace("slot[0] + T.uint32(112)", "slot[0] + T.uint32(2097264)")), inputs)


# --- mbarrier initialisation and deallocation after an MMA ---


def _arrive_kernel(init_guard="tx == 0", barrier_after_init=True):
    return parse(f"""
@T.prim_func
def k():
    T.device_entry()
    tx = T.thread_id([64])
    bars = T.alloc_shared((1,), "uint64")
    if {init_guard}:
        {call("mbarrier", "init", "T.address_of(bars[0])", u32(64))}
    {"T.cuda.cta_sync()" if barrier_after_init else "T.evaluate(0)"}
    {call("mbarrier", "arrive", "T.address_of(bars[0])")}
    {call("mbarrier", "wait", "T.address_of(bars[0])", u32(0))}
""")


def test_one_thread_initialises_an_mbarrier_and_a_barrier_publishes_it():
    sim.run(_arrive_kernel())  # 64 arrivals complete phase 0, so the wait returns
    with pytest.raises(sim.DataRace, match=r"bars\[0\]: threads 0 and 1 both initialise the mbarrier"):
        sim.run(_arrive_kernel(init_guard="tx < 2"))
    with pytest.raises(
        sim.DataRace, match=r"bars\[0\]: thread 1 uses the mbarrier thread 0 initialised with no barrier"
    ):
        sim.run(_arrive_kernel(barrier_after_init=False))


def _dealloc_after_mma(waiters: str):
    """Thread 0 issues an MMA and commits; only the warps ``waiters`` selects wait; then a barrier and dealloc."""
    source, inputs, _, _ = dense_gemm(m=128, n=32, steps=1)
    mma = next(line.strip() for line in source.splitlines() if "mma_f16_ss" in line)
    kernel = parse(f"""
@T.prim_func
def k(A: T.Buffer(({inputs["A"].size},), "uint32"), B: T.Buffer(({inputs["B"].size},), "uint32")):
    T.device_entry()
    tx = T.thread_id([128])
    warp = tx // 32
    slot = T.alloc_shared((1,), "uint32")
    bars = T.alloc_shared((1,), "uint64")
    sA = T.alloc_shared(({inputs["A"].size},), "uint32", align=1024)
    sB = T.alloc_shared(({inputs["B"].size},), "uint32", align=1024)
    if warp == 0:
        {call("tcgen05", "alloc", "T.address_of(slot[0])", u32(32))}
    if tx == 0:
        {call("mbarrier", "init", "T.address_of(bars[0])", u32(1))}
        {mma}
        {call("tcgen05", "commit", "T.address_of(bars[0])")}
    T.cuda.cta_sync()
    if {waiters}:
        {call("mbarrier", "wait", "T.address_of(bars[0])", u32(0))}
    T.cuda.cta_sync()
    if warp == 0:
        {call("tcgen05", "dealloc", "slot[0]", u32(32))}
""")
    return kernel, {"A": inputs["A"], "B": inputs["B"]}


def test_dealloc_after_another_warp_saw_the_mma_complete_and_a_barrier():
    sim.run(*_dealloc_after_mma("warp == 1"))  # the MMA warp itself never waits: completion is seen by warp 1
    with pytest.raises(sim.SimulationError, match=r"tcgen05\.dealloc while warp 0's tcgen05\.mma .* has not completed"):
        sim.run(*_dealloc_after_mma("warp == 9"))  # nobody waits


def test_a_cta_barrier_orders_d_after_the_mma_only_once_some_thread_has_waited_for_it():
    # warp 0 waits; a barrier; every warp fences and reads: ordered through warp 0's wait (happens-before is
    # transitive)
    kernel, inputs = race_kernel(wait="warp0", after_wait="T.cuda.cta_sync()")
    sim.run(kernel, inputs)


def test_a_commit_and_a_cta_barrier_without_any_wait_do_not_complete_an_mma():
    order = TmemOrder(warps=2, cells=4)
    order.access(0, np.array([1]), write=True, kind="mma", thread=0)
    order.commit(0)
    order.barrier()
    order.fence_after(1)
    with pytest.raises(sim.DataRace, match=r"missing: an mbarrier wait \(mbarrier_wait\) that sees the phase"):
        order.access(1, np.array([1]), write=False, kind="ld")


def test_a_store_over_what_an_unfinished_mma_reads_from_tmem_is_a_data_race():
    order = TmemOrder(warps=2, cells=4)
    order.access(0, np.array([2]), write=False, kind="mma", thread=0)  # A or a scale factor in TMEM
    with pytest.raises(
        sim.DataRace,
        match=r"tcgen05\.st by warp 1 of a cell a tcgen05\.mma or cp issued by warp 0 "
        r"reads, .* missing: a tcgen05\.commit by warp 0",
    ):
        order.access(1, np.array([2]), write=True, kind="st")
    order.commit(0)
    order.mbarrier_wait(1, order.publish(0), np.array([0, -1]))
    order.fence_after(1)
    order.access(1, np.array([2]), write=True, kind="st")  # after the commit's phase, seen by warp 1: ordered


# --- warp specialisation: the branches of an if take turns at mbarrier waits ---


def _ping_pong(consumer_fence=True, producer_waits=True, roles="if-else"):
    """256 threads: warps 0-3 drain a two-stage accumulator (Layout D, 32 columns a stage), thread 128 issues an MMA
    per tile into stage t % 2. full[s] (count 1) takes the commits, empty[s] (count 128) the readers' arrives. The
    consumers come first in the program: they wait before anything was issued. ``roles``: the two roles as the
    branches of one if ("if-else"), or as two ifs one after the other ("sequential")."""
    rng = np.random.default_rng(3)
    av, bv = small_values(rng, (128, 32), "float16"), small_values(rng, (32, 32), "float16")
    a_op, b_op = Operand(av, "K", "128B", sdesc), Operand(bv, "K", "128B", sdesc)
    idesc = idesc_dense(128, 32, "float16", "float16", "float32")
    mma = call(
        "tcgen05",
        "mma_f16_ss",
        "slot[0] + T.Cast('uint32', t % 2 * 32)",
        smem_desc("sA", f"t % 2 * {a_op.starts[1] // 4}", a_op.descriptor),
        smem_desc("sB", f"t % 2 * {b_op.starts[1] // 4}", b_op.descriptor),
        u32(idesc),
        u32(0),
    )
    lane_base = "slot[0] + T.Cast('uint32', warp * 32 * 65536 + t % 2 * 32)"
    empty_wait = call("mbarrier", "wait", "T.address_of(empty[t % 2])", "T.Cast('uint32', (t // 2 + 1) % 2)")
    kernel = parse(f"""
@T.prim_func
def k(A: T.Buffer(({a_op.words.size},), "uint32"), B: T.Buffer(({b_op.words.size},), "uint32"),
      D: T.Buffer((16384,), "uint32")):
    T.device_entry()
    tx = T.thread_id([256])
    warp = tx // 32
    slot = T.alloc_shared((1,), "uint32")
    full = T.alloc_shared((2,), "uint64")
    empty = T.alloc_shared((2,), "uint64")
    sA = T.alloc_shared(({a_op.words.size},), "uint32", align=1024)
    sB = T.alloc_shared(({b_op.words.size},), "uint32", align=1024)
    r = T.alloc_local((32,), "uint32")
    for i in range({a_op.words.size // 256}):
        sA[i * 256 + tx] = A[i * 256 + tx]
    for i in range({b_op.words.size // 256}):
        sB[i * 256 + tx] = B[i * 256 + tx]
    if warp == 0:
        {call("tcgen05", "alloc", "T.address_of(slot[0])", u32(64))}
    if tx == 0:
        for s in range(2):
            {call("mbarrier", "init", "T.address_of(full[s])", u32(1))}
            {call("mbarrier", "init", "T.address_of(empty[s])", u32(128))}
    {call("sync", "fence_proxy_async")}
    T.cuda.cta_sync()
    if warp < 4:
        for t in range(4):
            {call("mbarrier", "wait", "T.address_of(full[t % 2])", "T.Cast('uint32', t // 2 % 2)")}
            {call("tcgen05", "fence_after") if consumer_fence else "T.evaluate(0)"}
            {call("tcgen05", "ld_32x32b_x32", lane_base, "T.address_of(r[0])")}
            {call("tcgen05", "wait_ld")}
            for j in range(32):
                D[(t * 128 + tx) * 32 + j] = r[j]
            {call("tcgen05", "fence_before")}
            {call("mbarrier", "arrive", "T.address_of(empty[t % 2])")}
    {"else:" if roles == "if-else" else "if warp >= 4:"}
        if tx == 128:
            for t in range(4):
                {empty_wait if producer_waits else "T.evaluate(0)"}
                {call("tcgen05", "fence_after")}
                {mma}
                {call("tcgen05", "commit", "T.address_of(full[t % 2])")}
    T.cuda.cta_sync()
    if warp == 0:
        {call("tcgen05", "dealloc", "slot[0]", u32(64))}
""")
    halves = [
        av[:, 16 * s : 16 * s + 16].astype(np.float32) @ bv[:, 16 * s : 16 * s + 16].astype(np.float32).T
        for s in (0, 1)
    ]
    return kernel, {"A": a_op.words, "B": b_op.words}, np.stack([halves[t % 2] for t in range(4)])


@pytest.mark.parametrize("roles", ["if-else", "sequential"])
def test_a_warp_specialised_two_stage_accumulator_runs_with_its_roles_taking_turns(roles):
    kernel, inputs, expected = _ping_pong(roles=roles)
    out = sim.run(kernel, inputs)["D"].reshape(4, 128, 32)
    np.testing.assert_array_equal(out.view(np.float32), expected)


def test_warp_specialised_misuse_is_still_caught():
    kernel, inputs, _ = _ping_pong(consumer_fence=False)
    with pytest.raises(sim.DataRace, match=r"missing: tcgen05\.fence::after_thread_sync after the mbarrier wait"):
        sim.run(kernel, inputs)
    kernel, inputs, _ = _ping_pong(producer_waits=False)  # the MMAs overrun the stages: phases nobody can wait for
    with pytest.raises(
        sim.SimulationError,
        match=r"full\[0\] for phase parity 0 never returns: phase 2 .* no thread "
        r"that can still run completes that phase",
    ):
        sim.run(kernel, inputs)


def _producer_warps(arrive_first=False, fence=True):
    """256 threads: warps 4-7 store the operands with generic stores, fence them for the async proxy and arrive on
    full (count 128); thread 0 waits on full, issues the MMA and commits to done; warps 0-3 wait on done and read D.
    The MMA side comes first in the program; no CTA barrier separates the stores from the MMA."""
    source, inputs, expected, _ = dense_gemm(m=128, n=32, steps=1)
    mma = next(line.strip() for line in source.splitlines() if "mma_f16_ss" in line)
    words = {name: inputs[name].size for name in ("A", "B")}
    stores = "\n        ".join(
        f"for i in range({words[name] // 128}):\n            s{name}[i * 128 + tx - 128] = {name}[i * 128 + tx - 128]"
        for name in ("A", "B")
    )
    arrive = call("mbarrier", "arrive", "T.address_of(bars[0])")
    fenced = call("sync", "fence_proxy_async") if fence else ""
    produce = [arrive, stores, fenced] if arrive_first else [stores, fenced, arrive]
    lane_base = "slot[0] + T.Cast('uint32', warp * 32 * 65536)"
    kernel = parse(f"""
@T.prim_func
def k(A: T.Buffer(({words["A"]},), "uint32"), B: T.Buffer(({words["B"]},), "uint32"), D: T.Buffer((4096,), "uint32")):
    T.device_entry()
    tx = T.thread_id([256])
    warp = tx // 32
    slot = T.alloc_shared((1,), "uint32")
    bars = T.alloc_shared((2,), "uint64")
    sA = T.alloc_shared(({words["A"]},), "uint32", align=1024)
    sB = T.alloc_shared(({words["B"]},), "uint32", align=1024)
    r = T.alloc_local((32,), "uint32")
    if warp == 0:
        {call("tcgen05", "alloc", "T.address_of(slot[0])", u32(32))}
    if tx == 0:
        {call("mbarrier", "init", "T.address_of(bars[0])", u32(128))}
        {call("mbarrier", "init", "T.address_of(bars[1])", u32(1))}
    T.cuda.cta_sync()
    if warp < 4:
        if tx == 0:
            {call("mbarrier", "wait", "T.address_of(bars[0])", u32(0))}
            {call("tcgen05", "fence_after")}
            {mma}
            {call("tcgen05", "commit", "T.address_of(bars[1])")}
        {call("mbarrier", "wait", "T.address_of(bars[1])", u32(0))}
        {call("tcgen05", "fence_after")}
        {call("tcgen05", "ld_32x32b_x32", lane_base, "T.address_of(r[0])")}
        {call("tcgen05", "wait_ld")}
        for j in range(32):
            D[tx * 32 + j] = r[j]
    else:
        {(chr(10) + "        ").join(p for p in produce if p)}
    {call("tcgen05", "fence_before")}
    T.cuda.cta_sync()
    if warp == 0:
        {call("tcgen05", "dealloc", "slot[0]", u32(32))}
""")
    return kernel, {"A": inputs["A"], "B": inputs["B"]}, expected


def test_producer_warps_hand_generic_stores_to_the_mma_through_a_fence_and_an_mbarrier():
    kernel, inputs, expected = _producer_warps()
    out = sim.run(kernel, inputs)["D"].reshape(128, 32)
    np.testing.assert_array_equal(out.view(np.float32), expected)
    kernel, inputs, _ = _producer_warps(arrive_first=True)
    with pytest.raises(sim.DataRace, match=r"reads what thread 128 wrote, with no barrier \(or mbarrier phase\)"):
        sim.run(kernel, inputs)
    kernel, inputs, _ = _producer_warps(fence=False)
    with pytest.raises(sim.DataRace, match=r"thread 128 wrote it with no fence\.proxy\.async after the store"):
        sim.run(kernel, inputs)


def test_the_issuing_warp_may_read_d_after_another_warp_waited_then_a_barrier_and_its_fence():
    order = TmemOrder(warps=2, cells=4)
    order.access(0, np.array([1]), write=True, kind="mma", thread=0)
    order.commit(0)
    with pytest.raises(sim.DataRace, match=r"its own tcgen05\.mma has not finished"):
        order.access(0, np.array([1]), write=False, kind="ld")
    order.mbarrier_wait(1, order.publish(0), np.array([0, -1]))  # warp 1 sees the commit's phase complete
    order.barrier()
    order.fence_after(0)
    order.access(0, np.array([1]), write=False, kind="ld")  # ordered: the wait, the barrier, the fence


# --- 16-bit data one element per 32-bit TMEM column: tcgen05.ld .pack::16b / tcgen05.st .unpack::16b ---


def test_pack_16b_loads_the_low_halves_of_two_adjacent_columns_and_unpack_16b_stores_them_back():
    # PTX ISA, tcgen05.ld: ".pack::16b ... two 16-bit elements from adjacent columns are packed into a single 32-bit
    # element"; tcgen05.st .unpack::16b splits one back over two columns. Columns 0-1 hold 32-bit words whose high
    # halves must be dropped; the packed register is stored back into columns 2-3.
    rng = np.random.default_rng(7)
    words = rng.integers(0, 2**32, (128, 2), dtype=np.uint64).astype(np.uint32)
    lane_base = "slot[0] + T.Cast('uint32', warp * 32 * 65536)"
    kernel = parse(f"""
@T.prim_func
def k(P: T.Buffer((256,), "uint32"), H: T.Buffer((256,), "float16"), E: T.Buffer((512,), "uint32")):
    T.device_entry()
    tx = T.thread_id([128])
    warp = tx // 32
    slot = T.alloc_shared((1,), "uint32")
    r = T.alloc_local((4,), "uint32")
    h = T.alloc_local((2,), "float16")
    if warp == 0:
        {call("tcgen05", "alloc", "T.address_of(slot[0])", u32(32))}
    T.cuda.cta_sync()
    r[0] = P[tx * 2]
    r[1] = P[tx * 2 + 1]
    {call("tcgen05", "st_32x32b_x2", lane_base, "T.address_of(r[0])")}
    {call("tcgen05", "wait_st")}
    {call("tcgen05", "ld_32x32b_x1_pack16b", lane_base, "T.address_of(h[0])")}
    {call("tcgen05", "wait_ld")}
    H[tx * 2] = h[0]
    H[tx * 2 + 1] = h[1]
    {call("tcgen05", "st_32x32b_x1_pack16b", lane_base + " + T.uint32(2)", "T.address_of(h[0])")}
    {call("tcgen05", "wait_st")}
    {call("tcgen05", "ld_32x32b_x4", lane_base, "T.address_of(r[0])")}
    {call("tcgen05", "wait_ld")}
    for i in range(4):
        E[tx * 4 + i] = r[i]
    T.cuda.cta_sync()
    if warp == 0:
        {call("tcgen05", "dealloc", "slot[0]", u32(32))}
""")
    out = sim.run(kernel, {"P": words.ravel()})
    low = (words & 0xFFFF).astype(np.uint16)
    np.testing.assert_array_equal(out["H"].reshape(128, 2).view(np.uint16), low)
    cells = out["E"].reshape(128, 4)
    np.testing.assert_array_equal(cells[:, :2], words)
    np.testing.assert_array_equal((cells[:, 2:] & 0xFFFF).astype(np.uint16), low)


def test_the_swizzle_acts_on_shared_addresses_so_an_unaligned_swizzled_operand_reads_other_bytes():
    # The descriptor carries sA's shared address; the 128B swizzle XORs address bits 4-6 with bits 7-9. Declared
    # with align=16, sA lands at byte 32 (after slot and bars), where the XOR no longer undoes the image the test
    # laid out for an aligned buffer: the simulated D is not A @ B.T (with align=1024 it is, in every test above).
    source, inputs, expected, lanes = dense_gemm(m=128, n=64, steps=2)
    aligned = f'sA = T.alloc_shared(({inputs["A"].size},), "uint32", align=1024)'
    assert aligned in source
    out = sim.run(parse(source.replace(aligned, aligned.replace("1024", "16"))), inputs)["D"].reshape(128, -1)
    assert not np.array_equal(as_d(out[lanes], np.float32), expected)
    np.testing.assert_array_equal(
        as_d(sim.run(parse(source), inputs)["D"].reshape(128, -1)[lanes], np.float32), expected
    )
