"""A test-side model of Hopper's ``wgmma.mma_async``, written from the PTX ISA's text as restated in
``docs/notes/wgmma-facts.md`` ("Matrix Descriptor Format", "Register Fragments", "Matrix Shape", the syntax of
``wgmma.mma_async``). It imports nothing of ``tirx_layout``: it is the independent side the encoder
(``hw/smem_descriptor.py``, ``family="wgmma"``), the instruction facts (``hw/wgmma.py``) and the fragment constructors
(``hw/constructors.py``) are compared with.

The canonical layouts (which bytes a descriptor's start, LBO and SBO select) are the same text for wgmma and tcgen05;
tests take them from ``oracles.mma_isa`` (``canonical_byte``, ``swizzled``).
"""

from __future__ import annotations

# ---- the matrix descriptor (64 bits) -----------------------------------------------------------------------------

#: "Matrix Descriptor Format": the swizzle field (bits 62-63).
SWIZZLE_CODE = {"none": 0, "128B": 1, "64B": 2, "32B": 3}
#: Field -> (lowest bit, width) of the wgmma descriptor.
FIELDS = {"start": (0, 14), "lbo": (16, 14), "sbo": (32, 14), "base_offset": (49, 3), "swizzle": (62, 2)}


def encode_field(x: int) -> int:
    """The ISA's ``matrix-descriptor-encode(x) = (x & 0x3FFFF) >> 4``."""
    return (x & 0x3FFFF) >> 4


def descriptor(start: int, lbo: int, sbo: int, swizzle: str, base_offset: int = 0) -> int:
    """The 64-bit value of the ISA's table: encode(start) at 0-13, encode(LBO) at 16-29, encode(SBO) at 32-45, the
    base offset at 49-51, the swizzle code at 62-63; every other bit zero."""
    values = {
        "start": encode_field(start),
        "lbo": encode_field(lbo),
        "sbo": encode_field(sbo),
        "base_offset": base_offset,
        "swizzle": SWIZZLE_CODE[swizzle],
    }
    bits = 0
    for name, (low, width) in FIELDS.items():
        assert 0 <= values[name] < 1 << width, (name, values[name])
        bits |= values[name] << low
    return bits


def decode(value: int) -> dict:
    """The fields of a descriptor in bytes (start, LBO, SBO) and codes, with every unused bit checked to be 0."""
    used = 0
    fields = {}
    for name, (low, width) in FIELDS.items():
        fields[name] = (value >> low) & ((1 << width) - 1)
        used |= ((1 << width) - 1) << low
    assert value & ~used & (2**64 - 1) == 0, hex(value)
    for name in ("start", "lbo", "sbo"):
        fields[name] <<= 4
    fields["swizzle"] = {code: name for name, code in SWIZZLE_CODE.items()}[fields["swizzle"]]
    return fields


# ---- shapes and types ("Matrix Shape", the syntax's .shape/.dtype/.atype lists) -----------------------------------

#: Element bytes of each operand type.
ELEMENT_BYTES = {
    "float16": 2,
    "bfloat16": 2,
    "float32": 4,
    "float8_e4m3fn": 1,
    "float8_e5m2": 1,
    "int8": 1,
    "uint8": 1,
}
#: The K of each operand type's shape (m64nNk16 for f16/bf16, k8 for tf32, k32 for e4m3/e5m2/s8/u8).
K_OF = {"float16": 16, "bfloat16": 16, "float32": 8, "float8_e4m3fn": 32, "float8_e5m2": 32, "int8": 32, "uint8": 32}
#: The D types each A/B pair allows (f16: .f16 or .f32; bf16 and tf32: .f32; e4m3/e5m2: .f16 or .f32; s8/u8: .s32).
D_TYPES = {
    "float16": {"float16", "float32"},
    "bfloat16": {"float32"},
    "float32": {"float32"},
    "float8_e4m3fn": {"float16", "float32"},
    "float8_e5m2": {"float16", "float32"},
    "int8": {"int32"},
    "uint8": {"int32"},
}


def valid_n(a_dtype: str) -> list[int]:
    """The ``.shape`` list: n8..n256 step 8, for integer types n8, n16, n24, then n32..n256 step 16 (the integer list
    of the syntax: .m64n8k32, .m64n16k32, .m64n24k32, .m64n32k32, .m64n48k32, ..., .m64n256k32)."""
    if a_dtype in ("int8", "uint8"):
        return [8, 16, 24, *range(32, 257, 16)]
    return list(range(8, 257, 8))


def may_transpose(dtype: str) -> bool:
    """Whether the syntax of ``dtype``'s form has ``imm-trans-a``/``imm-trans-b`` (only ``.f16`` and ``.bf16``)."""
    return dtype in ("float16", "bfloat16")


# ---- register fragments ("Register Fragments", m64nNk16 / k8 / k32) ----------------------------------------------


def accumulator_element(thread: int, i: int) -> tuple[int, int]:
    """(row, column) of D's element ``d_i`` held by warpgroup thread ``thread`` (Figure "WGMMA .m64nNk16 register
    fragment layout for accumulator matrix D": rows 16 per warp; in each 8-column block a lane holds two adjacent
    columns of row ``lane/4``, then of row ``lane/4 + 8``)."""
    warp, lane = divmod(thread, 32)
    row = 16 * warp + lane // 4 + 8 * ((i // 2) % 2)
    col = 8 * (i // 4) + 2 * (lane % 4) + i % 2
    return row, col


def a_element(thread: int, i: int, dtype: str) -> tuple[int, int]:
    """(row, column) of A's element ``a_i`` held by warpgroup thread ``thread`` for one instruction with A in
    registers: 16-bit (k16: a0..a7, pairs), tf32 (k8: a0..a3, singles), 8-bit (k32: a0..a15, runs of four)."""
    warp, lane = divmod(thread, 32)
    group, in_group = lane // 4, lane % 4
    base = 16 * warp + group
    if ELEMENT_BYTES[dtype] == 4:
        return base + 8 * (i % 2), 4 * (i // 2) + in_group
    run = 4 // ELEMENT_BYTES[dtype]  # 2 for 16-bit, 4 for 8-bit
    return base + 8 * ((i // run) % 2), 4 * run * (i // (2 * run)) + run * in_group + i % run


def a_elements_per_thread(dtype: str) -> int:
    """Four 32-bit registers: 8 16-bit, 4 tf32 or 16 8-bit elements."""
    return 16 // ELEMENT_BYTES[dtype]
