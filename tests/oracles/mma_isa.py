"""A test-side model of the ``tcgen05.mma`` descriptors, written from the PTX ISA's tables as restated in
``docs/notes/tcgen05-mma-facts.md`` §3-§4 ("Instruction descriptor" Tables 42-43, "Shared memory descriptor"
Table 40, "Canonical layouts", "Shared memory layout and swizzling" Tables 54-55). It imports nothing of
``tirx_layout``: it is the independent side the encoders (``hw/tcgen05_mma.py``, ``hw/smem_descriptor.py``) and the layout constructors are compared
with.

Every function here is a field table or a formula of the ISA, spelled out once, field by field.
"""

from __future__ import annotations

# ---- the instruction descriptor (32 bits) ------------------------------------------------------------------------

#: Table 42 (kinds f16, tf32, f8f6f4, i8): field -> (lowest bit, width).
DENSE_FIELDS = {
    "sparse_selector": (0, 2),
    "sparse": (2, 1),
    "saturate": (3, 1),
    "d_type": (4, 2),
    "a_type": (7, 3),
    "b_type": (10, 3),
    "negate_a": (13, 1),
    "negate_b": (14, 1),
    "transpose_a": (15, 1),
    "transpose_b": (16, 1),
    "n_shr_3": (17, 6),
    "m_shr_4": (24, 5),
    "max_shift": (30, 2),
}
#: Table 43 (kind mxf8f6f4): field -> (lowest bit, width). M is a 2-bit M >> 7 here.
BLOCK_SCALED_FIELDS = {
    "sfb_id": (4, 2),
    "a_type": (7, 3),
    "b_type": (10, 3),
    "negate_a": (13, 1),
    "negate_b": (14, 1),
    "transpose_a": (15, 1),
    "transpose_b": (16, 1),
    "n_shr_3": (17, 6),
    "scale_type": (23, 1),
    "m_shr_7": (27, 2),
    "sfa_id": (29, 2),
}
#: The A/B type codes per kind, and the D type codes (Table 42).
TYPE_CODE = {
    "f16": {"float16": 0, "bfloat16": 1},
    "tf32": {"float32": 2},
    "f8f6f4": {"float8_e4m3fn": 0, "float8_e5m2": 1, "float6_e2m3fn": 3, "float6_e3m2fn": 4, "float4_e2m1fn": 5},
    "i8": {"uint8": 0, "int8": 1},
    "mxf8f6f4": {"float8_e4m3fn": 0, "float8_e5m2": 1},
}
D_TYPE_CODE = {"float16": 0, "float32": 1, "int32": 2}
#: The kind of each operand dtype for the dense kinds (the block-scaled one is chosen by the scale factors).
KIND_OF = {
    "float16": "f16",
    "bfloat16": "f16",
    "float32": "tf32",
    "float8_e4m3fn": "f8f6f4",
    "float8_e5m2": "f8f6f4",
    "int8": "i8",
    "uint8": "i8",
}
#: Bytes per element of the operand dtypes above.
ELEMENT_BYTES = {
    "float16": 2,
    "bfloat16": 2,
    "float32": 4,
    "float8_e4m3fn": 1,
    "float8_e5m2": 1,
    "int8": 1,
    "uint8": 1,
}


def put(fields: dict, table: dict) -> int:
    """The bits of ``fields`` (name -> value) placed by ``table``; a value wider than its field is an error."""
    bits = 0
    for name, value in fields.items():
        low, width = table[name]
        assert 0 <= value < 1 << width, (name, value)
        bits |= value << low
    return bits


def instruction_descriptor(kind, a, b, d, m, n, a_major="K", b_major="K", *, sfa_id=0, sfb_id=0) -> int:
    """The 32-bit instruction descriptor, field by field from Table 42 (dense) or 43 (mxf8f6f4)."""
    common = {
        "a_type": TYPE_CODE[kind][a],
        "b_type": TYPE_CODE[kind][b],
        "transpose_a": int(a_major == "MN"),
        "transpose_b": int(b_major == "MN"),
        "n_shr_3": n >> 3,
    }
    if kind == "mxf8f6f4":
        scaled = {"sfa_id": sfa_id, "sfb_id": sfb_id, "scale_type": 1, "m_shr_7": m >> 7}
        return put({**common, **scaled}, BLOCK_SCALED_FIELDS)
    return put({**common, "d_type": D_TYPE_CODE[d], "m_shr_4": m >> 4}, DENSE_FIELDS)


# ---- the shared-memory descriptor (64 bits) ----------------------------------------------------------------------

#: Table 40: field -> (lowest bit, width); start, LBO and SBO in 16-byte units, every other bit zero.
SHARED_FIELDS = {
    "start": (0, 14),
    "lbo": (16, 14),
    "sbo": (32, 14),
    "fixed_001": (46, 3),
    "base_offset": (49, 3),
    "lbo_mode": (52, 1),
    "swizzle": (61, 3),
}
#: Table 40's "swizzling mode" codes (bits 61-63).
SWIZZLE_CODE = {"none": 0, "128B_base32B": 1, "128B": 2, "64B": 4, "32B": 6}
#: Table 55: bytes of one atom row along the contiguous dimension, and rows of the atom.
ROW_BYTES = {"none": 16, "32B": 32, "64B": 64, "128B": 128, "128B_base32B": 128}
ATOM_ROWS = {"none": 8, "32B": 8, "64B": 8, "128B": 8, "128B_base32B": 4}


def shared_descriptor(start: int, lbo: int, sbo: int, swizzle: str, base_offset: int = 0) -> int:
    """Table 40: start >> 4 at bits 0-13, LBO >> 4 at 16-29, SBO >> 4 at 32-45, the constant 0b001 at 46-48, the
    base offset at 49-51, LBO mode 0 at 52, the swizzle code at 61-63 (14-bit fields of 16-byte units)."""
    for value in (start, lbo, sbo):
        assert value % 16 == 0 and 0 <= value < 1 << 18, value
    fields = (
        (start >> 4, 0, 14),
        (lbo >> 4, 16, 14),
        (sbo >> 4, 32, 14),
        (0b001, 46, 3),
        (base_offset, 49, 3),
        (0, 52, 1),
        (SWIZZLE_CODE[swizzle], 61, 3),
    )
    bits = 0
    for value, low, width in fields:
        assert 0 <= value < 1 << width
        bits |= value << low
    return bits


def decode_shared_descriptor(value: int) -> tuple[int, int, int, str]:
    """(start, LBO, SBO, swizzle) of a descriptor built as above, with its fixed bits checked: 0b001 at 46-48, a
    zero base offset, LBO mode and bits 53-60, nothing set in the unused bits 14-15 and 30-31."""
    assert (value >> 46) & 7 == 1 and (value >> 49) & 7 == 0 and (value >> 52) & 0x1FF == 0, hex(value)
    assert (value >> 14) & 3 == 0 and (value >> 30) & 3 == 0, hex(value)
    swizzle = {code: name for name, code in SWIZZLE_CODE.items()}[value >> 61]
    return (value & 0x3FFF) << 4, (value >> 16 & 0x3FFF) << 4, (value >> 32 & 0x3FFF) << 4, swizzle


def canonical_byte(major: str, swizzle: str, element: int, lbo: int, sbo: int, row: int, k: int) -> int:
    """Byte offset from the start address, before the swizzle, of element ``(row, k)`` of one instruction's operand
    in the ISA's canonical layouts (``k`` inside the instruction's 32 bytes of K):

    * K-major, none: ``((8,m),(T,2k)):((1T,SBO),(1,LBO))`` — rows 16 B apart in a core matrix, LBO along K;
    * K-major, swizzled: ``((8,m),(T,2k)):((W·T,SBO),(1,T))`` — rows ``16W`` B apart, K contiguous;
    * MN-major, none: ``((T,1,m),(8,k)):((1,T,SBO),(1T,LBO))`` — SBO along MN, LBO along K;
    * MN-major, swizzled: ``((T,W,m),(8,k)):((1,T,LBO),(W·T,SBO))`` — LBO along MN, SBO between K-row groups
      (4-row groups for 128B with 32-byte atoms).
    """
    width, group = ROW_BYTES[swizzle], ATOM_ROWS[swizzle]
    if major == "K":
        b = k * element
        if swizzle == "none":
            return (row // 8) * sbo + (row % 8) * 16 + (b // 16) * lbo + b % 16
        return (row // 8) * sbo + (row % 8) * width + b
    b = row * element
    if swizzle == "none":
        return (b // 16) * sbo + (k // 8) * lbo + (k % 8) * 16 + b % 16
    return (b // width) * lbo + (k // group) * sbo + (k % group) * width + b % width


def swizzled(address: int, swizzle: str) -> int:
    """The XOR the hardware applies to an absolute byte address (§4.2): 128B: bits 4-6 ^= bits 7-9; 64B: bits 4-5
    ^= 7-8; 32B: bit 4 ^= 7; 128B with 32-byte atoms: bits 5-6 ^= 7-8."""
    if swizzle == "none":
        return address
    if swizzle == "128B_base32B":
        return address ^ (((address >> 7) & 0b11) << 5)
    mask = {"32B": 0b1, "64B": 0b11, "128B": 0b111}[swizzle]
    return address ^ (((address >> 7) & mask) << 4)


def read_address(start: int, lbo: int, sbo: int, swizzle: str, major: str, element: int, row, k):
    """The byte the MMA reads for element ``(row, k)`` of one K step (ints or integer numpy arrays): the canonical
    offset from ``start``, then the swizzle on the absolute address."""
    return swizzled(start + canonical_byte(major, swizzle, element, lbo, sbo, row, k), swizzle)


def isa_allows(dtype: str, major: str, swizzle: str) -> bool:
    """Tables 54-55 (with CUTLASS on the 32B-atom mode, facts §4.3): K-major reads every mode but 128B with 32-byte
    atoms; MN-major 8- and 16-bit types every mode but that one; MN-major 32-bit types only that one."""
    if major == "K":
        return swizzle != "128B_base32B"
    if ELEMENT_BYTES[dtype] == 4:
        return swizzle == "128B_base32B"
    return swizzle != "128B_base32B"
