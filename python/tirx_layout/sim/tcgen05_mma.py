"""The simulator's own model of ``tcgen05.mma``: its descriptors, its operand addressing and its arithmetic.

Written from the PTX ISA text (tcgen05 "Instruction descriptor", "Shared memory descriptor", "Canonical layouts",
"Shared memory layout and swizzling", "Data path layout organization"), as restated with sources in
``docs/notes/tcgen05-mma-facts.md`` -- never from the project's layouts or its lowering, so that the two can check
each other. It is a pure model: nothing here is wired into the interpreter yet.

* :func:`decode_instruction_descriptor` reads the 32-bit ``idesc`` of one kind (the kind is in the instruction's
  name, not in the descriptor, so it is an argument).
* :func:`decode_shared_descriptor` reads a 64-bit shared-memory matrix descriptor, and :func:`operand_byte_address`
  says which shared-memory byte holds element ``(row, k)`` of the operand it describes.
* :func:`load_operand` gathers one instruction's operand out of a shared-memory byte image by those addresses.
* :func:`mma_reference` is the arithmetic of one MMA step on numpy arrays; :func:`accumulator_place` is where
  element ``(row, col)`` of D sits in tensor memory.

Bad encodings raise :class:`DescriptorError` (a :class:`SimulationError` and a ``ValueError``) naming the field.
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np

from .memory import SimulationError

__all__ = [
    "DescriptorError",
    "accumulator_place",
    "decode_instruction_descriptor",
    "decode_shared_descriptor",
    "load_operand",
    "mma_reference",
    "operand_byte_address",
]


class DescriptorError(SimulationError, ValueError):
    """A descriptor value the hardware does not define, or an operand access it does not describe."""


def _unsigned(value: Any, width: int, what: str) -> int:
    """``value`` as a Python int if it is an integer (numpy's included) in ``[0, 2**width)``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 0 <= int(value) < 1 << width:
        raise DescriptorError(f"{what} is a {width}-bit unsigned integer, got {value!r}")
    return int(value)


def _bits(value: int, low: int, width: int) -> int:
    return (value >> low) & ((1 << width) - 1)


# --- Instruction descriptor (ISA "Instruction descriptor", tables for the dense and the block-scaled kinds) ---

#: Operand type codes of bits 7-9 (A) and 10-12 (B), per kind.
_OPERAND_TYPES = {
    "f16": {0: "float16", 1: "bfloat16"},
    "tf32": {2: "tf32"},
    "f8f6f4": {0: "e4m3", 1: "e5m2", 3: "e2m3", 4: "e3m2", 5: "e2m1"},
    "i8": {0: "uint8", 1: "int8"},
    "mxf8f6f4": {0: "e4m3", 1: "e5m2", 3: "e2m3", 4: "e3m2", 5: "e2m1"},
}
#: D type codes of bits 4-5 the dense kinds allow (F16 = 0, F32 = 1, S32 = 2).
_ACCUMULATOR_TYPES = {
    "f16": {0: "float16", 1: "float32"},
    "tf32": {1: "float32"},
    "f8f6f4": {0: "float16", 1: "float32"},
    "i8": {2: "int32"},
}
#: Types that may be read MN-major (transpose bit set): 8- and 16-bit and tf32, not the 6/4-bit ones.
_TRANSPOSABLE = {"float16", "bfloat16", "tf32", "e4m3", "e5m2", "uint8", "int8"}
#: Bits each layout reserves (must be zero in a dense, non-.ws descriptor).
_RESERVED_DENSE = {"bit 6": (6, 1), "bit 23": (23, 1), "bit 29": (29, 1), "max shift (bits 30-31)": (30, 2)}
_RESERVED_SCALED = {"bit 3": (3, 1), "bit 6": (6, 1), "bits 24-26": (24, 3), "bit 31": (31, 1)}


def decode_instruction_descriptor(value: int, kind: str) -> dict[str, Any]:
    """Every field of the 32-bit instruction descriptor of ``tcgen05.mma.kind::<kind>``.

    ``kind`` is one of ``f16``, ``tf32``, ``f8f6f4``, ``i8`` (dense table: sparsity bits 0-2, saturate 3, D type
    4-5, A/B types 7-9/10-12, negate 13/14, transpose 15/16, N>>3 at 17-22, M>>4 at 24-28) or ``mxf8f6f4`` (block
    scaled: SF B id 4-5, scale type 23, M>>7 at 27-28, SF A id 29-30, D always f32). Majorness is ``"K"`` or
    ``"MN"``. A reserved bit set, a type code the kind does not have, N outside 8..256, an M the kind does not
    allow, negation of integers, or a transposed 6/4-bit type raise :class:`DescriptorError` naming the field.

    Example (bf16 x bf16 -> f32, M = N = 128, both K-major):
        >>> d = decode_instruction_descriptor(0x08200490, "f16")
        >>> d["a_dtype"], d["b_dtype"], d["d_dtype"], d["m"], d["n"], d["a_major"], d["b_major"]
        ('bfloat16', 'bfloat16', 'float32', 128, 128, 'K', 'K')
    """
    value = _unsigned(value, 32, "an instruction descriptor")
    if kind not in _OPERAND_TYPES:
        raise DescriptorError(f"unknown tcgen05.mma kind {kind!r}; expected one of {sorted(_OPERAND_TYPES)}")
    scaled = kind == "mxf8f6f4"
    for name, (low, width) in (_RESERVED_SCALED if scaled else _RESERVED_DENSE).items():
        if _bits(value, low, width):
            raise DescriptorError(f"instruction descriptor {value:#010x}: reserved field {name} must be 0")
    fields: dict[str, Any] = {"kind": kind}
    fields["sparse"] = bool(_bits(value, 2, 1))
    fields["sparsity_selector"] = _bits(value, 0, 2)
    if not fields["sparse"] and fields["sparsity_selector"]:
        raise DescriptorError(
            f"instruction descriptor {value:#010x}: sparsity selector (bits 0-1) is "
            f"{fields['sparsity_selector']} but the sparse flag (bit 2) is 0"
        )
    for operand, low in (("a", 7), ("b", 10)):
        code = _bits(value, low, 3)
        if code not in _OPERAND_TYPES[kind]:
            raise DescriptorError(
                f"instruction descriptor {value:#010x}: {operand.upper()} type code {code} (bits {low}-{low + 2}) "
                f"is not one of kind::{kind}'s {_OPERAND_TYPES[kind]}"
            )
        fields[f"{operand}_dtype"] = _OPERAND_TYPES[kind][code]
    for operand, negate_bit, major_bit in (("a", 13, 15), ("b", 14, 16)):
        fields[f"negate_{operand}"] = bool(_bits(value, negate_bit, 1))
        fields[f"{operand}_major"] = "MN" if _bits(value, major_bit, 1) else "K"
        if fields[f"{operand}_major"] == "MN" and fields[f"{operand}_dtype"] not in _TRANSPOSABLE:
            raise DescriptorError(
                f"instruction descriptor {value:#010x}: transpose {operand.upper()} (bit {major_bit}) set, but "
                f"{fields[f'{operand}_dtype']} operands can only be K-major"
            )
    if kind == "i8" and (fields["negate_a"] or fields["negate_b"]):
        raise DescriptorError(f"instruction descriptor {value:#010x}: negate A/B (bits 13-14) must be 0 for kind::i8")
    fields["n"] = 8 * _bits(value, 17, 6)
    if not 8 <= fields["n"] <= 256:
        raise DescriptorError(f"instruction descriptor {value:#010x}: N>>3 field (bits 17-22) gives N = {fields['n']}")
    if scaled:
        fields["d_dtype"] = "float32"
        fields["sf_b_id"] = _bits(value, 4, 2)
        fields["sf_a_id"] = _bits(value, 29, 2)
        if not _bits(value, 23, 1):
            raise DescriptorError(
                f"instruction descriptor {value:#010x}: scale type (bit 23) is 0 (UE4M3), which kind::mxf8f6f4 "
                "does not take; it needs 1 (UE8M0)"
            )
        fields["scale_dtype"] = "ue8m0"
        fields["m"] = 128 * _bits(value, 27, 2)
        allowed_m = (128, 256)
    else:
        code = _bits(value, 4, 2)
        if code not in _ACCUMULATOR_TYPES[kind]:
            raise DescriptorError(
                f"instruction descriptor {value:#010x}: D type code {code} (bits 4-5) is not one of kind::{kind}'s "
                f"{_ACCUMULATOR_TYPES[kind]}"
            )
        fields["d_dtype"] = _ACCUMULATOR_TYPES[kind][code]
        if kind == "f16" and fields["d_dtype"] == "float16" and "bfloat16" in (fields["a_dtype"], fields["b_dtype"]):
            raise DescriptorError(f"instruction descriptor {value:#010x}: an f16 D needs f16 A and B, not bf16")
        fields["saturate"] = bool(_bits(value, 3, 1))
        if fields["saturate"] and kind != "i8":
            raise DescriptorError(f"instruction descriptor {value:#010x}: saturate (bit 3) is for kind::i8 only")
        fields["m"] = 16 * _bits(value, 24, 5)
        allowed_m = (64, 128, 256)
    if fields["m"] not in allowed_m:
        raise DescriptorError(
            f"instruction descriptor {value:#010x}: M field gives M = {fields['m']}; kind::{kind} allows {allowed_m}"
        )
    return fields


# --- Shared-memory matrix descriptor (ISA "Shared memory descriptor", "Canonical layouts", swizzling table) ---

#: Layout type of bits 61-63: name, swizzle width in bytes (the atom's row length).
_SWIZZLE_MODES = {0: ("none", 16), 1: ("128B_base32B", 128), 2: ("128B", 128), 4: ("64B", 64), 6: ("32B", 32)}


def decode_shared_descriptor(value: int) -> dict[str, Any]:
    """The fields of a 64-bit ``tcgen05`` shared-memory matrix descriptor, offsets in bytes.

    Start address bits 0-13, leading byte offset (LBO) 16-29 and stride byte offset (SBO) 32-45, each in 16-byte
    units; the fixed constant 0b001 at bits 46-48; base offset 49-51; LBO mode 52; layout type 61-63 (0 none,
    1 128B with 32-byte atoms, 2 128B, 4 64B, 6 32B). Unused bits set, a wrong fixed constant or an undefined
    layout type raise :class:`DescriptorError` naming the field.

    Example (bf16 K-major 128B-swizzled tile at 0x400, SBO 1024):
        >>> d = decode_shared_descriptor(0x4000404000010040)
        >>> d["start_address"], d["lbo"], d["sbo"], d["swizzle"], d["base_offset"]
        (1024, 16, 1024, '128B', 0)
    """
    value = _unsigned(value, 64, "a shared-memory descriptor")
    for name, low, width in (("bits 14-15", 14, 2), ("bits 30-31", 30, 2), ("bits 53-60", 53, 8)):
        if _bits(value, low, width):
            raise DescriptorError(f"shared-memory descriptor {value:#018x}: unused {name} must be 0")
    if _bits(value, 46, 3) != 0b001:
        raise DescriptorError(
            f"shared-memory descriptor {value:#018x}: fixed field (bits 46-48) is {_bits(value, 46, 3):#05b}, "
            "must be 0b001"
        )
    layout = _bits(value, 61, 3)
    if layout not in _SWIZZLE_MODES:
        raise DescriptorError(
            f"shared-memory descriptor {value:#018x}: layout type {layout} (bits 61-63) is undefined; "
            f"valid: {sorted(_SWIZZLE_MODES)}"
        )
    return {
        "start_address": 16 * _bits(value, 0, 14),
        "lbo": 16 * _bits(value, 16, 14),
        "sbo": 16 * _bits(value, 32, 14),
        "base_offset": _bits(value, 49, 3),
        "lbo_mode": _bits(value, 52, 1),
        "swizzle": _SWIZZLE_MODES[layout][0],
    }


def _swizzle(address: int, mode: str) -> int:
    """The XOR the hardware applies to an absolute shared-memory byte address (bits 7-9 pick the 8-row phase)."""
    if mode == "none":
        return address
    if mode == "128B_base32B":  # 32-byte chunks (bits 5-6) permuted by bits 7-8: 4 rows of 128 bytes
        return address ^ (((address >> 7) & 0b11) << 5)
    chunks = {"32B": 0b1, "64B": 0b11, "128B": 0b111}[mode]  # 16-byte chunks (bits 4..) permuted by bits 7..
    return address ^ (((address >> 7) & chunks) << 4)


def operand_byte_address(desc_fields: dict[str, Any], row: int, k: int, dtype_bytes: int, major: str) -> int:
    """Shared-memory byte address of element ``(row, k)`` of one MMA's operand described by ``desc_fields``.

    ``row`` indexes M (for A) or N (for B); ``k`` indexes K within one instruction, which always spans 32 bytes of
    K (``k * dtype_bytes < 32``). With ``b`` the byte offset of the element along its contiguous dimension and
    ``S`` the swizzle width (16 for none), the ISA's canonical layouts place it, before swizzling, at:

    * K-major, no swizzle: core matrices of 8 rows x 16 bytes; ``start + (row//8)*SBO + (row%8)*16 + (b//16)*LBO
      + b%16`` with ``b = k*dtype_bytes`` (LBO steps along K, SBO along M/N);
    * K-major, swizzled: atoms of 8 rows x S bytes; ``start + (row//8)*SBO + (row%8)*S + b`` (LBO unused);
    * MN-major, no swizzle: core matrices of 16 bytes of M/N x 8 K-rows; ``start + (b//16)*SBO + (k//8)*LBO +
      (k%8)*16 + b%16`` with ``b = row*dtype_bytes`` (here SBO steps along M/N, LBO along K);
    * MN-major, swizzled: atoms of S bytes of M/N x R K-rows (R = 8; R = 4 for 128B with 32-byte atoms);
      ``start + (b//S)*LBO + (k//R)*SBO + (k%R)*S + b%S``;

    then the swizzle XORs the absolute address (128B: bits 4-6 ^= bits 7-9; 64B: bits 4-5 ^= 7-8; 32B: bit 4 ^= 7;
    128B with 32-byte atoms: bits 5-6 ^= 7-8). Modes the ISA does not define for the operand (128B-32B-atom
    K-major), LBO mode 1 and a non-zero base offset (how it enters the XOR is not documented) raise
    :class:`DescriptorError`.

    Example (bf16, K-major, 128B swizzle, tile at 0x400, SBO 1024: row 1's first chunk lands in chunk 1):
        >>> fields = decode_shared_descriptor(0x4000404000010040)
        >>> hex(operand_byte_address(fields, 1, 0, 2, "K")), hex(operand_byte_address(fields, 1, 8, 2, "K"))
        ('0x490', '0x480')
    """
    if major not in ("K", "MN"):
        raise DescriptorError(f"major must be 'K' or 'MN', got {major!r}")
    if dtype_bytes not in (1, 2, 4):
        raise DescriptorError(f"dtype_bytes must be 1, 2 or 4 (8/16/32-bit elements), got {dtype_bytes!r}")
    if row < 0 or not 0 <= k * dtype_bytes < 32:
        raise DescriptorError(
            f"element ({row}, {k}) is outside one MMA's operand: row >= 0 and k in [0, {32 // dtype_bytes}) for "
            f"{dtype_bytes}-byte elements"
        )
    mode = desc_fields["swizzle"]
    if desc_fields.get("lbo_mode", 0):
        raise DescriptorError("LBO mode 1 (an absolute LBO address) is not modelled")
    if desc_fields.get("base_offset", 0):
        raise DescriptorError(
            f"base offset {desc_fields['base_offset']} is not modelled: the ISA does not say how it enters the swizzle"
        )
    if mode == "128B_base32B" and major == "K":
        raise DescriptorError("the 128B swizzle with 32-byte atoms is defined for MN-major operands only")
    start, lbo, sbo = desc_fields["start_address"], desc_fields["lbo"], desc_fields["sbo"]
    width = dict(_SWIZZLE_MODES.values())[mode]
    if major == "K":
        b = k * dtype_bytes
        if mode == "none":
            linear = start + (row // 8) * sbo + (row % 8) * 16 + (b // 16) * lbo + b % 16
        else:
            linear = start + (row // 8) * sbo + (row % 8) * width + b
    else:
        b = row * dtype_bytes
        if mode == "none":
            linear = start + (b // 16) * sbo + (k // 8) * lbo + (k % 8) * 16 + b % 16
        else:
            rows = 4 if mode == "128B_base32B" else 8
            linear = start + (b // width) * lbo + (k // rows) * sbo + (k % rows) * width + b % width
    return _swizzle(linear, mode)


def load_operand(shared: np.ndarray, descriptor: int, rows: int, dtype: Any, major: str) -> np.ndarray:
    """The ``rows x K`` operand one MMA reads from the byte image ``shared`` through a 64-bit ``descriptor``.

    ``K`` is one instruction's 32 bytes of K (16 for 16-bit ``dtype``); row ``r``, column ``k`` is the element at
    :func:`operand_byte_address` ``(r, k)``. For A the rows are M, for B they are N (transpose it for ``A @ B``).
    An address outside ``shared`` raises :class:`DescriptorError`.

    Example (a K-major, unswizzled 8 x 16 bf16 tile stored row-major as two 8 x 8 core matrices, LBO = 128):
        >>> import ml_dtypes
        >>> values = np.arange(128, dtype=np.float32).astype(ml_dtypes.bfloat16).reshape(8, 16)
        >>> image = np.concatenate([values[:, :8].ravel(), values[:, 8:].ravel()]).view(np.uint8)
        >>> descriptor = 128 >> 4 << 16 | 1 << 46  # LBO 128 bytes, start 0, SBO unused (one 8-row group)
        >>> bool((load_operand(image, descriptor, 8, ml_dtypes.bfloat16, "K") == values).all())
        True
    """
    dtype = np.dtype(dtype)
    shared = np.asarray(shared)
    if shared.dtype != np.uint8 or shared.ndim != 1:
        raise DescriptorError(
            f"shared memory must be a flat uint8 byte image, got {shared.dtype} of shape {shared.shape}"
        )
    fields = decode_shared_descriptor(descriptor)
    k_extent = 32 // dtype.itemsize
    addresses = np.array(
        [[operand_byte_address(fields, r, k, dtype.itemsize, major) for k in range(k_extent)] for r in range(rows)]
    )
    if addresses.size and addresses.max() + dtype.itemsize > shared.size:
        raise DescriptorError(
            f"the operand reaches byte {int(addresses.max()) + dtype.itemsize} of a {shared.size}-byte shared image"
        )
    element_bytes = addresses[..., None] + np.arange(dtype.itemsize)
    return shared[element_bytes].reshape(rows, k_extent * dtype.itemsize).view(dtype)


# --- Arithmetic and the accumulator's place in TMEM ---


def _tf32(values: np.ndarray) -> np.ndarray:
    """fp32 values as the tf32 datapath reads them: the 13 low mantissa bits ignored (truncated)."""
    bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32) & np.uint32(0xFFFFE000)
    return bits.view(np.float32)


_FP8_INPUTS = {np.dtype(ml_dtypes.float8_e4m3fn), np.dtype(ml_dtypes.float8_e5m2)}


def mma_reference(d: np.ndarray, a: np.ndarray, b: np.ndarray, scale_d: bool) -> np.ndarray:
    """The result of one ``tcgen05.mma`` step: ``A @ B + (D if scale_d else 0)``, in D's dtype.

    ``a`` is M x K, ``b`` is K x N, ``d`` is M x N. The kind follows from the operand dtypes: float16 / bfloat16
    (kind::f16), fp8 ``float8_e4m3fn`` / ``float8_e5m2`` from ml_dtypes (kind::f8f6f4) with a float32 or float16
    D; float32 operands are tf32 (kind::tf32: the low 13 mantissa bits are ignored) with a float32 D; int8 / uint8
    (kind::i8) with an int32 D, wrapping modulo 2**32. Products are exact and summed in float64, then rounded
    once to D's dtype (the ISA does not fix the hardware's summation order or intermediate precision, so float
    results agree with hardware within the dtype's tolerance, integer ones exactly). ``scale_d`` is the
    instruction's enable-input-d predicate: false overwrites D.

    Example:
        >>> a = np.array([[1, 2], [3, 4]], np.float16); b = np.array([[5, 6], [7, 8]], np.float16)
        >>> mma_reference(np.ones((2, 2), np.float32), a, b, scale_d=True)
        array([[20., 23.],
               [44., 51.]], dtype=float32)
    """
    a, b, d = np.asarray(a), np.asarray(b), np.asarray(d)
    if a.ndim != 2 or b.ndim != 2 or d.ndim != 2 or a.shape[1] != b.shape[0] or d.shape != (a.shape[0], b.shape[1]):
        raise DescriptorError(f"shapes do not make an MMA: A {a.shape}, B {b.shape}, D {d.shape} (need MxK, KxN, MxN)")
    kinds = {a.dtype, b.dtype}
    if kinds <= {np.dtype(np.int8), np.dtype(np.uint8)}:
        if d.dtype != np.int32:
            raise DescriptorError(f"kind::i8 accumulates into int32, D is {d.dtype}")
        product = a.astype(np.int64) @ b.astype(np.int64)
        total = product + (d.astype(np.int64) if scale_d else 0)
        return ((total + 2**31) % 2**32 - 2**31).astype(np.int32)
    if kinds == {np.dtype(np.float32)}:  # kind::tf32
        a, b = _tf32(a), _tf32(b)
        allowed_d = (np.float32,)
    elif kinds == {np.dtype(np.float16)}:  # kind::f16 with f16 inputs may accumulate in f16
        allowed_d = (np.float32, np.float16)
    elif kinds == {np.dtype(ml_dtypes.bfloat16)}:
        allowed_d = (np.float32,)
    elif kinds <= _FP8_INPUTS:  # kind::f8f6f4; A and B may differ
        allowed_d = (np.float32, np.float16)
    else:
        raise DescriptorError(f"no tcgen05.mma kind takes A {a.dtype} with B {b.dtype}")
    if d.dtype not in [np.dtype(t) for t in allowed_d]:
        raise DescriptorError(
            f"A {a.dtype} x B {b.dtype} accumulates into {[np.dtype(t).name for t in allowed_d]}, D is {d.dtype}"
        )
    total = a.astype(np.float64) @ b.astype(np.float64)
    if scale_d:
        total = total + d.astype(np.float64)
    return total.astype(d.dtype)


def accumulator_place(m_rows: int, row: int, col: int, lane_offset: int = 0) -> tuple[int, int]:
    """``(lane, column)`` of D's element ``(row, col)`` in tensor memory, relative to ``d-tmem``'s column.

    The ISA's data-path layouts for cta_group::1, dense: M = 128 uses Layout D (row i on lane i); M = 64 uses
    Layout F, half of each 32-lane sub-partition: row i on lane ``32*(i//16) + i%16 + lane_offset``, where
    ``lane_offset`` (0 or 16, the lane field of ``d-tmem``) picks the half. Column n is column n, one 32-bit cell
    per element (an f16 D is not packed).

    Example:
        >>> accumulator_place(128, 37, 5), accumulator_place(64, 37, 5), accumulator_place(64, 37, 5, lane_offset=16)
        ((37, 5), (69, 5), (85, 5))
    """
    if m_rows not in (64, 128):
        raise DescriptorError(f"m_rows must be 64 or 128 (cta_group::1 accumulators), got {m_rows!r}")
    if not 0 <= row < m_rows or not 0 <= col < 256:
        raise DescriptorError(f"element ({row}, {col}) is outside a {m_rows} x 256 accumulator")
    if m_rows == 128:
        if lane_offset != 0:
            raise DescriptorError(f"an M = 128 accumulator starts at lane 0, got lane_offset {lane_offset!r}")
        return row, col
    if lane_offset not in (0, 16):
        raise DescriptorError(f"an M = 64 accumulator starts at lane 0 or 16, got lane_offset {lane_offset!r}")
    return 32 * (row // 16) + row % 16 + lane_offset, col
