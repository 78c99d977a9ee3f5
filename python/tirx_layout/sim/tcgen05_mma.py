"""The simulator's own model of ``tcgen05.mma``: its descriptors, its operand addressing and its arithmetic.

Written from the PTX ISA text (tcgen05 "Instruction descriptor", "Shared memory descriptor", "Canonical layouts",
"Shared memory layout and swizzling", "Data path layout organization"), as restated with sources in
``docs/notes/tcgen05-mma-facts.md`` -- never from the project's layouts or its lowering, so that the two can check
each other.

* :func:`decode_instruction_descriptor` reads the 32-bit ``idesc`` of one kind (the kind is in the instruction's
  name, not in the descriptor, so it is an argument).
* :func:`decode_shared_descriptor` reads a 64-bit shared-memory matrix descriptor, and :func:`operand_byte_address`
  says which shared-memory byte holds element ``(row, k)`` of the operand it describes.
* :func:`load_operand` gathers one instruction's operand out of a shared-memory byte image by those addresses.
* :func:`mma_reference` is the arithmetic of one MMA step on numpy arrays; :func:`accumulator_place` is where
  element ``(row, col)`` of D sits in tensor memory.
* :func:`execute` runs the MMA helpers of a lowered kernel (``mma_<kind>_ss`` / ``_ts``, named by
  ``ir/device_calls``) inside the interpreter: it reads A, B (and scale factors) as the ISA's descriptors and
  datapaths say, computes with :func:`mma_reference`, writes D into tensor memory, and records the instruction as
  asynchronous (``tmem_order``: TMEM accesses of kind ``mma``; ``memory.AsyncRead``: shared bytes in flight)
  until a ``tcgen05.commit`` and an mbarrier wait complete it (``mbarrier.py``).

Bad encodings raise :class:`DescriptorError` (a :class:`SimulationError` and a ``ValueError``) naming the field.
"""

from __future__ import annotations

import functools
import re
from typing import Any

import ml_dtypes
import numpy as np

from .memory import AsyncRead, OutOfBounds, SimulationError

__all__ = [
    "DescriptorError",
    "accumulator_place",
    "decode_instruction_descriptor",
    "decode_shared_descriptor",
    "execute",
    "is_mma_helper",
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


def mma_reference(
    d: np.ndarray,
    a: np.ndarray,
    b: np.ndarray,
    scale_d: bool,
    *,
    scale_a: np.ndarray | None = None,
    scale_b: np.ndarray | None = None,
    saturate: bool = False,
) -> np.ndarray:
    """The result of one ``tcgen05.mma`` step: ``A @ B + (D if scale_d else 0)``, in D's dtype.

    ``a`` is M x K, ``b`` is K x N, ``d`` is M x N. The kind follows from the operand dtypes: float16 / bfloat16
    (kind::f16), fp8 ``float8_e4m3fn`` / ``float8_e5m2`` from ml_dtypes (kind::f8f6f4) with a float32 or float16
    D; float32 operands are tf32 (kind::tf32: the low 13 mantissa bits are ignored) with a float32 D; int8 / uint8
    (kind::i8) with an int32 D, wrapping modulo 2**32. Products are exact and summed in float64, then rounded
    once to D's dtype (the ISA does not fix the hardware's summation order or intermediate precision, so float
    results agree with hardware within the dtype's tolerance, integer ones exactly). ``scale_d`` is the
    instruction's enable-input-d predicate: false overwrites D.

    Block scaling (kind::mxf8f6f4): ``scale_a`` (M values) multiplies row ``m`` of A and ``scale_b`` (N values)
    column ``n`` of B before the product (both or neither). ``saturate`` (kind::i8's bit 3) clamps the int32 result
    to its range instead of wrapping.

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
    if (scale_a is None) != (scale_b is None):
        raise DescriptorError("a block-scaled MMA scales both A and B: give scale_a and scale_b, or neither")
    if scale_a is not None and (np.shape(scale_a) != (a.shape[0],) or np.shape(scale_b) != (b.shape[1],)):
        raise DescriptorError(
            f"scale_a needs one value per row of A ({a.shape[0]}) and scale_b one per column of B ({b.shape[1]}), "
            f"got {np.shape(scale_a)} and {np.shape(scale_b)}"
        )
    if kinds <= {np.dtype(np.int8), np.dtype(np.uint8)}:
        if d.dtype != np.int32:
            raise DescriptorError(f"kind::i8 accumulates into int32, D is {d.dtype}")
        if scale_a is not None:
            raise DescriptorError("kind::i8 has no block scaling")
        product = a.astype(np.int64) @ b.astype(np.int64)
        total = product + (d.astype(np.int64) if scale_d else 0)
        if saturate:
            return np.clip(total, -(2**31), 2**31 - 1).astype(np.int32)
        return ((total + 2**31) % 2**32 - 2**31).astype(np.int32)
    if saturate:
        raise DescriptorError("saturate is for kind::i8 only")
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
    if scale_a is not None and not kinds <= _FP8_INPUTS:
        raise DescriptorError(f"block scaling (kind::mxf8f6f4) takes fp8 operands, not A {a.dtype} x B {b.dtype}")
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    if scale_a is not None:  # powers of two: exact in float64
        a64 = a64 * np.asarray(scale_a, np.float64)[:, None]
        b64 = b64 * np.asarray(scale_b, np.float64)[None, :]
    total = a64 @ b64
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


# --- Executing the MMA helpers (``ir/device_calls`` names ``mma_<kind>_<ss|ts>``) ---

#: A helper's kind and where A comes from: ``ss`` (A and B from shared memory) or ``ts`` (A from tensor memory).
_HELPER = re.compile(r"mma_(f16|tf32|f8f6f4|i8|mxf8f6f4)_(ss|ts)$")
#: numpy types of the element types the instruction descriptor names (tf32 is read from 32-bit storage).
_ELEMENTS = {
    "float16": np.dtype(np.float16),
    "bfloat16": np.dtype(ml_dtypes.bfloat16),
    "tf32": np.dtype(np.float32),
    "e4m3": np.dtype(ml_dtypes.float8_e4m3fn),
    "e5m2": np.dtype(ml_dtypes.float8_e5m2),
    "uint8": np.dtype(np.uint8),
    "int8": np.dtype(np.int8),
}
#: Buffer element types the simulator stores one per numpy byte although they are narrower (no byte image).
_SUB_BYTE = {"int2", "uint2", "int4", "uint4", "float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn"}
_ACCUMULATORS = {"float32": np.dtype(np.float32), "float16": np.dtype(np.float16), "int32": np.dtype(np.int32)}
#: TMEM geometry (PTX ISA, "Tensor Memory"): lanes x 32-bit columns of one CTA.
_LANES, _COLUMNS = 128, 512
#: Bytes of K one instruction reads per row of A and B, whatever the kind (32; PTX ISA, "Matrix shape").
_K_BYTES = 32


def is_mma_helper(what: str) -> bool:
    """Whether helper ``what`` is one ``tcgen05.mma`` (``mma_<kind>_ss`` or ``mma_<kind>_ts``).

    Example:
        >>> is_mma_helper("mma_f16_ss"), is_mma_helper("mma_mxf8f6f4_ts"), is_mma_helper("commit")
        (True, True, False)
    """
    return _HELPER.match(what) is not None


@functools.lru_cache(maxsize=4096)
def _operand_addresses(descriptor: int, rows: int, dtype_bytes: int, major: str) -> np.ndarray:
    """Byte address of every element ``(row, k)`` of one instruction's operand (cached: a K loop repeats them)."""
    fields = decode_shared_descriptor(descriptor)
    k_extent = _K_BYTES // dtype_bytes
    return np.array(
        [[operand_byte_address(fields, r, k, dtype_bytes, major) for k in range(k_extent)] for r in range(rows)],
        np.int64,
    )


def _datapath_lanes(m: int, lane_field: int, what: str) -> np.ndarray:
    """The TMEM lane of each row of an M-row accumulator (or of A in TMEM) whose address has ``lane_field``."""
    try:
        return np.array([accumulator_place(m, row, 0, lane_field)[0] for row in range(m)], np.int64)
    except DescriptorError as error:
        raise DescriptorError(f"{what}: {error}") from None


def _value(interp, expr, thread: int) -> int:
    value = np.asarray(interp.eval(expr))
    return int(value.reshape(-1)[thread] if value.ndim else value)


class _Mma:
    """One ``tcgen05.mma`` issued by one thread: its decoded operands, read when it is issued."""

    def __init__(self, interp, kind: str, form: str, args, thread: int):
        scaled = kind == "mxf8f6f4"
        expected = 5 + (2 if scaled else 0)
        self.name = f"tcgen05.mma.kind::{kind}" + (".block_scale" if scaled else "") + f" ({form.upper()})"
        if len(args) != expected:
            raise SimulationError(f"{self.name} takes {expected} arguments (MMA_DESIGN §3), got {len(args)}")
        self.interp, self.kind, self.thread = interp, kind, thread
        self.warp = thread // 32
        self.gid = int(interp.launch.block * interp.count + thread)
        self.what = f"{self.name} issued by thread {self.gid}"
        rest = list(args[2:])  # b_desc, idesc, [sfa_taddr, sfb_taddr,] enable_input_d
        self.idesc = decode_instruction_descriptor(_value(interp, rest[1], thread), kind)
        if self.idesc["sparse"]:
            raise DescriptorError(f"{self.what}: sparse MMAs (instruction descriptor bit 2) are not modelled")
        self.m, self.n = self.idesc["m"], self.idesc["n"]
        if self.m not in (64, 128):
            raise DescriptorError(f"{self.what}: M = {self.m} needs cta_group::2; a cta_group::1 MMA has M = 64 or 128")
        if kind == "i8" and not (self.n in (8, 16, 24, 32) or (self.n % 16 == 0 and 48 <= self.n <= 256)):
            raise DescriptorError(
                f"{self.what}: kind::i8 takes N = 8, 16, 24, 32 or 48..256 in steps of 16, not {self.n}"
            )
        for operand in ("a", "b"):
            if self.idesc[f"{operand}_dtype"] not in _ELEMENTS:
                raise DescriptorError(
                    f"{self.what}: {operand.upper()} type {self.idesc[f'{operand}_dtype']} is not modelled "
                    "(6- and 4-bit types are not)"
                )
        if self.idesc["b_major"] == "MN" and _ELEMENTS[self.idesc["b_dtype"]].itemsize == 1 and self.n % 16:
            raise DescriptorError(f"{self.what}: an MN-major 8-bit B needs N a multiple of 16, not {self.n}")
        self.d_taddr = _value(interp, args[0], thread)
        self.enable_input_d = _value(interp, rest[-1], thread) != 0
        self.b_source = rest[0]
        self.a_source = args[1] if form == "ss" else _value(interp, args[1], thread)
        self.a_in_tmem = form == "ts"
        self.scale_sources = (_value(interp, rest[2], thread), _value(interp, rest[3], thread)) if scaled else None

    # ---- operands ----

    def shared_operand(self, operand: str, rows: int):
        """``rows x K`` elements of A or B read from shared memory through the descriptor: its start address is an
        address of the CTA's shared space (``addresses.SharedSpace``), every element address is decoded from it
        (swizzles act on those absolute addresses), and all of them must lie in the buffer the start lies in."""
        descriptor = _value(self.interp, self.a_source if operand == "a" else self.b_source, self.thread)
        descriptor &= (1 << 64) - 1
        start = decode_shared_descriptor(descriptor)["start_address"]
        dtype = _ELEMENTS[self.idesc[f"{operand}_dtype"]]
        addresses = _operand_addresses(descriptor, rows, dtype.itemsize, self.idesc[f"{operand}_major"])
        where = f"{self.what}: {operand.upper()} (descriptor {descriptor:#018x})"
        memory, offset = self.interp.launch.shared_space.find(start, 1, where)
        base = start - offset
        lowest, end = int(addresses.min()), int(addresses.max()) + dtype.itemsize
        if lowest < base or end > base + memory.data.nbytes:
            raise OutOfBounds(
                f"{where} reads shared bytes {lowest}..{end - 1}, outside {memory.name} (bytes {base}.."
                f"{base + memory.data.nbytes - 1}), the buffer its start address {start} lies in"
            )
        if memory.data.dtype.name in _SUB_BYTE:  # one numpy item per element: the bytes are not the hardware's
            raise SimulationError(
                f"{self.what}: {operand.upper()} is in {memory.name}, a {memory.data.dtype.name} buffer; the simulator "
                "reads MMA operands from the bytes of 8-bit or wider buffers only"
            )
        image = memory.data.view(np.uint8)
        addresses = addresses - base
        element_bytes = addresses[..., None] + np.arange(dtype.itemsize)
        elements = np.unique(element_bytes // memory.data.dtype.itemsize)
        launch = self.interp.launch
        what = f"{self.what} ({operand.upper()})"
        memory.check_async_read(elements, self.gid, launch.block, launch.interval, what, self.interp.sync)
        values = image[element_bytes].reshape(rows, -1).view(dtype)
        return values, memory, elements

    def tmem_operand(self, lanes_of_d: np.ndarray):
        """A (``M x K``) from tensor memory: row ``i`` on the lane D's row ``i`` uses, K packed along 32-bit columns
        from ``a-tmem``'s column, the lowest element in the lowest bits (PTX ISA, "Packing formats")."""
        taddr = self.a_source
        if self.idesc["a_major"] != "K":
            raise DescriptorError(f"{self.what}: A in tensor memory is K-major; the descriptor transposes A (bit 15)")
        if (taddr >> 16) != (self.d_taddr >> 16):
            raise DescriptorError(
                f"{self.what}: A's TMEM address {taddr:#010x} starts at lane {taddr >> 16}, D's at lane "
                f"{self.d_taddr >> 16}; A from tensor memory uses D's lanes"
            )
        cols = (taddr & 0xFFFF) + np.arange(_K_BYTES // 4)
        words = self._read_tmem(lanes_of_d[:, None], cols[None, :], "A")
        dtype = _ELEMENTS[self.idesc["a_dtype"]]
        return np.ascontiguousarray(words).view(np.uint8).reshape(self.m, _K_BYTES).view(dtype)

    def scale_factors(self, which: str, count: int, taddr: int, byte: int) -> np.ndarray:
        """``count`` ue8m0 scale factors (one per row of A, or column of B): entry ``r`` in byte ``byte`` of the
        cell at lane ``r % 32`` + 32q and column ``taddr + r // 32``, the same in all four 32-lane sub-partitions
        ``q`` (PTX ISA, "Block scaling": the scale factors are duplicated into every sub-partition)."""
        if taddr >> 16:
            raise DescriptorError(
                f"{self.what}: the scale factors of {which} at TMEM address {taddr:#010x} start at lane "
                f"{taddr >> 16}; they fill lanes 0-31 of every 32-lane sub-partition, so the lane field is 0"
            )
        rows = np.arange(count)
        lanes = rows[None, :] % 32 + 32 * np.arange(4)[:, None]
        cols = np.broadcast_to((taddr & 0xFFFF) + rows // 32, lanes.shape)
        words = self._read_tmem(lanes, cols, f"scale factors of {which}")
        scale_bytes = (words >> np.uint32(8 * byte)) & np.uint32(0xFF)
        differs = scale_bytes != scale_bytes[0]
        if differs.any():
            q, r = (int(v) for v in np.argwhere(differs)[0])
            raise SimulationError(
                f"{self.what}: the scale factor of {which} row {r} (byte {byte}) is "
                f"{int(scale_bytes[0, r])} in lane {r % 32} but {int(scale_bytes[q, r])} in its replica on lane "
                f"{32 * q + r % 32} (column {int(cols[q, r])}); the ISA requires it duplicated into all four "
                "32-lane sub-partitions"
            )
        return scale_bytes[0].astype(np.uint8).view(ml_dtypes.float8_e8m0fnu).astype(np.float64)

    def _read_tmem(self, lanes, cols, what: str) -> np.ndarray:
        tm = self.interp.tmem
        lanes, cols = np.broadcast_arrays(np.asarray(lanes, np.int64), np.asarray(cols, np.int64))
        if (cols >= _COLUMNS).any():
            raise OutOfBounds(f"{self.what}: {what} reaches TMEM column {int(cols.max())} of {_COLUMNS}")
        tm.check_columns(cols, f"{self.what}: {what}")
        return tm.read(lanes, cols, self.warp, kind="mma", thread=self.thread)

    # ---- the instruction ----

    def run(self) -> None:
        tm = self.interp.tmem
        lanes = _datapath_lanes(self.m, self.d_taddr >> 16, f"{self.what}: D at {self.d_taddr:#010x}")
        cols = (self.d_taddr & 0xFFFF) + np.arange(self.n)
        if cols[-1] >= _COLUMNS:
            raise OutOfBounds(f"{self.what}: D reaches TMEM column {int(cols[-1])} of {_COLUMNS}")
        tm.check_columns(cols, f"{self.what}: D")
        reads = []
        if not self.a_in_tmem:
            a, memory, elements = self.shared_operand("a", self.m)
            reads.append((memory, elements))
        else:
            a = self.tmem_operand(lanes)
        b, memory, elements = self.shared_operand("b", self.n)
        reads.append((memory, elements))
        scales = {}
        if self.scale_sources is not None:
            scales["scale_a"] = self.scale_factors("A", self.m, self.scale_sources[0], self.idesc["sf_a_id"])
            scales["scale_b"] = self.scale_factors("B", self.n, self.scale_sources[1], self.idesc["sf_b_id"])
        if self.idesc["negate_a"]:
            a = -a
        if self.idesc["negate_b"]:
            b = -b
        d_dtype = _ACCUMULATORS[self.idesc["d_dtype"]]
        grid_lanes, grid_cols = lanes[:, None], cols[None, :]
        words = tm.cells[grid_lanes, grid_cols]
        if d_dtype.itemsize == 2:  # an f16 D is not packed: it sits in the low 16 bits of each 32-bit cell
            old = (words & np.uint32(0xFFFF)).astype(np.uint16).view(d_dtype)
        else:
            old = words.view(d_dtype)
        try:
            result = mma_reference(
                old, a, b.T, self.enable_input_d, saturate=self.idesc.get("saturate", False), **scales
            )
        except DescriptorError as error:
            raise DescriptorError(f"{self.what}: {error}") from None
        out = result.view(np.uint16).astype(np.uint32) if d_dtype.itemsize == 2 else result.view(np.uint32)
        grid_lanes, grid_cols = np.broadcast_arrays(grid_lanes, grid_cols)
        tm.write(grid_lanes, grid_cols, self.warp, out, kind="mma", thread=self.thread)
        generation = int(tm.order.commits[self.warp])  # the warp's next commit covers this MMA
        for memory, elements in reads:
            read = AsyncRead(elements, self.what, self.warp, generation, self.interp.count)
            memory.async_reads.append(read)
            self.interp.async_reads.append(read)


def execute(interp, what: str, args) -> None:
    """Run the MMA helper ``what`` (``mma_<kind>_ss`` / ``mma_<kind>_ts``, MMA_DESIGN §3) with TIR ``args``: one
    ``tcgen05.mma`` per active thread, each read and computed when it is issued and recorded as an asynchronous
    access of its warp (TMEM) and an in-flight read (shared memory) until a commit and a wait complete it.

    Example: ``execute(interp, "mma_f16_ss", args)`` for ``args`` = (d_taddr, a_desc, b_desc, idesc,
    enable_input_d).
    """
    match = _HELPER.match(what)
    if match is None:
        raise SimulationError(f"the simulator does not implement the MMA helper {what}")
    for thread in np.nonzero(interp.mask)[0].tolist():
        _Mma(interp, match.group(1), match.group(2), args, thread).run()
