"""Issue 22, must-hold 3 and the Hopper facts (``hw/wgmma.py``, ``hw/smem_descriptor.py`` with ``family="wgmma"``,
``hw/constructors.py``): the wgmma descriptor bits derived from an operand's layout equal those of an independent
encoder written from the ISA's "Matrix Descriptor Format" table (``tests/oracles/wgmma_isa.py``), and the ISA's
canonical reading of those bits finds exactly the elements the layout places, for every (dtype x majorness x swizzle)
Hopper allows, several shapes, every K step; what Hopper forbids is refused naming the operand and the rule; the
register fragments equal an enumeration written from the ISA's fragment figures."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from tirx_layout import (
    ComposeLayout,
    S,
    SwizzleLayout,
    TCol,
    TileLayout,
    TLane,
    laneid,
    mma_shared_layout,
    tid_in_wg,
    wid_in_wg,
)
from tirx_layout.hw.constructors import (
    wg_local_layout,
    wgmma_accumulator_check,
    wgmma_accumulator_layout,
    wgmma_operand_a_check,
    wgmma_operand_a_layout,
)
from tirx_layout.hw.smem_descriptor import SharedDescriptor, advance_k, shared_matrix_descriptor
from tirx_layout.hw.wgmma import (
    ACCUMULATOR_DTYPES,
    OPERAND_DTYPES,
    WGMMA_M,
    WGMMA_SHAPES,
    WgmmaInstruction,
    k_per_instruction,
    valid_n,
    wgmma_kind,
)

from oracles import mma_isa, wgmma_isa
from oracles.optional import pycute

DTYPES = tuple(wgmma_isa.ELEMENT_BYTES)
MODES = ("none", "32B", "64B", "128B")
START = 5 * 1024  # a shared address on every swizzle repeat


def hopper_allows(dtype: str, major: str, mode: str) -> bool:
    """The ISA's wgmma rules: every swizzle mode of the descriptor table, MN-major only where imm-trans exists."""
    return mode in wgmma_isa.SWIZZLE_CODE and (major == "K" or wgmma_isa.may_transpose(dtype))


def shapes(dtype: str, major: str, mode: str):
    """(rows, K) operands: one atom, several along the rows, several along K, several along both."""
    element = wgmma_isa.ELEMENT_BYTES[dtype]
    k_step = wgmma_isa.K_OF[dtype]
    width = mma_isa.ROW_BYTES[mode]
    if major == "K":
        atom_k = max(width // element, k_step)
        return [(8, atom_k), (64, atom_k), (8, 2 * atom_k), (24, 3 * atom_k)]
    line = width // element
    return [(line, k_step), (2 * line, k_step), (line, 3 * k_step), (2 * line, 2 * k_step)]


ALLOWED = [c for c in itertools.product(DTYPES, ("K", "MN"), MODES) if hopper_allows(*c)]


@pytest.mark.parametrize(("dtype", "major", "mode"), ALLOWED)
def test_wgmma_descriptor_bits_equal_the_isa_encoder_and_read_the_layout(dtype, major, mode):
    element = wgmma_isa.ELEMENT_BYTES[dtype]
    k_step = wgmma_isa.K_OF[dtype]
    for rows, cols in shapes(dtype, major, mode):
        layout = mma_shared_layout(dtype, mode, (rows, cols), major=major)
        derived = shared_matrix_descriptor(layout, (rows, cols), dtype, START, operand="B", family="wgmma")
        # The same layout logic serves tcgen05: the fields are those of the tcgen05 derivation.
        assert derived == shared_matrix_descriptor(layout, (rows, cols), dtype, START, operand="B")
        r, k = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
        placed = np.asarray(layout.apply(r, k, shape=[rows, cols])["m"]) * element + START
        assert len(derived.k_offsets) == cols // k_step
        for step in range(cols // k_step):
            bits = advance_k(derived, step).encode(family="wgmma")
            fields = wgmma_isa.decode(bits)
            assert fields["swizzle"] == mode and fields["base_offset"] == 0
            assert bits == wgmma_isa.descriptor(fields["start"], fields["lbo"], fields["sbo"], mode)
            rr, kk = np.meshgrid(np.arange(rows), np.arange(k_step), indexing="ij")
            offsets = mma_isa.canonical_byte(major, mode, element, fields["lbo"], fields["sbo"], rr, kk)
            read = mma_isa.swizzled(fields["start"] + offsets, mode)
            np.testing.assert_array_equal(read, placed[:, step * k_step : (step + 1) * k_step], err_msg=str(step))


def canonical_with_gaps(dtype: str, major: str, mode: str):
    """An operand in the ISA's canonical layout (the CuTe forms of the facts note §4.2) whose LBO and SBO are twice
    the packed distances, two core matrices / atoms in every direction the offsets step: (layout, shape, LBO, SBO).
    The offsets can then only come from reading the layout, and the canonical reading of the bits must find it."""
    element = wgmma_isa.ELEMENT_BYTES[dtype]
    t = 16 // element
    width, k_step = mma_isa.ROW_BYTES[mode], wgmma_isa.K_OF[dtype]
    line = width // element
    if major == "K":
        rows = 16
        if mode == "none":  # ((8,m),(T,2k)):((1T,SBO),(1,LBO)); K covers 2 steps
            cols = 2 * k_step
            lbo, sbo = 2 * (rows // 8) * 128, 2 * 128
            tile = S[(rows // 8, 8, cols // t, t) : (sbo // element, t, lbo // element, 1)]
        else:  # ((8,m),(T,2k)):((W·T,SBO),(1,T)); K is one atom row, LBO unused
            cols = max(line, k_step)
            lbo, sbo = 16, 2 * 8 * width
            tile = S[(rows // 8, 8, cols) : (sbo // element, line, 1)]
    else:
        cols = 2 * k_step
        if mode == "none":  # ((T,1,m),(8,k)):((1,T,SBO),(1T,LBO))
            rows = 2 * t
            lbo, sbo = 2 * 2 * 128, 2 * (cols // 8) * 128
            tile = S[(rows // t, t, cols // 8, 8) : (sbo // element, 1, lbo // element, t)]
        else:  # ((T,W,m),(8,k)):((1,T,LBO),(W·T,SBO))
            rows = 2 * line
            lbo, sbo = 2 * (cols // 8) * 8 * width, 2 * 8 * width
            tile = S[(rows // line, line, cols // 8, 8) : (lbo // element, 1, sbo // element, line)]
    layout = TileLayout(tile)
    if mode != "none":
        layout = ComposeLayout(SwizzleLayout(t.bit_length() - 1, {"32B": 1, "64B": 2, "128B": 3}[mode], 3), layout)
    return layout, (rows, cols), lbo, sbo


@pytest.mark.parametrize(("dtype", "major", "mode"), ALLOWED)
def test_lbo_and_sbo_mean_what_the_wgmma_strides_text_says(dtype, major, mode):
    layout, (rows, cols), lbo, sbo = canonical_with_gaps(dtype, major, mode)
    element, k_step = wgmma_isa.ELEMENT_BYTES[dtype], wgmma_isa.K_OF[dtype]
    derived = shared_matrix_descriptor(layout, (rows, cols), dtype, START, operand="A", family="wgmma")
    assert (derived.lbo, derived.sbo, derived.major, derived.swizzle) == (lbo, sbo, major, mode)
    r, k = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    placed = np.asarray(layout.apply(r, k, shape=[rows, cols])["m"]) * element + START
    for step in range(cols // k_step):
        fields = wgmma_isa.decode(advance_k(derived, step).encode(family="wgmma"))
        rr, kk = np.meshgrid(np.arange(rows), np.arange(k_step), indexing="ij")
        offsets = mma_isa.canonical_byte(major, mode, element, fields["lbo"], fields["sbo"], rr, kk)
        read = mma_isa.swizzled(fields["start"] + offsets, mode)
        np.testing.assert_array_equal(read, placed[:, step * k_step : (step + 1) * k_step], err_msg=str(step))


# Hand-computed from the "Matrix Descriptor Format" table (docs/notes/wgmma-facts.md §4 worked values).
WORKED = [
    # bf16 K-major 128B, 128x64 at 0x400: start 0x40, LBO "assumed 1", SBO 1024 (64), swizzle 1; step 3: +96 bytes
    ("bfloat16", "K", "128B", (128, 64), 0x400, [0x4000004000010040, 0x4000004000010042, 0, 0x4000004000010046]),
    # f16 MN-major 64B, 64x32 at 0: LBO 2048 (128), SBO 512 (32), swizzle 2; step 1: two 8-row K groups on
    ("float16", "MN", "64B", (64, 32), 0, [0x8000002000800000, 0x8000002000800040]),
    # int8 K-major no swizzle, 64x64 at 0: LBO 1024 (64), SBO 128 (8); step 1: two core matrices along K
    ("int8", "K", "none", (64, 64), 0, [0x0000000800400000, 0x0000000800400080]),
    # tf32 K-major 32B, 64x16 at 0: LBO 16, SBO 256 (16), swizzle 3; step 1: the next K atom, 8 row groups on
    ("float32", "K", "32B", (64, 16), 0, [0xC000001000010000, 0xC000001000010080]),
]


@pytest.mark.parametrize(("dtype", "major", "mode", "shape", "start", "values"), WORKED)
def test_the_worked_values_of_the_facts_note(dtype, major, mode, shape, start, values):
    layout = mma_shared_layout(dtype, mode, shape, major=major)
    derived = shared_matrix_descriptor(layout, shape, dtype, start, operand="A", family="wgmma")
    for step, value in enumerate(values):
        if value:
            assert advance_k(derived, step).encode(family="wgmma") == value, (step, hex(value))


def test_encode_keeps_the_tcgen05_bits_by_default_and_differs_only_where_the_isa_does():
    for mode, wgmma_code in wgmma_isa.SWIZZLE_CODE.items():
        d = SharedDescriptor(0x3F0, 0x100, 0x400, 0, mode, "K")
        tcgen05 = d.encode()
        assert tcgen05 == d.encode(family="tcgen05") == mma_isa.shared_descriptor(0x3F0, 0x100, 0x400, mode)
        wgmma = d.encode(family="wgmma")
        assert wgmma == wgmma_isa.descriptor(0x3F0, 0x100, 0x400, mode)
        # Bits 0-45 agree; tcgen05 adds bit 46 and writes its 3-bit swizzle code (the wgmma code << 1) at 61-63.
        assert wgmma & (1 << 46) - 1 == tcgen05 & (1 << 46) - 1
        assert tcgen05 >> 46 & 7 == 1 and wgmma >> 46 & 7 == 0
        assert tcgen05 >> 61 == {0: 0, 1: 2, 2: 4, 3: 6}[wgmma_code] and wgmma >> 62 == wgmma_code
    base = SharedDescriptor(0, 16, 1024, 3, "128B", "K")
    assert base.encode(family="wgmma") == wgmma_isa.descriptor(0, 16, 1024, "128B", base_offset=3)


def test_encode_refusals():
    with pytest.raises(ValueError, match=r"wgmma descriptor.s swizzle .*Hopper has no 128B swizzle with 32-byte atoms"):
        SharedDescriptor(0, 16, 512, 0, "128B_base32B", "MN").encode(family="wgmma")
    with pytest.raises(ValueError, match=r"family must be one of \('tcgen05', 'wgmma'\) .* got 'hopper'"):
        SharedDescriptor(0, 16, 512, 0, "none", "K").encode(family="hopper")
    with pytest.raises(ValueError, match="family must be one of"):
        shared_matrix_descriptor(mma_shared_layout("float16", "none", (8, 16)), (8, 16), "float16", family="sm90")


def _tf32_mn_major_unswizzled() -> TileLayout:
    """An 8x8 tf32 operand in the ISA's MN-major no-swizzle canonical layout: core matrices of 4 rows (16 bytes) x
    8 K rows, two along the rows 32 elements apart."""
    return TileLayout(S[(2, 4, 8) : (32, 1, 4)])


@pytest.mark.parametrize(
    ("layout", "shape", "dtype", "message"),
    [
        (_tf32_mn_major_unswizzled(), (8, 8), "float32", "B is MN-major float32: wgmma reads MN-major operands only"),
        (
            mma_shared_layout("float8_e4m3fn", "128B", (128, 32), major="MN"),
            (128, 32),
            "float8_e4m3fn",
            "B is MN-major float8_e4m3fn: wgmma reads MN-major operands only for 16-bit types",
        ),
        (
            mma_shared_layout("uint8", "none", (16, 32), major="MN"),
            (16, 32),
            "uint8",
            "store B K-major",
        ),
        (
            mma_shared_layout("float32", "128B_base32B", (32, 8), major="MN"),
            (32, 8),
            "float32",
            "B's layout is MN-major 128B-swizzled with 32-byte atoms: wgmma .Hopper. has no 128B swizzle with 32-byte",
        ),
    ],
)
def test_what_hopper_forbids_is_refused_naming_the_operand_and_the_rule(layout, shape, dtype, message):
    with pytest.raises(ValueError, match=message):
        shared_matrix_descriptor(layout, shape, dtype, operand="B", family="wgmma")


def test_tcgen05_still_reads_what_hopper_refuses():
    """The refusals above are Hopper's alone: the default family keeps accepting the same layouts."""
    layout = mma_shared_layout("float8_e4m3fn", "128B", (128, 32), major="MN")
    assert shared_matrix_descriptor(layout, (128, 32), "float8_e4m3fn").major == "MN"


# ---- the instruction -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
def test_valid_n_and_k_follow_the_isa_lists(dtype):
    kind = wgmma_kind(dtype, dtype)
    assert list(valid_n(kind)) == wgmma_isa.valid_n(dtype)
    for n in range(0, 265, 8):
        d = sorted(wgmma_isa.D_TYPES[dtype])[0]
        if n in wgmma_isa.valid_n(dtype):
            instruction = WgmmaInstruction(dtype, dtype, d, n=n)
            assert instruction.k == wgmma_isa.K_OF[dtype] and instruction.shape == f"m64n{n}k{wgmma_isa.K_OF[dtype]}"
        else:
            with pytest.raises(ValueError, match=f"takes N in .*, got N={n}"):
                WgmmaInstruction(dtype, dtype, d, n=n)


def test_one_shape_record_per_kind_all_m64_k_32_bytes():
    assert set(WGMMA_SHAPES) == set(OPERAND_DTYPES) == set(ACCUMULATOR_DTYPES)
    assert WGMMA_M == 64 and {shape.m for shape in WGMMA_SHAPES.values()} == {64}
    for kind, shape in WGMMA_SHAPES.items():
        assert shape.kind == kind
        for dtype in OPERAND_DTYPES[kind]:
            assert shape.k == k_per_instruction(dtype) == wgmma_isa.K_OF[dtype]
            assert shape.k * wgmma_isa.ELEMENT_BYTES[dtype] == 32
    with pytest.raises(ValueError, match=r"unknown wgmma kind 'f8'; expected one of \['bf16', 'f16'"):
        valid_n("f8")


@pytest.mark.parametrize(("a", "b"), list(itertools.product(DTYPES, DTYPES)))
def test_dtype_pairs_and_accumulators(a, b):
    same_kind = a == b or {a, b} <= {"float8_e4m3fn", "float8_e5m2"} or {a, b} <= {"int8", "uint8"}
    for d in ("float32", "float16", "int32"):
        if same_kind and d in wgmma_isa.D_TYPES[a]:
            assert WgmmaInstruction(a, b, d, n=64).d_dtype == d
        else:
            with pytest.raises(ValueError, match=r"no wgmma kind multiplies|accumulates into"):
                WgmmaInstruction(a, b, d, n=64)


@pytest.mark.parametrize("dtype", DTYPES)
def test_transposes_only_where_the_syntax_has_imm_trans(dtype):
    d = sorted(wgmma_isa.D_TYPES[dtype])[0]
    for a_major, b_major in (("MN", "K"), ("K", "MN"), ("MN", "MN")):
        if wgmma_isa.may_transpose(dtype):
            instruction = WgmmaInstruction(dtype, dtype, d, n=32, a_major=a_major, b_major=b_major)
            assert instruction.transpose == (int(a_major == "MN"), int(b_major == "MN"))
        else:
            side = "A" if a_major == "MN" else "B"
            with pytest.raises(ValueError, match=f"{side} is MN-major {dtype}: wgmma reads MN-major operands only"):
                WgmmaInstruction(dtype, dtype, d, n=32, a_major=a_major, b_major=b_major)
    with pytest.raises(ValueError, match="A from registers is K-major only"):
        WgmmaInstruction("float16", "float16", "float32", n=32, a_major="MN", a_in_registers=True)


def test_register_counts_and_ptx_spelling():
    f32 = WgmmaInstruction("float16", "float16", "float32", n=256)
    f16 = WgmmaInstruction("float16", "float16", "float16", n=256)
    s32 = WgmmaInstruction("uint8", "int8", "int32", n=24)
    assert (f32.d_registers, f16.d_registers, s32.d_registers) == (128, 64, 12)
    assert (f32.d_elements, f16.d_elements) == (128, 128)
    fp8 = WgmmaInstruction("float8_e4m3fn", "float8_e5m2", "float16", n=8, a_in_registers=True)
    tf32 = WgmmaInstruction("float32", "float32", "float32", n=8)
    assert (f16.a_elements, fp8.a_elements, tf32.a_elements) == (8, 16, 4)
    assert s32.operation == "wgmma.mma_async.sync.aligned.m64n24k32.s32.u8.s8"
    assert fp8.operation == "wgmma.mma_async.sync.aligned.m64n8k32.f16.e4m3.e5m2"
    assert tf32.operation == "wgmma.mma_async.sync.aligned.m64n8k8.f32.tf32.tf32"
    assert (f32.has_imm_trans, f32.has_imm_scale) == (True, True)
    assert (fp8.has_imm_trans, fp8.has_imm_scale, tf32.has_imm_trans) == (False, True, False)
    assert (s32.has_imm_trans, s32.has_imm_scale) == (False, False)
    with pytest.raises(ValueError, match="a wgmma computes M = 64 rows per warpgroup, got M=128; a 128-row D takes 2"):
        WgmmaInstruction("float16", "float16", "float32", n=8, m=128)
    with pytest.raises(TypeError, match="a_in_registers must be a bool"):
        WgmmaInstruction("float16", "float16", "float32", n=8, a_in_registers=1)
    with pytest.raises(ValueError, match="majorness must be 'K' or 'MN', got 'M'"):
        WgmmaInstruction("float16", "float16", "float32", n=8, a_major="M")


# ---- register fragments --------------------------------------------------------------------------------------


def _thread_slot(layout, rows: int, cols: int):
    r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    places = layout.apply(r, c, shape=[rows, cols])
    thread = places["laneid"] + 32 * places["wid_in_wg"] + 128 * places.get("wgid", 0)
    return np.asarray(thread), np.asarray(places["m"])


@pytest.mark.parametrize("dtype", ["float32", "float16", "int32"])
@pytest.mark.parametrize("n", [8, 16, 24, 64, 200, 256])
@pytest.mark.parametrize("warpgroups", [1, 2])
def test_accumulator_fragment_equals_the_isa_enumeration(dtype, n, warpgroups):
    layout = wgmma_accumulator_layout(n, dtype, warpgroups)
    thread, slot = _thread_slot(layout, 64 * warpgroups, n)
    seen = np.zeros((64 * warpgroups, n), int)
    for t, i in itertools.product(range(128 * warpgroups), range(n // 2)):
        row, col = wgmma_isa.accumulator_element(t % 128, i)
        row += 64 * (t // 128)
        assert (thread[row, col], slot[row, col]) == (t, i), (t, i, row, col)
        seen[row, col] += 1
    assert (seen == 1).all()
    assert wgmma_accumulator_check(layout, (64 * warpgroups, n), dtype) == warpgroups


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("steps", [1, 2, 4])
@pytest.mark.parametrize("warpgroups", [1, 3])
def test_operand_a_fragment_equals_the_isa_enumeration(dtype, steps, warpgroups):
    k_step = wgmma_isa.K_OF[dtype]
    per_thread = wgmma_isa.a_elements_per_thread(dtype)
    layout = wgmma_operand_a_layout(k_step * steps, dtype, warpgroups)
    thread, slot = _thread_slot(layout, 64 * warpgroups, k_step * steps)
    for t, s, i in itertools.product(range(128 * warpgroups), range(steps), range(per_thread)):
        row, col = wgmma_isa.a_element(t % 128, i, dtype)
        row, col = row + 64 * (t // 128), col + s * k_step
        assert (thread[row, col], slot[row, col]) == (t, s * per_thread + i), (t, s, i)
    assert wgmma_operand_a_check(layout, (64 * warpgroups, k_step * steps), dtype) == warpgroups


# CuTe's thread-value layouts of the same fragments (mma_traits_sm90_gmma.hpp: CLayout_64xN, ALayout_64x8/16/32),
# written out here as (shape, stride) trees over (thread, value) -> m + 64 * column: a second, upstream oracle.
CUTE_A = {
    4: (((4, 8, 4), (2, 2)), ((64, 1, 16), (8, 256))),
    2: (((4, 8, 4), (2, 2, 2)), ((128, 1, 16), (64, 8, 512))),
    1: (((4, 8, 4), (4, 2, 2)), ((256, 1, 16), (64, 8, 1024))),
}


@pytest.mark.parametrize("n", [8, 64, 256])
def test_accumulator_fragment_equals_cutes_clayout(n):
    tv = pycute.Layout(((4, 8, 4), (2, 2, n // 8)), ((128, 1, 16), (64, 8, 512)))
    thread, slot = _thread_slot(wgmma_accumulator_layout(n), 64, n)
    for t, v in itertools.product(range(128), range(n // 2)):
        row, col = tv(t, v) % 64, tv(t, v) // 64
        assert (thread[row, col], slot[row, col]) == (t, v)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "int8"])
def test_operand_a_fragment_equals_cutes_alayout(dtype):
    shape, stride = CUTE_A[wgmma_isa.ELEMENT_BYTES[dtype]]
    tv = pycute.Layout(shape, stride)
    k = wgmma_isa.K_OF[dtype]
    thread, slot = _thread_slot(wgmma_operand_a_layout(k, dtype), 64, k)
    for t, v in itertools.product(range(128), range(wgmma_isa.a_elements_per_thread(dtype))):
        row, col = tv(t, v) % 64, tv(t, v) // 64
        assert (thread[row, col], slot[row, col]) == (t, v)


def test_the_worked_elements_of_the_facts_note():
    # facts §3.1: thread 36 (warp 1, lane 4) holds d_2 at (25, 0); element (17, 2) is d_0 of thread 37
    d = wgmma_accumulator_layout(64)
    assert d.apply(25, 0, shape=[64, 64]) == {"wid_in_wg": 1, "laneid": 4, "m": 2}
    assert d.apply(17, 2, shape=[64, 64]) == {"wid_in_wg": 1, "laneid": 5, "m": 0}
    assert wgmma_isa.accumulator_element(36, 2) == (25, 0) and wgmma_isa.accumulator_element(37, 0) == (17, 2)


def test_first_warpgroup_moves_the_fragment_to_later_warpgroups():
    """A producer/consumer kernel: warpgroup 0 loads, warpgroups 1 and 2 hold D's rows 0-63 and 64-127."""
    layout = wgmma_accumulator_layout(16, warpgroups=2, first_warpgroup=1)
    thread, slot = _thread_slot(layout, 128, 16)
    for t, i in itertools.product(range(256), range(8)):
        row, col = wgmma_isa.accumulator_element(t % 128, i)
        assert (thread[row + 64 * (t // 128), col], slot[row + 64 * (t // 128), col]) == (128 + t, i)
    assert wgmma_accumulator_check(layout, (128, 16)) == 2
    a = wgmma_operand_a_layout(32, "bfloat16", first_warpgroup=2)
    assert a.apply(0, 0, shape=[64, 32])["wgid"] == 2
    assert wgmma_operand_a_check(a, (64, 32), "bfloat16") == 1


def test_the_recogniser_accepts_the_fragment_written_on_other_thread_axes():
    """The same placement written with ``tid_in_wg`` (thread = 32 warp + lane) is the same fragment."""
    same = TileLayout(S[(4, 2, 8, 4, 4, 2) : (32 @ tid_in_wg, 2, 4 @ tid_in_wg, 4, 1 @ tid_in_wg, 1)])
    assert wgmma_accumulator_check(same, (64, 32), "float32") == 1


def test_the_recogniser_names_the_first_misplaced_element():
    # Rows l/4 and l/4 + 8 swapped with the two columns of a pair: element (0, 1) moves from slot 1 to slot 2.
    swapped = TileLayout(S[(4, 2, 8, 4, 4, 2) : (1 @ wid_in_wg, 1, 4 @ laneid, 4, 1 @ laneid, 2)])
    row, col = 0, 1
    thread_isa = next(t for t in range(128) for i in range(16) if wgmma_isa.accumulator_element(t, i) == (row, col))
    assert thread_isa == 0
    with pytest.raises(
        ValueError,
        match=r"is not the wgmma accumulator fragment of a 64x32 float32 D: element \(0, 1\) sits on thread 0 slot 2; "
        r"the ISA puts it on thread 0 slot 1",
    ):
        wgmma_accumulator_check(swapped, (64, 32), "float32")
    with pytest.raises(
        ValueError, match=r"element \(0, 2\) sits on thread 0 slot 2; the ISA puts it on thread 1 slot 0"
    ):
        wgmma_accumulator_check(wg_local_layout(8, 64), (64, 8))


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: wgmma_accumulator_layout(12), "N is 8..256 in steps of 8, got 12"),
        (lambda: wgmma_accumulator_layout(264), "got 264"),
        (lambda: wgmma_accumulator_layout(64, "bfloat16"), "got bfloat16"),
        (lambda: wgmma_accumulator_layout(64, warpgroups=9), "must fit the 8 warpgroups .*got warpgroups=9"),
        (lambda: wgmma_operand_a_layout(16, "float16", 2, first_warpgroup=7), "first_warpgroup=7"),
        (lambda: wgmma_accumulator_layout(64, first_warpgroup=-1), "first_warpgroup=-1"),
        (lambda: wgmma_operand_a_layout(24, "float16"), "k must be a positive multiple of 16 .*got 24"),
        (lambda: wgmma_operand_a_layout(32, "int32"), "A in registers is one of .*got int32"),
        (lambda: wgmma_accumulator_check(wgmma_accumulator_layout(8), (32, 8)), "D has 32 rows"),
        (
            lambda: wgmma_accumulator_check(wgmma_accumulator_layout(8), (64, 16)),
            "places 512 elements, not the 64x16",
        ),
        (
            lambda: wgmma_accumulator_check(mma_shared_layout("float32", "none", (64, 8)), (64, 8)),
            "places elements on m alone|not the wgmma accumulator fragment",
        ),
        (
            lambda: wgmma_accumulator_check(mma_shared_layout("float16", "32B", (64, 16)), (64, 16)),
            "is not a register fragment",
        ),
        (
            lambda: wgmma_accumulator_check(TileLayout(S[(64, 8) : (1 @ TLane, 1 @ TCol)]), (64, 8)),
            "places elements on TLane",
        ),
    ],
)
def test_fragment_refusals(call, message):
    with pytest.raises(ValueError, match=message):
        call()
