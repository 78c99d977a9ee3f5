"""The shared-memory matrix descriptor (hw/smem_descriptor.py) against (a) the test-side encoders written from the
PTX ISA's field tables (``tests/oracles/mma_isa.py``, ``tests/oracles/wgmma_isa.py``), (b) upstream TVM's own encoder
(``tvm.backend.cuda.cpp.descriptors``, an oracle in tests only) and (c) an enumerating twin of the ISA's canonical
layouts: every element's byte address implied by the descriptor bits equals the one the operand's layout gives."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from tvm.backend.cuda.cpp import descriptors as upstream

from tirx_layout import ComposeLayout, S, TileLayout, mma_shared_layout
from tirx_layout.hw.memory import swizzle_128b_base32b, swizzle_for_mode
from tirx_layout.hw.smem_descriptor import (
    DESCRIPTOR_FAMILIES,
    TCGEN05_DESCRIPTOR,
    WGMMA_DESCRIPTOR,
    SharedDescriptor,
    advance_k,
    shared_matrix_descriptor,
)
from tirx_layout.layout.swizzle import SwizzleLayout

from oracles import mma_isa, wgmma_isa


# ---- the family records
def test_the_family_records_hold_the_isas_fields():
    assert list(DESCRIPTOR_FAMILIES) == ["tcgen05", "wgmma"]
    assert TCGEN05_DESCRIPTOR.swizzle_codes == mma_isa.SWIZZLE_CODE
    assert WGMMA_DESCRIPTOR.swizzle_codes == wgmma_isa.SWIZZLE_CODE
    assert WGMMA_DESCRIPTOR.mn_major_dtypes == {d for d in wgmma_isa.ELEMENT_BYTES if wgmma_isa.may_transpose(d)}
    isa_encoders = {"tcgen05": mma_isa.shared_descriptor, "wgmma": wgmma_isa.descriptor}
    for name, family in DESCRIPTOR_FAMILIES.items():
        for mode in family.swizzle_modes:
            value = SharedDescriptor(0x3F0, 0x100, 0x400, 2, mode, "MN").encode(family=name)
            assert value == isa_encoders[name](0x3F0, 0x100, 0x400, mode, base_offset=2), (name, mode)


def test_refuses_an_operand_outside_the_window():
    layout = mma_shared_layout("float16", "128B", (128, 64))  # 16 KiB
    with pytest.raises(ValueError, match=r"^B occupies shared bytes 253952\.\.270335, outside the 2\^18 bytes"):
        shared_matrix_descriptor(layout, (128, 64), "float16", (1 << 18) - 8192, operand="B")


# ---- the shared-memory descriptor (the ISA's table and canonical layouts: tests/oracles/mma_isa.py)
UPSTREAM_SWIZZLE_ENUM = {"none": 0, "32B": 1, "64B": 2, "128B": 3, "128B_base32B": 4}
isa_encode, isa_decode, isa_address = mma_isa.shared_descriptor, mma_isa.decode_shared_descriptor, mma_isa.read_address


def mn_major_layout(dtype, mode, rows, cols, element):
    """An MN-major operand over (rows, K): atoms of (swizzle width of MN) x 8 K-rows, MN atoms first."""
    width = {"none": 16, "32B": 32, "64B": 64, "128B": 128}[mode] // element  # MN elements per atom row
    tile = TileLayout(S[(rows // width, width, cols // 8, 8) : (8 * width, 1, 8 * rows, width)])
    return tile if mode == "none" else ComposeLayout(swizzle_for_mode(mode, dtype), tile)


DTYPES = {"float16": 2, "bfloat16": 2, "float8_e4m3fn": 1, "int8": 1, "float32": 4}
MODES = ("none", "32B", "64B", "128B")
WIDTH = {"none": 16, "32B": 32, "64B": 64, "128B": 128}


def operands():
    for dtype, mode, shape in itertools.product(DTYPES, MODES, [(64, 128), (128, 256), (8, 128)]):
        yield dtype, mode, shape, "K"
        if DTYPES[dtype] < 4 and shape[0] * DTYPES[dtype] >= WIDTH[mode]:  # at least one atom of MN bytes
            yield dtype, mode, shape, "MN"


@pytest.mark.parametrize("dtype, mode, shape, major", list(operands()))
def test_descriptor_reads_exactly_the_layouts_elements(dtype, mode, shape, major):
    element = DTYPES[dtype]
    rows, cols = shape
    if major == "K":
        layout = mma_shared_layout(dtype, mode, shape)
    else:
        layout = mn_major_layout(dtype, mode, rows, cols, element)
    start_byte = 3 * 1024
    desc = shared_matrix_descriptor(layout, shape, dtype, start_byte)
    assert (desc.major, desc.swizzle) == (major, mode)
    step = 32 // element
    r, k = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    want = np.asarray(layout.apply(r, k, shape=shape)["m"]) * element + start_byte
    for s in range(cols // step):
        value = advance_k(desc, s).encode()
        start, lbo, sbo, swizzle = isa_decode(value)
        kk = np.arange(step)
        got = isa_address(start, lbo, sbo, swizzle, major, element, r[:, :step], kk[None, :])
        assert (got == want[:, s * step : (s + 1) * step]).all(), s
        # (b) upstream's encoder (offsets in 16-byte units, start ORed in) gives the same 64 bits
        oracle = upstream.encode_smem_descriptor_base_uint64(lbo >> 4, sbo >> 4, UPSTREAM_SWIZZLE_ENUM[mode])
        assert value == oracle | start >> 4
        assert value == isa_encode(start, lbo, sbo, swizzle)


@pytest.mark.parametrize(
    "layout, shape, dtype, lbo, sbo",
    [
        # no swizzle, core matrices K-first: LBO one core matrix (128 B), SBO a whole row of them (4 x 128 B)
        (TileLayout(S[(2, 8, 4, 8) : (256, 8, 64, 1)]), (16, 32), "float16", 128, 512),
        # 128B, 8-row groups two repeats apart (padded): SBO 2048
        (
            ComposeLayout(swizzle_for_mode("128B", "bfloat16"), TileLayout(S[(4, 8, 64) : (1024, 64, 1)])),
            (32, 64),
            "bfloat16",
            16,
            2048,
        ),
        # fp8 64B, K atoms first: two 64-byte atoms along K, then the next 8-row group (SBO 1024)
        (
            ComposeLayout(swizzle_for_mode("64B", "float8_e4m3fn"), TileLayout(S[(2, 8, 2, 64) : (1024, 64, 512, 1)])),
            (16, 128),
            "float8_e4m3fn",
            16,
            1024,
        ),
    ],
)
def test_other_canonical_layouts_round_trip(layout, shape, dtype, lbo, sbo):
    element = DTYPES[dtype]
    desc = shared_matrix_descriptor(layout, shape, dtype, 2048)
    assert (desc.lbo, desc.sbo, desc.major) == (lbo, sbo, "K")
    rows, cols = shape
    step = 32 // element
    r, k = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    want = np.asarray(layout.apply(r, k, shape=shape)["m"]) * element + 2048
    for s in range(cols // step):
        start, lbo_, sbo_, swizzle = isa_decode(advance_k(desc, s).encode())
        got = isa_address(start, lbo_, sbo_, swizzle, "K", element, r[:, :step], np.arange(step)[None, :])
        assert (got == want[:, s * step : (s + 1) * step]).all(), s


def test_worked_shared_descriptors():
    # ISA worked example restated in the facts file §4.1: bf16 K-major 128B at 0x400, SBO 1024, LBO field 1.
    layout = mma_shared_layout("bfloat16", "128B", (128, 64))
    assert shared_matrix_descriptor(layout, (128, 64), "bfloat16", 0x400).encode() == 0x4000404000010040
    # ISA canonical-layout example: tf32 K-major, no swizzle, 16 x 16 tile: LBO 256, SBO 128.
    tf32 = shared_matrix_descriptor(mma_shared_layout("float32", "none", (16, 16)), (16, 16), "float32")
    assert (tf32.major, tf32.lbo, tf32.sbo) == ("K", 256, 128)
    # ISA canonical-layout examples (bytes): bf16 MN-major no swizzle LBO 256 SBO 128; 32B: LBO 256 SBO 512;
    # 64B: LBO 512 SBO 1024 — for packed 16 x 16 (none), 32 x 16 (32B) and 64 x 16 (64B) tiles.
    for mode, rows, lbo, sbo in [("none", 16, 256, 128), ("32B", 32, 256, 512), ("64B", 64, 512, 1024)]:
        layout = mn_major_layout("bfloat16", mode, rows, 16, 2)
        desc = shared_matrix_descriptor(layout, (rows, 16), "bfloat16")
        assert (desc.major, desc.lbo, desc.sbo) == ("MN", lbo, sbo), mode


def test_k_steps_cross_atoms():
    # 64 x 128 fp16, 128B: four steps of 32 bytes in the first atom column, then the second column 64 rows * 128
    # bytes further on.
    desc = shared_matrix_descriptor(mma_shared_layout("float16", "128B", (64, 128)), (64, 128), "float16", 1024)
    assert [advance_k(desc, s).start - 1024 for s in range(8)] == [0, 32, 64, 96, 8192, 8224, 8256, 8288]
    with pytest.raises(IndexError, match="k_step 8 is outside"):
        advance_k(desc, 8)


# ---- refusals: one test each


def test_refuses_a_foreign_swizzle():
    layout = ComposeLayout(SwizzleLayout(3, 3, 4), TileLayout(S[(64, 64)]))
    with pytest.raises(ValueError, match=r"^A's layout .* is swizzled by .* none of the MMA's swizzle modes"):
        shared_matrix_descriptor(layout, (64, 64), "float16", operand="A")


def test_refuses_a_swizzle_of_another_dtype():
    layout = ComposeLayout(swizzle_for_mode("128B", "float32"), TileLayout(S[(64, 64)]))
    with pytest.raises(ValueError, match="no hardware swizzle mode for float16"):
        shared_matrix_descriptor(layout, (64, 64), "float16")


def test_refuses_row_major_without_swizzle():
    with pytest.raises(
        ValueError, match=r"^A's layout is K-major unswizzled, but its rows are 128 bytes apart; the ISA's"
    ):
        shared_matrix_descriptor(TileLayout(S[(64, 64)]), (64, 64), "float16", operand="A")


def test_refuses_padded_rows():
    # 128B swizzle but rows 144 bytes apart: not the canonical 128-byte atom rows
    layout = ComposeLayout(swizzle_for_mode("128B", "float16"), TileLayout(S[(8, 64) : (72, 1)]))
    with pytest.raises(ValueError, match=r"^B's layout is K-major 128B-swizzled, but its rows are 144 bytes apart"):
        shared_matrix_descriptor(layout, (8, 64), "float16", operand="B")


def test_refuses_a_stride_that_is_not_whole_swizzle_repeats():
    # 8-row groups 1040 bytes apart: inside each group canonical, but SBO is not a multiple of the 1024-byte repeat
    layout = ComposeLayout(swizzle_for_mode("128B", "float16"), TileLayout(S[(2, 8, 64) : (520, 64, 1)]))
    with pytest.raises(
        ValueError, match=r"^A's .* 8-row groups are 1040 bytes apart \(SBO\), not a whole number of 1024"
    ):
        shared_matrix_descriptor(layout, (16, 64), "float16", operand="A")


def test_refuses_offsets_that_are_not_whole_core_matrices():
    # no swizzle, core matrices along M 136 bytes apart (not a 16-byte multiple)
    layout = TileLayout(S[(2, 8, 4, 8) : (68, 8, 256, 1)])
    with pytest.raises(ValueError, match=r"^A's .* 8-row groups are 136 bytes apart \(SBO\); the descriptor needs a"):
        shared_matrix_descriptor(layout, (16, 32), "float16", operand="A")


def test_refuses_a_misaligned_start():
    layout = mma_shared_layout("float16", "128B", (64, 64))
    with pytest.raises(ValueError, match=r"^B's .* starts at shared byte 512, not a multiple of the 1024-byte swizzle"):
        shared_matrix_descriptor(layout, (64, 64), "float16", 512, operand="B")
    with pytest.raises(ValueError, match=r"^B's buffer starts at shared byte 8, not 16-byte aligned"):
        shared_matrix_descriptor(mma_shared_layout("float16", "none", (64, 64)), (64, 64), "float16", 8, operand="B")


def test_refuses_a_step_starting_past_the_first_atom_row():
    # the operand begins on row 1 of a 128B atom: the hardware would need a base offset
    layout = ComposeLayout(swizzle_for_mode("128B", "float16"), TileLayout(S[(64, 64) : (64, 1)]))
    shifted = ComposeLayout(layout.swizzle, TileLayout(S[(8, 64) : (64, 1)] + 64))
    with pytest.raises(ValueError, match=r"^A's .* K step 0 \(K 0\.\.15\) starts in row 1 of a swizzle atom"):
        shared_matrix_descriptor(shifted, (8, 64), "float16", operand="A")


def test_refuses_neither_k_nor_mn_major():
    with pytest.raises(
        ValueError, match=r"^B's layout .* is neither K-major nor MN-major: consecutive K elements are 2"
    ):
        shared_matrix_descriptor(TileLayout(S[(64, 64) : (128, 2)]), (64, 64), "float16", operand="B")


def tf32_mn_layout(rows, cols, k_first=True):
    """MN-major fp32 in CuTe's MN_SW128_32B atoms (32 MN x 4 K, K rows 128 bytes apart): 4-row K groups first
    (packed 512 bytes apart) or MN atoms first."""
    groups, atoms = cols // 4, rows // 32
    strides = (groups * 128, 1, 128, 32) if k_first else (128, 1, atoms * 128, 32)
    tile = TileLayout(S[(atoms, 32, groups, 4) : strides])
    return ComposeLayout(swizzle_128b_base32b("float32"), tile)


@pytest.mark.parametrize("rows, cols", [(32, 8), (64, 32), (128, 16)])
def test_mn_major_tf32_in_the_32b_atom_swizzle(rows, cols):
    layout = tf32_mn_layout(rows, cols)
    desc = shared_matrix_descriptor(layout, (rows, cols), "float32", 1536)
    assert (desc.major, desc.swizzle, desc.sbo) == ("MN", "128B_base32B", 512)
    r, k = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    want = np.asarray(layout.apply(r, k, shape=(rows, cols))["m"]) * 4 + 1536
    for s in range(cols // 8):
        value = advance_k(desc, s).encode()
        start, lbo, sbo, swizzle = isa_decode(value)
        got = isa_address(start, lbo, sbo, swizzle, "MN", 4, r[:, :8], np.arange(8)[None, :])
        assert (got == want[:, s * 8 : (s + 1) * 8]).all(), s
        assert value == upstream.encode_smem_descriptor_base_uint64(lbo >> 4, sbo >> 4, 4) | start >> 4


def test_refuses_the_32b_atom_swizzle_with_spread_k_groups():
    with pytest.raises(ValueError, match=r"^A's layout .* 4-row K groups are 1024 bytes apart"):
        shared_matrix_descriptor(tf32_mn_layout(64, 16, k_first=False), (64, 16), "float32", operand="A")


def test_refuses_the_32b_atom_swizzle_k_major():
    layout = ComposeLayout(swizzle_128b_base32b("float32"), TileLayout(S[(8, 32)]))
    with pytest.raises(
        ValueError, match=r"^A's layout is K-major float32 and 128B-swizzled with 32-byte atoms: the ISA"
    ):
        shared_matrix_descriptor(layout, (8, 32), "float32", operand="A")


def test_refuses_mn_major_32_bit_in_another_swizzle():
    layout = mn_major_layout("float32", "128B", 64, 32, 4)
    with pytest.raises(
        ValueError, match=r"^B's layout is MN-major 128B-swizzled float32: the ISA reads MN-major 32-bit"
    ):
        shared_matrix_descriptor(layout, (64, 32), "float32", operand="B")


def test_refuses_a_bad_shape():
    with pytest.raises(
        ValueError, match=r"^A is 12x64 float16: the MMA needs its rows a multiple of 8 and its K a mul"
    ):
        shared_matrix_descriptor(TileLayout(S[(12, 64)]), (12, 64), "float16", operand="A")


def test_refuses_a_layout_on_other_axes():
    from tirx_layout.layout.axis import TLane

    with pytest.raises(ValueError, match=r"^B must be in shared memory: its layout .* places elements on"):
        shared_matrix_descriptor(TileLayout(S[(8, 16) : (1 @ TLane, 1)]), (8, 16), "float16", operand="B")


def test_descriptor_field_limits():
    with pytest.raises(ValueError, match="descriptor sbo must be a 16-byte multiple"):
        SharedDescriptor(0, 16, 1 << 18, 0, "128B", "K").encode()
