"""The simulator runs Hopper's ``wgmma`` helpers (``sim/wgmma.py``): operands, fragments, groups and races.

Every kernel here is hand-built TIR calling the helpers of ``ops/helpers/wgmma.py``'s ABI by name (never our lowering). The
operand images and descriptors are computed here from the PTX ISA's canonical layouts and its "Matrix Descriptor
Format" table; where each register holds which element is spelled out here from the ISA's fragment figures; the
expected results come from numpy. Values are chosen exactly representable, so every comparison is exact.
"""

from __future__ import annotations

from functools import partial

import ml_dtypes
import numpy as np
import pytest

from tirx_layout import sim
from tirx_layout.sim import wgmma
from tirx_layout.sim.matrix_operands import DescriptorError
from tirx_layout.sim.memory import DataRace, SimulationError

from kernels import parse
from kernels.helper_calls import call as helper_call
from kernels.helper_calls import u32, u64
from kernels.helper_calls import value as helper_value
from oracles.canonical_operands import Operand

# --- the ISA's tables and figures, restated for the tests ---

SWIZZLE_CODE = {"none": 0, "128B": 1, "64B": 2, "32B": 3}  # bits 62-63 of the wgmma matrix descriptor
PTX = {
    "float16": "f16",
    "bfloat16": "bf16",
    "tf32": "tf32",
    "e4m3": "e4m3",
    "e5m2": "e5m2",
    "int8": "s8",
    "uint8": "u8",
    "float32": "f32",
    "int32": "s32",
}
ELEMENT = {
    "float16": np.float16,
    "bfloat16": ml_dtypes.bfloat16,
    "tf32": np.float32,
    "e4m3": ml_dtypes.float8_e4m3fn,
    "e5m2": ml_dtypes.float8_e5m2,
    "uint8": np.uint8,
    "int8": np.int8,
    "float32": np.float32,
    "int32": np.int32,
}
TIR_TYPE = {"tf32": "float32", "e4m3": "float8_e4m3fn", "e5m2": "float8_e5m2"}


def wgmma_desc(lbo, sbo, mode):
    """The wgmma descriptor with a zero start field: LBO >> 4 at bits 16-29, SBO >> 4 at 32-45, swizzle at 62-63."""
    return (lbo >> 4) << 16 | (sbo >> 4) << 32 | SWIZZLE_CODE[mode] << 62


def d_place(thread, i):
    """Row and column of accumulator element ``d<i>`` of warpgroup thread ``thread`` (ISA figure "WGMMA .m64nNk16
    register fragment layout for accumulator matrix D": each warp a 16-row slab, lanes in 8 rows of 4, two adjacent
    columns per 8-column block, the second pair 8 rows lower)."""
    warp, lane = thread // 32, thread % 32
    row = 16 * warp + lane // 4 + (8 if i % 4 >= 2 else 0)
    return row, 8 * (i // 4) + 2 * (lane % 4) + i % 2


def a_place(thread, i, element_bytes):
    """Row and k of A element ``a<i>`` in registers (ISA figures for m64nNk16, m64nNk8 and m64nNk32 matrix A)."""
    warp, lane = thread // 32, thread % 32
    row0, t = 16 * warp + lane // 4, lane % 4
    if element_bytes == 2:  # a0..a7: pairs along k, the second pair 8 rows lower, then 8 k further
        return row0 + (8 if i % 4 >= 2 else 0), 2 * t + i % 2 + (8 if i >= 4 else 0)
    if element_bytes == 4:  # a0..a3: a0/a1 8 rows apart, a2/a3 4 k further
        return row0 + 8 * (i % 2), t + (4 if i >= 2 else 0)
    return row0 + (8 if i % 8 >= 4 else 0), 4 * t + i % 4 + (16 if i >= 8 else 0)  # a0..a15: quads along k


def test_fragments_are_the_isa_figures():
    for n in (8, 24, 256):
        rows, cols = wgmma.accumulator_fragment(n)
        expected = np.array([[d_place(t, i) for i in range(n // 2)] for t in range(128)])
        np.testing.assert_array_equal(np.stack([rows, cols], -1), expected)
        assert sorted(zip(rows.ravel().tolist(), cols.ravel().tolist(), strict=True)) == [
            (r, c) for r in range(64) for c in range(n)
        ]
    for element, k in ((2, 16), (4, 8), (1, 32)):
        rows, ks = wgmma.operand_a_fragment(element)
        expected = np.array([[a_place(t, i, element) for i in range(rows.shape[1])] for t in range(128)])
        np.testing.assert_array_equal(np.stack([rows, ks], -1), expected)
        assert sorted(zip(rows.ravel().tolist(), ks.ravel().tolist(), strict=True)) == [
            (r, c) for r in range(64) for c in range(k)
        ]


# --- the descriptor ---


def test_descriptor_worked_value_and_every_swizzle_code():
    value = 0x40 | (16 >> 4) << 16 | (1024 >> 4) << 32 | 1 << 62  # start 0x400, LBO 16, SBO 1024, 128B
    assert value == 0x4000004000010040
    fields = wgmma.decode_wgmma_descriptor(value)
    assert (fields["start_address"], fields["lbo"], fields["sbo"], fields["swizzle"]) == (1024, 16, 1024, "128B")
    for mode, code in SWIZZLE_CODE.items():
        assert wgmma.decode_wgmma_descriptor(code << 62 | 7 << 49)["swizzle"] == mode
    assert wgmma.decode_wgmma_descriptor(7 << 49)["base_offset"] == 7


@pytest.mark.parametrize(
    "value, field",
    [
        (1 << 14, "bits 14-15"),
        (1 << 31, "bits 30-31"),
        (1 << 46, "bits 46-48"),  # the tcgen05 format's fixed 0b001: a tcgen05 descriptor is refused
        (1 << 61, "bits 52-61"),  # tcgen05's 128B-with-32B-atoms code (1 at bits 61-63): Hopper has no such mode
        (-1, "64-bit"),
        (1 << 64, "64-bit"),
    ],
)
def test_descriptor_errors_name_the_field(value, field):
    with pytest.raises(DescriptorError, match=field):
        wgmma.decode_wgmma_descriptor(value)


@pytest.mark.parametrize(
    "name, message",
    [
        ("mma_m64n64k16_f32_bf16_f16_ss_t00", "does not pair"),
        ("mma_m64n64k16_f16_bf16_bf16_ss_t00", "accumulate into"),
        ("mma_m64n64k8_f32_f16_f16_ss_t00", "K = 16"),
        ("mma_m64n40k32_s32_s8_s8_ss_t00", "steps of 16"),
        ("mma_m64n260k16_f32_f16_f16_ss_t00", "multiple of 8"),
        ("mma_m64n64k8_f32_tf32_tf32_ss_t10", "f16/bf16 only"),
        ("mma_m64n64k32_f32_e4m3_e4m3_rs_t1", "f16/bf16 only"),
    ],
)
def test_helper_names_the_isa_lacks_are_refused(name, message):
    with pytest.raises(SimulationError, match=message):
        wgmma.parse_mma_helper(name)


def test_helper_names_parse():
    h = wgmma.parse_mma_helper("mma_m64n200k32_f16_e5m2_e4m3_rs_t0")
    assert (h.n, h.k, h.d, h.a, h.b, h.a_in_registers, h.a_major, h.b_major) == (
        200,
        32,
        "f16",
        "e5m2",
        "e4m3",
        True,
        "K",
        "K",
    )
    assert wgmma.parse_mma_helper("mma_m64n48k32_s32_u8_s8_ss_t00").n == 48
    assert wgmma.parse_mma_helper("commit_group") is None


# --- kernels ---

#: wgmma helpers; the mbarrier and proxy-fence helpers through ``helper_call`` with their family
call = partial(helper_call, "wgmma")


def descriptor(pointer: str, bits: int) -> str:
    """The full descriptor of the operand at ``pointer``: the ``smem_descriptor`` helper ORs its shared address >> 4
    into ``bits`` (the descriptor with a zero start field)."""
    return helper_value("wgmma", "smem_descriptor", "uint64", pointer, u64(bits))


def small_values(rng, shape, dtype):
    """Values every operand type holds exactly and whose products and sums f32 (and f16) hold exactly."""
    if dtype in ("int8", "uint8"):
        low = -128 if dtype == "int8" else 0
        return rng.integers(low, low + 256, shape).astype(ELEMENT[dtype])
    return (rng.integers(-4, 5, shape) * 0.5).astype(np.float32).astype(ELEMENT[dtype])


class Gemm:
    """One warpgroup GEMM (or ``warpgroups`` of them, M = 64 each) as a hand-written kernel: the operand images
    copied into shared memory, ``fence.proxy.async`` and a barrier, D preloaded into registers, ``wgmma.fence``, the
    K loop of ``wgmma.mma_async`` helpers, ``commit_group``, ``wait_group 0``, D stored. Keyword switches drop or
    add one step each (for the race tests)."""

    def __init__(
        self,
        n=64,
        steps=2,
        a_dtype="float16",
        b_dtype=None,
        d_dtype="float32",
        a=("K", "128B"),
        b=("K", "128B"),
        rs=False,
        warpgroups=1,
        accumulate=True,
        seed=0,
    ):
        b_dtype = b_dtype or a_dtype
        rng = np.random.default_rng(seed)
        element = np.dtype(ELEMENT[a_dtype]).itemsize
        self.k_step = 32 // element
        k = steps * self.k_step
        m = 64 * warpgroups
        self.threads = 128 * warpgroups
        self.av, self.bv = small_values(rng, (m, k), a_dtype), small_values(rng, (n, k), b_dtype)
        self.a_op = Operand(self.av, *a, wgmma_desc)
        self.b_op = Operand(self.bv, *b, wgmma_desc)
        d_np = np.dtype(ELEMENT[d_dtype])
        start = small_values(rng, (m, n), "float16").astype(d_np) if d_dtype != "int32" else rng.integers(-9, 9, (m, n))
        self.start = start.astype(d_np)
        self.n, self.steps, self.m, self.rs = n, steps, m, rs
        self.d_dtype, self.a_dtype = d_dtype, a_dtype
        self.count = n // 2
        self.a_count = 64 * self.k_step // 128
        # registers of every thread: D's start values, A's fragments per K step (RS), by the ISA's figures
        self.preload = np.zeros((self.threads, self.count), d_np)
        self.a_regs = np.zeros((self.threads, steps * self.a_count), ELEMENT[a_dtype])
        for t in range(self.threads):
            g, local = t // 128, t % 128
            for i in range(self.count):
                r, c = d_place(local, i)
                self.preload[t, i] = self.start[64 * g + r, c]
            for s in range(steps):
                for i in range(self.a_count):
                    r, kk = a_place(local, i, element)
                    self.a_regs[t, s * self.a_count + i] = self.av[64 * g + r, s * self.k_step + kk]
        expected = self.av.astype(np.float64) @ self.bv.astype(np.float64).T
        if accumulate:
            expected = expected + self.start.astype(np.float64)
        self.expected_matrix = expected.astype(d_np)
        self.expected = np.zeros_like(self.preload)
        for t in range(self.threads):
            for i in range(self.count):
                r, c = d_place(t % 128, i)
                self.expected[t, i] = self.expected_matrix[64 * (t // 128) + r, c]
        name = f"mma_m64n{n}k{self.k_step}_{PTX[d_dtype]}_{PTX[a_dtype]}_{PTX[b_dtype]}"
        name += f"_rs_t{int(b[0] == 'MN')}" if rs else f"_ss_t{int(a[0] == 'MN')}{int(b[0] == 'MN')}"
        self.name = name
        self.accumulate = accumulate

    def a_row_offset(self) -> int:
        """Bytes from A's row 0 to row 64 (the second warpgroup's rows) in A's canonical layout."""
        e = self.av.dtype.itemsize
        major, mode = self.a_op.major, self.a_op.mode
        if major == "K":
            return 8 * self.a_op.sbo
        return (64 * e // (16 if mode == "none" else {"32B": 32, "64B": 64, "128B": 128}[mode])) * (
            self.a_op.sbo if mode == "none" else self.a_op.lbo
        )

    def mmas(self, scale_first=None):
        lines = []
        for s in range(self.steps):
            scale = u32((int(self.accumulate) if s == 0 else 1) if scale_first is None or s else scale_first)
            # full descriptors: the start field filled from the step's address by the smem_descriptor helper
            b_ptr = f"T.address_of(sB[{self.b_op.starts[s] // 4}])"
            b_args = [descriptor(b_ptr, self.b_op.descriptor)]
            if self.rs:
                a_args = [f"T.address_of(a[{s * self.a_count}])"]
            else:
                a_ptr = f"T.address_of(sA[{self.a_op.starts[s] // 4} + wg * {self.a_row_offset() // 4}])"
                a_args = [descriptor(a_ptr, self.a_op.descriptor)]
            lines.append(call(self.name, "T.address_of(d[0])", *a_args, *b_args, scale))
        return lines

    def source(
        self,
        *,
        fence_proxy=True,
        barrier=True,
        wgmma_fence=True,
        after_fence="",
        after_issue="",
        commit=True,
        wait="0",
        after_wait="",
        guard="",
        mmas=None,
    ):
        t, c, ac = self.threads, self.count, self.a_count * self.steps
        d_type = self.d_dtype
        a_type = TIR_TYPE.get(self.a_dtype, self.a_dtype)
        lines = [
            f"for i in range({self.a_op.words.size // t}):\n        sA[i * {t} + tx] = A[i * {t} + tx]",
            f"for i in range({self.b_op.words.size // t}):\n        sB[i * {t} + tx] = B[i * {t} + tx]",
        ]
        if fence_proxy:
            lines.append(helper_call("sync", "fence_proxy_async"))
        if barrier:
            lines.append("T.cuda.cta_sync()")
        lines.append(f"for j in range({c}):\n        d[j] = P[tx * {c} + j]")
        lines.append(f"for j in range({ac}):\n        a[j] = AR[tx * {ac} + j]")
        block = []
        if wgmma_fence:
            block.append(call("fence"))
        if after_fence:
            block.append(after_fence)
        block += mmas if mmas is not None else self.mmas()
        if after_issue:
            block.append(after_issue)
        if commit:
            block.append(call("commit_group"))
        if wait is not None:
            block.append(call(f"wait_group_{wait}", "T.address_of(d[0])"))
        if guard:
            lines.append(f"if {guard}:\n        " + "\n        ".join(block))
        else:
            lines += block
        if after_wait:
            lines.append(after_wait)
        lines.append(f"for j in range({c}):\n        D[tx * {c} + j] = d[j]")
        body = "\n    ".join(lines)
        return f"""
@T.prim_func
def k(A: T.Buffer(({self.a_op.words.size},), "uint32"), B: T.Buffer(({self.b_op.words.size},), "uint32"),
      P: T.Buffer(({t * c},), "{d_type}"), AR: T.Buffer(({t * ac},), "{a_type}"), D: T.Buffer(({t * c},), "{d_type}")):
    T.device_entry()
    tx = T.thread_id([{t}])
    wg = tx // 128
    sA = T.alloc_shared(({self.a_op.words.size},), "uint32", align=1024)
    sB = T.alloc_shared(({self.b_op.words.size},), "uint32", align=1024)
    d = T.alloc_local(({c},), "{d_type}")
    a = T.alloc_local(({ac},), "{a_type}")
    {body}
"""

    def inputs(self):
        return {
            "A": self.a_op.words,
            "B": self.b_op.words,
            "P": self.preload.ravel(),
            "AR": self.a_regs.ravel(),
        }

    def run(self, **switches):
        out = sim.run(parse(self.source(**switches)), self.inputs())["D"]
        return out.reshape(self.threads, self.count)


def check(gemm, **switches):
    np.testing.assert_array_equal(gemm.run(**switches), gemm.expected)


# --- products equal numpy ---


@pytest.mark.parametrize(
    "a_dtype, b_dtype, d_dtype, n",
    [
        ("bfloat16", None, "float32", 64),
        ("float16", None, "float32", 128),
        ("float16", None, "float16", 32),
        ("tf32", None, "float32", 24),
        ("e4m3", None, "float32", 40),
        ("e4m3", "e5m2", "float16", 16),
        ("int8", None, "int32", 48),
        ("uint8", "int8", "int32", 24),
    ],
)
def test_ss_product_equals_numpy_for_every_kind(a_dtype, b_dtype, d_dtype, n):
    check(Gemm(n=n, steps=2, a_dtype=a_dtype, b_dtype=b_dtype, d_dtype=d_dtype))


@pytest.mark.parametrize("mode", ["none", "32B", "64B", "128B"])
@pytest.mark.parametrize("a_major, b_major", [("K", "K"), ("MN", "K"), ("K", "MN"), ("MN", "MN")])
def test_every_swizzle_and_majorness_of_16_bit_operands(mode, a_major, b_major):
    # N = 64: an MN-major 128B atom row is 64 bf16 wide
    check(Gemm(n=64, steps=2, a_dtype="bfloat16", a=(a_major, mode), b=(b_major, mode)))


@pytest.mark.parametrize("mode", ["none", "32B", "64B", "128B"])
@pytest.mark.parametrize("dtype", ["tf32", "e4m3", "int8"])
def test_every_swizzle_of_k_major_32_and_8_bit_operands(mode, dtype):
    check(
        Gemm(
            n=32,
            steps=2,
            a_dtype=dtype,
            d_dtype="int32" if dtype == "int8" else "float32",
            a=("K", mode),
            b=("K", mode),
        )
    )


@pytest.mark.parametrize(
    "a_dtype, d_dtype, b",
    [
        ("float16", "float32", ("K", "128B")),
        ("bfloat16", "float32", ("MN", "64B")),
        ("tf32", "float32", ("K", "32B")),
        ("int8", "int32", ("K", "none")),
        ("e5m2", "float16", ("K", "64B")),
    ],
)
def test_rs_reads_a_from_the_threads_registers(a_dtype, d_dtype, b):
    check(Gemm(n=32, steps=2, a_dtype=a_dtype, d_dtype=d_dtype, b=b, rs=True))


def test_a_chain_over_several_groups_accumulates_in_issue_order():
    gemm = Gemm(n=16, steps=4)
    m = gemm.mmas()
    commit = call("commit_group")
    # group 0 = step 0, group 1 = steps 1-2, then step 3 uncommitted until the source's own commit
    check(gemm, mmas=[m[0], commit, m[1], m[2], commit, call("wait_group_1", "T.address_of(d[0])"), m[3]])


def test_scale_d_zero_overwrites_d():
    check(Gemm(n=16, steps=2, accumulate=False))


def test_two_warpgroups_each_issue_their_own_rows():
    check(Gemm(n=32, steps=2, warpgroups=2, a=("K", "64B")))
    check(Gemm(n=64, steps=2, warpgroups=2, a=("MN", "128B"), b=("MN", "128B")))  # a 128B MN atom: 64 bf16


def test_f16_accumulator_rounds_once_per_instruction():
    gemm = Gemm(n=16, steps=2, d_dtype="float16")
    gemm.av[:] = 0
    gemm.av[:, [0, 16]] = 1  # the first k of each instruction
    gemm.bv[:] = 0
    gemm.bv[:, [0, 16]] = np.float16(2.0**-11)  # half an f16 ulp of 1: each step's 1 + 2^-11 rounds to 1 (ties to even)
    gemm.a_op = Operand(gemm.av, "K", "128B", wgmma_desc)
    gemm.b_op = Operand(gemm.bv, "K", "128B", wgmma_desc)
    gemm.preload[:] = 1
    out = gemm.run()
    assert (out == np.float16(1)).all()  # rounded once at the end it would be 1 + 2^-10, which f16 holds


def test_tf32_operands_lose_their_13_low_mantissa_bits():
    gemm = Gemm(n=8, steps=1, a_dtype="tf32", accumulate=False)
    low = np.float32(1 + 2.0**-20)  # a mantissa bit below tf32's 10: the tf32 datapath reads 1.0
    gemm.av[:] = 0
    gemm.av[:, 0] = low
    gemm.bv[:] = 0
    gemm.bv[:, 0] = 3
    gemm.a_op = Operand(gemm.av, "K", "128B", wgmma_desc)
    gemm.b_op = Operand(gemm.bv, "K", "128B", wgmma_desc)
    assert (gemm.run() == np.float32(3)).all()  # not 3 + 3 * 2^-20, which float32 holds


# --- a broken decoder is caught ---


def test_a_broken_accumulator_fragment_is_caught(monkeypatch):
    gemm = Gemm(n=16, steps=1)
    right = wgmma.accumulator_fragment

    def rows_swapped(n):  # the two 8-row halves of each warp exchanged
        rows, cols = right(n)
        return rows ^ 8, cols

    monkeypatch.setattr(wgmma, "accumulator_fragment", rows_swapped)
    assert not np.array_equal(gemm.run(), gemm.expected)


def test_a_broken_a_fragment_is_caught(monkeypatch):
    gemm = Gemm(n=16, steps=1, rs=True)
    right = wgmma.operand_a_fragment
    monkeypatch.setattr(wgmma, "operand_a_fragment", lambda e: (right(e)[0], right(e)[1] ^ 1))
    assert not np.array_equal(gemm.run(), gemm.expected)


def test_a_broken_swizzle_decoding_is_caught(monkeypatch):
    gemm = Gemm(n=64, steps=2, a=("K", "128B"), b=("K", "128B"))
    check(gemm)
    monkeypatch.setattr(wgmma, "_SWIZZLES", {0: "none", 1: "32B", 2: "64B", 3: "128B"})  # codes 1 and 3 swapped
    with pytest.raises(AssertionError):  # every address stays inside the tiles: only the values show it
        check(gemm)


# --- async groups and races ---


def test_reading_d_before_the_wait_is_a_race():
    gemm = Gemm(n=16, steps=1)
    with pytest.raises(DataRace, match=r"registers d\[0\] of thread 0: ordinary code reads them .*accumulator D"):
        gemm.run(after_issue="D[tx] = d[0]")


def test_writing_d_before_the_wait_is_a_race():
    gemm = Gemm(n=16, steps=1)
    with pytest.raises(DataRace, match=r"ordinary code writes them"):
        gemm.run(after_issue=f"d[3] = T.{gemm.d_dtype}(0)")


def test_a_wgmma_without_its_commit_and_wait_is_still_pending():
    gemm = Gemm(n=16, steps=1)
    with pytest.raises(DataRace, match="reads them"):
        gemm.run(commit=False)  # the wait retires committed groups only: D's registers stay pending
    with pytest.raises(SimulationError, match="pending"):
        gemm.run(wait=None, after_wait="")  # never waited: D stored after... raises at the read first
    src = gemm.source(wait=None).replace(f"for j in range({gemm.count}):\n        D[tx * {gemm.count} + j] = d[j]", "")
    with pytest.raises(SimulationError, match=r"CTA exits while 1 wgmma\.mma_async are pending"):
        sim.run(parse(src), gemm.inputs())


def test_writing_d_after_the_fence_is_a_race():
    gemm = Gemm(n=16, steps=1)
    with pytest.raises(DataRace, match=r"wrote them after the warpgroup's last wgmma.fence.*as D"):
        gemm.run(after_fence=f"d[0] = T.{gemm.d_dtype}(1)")


def test_writing_a_registers_after_the_fence_or_while_pending_is_a_race():
    gemm = Gemm(n=16, steps=1, rs=True)
    with pytest.raises(DataRace, match="as A"):
        gemm.run(after_fence="a[1] = T.float16(1)")
    with pytest.raises(DataRace, match="its A operand"):
        gemm.run(after_issue="a[1] = T.float16(1)")


def test_a_wgmma_needs_a_fence_first():
    with pytest.raises(SimulationError, match=r"before any wgmma\.fence"):
        Gemm(n=16, steps=1).run(wgmma_fence=False)


def test_part_of_a_warpgroup_is_refused_naming_the_warps():
    gemm = Gemm(n=16, steps=1)
    with pytest.raises(SimulationError, match=r"warpgroup 0 reaches it with warps \[0, 1\] only; warps \[2, 3\]"):
        gemm.run(guard="tx < 64")
    with pytest.raises(SimulationError, match=r"warp 0 reaches it with only some lanes"):
        gemm.run(guard="tx != 5")


def test_overwriting_a_shared_operand_while_pending_is_a_race():
    gemm = Gemm(n=16, steps=1)
    with pytest.raises(DataRace, match=r"a store by thread \d+ while the wgmma.mma_async.* still reads it"):
        gemm.run(after_issue="sB[tx] = T.uint32(0)")
    check(gemm, after_wait="sB[tx] = T.uint32(0)")  # after the wait the warpgroup may overwrite it


def test_an_operand_written_without_fence_proxy_async_or_barrier_is_a_race():
    gemm = Gemm(n=16, steps=1)
    with pytest.raises(DataRace, match=r"no fence\.proxy\.async"):
        gemm.run(fence_proxy=False)
    with pytest.raises(DataRace, match="with no barrier"):
        gemm.run(barrier=False)


def test_wait_group_n_retires_all_but_the_newest_n_groups():
    gemm = Gemm(n=16, steps=2)
    first, second = gemm.mmas()
    issue = [
        first,
        call("commit_group"),
        second.replace("T.address_of(d[0])", "T.address_of(e[0])").replace("T.uint32(1))", "T.uint32(0))"),
        call("commit_group"),
        call("wait_group_1", "T.address_of(d[0])"),
    ]
    src = gemm.source(mmas=issue, commit=False, wait=None)
    src = src.replace(
        "    a = T.alloc_local(", f'    e = T.alloc_local(({gemm.count},), "float32")\n    a = T.alloc_local(', 1
    )
    reads_d = src.replace(
        "    for j in range(8):\n        D[tx", "    D[tx * 8] = d[0]\n    for j in range(8):\n        D[tx", 1
    )
    with pytest.raises(SimulationError, match="CTA exits while 1 wgmma"):  # d readable; e still pending at exit
        sim.run(parse(reads_d), gemm.inputs())
    reads_e = src.replace(
        "    for j in range(8):\n        D[tx", "    D[tx * 8] = e[0]\n    for j in range(8):\n        D[tx", 1
    )
    with pytest.raises(DataRace, match=r"registers e\[0\]"):
        sim.run(parse(reads_e), gemm.inputs())


def producer_consumer(gemm, consumer):
    """Two warpgroups: warpgroup 0 runs ``consumer`` (its wgmma, wait and mbarrier arrive, in some order) and stores
    D; warpgroup 1 waits on the mbarrier, then overwrites B's tile (a producer refilling a stage)."""
    c = gemm.count
    words_a, words_b = gemm.a_op.words.size, gemm.b_op.words.size
    arrive = helper_call("mbarrier", "arrive", "T.address_of(bars[0])")
    consumer = [line.replace("ARRIVE", arrive) for line in consumer]
    return f"""
@T.prim_func
def k(A: T.Buffer(({words_a},), "uint32"), B: T.Buffer(({words_b},), "uint32"), D: T.Buffer(({128 * c},), "float32")):
    T.device_entry()
    tx = T.thread_id([256])
    wg = tx // 128
    sA = T.alloc_shared(({words_a},), "uint32", align=1024)
    sB = T.alloc_shared(({words_b},), "uint32", align=1024)
    bars = T.alloc_shared((1,), "uint64")
    d = T.alloc_local(({c},), "float32")
    if tx == 0:
        {helper_call("mbarrier", "init", "T.address_of(bars[0])", u32(128))}
    for i in range({words_a // 256}):
        sA[i * 256 + tx] = A[i * 256 + tx]
    for i in range({words_b // 256}):
        sB[i * 256 + tx] = B[i * 256 + tx]
    {helper_call("sync", "fence_proxy_async")}
    T.cuda.cta_sync()
    if wg == 0:
        {call("fence")}
        {gemm.mmas()[0].replace("wg * ", "0 * ")}
        {call("commit_group")}
        {(chr(10) + "        ").join(consumer)}
        for j in range({c}):
            D[tx * {c} + j] = d[j]
    if wg == 1:
        {helper_call("mbarrier", "wait", "T.address_of(bars[0])", u32(0))}
        sB[tx - 128] = T.uint32(0)
"""


def test_a_producer_refills_after_the_consumers_wait_and_arrive_without_a_race():
    gemm = Gemm(n=16, steps=1, accumulate=False)
    wait = call("wait_group_0", "T.address_of(d[0])")
    out = sim.run(parse(producer_consumer(gemm, [wait, "ARRIVE"])), {"A": gemm.a_op.words, "B": gemm.b_op.words})
    np.testing.assert_array_equal(out["D"].reshape(128, -1), gemm.expected)
    with pytest.raises(DataRace, match=r"store by thread 128 while the wgmma\.mma_async.* still reads it"):
        sim.run(parse(producer_consumer(gemm, ["ARRIVE", wait])), {"A": gemm.a_op.words, "B": gemm.b_op.words})
