"""The simulator's tcgen05.mma model (``sim/tcgen05_mma.py``) against the PTX ISA's bit tables (hand-computed
vectors and an encoder written here from the tables), upstream TVM's descriptor encoders (an oracle), CuTe's
canonical layouts evaluated by pycute, an element-by-element twin of the swizzle atoms, and numpy arithmetic."""

import itertools

import ml_dtypes
import numpy as np
import pytest
from tvm.backend.cuda.cpp import descriptors as upstream

from tirx_layout.sim import SimulationError
from tirx_layout.sim.tcgen05_mma import (
    DescriptorError,
    accumulator_place,
    decode_instruction_descriptor,
    decode_shared_descriptor,
    load_operand,
    mma_reference,
    operand_byte_address,
)

from oracles.optional import pycute

# --- instruction descriptor ---

# Type codes of the ISA's instruction-descriptor table, restated here for the test-side encoder.
TYPE_CODE = {"float16": 0, "bfloat16": 1, "tf32": 2, "e4m3": 0, "e5m2": 1, "e2m3": 3, "e3m2": 4, "e2m1": 5}
TYPE_CODE.update({"uint8": 0, "int8": 1})
D_CODE = {"float16": 0, "float32": 1, "int32": 2}


def encode_dense(m, n, a, b, d, a_mn=False, b_mn=False, neg_a=False, neg_b=False, saturate=False):
    """The dense-kind table, field by field (bits 3, 4-5, 7-9, 10-12, 13, 14, 15, 16, 17-22, 24-28)."""
    return (
        saturate << 3
        | D_CODE[d] << 4
        | TYPE_CODE[a] << 7
        | TYPE_CODE[b] << 10
        | neg_a << 13
        | neg_b << 14
        | a_mn << 15
        | b_mn << 16
        | (n >> 3) << 17
        | (m >> 4) << 24
    )


@pytest.mark.parametrize(
    "value, kind, expected",
    [
        # bf16 x bf16 -> f32, M = N = 128, K-major: D=1 at bit 4, A=B=1 at bits 7 and 10, N>>3=16, M>>4=8.
        (0x08200490, "f16", {"a_dtype": "bfloat16", "d_dtype": "float32", "m": 128, "n": 128, "a_major": "K"}),
        # f16 x f16 -> f16, M = 64, N = 200: every type code 0, N>>3 = 25 at bit 17, M>>4 = 4 at bit 24.
        (0x04320000, "f16", {"a_dtype": "float16", "b_dtype": "float16", "d_dtype": "float16", "m": 64, "n": 200}),
        # mxf8f6f4 e4m3 x e4m3, UE8M0 (bit 23), M = 128 (M>>7 = 1 at bit 27), N = 112, SF ids 2 (bits 4-5, 29-30).
        (
            0x489C0020,
            "mxf8f6f4",
            {"a_dtype": "e4m3", "scale_dtype": "ue8m0", "m": 128, "n": 112, "sf_a_id": 2, "sf_b_id": 2},
        ),
        # i8: s8 x u8 -> s32, saturate, B MN-major, M = 64, N = 24.
        (
            1 << 3 | 2 << 4 | 1 << 7 | 1 << 16 | 3 << 17 | 4 << 24,
            "i8",
            {"a_dtype": "int8", "b_dtype": "uint8", "saturate": True, "b_major": "MN", "d_dtype": "int32", "n": 24},
        ),
        # tf32, negate A, A MN-major.
        (
            1 << 4 | 2 << 7 | 2 << 10 | 1 << 13 | 1 << 15 | 1 << 17 | 8 << 24,
            "tf32",
            {"negate_a": True, "negate_b": False, "a_major": "MN", "n": 8, "a_dtype": "tf32"},
        ),
    ],
)
def test_instruction_descriptor_hand_vectors(value, kind, expected):
    fields = decode_instruction_descriptor(value, kind)
    assert {key: fields[key] for key in expected} == expected


def test_instruction_descriptor_roundtrips_the_table_encoder_and_upstream():
    cases = [
        ("f16", "float16", "float16", "float32"),
        ("f16", "bfloat16", "bfloat16", "float32"),
        ("f16", "float16", "float16", "float16"),
        ("tf32", "tf32", "tf32", "float32"),
        ("f8f6f4", "e4m3", "e5m2", "float32"),
        ("f8f6f4", "e5m2", "e5m2", "float16"),
        ("i8", "int8", "uint8", "int32"),
    ]
    upstream_names = {"tf32": "tensor_float32", "e4m3": "float8_e4m3fn", "e5m2": "float8_e5m2"}
    checked = 0
    for (kind, a, b, d), m, n, a_mn, b_mn in itertools.product(cases, (64, 128), (16, 112, 256), (0, 1), (0, 1)):
        value = encode_dense(m, n, a, b, d, a_mn, b_mn)
        fields = decode_instruction_descriptor(value, kind)
        assert (fields["m"], fields["n"], fields["a_dtype"], fields["b_dtype"], fields["d_dtype"]) == (m, n, a, b, d)
        assert (fields["a_major"], fields["b_major"]) == ("MN" if a_mn else "K", "MN" if b_mn else "K")
        up = upstream.encode_instr_descriptor_dense_uint32(
            m,
            n,
            256 // {"i8": 8, "f8f6f4": 8, "f16": 16, "tf32": 32}[kind],
            d,
            upstream_names.get(a, a),
            upstream_names.get(b, b),
            bool(a_mn),
            bool(b_mn),
        )
        assert up == value, (kind, a, b, d, m, n)
        checked += 1
    assert checked == 7 * 2 * 3 * 4


@pytest.mark.parametrize(
    "value, kind, field",
    [
        (0x08200490 | 1 << 6, "f16", "bit 6"),
        (0x08200490 | 1 << 23, "f16", "bit 23"),
        (0x08200490 | 1 << 30, "f16", "max shift"),
        (0x08200490 | 1, "f16", "sparsity selector"),
        (0x08200490 | 1 << 3, "f16", "saturate"),
        (0x08200000 | 3 << 4, "f16", "D type code 3"),
        (0x08200010 | 2 << 7, "f16", "A type code 2"),
        (0x08200010 | 1 << 7, "tf32", "A type code 1"),
        (0x08200010 | 2 << 10, "f8f6f4", "B type code 2"),
        (0x08000490, "f16", "N = 0"),
        (0x03200490, "f16", "M = 48"),
        (0x08200020 | 1 << 13, "i8", "negate"),
        (0x08200010 | 5 << 7 | 1 << 15, "f8f6f4", "e2m1 operands can only be K-major"),
        (0x08200000 | 1 << 7 | 1 << 10, "f16", "f16 D needs f16"),
        (0x009C0000 | 1 << 23, "mxf8f6f4", "M = 0"),
        (0x081C0000, "mxf8f6f4", "scale type"),
        (0x089C0000 | 1 << 23 | 1 << 31, "mxf8f6f4", "bit 31"),
        (0x08200490, "f32", "unknown tcgen05.mma kind"),
        (1 << 32, "f16", "32-bit"),
    ],
)
def test_instruction_descriptor_errors_name_the_field(value, kind, field):
    with pytest.raises(DescriptorError, match=field):
        decode_instruction_descriptor(value, kind)


def test_descriptor_error_is_a_simulation_error_and_a_value_error():
    assert issubclass(DescriptorError, SimulationError) and issubclass(DescriptorError, ValueError)


# --- shared-memory descriptor ---

SWIZZLE_FIELD = {"none": 0, "128B_base32B": 1, "128B": 2, "64B": 4, "32B": 6}  # ISA table, bits 61-63
UPSTREAM_SWIZZLE = {"none": 0, "32B": 1, "64B": 2, "128B": 3, "128B_base32B": 4}  # upstream's argument enum


def encode_shared(start, lbo, sbo, swizzle):
    return start >> 4 | (lbo >> 4) << 16 | (sbo >> 4) << 32 | 1 << 46 | SWIZZLE_FIELD[swizzle] << 61


def test_shared_descriptor_worked_value():
    assert decode_shared_descriptor(0x4000404000010040) == {
        "start_address": 0x400,
        "lbo": 16,
        "sbo": 1024,
        "base_offset": 0,
        "lbo_mode": 0,
        "swizzle": "128B",
    }


@pytest.mark.parametrize("swizzle", list(SWIZZLE_FIELD))
def test_shared_descriptor_against_upstream_encoder(swizzle):
    for start, lbo, sbo in [(0, 16, 128), (0x1230, 256, 1024), (0x3FFF0, 0x3FFF0, 0x3FFF0)]:
        value = upstream.encode_smem_descriptor_base_uint64(lbo >> 4, sbo >> 4, UPSTREAM_SWIZZLE[swizzle])
        value |= start >> 4
        assert value == encode_shared(start, lbo, sbo, swizzle)
        fields = decode_shared_descriptor(value)
        assert (fields["start_address"], fields["lbo"], fields["sbo"], fields["swizzle"]) == (start, lbo, sbo, swizzle)


@pytest.mark.parametrize(
    "value, field",
    [
        (encode_shared(0, 16, 16, "none") | 1 << 14, "bits 14-15"),
        (encode_shared(0, 16, 16, "none") | 1 << 31, "bits 30-31"),
        (encode_shared(0, 16, 16, "none") | 1 << 55, "bits 53-60"),
        (encode_shared(0, 16, 16, "none") ^ 1 << 46, "fixed field"),
        (encode_shared(0, 16, 16, "none") | 1 << 47, "fixed field"),
        (encode_shared(0, 16, 16, "none") | 3 << 61, "layout type 3"),
        (encode_shared(0, 16, 16, "none") | 7 << 61, "layout type 7"),
        (-1, "64-bit"),
    ],
)
def test_shared_descriptor_errors_name_the_field(value, field):
    with pytest.raises(DescriptorError, match=field):
        decode_shared_descriptor(value)


# --- operand addressing ---

# CuTe's Swizzle<B, M, S> per mode (facts file 4.2) and the canonical layouts of 4.3, in elements.
PYCUTE_SWIZZLE = {"32B": (1, 4, 3), "64B": (2, 4, 3), "128B": (3, 4, 3), "128B_base32B": (2, 5, 2)}
WIDTH = {"none": 1, "32B": 2, "64B": 4, "128B": 8}


def canonical_layout(major, swizzle, dtype_bytes, lbo, sbo, groups):
    """The ISA's canonical layout of one MMA's operand as a pycute Layout from (row, k) to an element offset."""
    t = 16 // dtype_bytes
    lbo_e, sbo_e = lbo // dtype_bytes, sbo // dtype_bytes
    if major == "K":
        if swizzle == "none":
            return pycute.Layout(((8, groups), (t, 2)), ((t, sbo_e), (1, lbo_e)))
        w = WIDTH[swizzle]
        return pycute.Layout(((8, groups), (t, 2)), ((w * t, sbo_e), (1, t)))
    if swizzle == "none":
        return pycute.Layout(((t, 1, groups), (8, 32 // dtype_bytes // 8)), ((1, t, sbo_e), (t, lbo_e)))
    if swizzle == "128B_base32B":
        return pycute.Layout(((t, 8, groups), (4, 2)), ((1, t, lbo_e), (8 * t, sbo_e)))
    w = WIDTH[swizzle]
    return pycute.Layout(((t, w, groups), (8, 32 // dtype_bytes // 8)), ((1, t, lbo_e), (w * t, sbo_e)))


def operand_cases():
    """(major, swizzle, dtype_bytes) the ISA lists (MN-major 32-bit only with 128B swizzle and 32-byte atoms)."""
    for dtype_bytes in (1, 2, 4):
        for swizzle in ("none", "32B", "64B", "128B"):
            yield "K", swizzle, dtype_bytes
            if dtype_bytes < 4:
                yield "MN", swizzle, dtype_bytes
        if dtype_bytes == 4:
            yield "MN", "128B_base32B", 4


@pytest.mark.parametrize("major, swizzle, dtype_bytes", list(operand_cases()))
def test_operand_address_matches_canonical_layout_in_pycute(major, swizzle, dtype_bytes):
    groups, start = 3, 0x2000
    lbo, sbo = (48, 400) if swizzle == "none" else (1024 * 4, 1024 * 2)
    layout = canonical_layout(major, swizzle, dtype_bytes, lbo, sbo, groups)
    per_group = {"none": 16 // dtype_bytes, "128B_base32B": 128 // dtype_bytes}.get(
        swizzle, 16 * WIDTH.get(swizzle, 1) // dtype_bytes
    )
    rows = (8 if major == "K" else per_group) * groups  # the extent of the layout's row mode
    fields = decode_shared_descriptor(encode_shared(start, lbo, sbo, swizzle))
    for row, k in itertools.product(range(rows), range(32 // dtype_bytes)):
        expected = start + dtype_bytes * layout((row, k))
        if swizzle != "none":
            expected = pycute.Swizzle(*PYCUTE_SWIZZLE[swizzle])(expected)
        assert operand_byte_address(fields, row, k, dtype_bytes, major) == expected, (row, k)


@pytest.mark.parametrize("swizzle", ["32B", "64B", "128B"])
@pytest.mark.parametrize("dtype_bytes", [1, 2, 4])
def test_k_major_atom_twin_and_k_steps_tile_the_atom(swizzle, dtype_bytes):
    """Element by element: a K-major atom of 8 rows x S bytes, 16-byte chunk c of row r stored at chunk
    c XOR ((r*S // 128) mod S/16) (the ISA's swizzle pattern repeats every 8 x 128 B); the MMA steps through K by
    advancing the start address 32 bytes, and all steps together read every byte of the atom exactly once."""
    width = 16 * WIDTH[swizzle]
    base, groups = 0x4000, 2
    seen = {}
    for step in range(width // 32):
        fields = decode_shared_descriptor(encode_shared(base + 32 * step, 16, 8 * width, swizzle))
        for row, k in itertools.product(range(8 * groups), range(32 // dtype_bytes)):
            byte = 32 * step + k * dtype_bytes  # byte along K within the atom row
            chunk = (byte // 16) ^ ((row % 8) * width // 128 % (width // 16))
            twin = base + (row // 8) * 8 * width + (row % 8) * width + 16 * chunk + byte % 16
            address = operand_byte_address(fields, row, k, dtype_bytes, "K")
            assert address == twin, (step, row, k)
            seen.setdefault(address, (row, byte))
    assert sorted(seen) == list(range(base, base + 8 * width * groups, dtype_bytes))


@pytest.mark.parametrize("swizzle", ["32B", "64B", "128B"])
@pytest.mark.parametrize("dtype_bytes", [1, 2])
def test_mn_major_atom_twin(swizzle, dtype_bytes):
    """Element by element: an MN-major atom is 8 K-rows of S bytes along M/N; 16-byte chunk c of K-row k sits at
    chunk c XOR ((k*S // 128) mod S/16); atoms along M/N are LBO apart, 8-row K groups SBO apart."""
    width = 16 * WIDTH[swizzle]
    base, atoms = 0x6000, 2
    lbo, sbo = 8 * width, 8 * width * atoms
    fields = decode_shared_descriptor(encode_shared(base, lbo, sbo, swizzle))
    for row, k in itertools.product(range(atoms * width // dtype_bytes), range(32 // dtype_bytes)):
        byte = row * dtype_bytes
        atom, in_atom = divmod(byte, width)
        chunk = (in_atom // 16) ^ ((k % 8) * width // 128 % (width // 16))
        twin = base + atom * lbo + (k // 8) * sbo + (k % 8) * width + 16 * chunk + in_atom % 16
        assert operand_byte_address(fields, row, k, dtype_bytes, "MN") == twin, (row, k)


@pytest.mark.parametrize("major, swizzle, dtype_bytes", list(operand_cases()))
def test_packed_operand_is_a_permutation_of_its_bytes(major, swizzle, dtype_bytes):
    """One MMA's operand packed in the canonical layout covers a contiguous block of bytes, each element once."""
    groups, start = 2, 0x8000
    if major == "K" and swizzle != "none":
        return  # one MMA reads 32 bytes of each wider atom row; covered by the K-step test above
    t = 16 // dtype_bytes
    k_rows = 32 // dtype_bytes
    if major == "K":
        lbo, sbo, rows = 128, 256, 8 * groups
    elif swizzle == "none":
        rows = t * groups
        sbo, lbo = 128, 128 * groups  # MN core matrices adjacent, then the next 8 K-rows
    elif swizzle == "128B_base32B":
        rows = t * 8 * groups
        lbo, sbo = 512, 512 * groups  # MN atoms of 128 B x 4 rows adjacent, then the next 4 K-rows
    else:
        width = 16 * WIDTH[swizzle]
        rows = (width // dtype_bytes) * groups
        lbo, sbo = 8 * width, 8 * width * groups
    fields = decode_shared_descriptor(encode_shared(start, lbo, sbo, swizzle))
    addresses = [operand_byte_address(fields, r, k, dtype_bytes, major) for r in range(rows) for k in range(k_rows)]
    size = rows * k_rows * dtype_bytes
    assert sorted(addresses) == list(range(start, start + size, dtype_bytes))


@pytest.mark.parametrize(
    "fields_change, args, message",
    [
        ({}, (0, 0, 2, "KM"), "major"),
        ({}, (0, 0, 3, "K"), "dtype_bytes"),
        ({}, (0, 16, 2, "K"), "outside one MMA"),
        ({}, (-1, 0, 2, "K"), "outside one MMA"),
        ({"swizzle": "128B_base32B"}, (0, 0, 4, "K"), "MN-major operands only"),
        ({"base_offset": 3}, (0, 0, 2, "K"), "base offset 3"),
        ({"lbo_mode": 1}, (0, 0, 2, "K"), "LBO mode"),
    ],
)
def test_operand_address_errors(fields_change, args, message):
    fields = {**decode_shared_descriptor(encode_shared(0, 16, 1024, "128B")), **fields_change}
    with pytest.raises(DescriptorError, match=message):
        operand_byte_address(fields, *args)


# --- arithmetic ---

A_INT = [[1, -2, 3], [4, 5, -6]]
B_INT = [[7, 8], [-10, 10], [12, -12]]  # every value exact in e5m2 (2 mantissa bits) as well
AB = [[1 * 7 + 2 * 10 + 3 * 12, 1 * 8 - 2 * 10 - 3 * 12], [4 * 7 - 5 * 10 - 6 * 12, 4 * 8 + 5 * 10 + 6 * 12]]


@pytest.mark.parametrize(
    "in_dtype, d_dtype",
    [
        (np.float16, np.float32),
        (np.float16, np.float16),
        (ml_dtypes.bfloat16, np.float32),
        (np.float32, np.float32),
        (ml_dtypes.float8_e4m3fn, np.float32),
        (ml_dtypes.float8_e5m2, np.float16),
        (np.int8, np.int32),
    ],
)
@pytest.mark.parametrize("scale_d", [False, True])
def test_mma_reference_small_integers_exact(in_dtype, d_dtype, scale_d):
    assert AB == [[63, -48], [-94, 154]]  # the hand computation above
    d = np.array([[100, -1], [2, 3]], d_dtype)
    result = mma_reference(d, np.array(A_INT, in_dtype), np.array(B_INT, in_dtype), scale_d=scale_d)
    expected = [[163, -49], [-92, 157]] if scale_d else AB
    assert result.dtype == d_dtype
    assert result.tolist() == expected


def test_mma_reference_mixed_fp8_and_unsigned_int8():
    a = np.array([[2, 3]], ml_dtypes.float8_e4m3fn)
    b = np.array([[4], [5]], ml_dtypes.float8_e5m2)
    assert mma_reference(np.zeros((1, 1), np.float32), a, b, scale_d=False).tolist() == [[23.0]]
    ua = np.array([[200, 255]], np.uint8)
    sb = np.array([[-1], [2]], np.int8)
    assert mma_reference(np.zeros((1, 1), np.int32), ua, sb, scale_d=False).tolist() == [[310]]


def test_mma_reference_tf32_ignores_low_mantissa_bits():
    a = np.array([[1 + 2.0**-20, 1 + 2.0**-10]], np.float32)  # 2^-20 lies below tf32's 10 mantissa bits
    b = np.ones((2, 1), np.float32)
    assert mma_reference(np.zeros((1, 1), np.float32), a, b, scale_d=False).tolist() == [[2 + 2.0**-10]]


def test_mma_reference_int32_wraps():
    a = np.full((1, 2), 127, np.int8)
    d = np.array([[2**31 - 1]], np.int32)
    b = np.ones((2, 1), np.int8)
    assert mma_reference(d, a, b, scale_d=True).tolist() == [[2**31 - 1 + 254 - 2**32]]


@pytest.mark.parametrize(
    "d, a, b, message",
    [
        (np.zeros((2, 2), np.float32), np.zeros((2, 3), np.float16), np.zeros((2, 2), np.float16), "shapes"),
        (np.zeros((2, 2), np.float32), np.zeros((2, 2), np.float16), np.zeros((2, 2), ml_dtypes.bfloat16), "kind"),
        (
            np.zeros((2, 2), np.float16),
            np.zeros((2, 2), ml_dtypes.bfloat16),
            np.zeros((2, 2), ml_dtypes.bfloat16),
            "accumulates",
        ),
        (np.zeros((2, 2), np.float32), np.zeros((2, 2), np.int8), np.zeros((2, 2), np.int8), "int32"),
        (np.zeros((2, 2), np.float16), np.zeros((2, 2), np.float32), np.zeros((2, 2), np.float32), "accumulates"),
    ],
)
def test_mma_reference_errors(d, a, b, message):
    with pytest.raises(DescriptorError, match=message):
        mma_reference(d, a, b, scale_d=True)


def test_accumulator_places_follow_the_isa_datapaths():
    # Layout D: row i on lane i. Layout F: rows 0-15 on lanes 0-15, 16-31 on 32-47, ... (first half of each of
    # the four 32-lane sub-partitions; the second half with lane offset 16).
    assert [accumulator_place(128, r, 7) for r in (0, 31, 127)] == [(0, 7), (31, 7), (127, 7)]
    lanes = [accumulator_place(64, r, 0)[0] for r in range(64)]
    assert lanes == list(range(16)) + list(range(32, 48)) + list(range(64, 80)) + list(range(96, 112))
    upper = [accumulator_place(64, r, 0, lane_offset=16)[0] for r in range(64)]
    assert sorted(set(lanes) | set(upper)) == list(range(128))
    for bad in [(32, 0, 0), (64, 64, 0), (128, 0, 256), (128, 0, 0, 16), (64, 0, 0, 8)]:
        with pytest.raises(DescriptorError):
            accumulator_place(*bad)


@pytest.mark.parametrize(
    "major, swizzle, dtype_bytes, lbo, sbo, rows",
    [
        # The ISA's worked LBO/SBO examples (canonical-layouts section), each a tile packed with no gaps.
        ("K", "none", 4, 256, 128, 16),  # tf32 K-major, no swizzle, 16 x 16 (one MMA reads K = 8)
        ("MN", "none", 2, 256, 128, 16),  # bf16 MN-major, no swizzle: 2 core matrices along MN per K group
        ("MN", "32B", 2, 256, 512, 32),  # bf16 MN-major 32B: 2 atoms of 16 elements along MN
        ("MN", "64B", 2, 512, 1024, 64),  # bf16 MN-major 64B: 2 atoms of 32 elements along MN
    ],
)
def test_isa_worked_strides_pack_the_tile(major, swizzle, dtype_bytes, lbo, sbo, rows):
    fields = decode_shared_descriptor(encode_shared(0x1000, lbo, sbo, swizzle))
    k_extent = 32 // dtype_bytes
    addresses = {operand_byte_address(fields, r, k, dtype_bytes, major) for r in range(rows) for k in range(k_extent)}
    assert sorted(addresses) == list(range(0x1000, 0x1000 + rows * k_extent * dtype_bytes, dtype_bytes))


def test_descriptors_accept_numpy_integers_and_refuse_bools():
    assert decode_instruction_descriptor(np.uint32(0x08200490), "f16")["n"] == 128
    assert decode_shared_descriptor(np.uint64(0x4000404000010040))["sbo"] == 1024
    with pytest.raises(DescriptorError, match="32-bit"):
        decode_instruction_descriptor(True, "f16")


@pytest.mark.parametrize("swizzle", ["none", "32B", "64B", "128B"])
def test_load_operand_then_mma_from_swizzled_images(swizzle):
    """A written element by element by the K-major twin (A) and B written MN-major by the MN twin, read back through
    descriptors and multiplied: equal to numpy on the logical tiles."""
    rng = np.random.default_rng(0)
    m, n, width = 16, 16 * WIDTH[swizzle] // 2, 16 * WIDTH[swizzle]  # bf16: B's N spans exactly one atom row
    a = rng.integers(-4, 5, (m, 16)).astype(ml_dtypes.bfloat16)
    b = rng.integers(-4, 5, (16, n)).astype(ml_dtypes.bfloat16)  # K x N, N contiguous (MN-major)
    image = np.zeros(8192, np.uint8)
    a_base, b_base = 0x0, 0x1000
    for row, k in itertools.product(range(m), range(16)):
        byte = 2 * k
        if swizzle == "none":
            address = a_base + (row // 8) * 256 + (row % 8) * 16 + (byte // 16) * 128 + byte % 16
        else:
            chunk = (byte // 16) ^ ((row % 8) * width // 128 % (width // 16))
            address = a_base + (row // 8) * 8 * width + (row % 8) * width + 16 * chunk + byte % 16
        image[address : address + 2] = a[row : row + 1, k].view(np.uint8)
    for col, k in itertools.product(range(n), range(16)):
        byte = 2 * col
        if swizzle == "none":  # core matrices 16 B of N x 8 K-rows; along N 128 B apart, then K groups
            address = b_base + (byte // 16) * 128 + (k // 8) * 128 * (n // 8) + (k % 8) * 16 + byte % 16
        else:
            chunk = (byte // 16) ^ ((k % 8) * width // 128 % (width // 16))
            address = b_base + (k // 8) * 8 * width + (k % 8) * width + 16 * chunk + byte % 16
        image[address : address + 2] = b[k : k + 1, col].view(np.uint8)
    a_desc = encode_shared(a_base, 128 if swizzle == "none" else 16, 256 if swizzle == "none" else 8 * width, swizzle)
    b_lbo, b_sbo = (128 * (n // 8), 128) if swizzle == "none" else (8 * width * 2, 8 * width)
    b_desc = encode_shared(b_base, b_lbo, b_sbo, swizzle)
    a_read = load_operand(image, a_desc, m, ml_dtypes.bfloat16, "K")
    b_read = load_operand(image, b_desc, n, ml_dtypes.bfloat16, "MN")
    assert (a_read == a).all() and (b == b_read.T).all()
    d = mma_reference(np.zeros((m, n), np.float32), a_read, b_read.T, scale_d=False)
    assert (d == a.astype(np.float32) @ b.astype(np.float32)).all()


def test_load_operand_refuses_reads_past_the_image():
    with pytest.raises(DescriptorError, match="reaches byte"):
        load_operand(np.zeros(256, np.uint8), encode_shared(0, 128, 256, "none"), 16, np.float16, "K")
    with pytest.raises(DescriptorError, match="flat uint8"):
        load_operand(np.zeros(256, np.int8), encode_shared(0, 128, 256, "none"), 8, np.float16, "K")
