"""Issue 20, must-hold 2: for every (dtype, majorness, swizzle) the ISA allows, the descriptor bits derived from an
operand's layout (``hw/mma.py``) equal those of an independent encoder written from the ISA's field tables
(``tests/oracles/mma_isa.py``), and the simulator's decoding of those bits (``sim/tcgen05_mma.py``, written from the
ISA) reads exactly the elements the layout places, every element of every K step; every combination the ISA does
not allow is refused naming the operand. Layouts come from ``mma_shared_layout`` (whose documented atom order gives
the expected LBO/SBO below) and, for the ISA's own worked examples, are built here from the canonical formulas."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from tirx_layout import ComposeLayout, S, SwizzleLayout, TileLayout, mma_shared_layout
from tirx_layout.hw.mma import MmaInstruction, advance_k, instruction_descriptor, shared_matrix_descriptor
from tirx_layout.sim.tcgen05_mma import decode_shared_descriptor, operand_byte_address

from oracles import mma_isa

DTYPES = tuple(mma_isa.ELEMENT_BYTES)
MODES = ("none", "32B", "64B", "128B", "128B_base32B")
START = 3 * 1024  # a shared address on every swizzle repeat


def combinations(allowed: bool):
    for dtype, major, mode in itertools.product(DTYPES, ("K", "MN"), MODES):
        if mma_isa.isa_allows(dtype, major, mode) == allowed:
            yield dtype, major, mode


def shapes(dtype: str, major: str, mode: str):
    """(rows, K) operands: one atom, several atoms along the rows, several along K, several along both."""
    element = mma_isa.ELEMENT_BYTES[dtype]
    k_step = 32 // element
    width = mma_isa.ROW_BYTES[mode]
    if major == "K":
        atom_k = max(width // element, k_step)
        return [(8, atom_k), (32, atom_k), (8, 2 * atom_k), (24, 3 * atom_k)]
    line = width // element  # rows of one atom
    return [(line, k_step), (2 * line, k_step), (line, 3 * k_step), (2 * line, 2 * k_step)]


def expected_fields(dtype: str, major: str, mode: str, rows: int, cols: int):
    """(LBO, SBO, byte offset of each K step) of ``mma_shared_layout``'s documented order, by the ISA's meaning of
    the two offsets (facts §4.3). K-major: atoms of 8 rows x width stacked along the rows, then along K; MN-major:
    atoms of width x 8 (4) K rows stacked along K, then along the rows. A field whose direction holds a single core
    matrix or atom is never used by the hardware; the encoder writes the packed value there (and 16 for the LBO of
    a swizzled K-major operand: the ISA's "assumed 1")."""
    element = mma_isa.ELEMENT_BYTES[dtype]
    width, group = mma_isa.ROW_BYTES[mode], mma_isa.ATOM_ROWS[mode]
    k_step = 32 // element
    steps = range(cols // k_step)
    if major == "K":
        atom = 8 * width
        if mode == "none":  # core matrices (8 rows x 16 B) down the rows first
            lbo, sbo = rows // 8 * 128, 128
            return lbo, sbo, [s * 2 * lbo for s in steps]  # 32 bytes of K = two core matrices
        atom_k = width // element
        return 16, atom, [(s * k_step) // atom_k * rows * width + (s * k_step) % atom_k * element for s in steps]
    atom = group * width
    k_groups = cols // group
    if mode == "none":  # core matrices (16 B x 8 K rows) down K first: LBO along K, SBO along MN
        lbo = 128
        sbo = k_groups * 128 if rows * element > 16 else 128
        return lbo, sbo, [s * k_step // 8 * lbo for s in steps]
    sbo = atom  # K-row groups adjacent
    lbo = k_groups * atom if rows * element > width else atom
    return lbo, sbo, [s * k_step // group * sbo for s in steps]


@pytest.mark.parametrize(("dtype", "major", "mode"), list(combinations(allowed=True)))
def test_descriptor_bits_equal_the_isa_encoders_and_the_simulator_reads_the_layout(dtype, major, mode):
    element = mma_isa.ELEMENT_BYTES[dtype]
    k_step = 32 // element
    for rows, cols in shapes(dtype, major, mode):
        layout = mma_shared_layout(dtype, mode, (rows, cols), major=major)
        derived = shared_matrix_descriptor(layout, (rows, cols), dtype, START, operand="B")
        lbo, sbo, k_offsets = expected_fields(dtype, major, mode, rows, cols)
        r, k = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
        placed = np.asarray(layout.apply(r, k, shape=[rows, cols])["m"]) * element + START
        for step, offset in enumerate(k_offsets):
            bits = advance_k(derived, step).encode()
            assert bits == mma_isa.shared_descriptor(START + offset, lbo, sbo, mode), (rows, cols, step)
            fields = decode_shared_descriptor(bits)
            for row, kk in itertools.product(range(rows), range(k_step)):
                want = int(placed[row, step * k_step + kk])
                assert operand_byte_address(fields, row, kk, element, major) == want, (rows, cols, step, row, kk)
                oracle = mma_isa.canonical_byte(major, mode, element, lbo, sbo, row, kk)
                assert mma_isa.swizzled(START + offset + oracle, mode) == want


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [8, 16, 112, 256])
@pytest.mark.parametrize(("a_major", "b_major"), [("K", "K"), ("MN", "K"), ("K", "MN"), ("MN", "MN")])
def test_instruction_descriptor_bits_equal_the_isa_table(dtype, n, a_major, b_major):
    kind = mma_isa.KIND_OF[dtype]
    accumulators = {"f16": ["float32", "float16"], "tf32": ["float32"], "f8f6f4": ["float32", "float16"]}
    for d, m in itertools.product(accumulators.get(kind, ["int32"]), (64, 128)):
        if d == "float16" and kind == "f16" and dtype != "float16":
            continue  # an f16 accumulator needs f16 inputs, refused elsewhere
        if b_major == "MN" and mma_isa.ELEMENT_BYTES[dtype] == 1 and n % 16:
            continue  # an MN-major 8-bit B needs N % 16 (Table 54), refused elsewhere
        instruction = MmaInstruction(kind, dtype, dtype, d, m=m, n=n, a_major=a_major, b_major=b_major)
        assert instruction_descriptor(instruction) == mma_isa.instruction_descriptor(
            kind, dtype, dtype, d, m, n, a_major, b_major
        )
    if kind == "f8f6f4" and not (b_major == "MN" and n % 16):
        shape = {"m": 128, "n": n, "a_major": a_major, "b_major": b_major}
        for sfa, sfb in itertools.product(range(4), range(4)):
            scaled = MmaInstruction("mxf8f6f4", dtype, dtype, "float32", **shape, scale_a_id=sfa, scale_b_id=sfb)
            assert instruction_descriptor(scaled) == mma_isa.instruction_descriptor(
                "mxf8f6f4", dtype, dtype, "float32", 128, n, a_major, b_major, sfa_id=sfa, sfb_id=sfb
            )


def test_the_worked_values_of_the_facts_note():
    # facts §3.3, computed by hand from the tables
    f16 = MmaInstruction("f16", "bfloat16", "bfloat16", "float32", m=128, n=128)
    assert instruction_descriptor(f16) == mma_isa.instruction_descriptor(*f16_args(f16)) == 0x08200490
    half = MmaInstruction("f16", "float16", "float16", "float16", m=64, n=200)
    assert instruction_descriptor(half) == mma_isa.instruction_descriptor(*f16_args(half)) == 0x04320000
    scaled = MmaInstruction(
        "mxf8f6f4", "float8_e4m3fn", "float8_e4m3fn", "float32", m=128, n=112, scale_a_id=2, scale_b_id=2
    )
    assert instruction_descriptor(scaled) == 0x489C0020
    assert mma_isa.instruction_descriptor(*f16_args(scaled), sfa_id=2, sfb_id=2) == 0x489C0020
    # facts §4.1: bf16 K-major 128B at 0x400, SBO 1024, LBO field 1
    layout = mma_shared_layout("bfloat16", "128B", (128, 64))
    derived = shared_matrix_descriptor(layout, (128, 64), "bfloat16", 0x400, operand="A")
    assert derived.encode() == mma_isa.shared_descriptor(0x400, 16, 1024, "128B") == 0x4000404000010040


def f16_args(i: MmaInstruction):
    return i.kind, i.a_dtype, i.b_dtype, i.d_dtype, i.m, i.n, i.a_major, i.b_major


def canonical_layout(dtype, major, mode, rows, cols, lbo, sbo) -> TileLayout | ComposeLayout:
    """The ISA's canonical layout in CuTe notation (facts §4.3) for ``lbo``/``sbo`` bytes, as a TileLayout over
    (rows, K) in elements, swizzled like the hardware (16-byte chunks; 32-byte ones for the 32B-atom mode)."""
    element = mma_isa.ELEMENT_BYTES[dtype]
    t = 16 // element  # elements per 16 bytes
    width, group = mma_isa.ROW_BYTES[mode], mma_isa.ATOM_ROWS[mode]
    line = width // element
    lbo_e, sbo_e = lbo // element, sbo // element
    if major == "K":
        if mode == "none":  # ((8,m),(T,2k)):((1T,SBO),(1,LBO))
            tile = S[(rows // 8, 8, cols // t, t) : (sbo_e, t, lbo_e, 1)]
        else:  # ((8,m),(T,2k)):((W·T,SBO),(1,T)) with K inside one atom row
            tile = S[(rows // 8, 8, cols) : (sbo_e, line, 1)]
    elif mode == "none":  # ((T,1,m),(8,k)):((1,T,SBO),(1T,LBO))
        tile = S[(rows // t, t, cols // 8, 8) : (sbo_e, 1, lbo_e, t)]
    else:  # ((T,W,m),(8,k)):((1,T,LBO),(W·T,SBO))
        tile = S[(rows // line, line, cols // group, group) : (lbo_e, 1, sbo_e, line)]
    tile = TileLayout(tile)
    if mode == "none":
        return tile
    if mode == "128B_base32B":
        return ComposeLayout(SwizzleLayout((32 // element).bit_length() - 1, 2, 2), tile)
    return ComposeLayout(SwizzleLayout(t.bit_length() - 1, {"32B": 1, "64B": 2, "128B": 3}[mode], 3), tile)


@pytest.mark.parametrize(
    ("dtype", "major", "mode", "shape", "lbo", "sbo"),
    [
        ("float32", "K", "none", (16, 16), 256, 128),  # ISA: tf32 K-major, no swizzle, 16 x 16
        ("bfloat16", "MN", "none", (16, 16), 256, 128),  # ISA: bf16 MN-major, no swizzle
        ("bfloat16", "MN", "32B", (32, 16), 256, 512),  # ISA: bf16 MN-major, 32B
        ("bfloat16", "MN", "64B", (64, 16), 512, 1024),  # ISA: bf16 MN-major, 64B
    ],
)
def test_the_isas_worked_offsets(dtype, major, mode, shape, lbo, sbo):
    # Each example packs its tile MN atoms first; the encoder reads the offsets back off the layout.
    layout = canonical_layout(dtype, major, mode, *shape, lbo, sbo)
    derived = shared_matrix_descriptor(layout, shape, dtype, 0, operand="A")
    assert (derived.lbo, derived.sbo) == (lbo, sbo)
    assert derived.encode() == mma_isa.shared_descriptor(0, lbo, sbo, mode)


@pytest.mark.parametrize(("dtype", "major", "mode"), list(combinations(allowed=False)))
def test_combinations_the_isa_does_not_allow_are_refused(dtype, major, mode):
    element = mma_isa.ELEMENT_BYTES[dtype]
    rows = max(8, mma_isa.ROW_BYTES[mode] // element)
    cols = max(8, 32 // element, mma_isa.ROW_BYTES[mode] // element)
    width, group = mma_isa.ROW_BYTES[mode], mma_isa.ATOM_ROWS[mode]
    lbo, sbo = (16, 8 * width) if major == "K" else (group * width * (cols // group), group * width)
    layout = canonical_layout(dtype, major, mode, rows, cols, lbo, sbo)
    for operand in ("A", "B"):
        with pytest.raises(ValueError, match=rf"^{operand}'s layout is {major}-major .*the ISA"):
            shared_matrix_descriptor(layout, (rows, cols), dtype, 0, operand=operand)
    with pytest.raises(ValueError, match=r"mma_shared_layout: .*MN-major 32-bit"):
        mma_shared_layout(dtype, mode, (rows, cols), major=major)


# ---- refusals in the user's terms: one per path of shared_matrix_descriptor not covered in test_mma.py -----------


def mn_64b_bf16(k_row_pitch: int) -> ComposeLayout:
    """An MN-major bf16 64 x 16 operand in the 64B swizzle whose K rows are ``k_row_pitch`` elements apart."""
    tile = TileLayout(S[(2, 32, 2, 8) : (16 * k_row_pitch, 1, 8 * k_row_pitch, k_row_pitch)])
    return ComposeLayout(SwizzleLayout(3, 2, 3), tile)


def test_the_issues_example_rows_of_the_wrong_width():
    assert shared_matrix_descriptor(mn_64b_bf16(32), (64, 16), "bfloat16", operand="B").major == "MN"
    with pytest.raises(
        ValueError,
        match=r"^B's layout is MN-major 64B-swizzled, but its K rows are 96 bytes apart; the ISA's MN-major "
        r"64B-swizzled atom has K rows of exactly 64 bytes$",
    ):
        shared_matrix_descriptor(mn_64b_bf16(48), (64, 16), "bfloat16", operand="B")


@pytest.mark.parametrize(
    ("layout", "shape", "dtype", "start", "message"),
    [
        # K-major 128B, rows 128 bytes apart, but K runs contiguously for 64 bytes only
        (
            ComposeLayout(SwizzleLayout(3, 3, 3), TileLayout(S[(8, 2, 32) : (64, 512, 1)])),
            (8, 64),
            "float16",
            0,
            r"^A's layout is K-major 128B-swizzled, but each of its rows holds only 64 contiguous bytes of K; the "
            r"K-major 128B-swizzled atom's rows hold 128$",
        ),
        # MN-major 32B fp8: each K row holds 16 contiguous bytes of the rows, not 32
        (
            ComposeLayout(SwizzleLayout(4, 1, 3), TileLayout(S[(2, 16, 32) : (512, 1, 32)])),
            (32, 32),
            "int8",
            0,
            r"^A's layout is MN-major 32B-swizzled, but each of its K rows holds only 16 contiguous bytes of the rows",
        ),
        # 128B K-major, rows and K as the atom wants, but the third 8-row group 4096 bytes on, not 2 x SBO
        (
            ComposeLayout(SwizzleLayout(3, 3, 3), TileLayout(S[(4, 2, 8, 64) : (2048, 512, 64, 1)])),
            (64, 64),
            "float16",
            0,
            r"^A's layout .* is not the ISA's K-major 128B-swizzled canonical layout: element \(16, 0\) is at byte "
            r"4096 before the swizzle, but with LBO 16 and SBO 1024 K step 0 puts it at 2048$",
        ),
        (
            TileLayout(S[(8, 2, 8) : (8, 64, 1)] + 4),
            (8, 16),
            "float16",
            0,
            r"^A's first element is at shared byte 8, not 16",
        ),
        (TileLayout(S[(8, 4) : (4, 1)]), (8, 4), "float64", 0, r"^A is float64; the MMA reads "),
        (TileLayout(S[(8, 16) : (16, 1)]), (8, 16, 1), "float16", 0, r"^A's shape is \(rows, K\)"),
    ],
)
def test_refusals_name_the_operand_and_the_fault(layout, shape, dtype, start, message):
    with pytest.raises(ValueError, match=message):
        shared_matrix_descriptor(layout, shape, dtype, start, operand="A")


def test_type_errors():
    with pytest.raises(TypeError, match=r"^B's layout must be a TileLayout or a swizzled ComposeLayout"):
        shared_matrix_descriptor("S[(8, 16)]", (8, 16), "float16", operand="B")
    with pytest.raises(TypeError, match="operand names the MMA operand"):
        shared_matrix_descriptor(TileLayout(S[(8, 16) : (16, 1)]), (8, 16), "float16", operand=1)
