"""What ``tcgen05.mma`` and ``wgmma.mma_async`` have in common: matrix operands in shared memory and the arithmetic.

Written from the PTX ISA text, which describes the two instructions' shared-memory operands in the same words
("Canonical layouts" / "Shared Memory Matrix Layout", "Shared memory layout and swizzling"; restated in
``docs/notes/tcgen05-mma-facts.md`` and ``docs/notes/wgmma-facts.md``). Only the descriptors' bit formats differ;
each instruction's module decodes its own (``tcgen05_mma.decode_shared_descriptor``,
``wgmma.decode_wgmma_descriptor``) into the fields this module reads:
``{"start_address", "lbo", "sbo", "swizzle", "base_offset", "lbo_mode"}``, offsets in bytes.

* :func:`operand_byte_address` -- which shared-memory byte holds element ``(row, k)`` of one instruction's operand
  (ints or numpy arrays); :func:`operand_addresses` every element's address at once (cached: K loops repeat them).
* :func:`read_shared_operand` -- gather an operand out of the simulated shared space, checking what the async proxy
  may read.
* :func:`mma_reference` -- one MMA step on numpy arrays, products exact, rounded once to D's type.

Bad encodings raise :class:`DescriptorError` (a :class:`SimulationError` and a ``ValueError``) naming the field.
"""

from __future__ import annotations

import functools
from typing import Any

import ml_dtypes
import numpy as np

from .memory import OutOfBounds, SimulationError

__all__ = [
    "ACCUMULATOR_TYPES",
    "K_BYTES",
    "OPERAND_ELEMENTS",
    "SWIZZLE_WIDTH",
    "DescriptorError",
    "bit_field",
    "mma_reference",
    "operand_addresses",
    "operand_byte_address",
    "read_shared_operand",
    "swizzle_address",
    "unsigned_field",
]


class DescriptorError(SimulationError, ValueError):
    """A descriptor value the hardware does not define, or an operand access it does not describe."""


def unsigned_field(value: Any, width: int, what: str) -> int:
    """``value`` as a Python int if it is an integer (numpy's included) in ``[0, 2**width)``, else
    :class:`DescriptorError` naming ``what``.

    Example:
        >>> unsigned_field(np.uint64(5), 64, "a descriptor")
        5
    """
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 0 <= int(value) < 1 << width:
        raise DescriptorError(f"{what} is a {width}-bit unsigned integer, got {value!r}")
    return int(value)


def bit_field(value: int, low: int, width: int) -> int:
    """Bits ``low .. low + width - 1`` of ``value``.

    Example:
        >>> bit_field(0b1011_0000, 4, 3)
        3
    """
    return (value >> low) & ((1 << width) - 1)


#: Bytes of K one instruction reads per row of A and B, whatever the kind (32; PTX ISA, "Matrix shape" of both).
K_BYTES = 32
#: Each swizzle mode's width in bytes: the atom's row length (16 for none: a core matrix row).
SWIZZLE_WIDTH = {"none": 16, "128B_base32B": 128, "128B": 128, "64B": 64, "32B": 32}
#: numpy types of the operand element types (tf32 is read from 32-bit storage).
OPERAND_ELEMENTS = {
    "float16": np.dtype(np.float16),
    "bfloat16": np.dtype(ml_dtypes.bfloat16),
    "tf32": np.dtype(np.float32),
    "e4m3": np.dtype(ml_dtypes.float8_e4m3fn),
    "e5m2": np.dtype(ml_dtypes.float8_e5m2),
    "uint8": np.dtype(np.uint8),
    "int8": np.dtype(np.int8),
}
#: numpy types of the accumulator types.
ACCUMULATOR_TYPES = {"float32": np.dtype(np.float32), "float16": np.dtype(np.float16), "int32": np.dtype(np.int32)}
#: Buffer element types the simulator stores one per numpy byte although they are narrower (no byte image).
_SUB_BYTE = {"int2", "uint2", "int4", "uint4", "float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn"}


def swizzle_address(address, mode: str):
    """The XOR the hardware applies to an absolute shared-memory byte address (bits 7-9 pick the 8-row phase):
    128B: bits 4-6 ^= bits 7-9; 64B: bits 4-5 ^= 7-8; 32B: bit 4 ^= 7; 128B with 32-byte atoms: bits 5-6 ^= 7-8.

    Example:
        >>> swizzle_address(0x480, "128B"), swizzle_address(0x480, "none")
        (1168, 1152)
    """
    if mode == "none":
        return address
    if mode == "128B_base32B":  # 32-byte chunks (bits 5-6) permuted by bits 7-8: 4 rows of 128 bytes
        return address ^ (((address >> 7) & 0b11) << 5)
    chunks = {"32B": 0b1, "64B": 0b11, "128B": 0b111}[mode]  # 16-byte chunks (bits 4..) permuted by bits 7..
    return address ^ (((address >> 7) & chunks) << 4)


def operand_byte_address(desc_fields: dict[str, Any], row, k, dtype_bytes: int, major: str):
    """Shared-memory byte address of element ``(row, k)`` of one MMA's operand described by ``desc_fields``.

    ``row`` indexes M (for A) or N (for B); ``k`` indexes K within one instruction, which always spans 32 bytes of
    K (``k * dtype_bytes < 32``); both may be numpy arrays (broadcast). With ``b`` the byte offset of the element
    along its contiguous dimension and ``S`` the swizzle width (16 for none), the ISA's canonical layouts place it,
    before swizzling, at:

    * K-major, no swizzle: core matrices of 8 rows x 16 bytes; ``start + (row//8)*SBO + (row%8)*16 + (b//16)*LBO
      + b%16`` with ``b = k*dtype_bytes`` (LBO steps along K, SBO along M/N);
    * K-major, swizzled: atoms of 8 rows x S bytes; ``start + (row//8)*SBO + (row%8)*S + b`` (LBO unused);
    * MN-major, no swizzle: core matrices of 16 bytes of M/N x 8 K-rows; ``start + (b//16)*SBO + (k//8)*LBO +
      (k%8)*16 + b%16`` with ``b = row*dtype_bytes`` (here SBO steps along M/N, LBO along K);
    * MN-major, swizzled: atoms of S bytes of M/N x R K-rows (R = 8; R = 4 for 128B with 32-byte atoms);
      ``start + (b//S)*LBO + (k//R)*SBO + (k%R)*S + b%S``;

    then :func:`swizzle_address` XORs the absolute address. Modes the ISA does not define for the operand
    (128B-32B-atom K-major), LBO mode 1 and a non-zero base offset (how it enters the XOR is not documented) raise
    :class:`DescriptorError`.

    Example (bf16, K-major, 128B swizzle, tile at 0x400, SBO 1024: row 1's first chunk lands in chunk 1):
        >>> fields = {"start_address": 0x400, "lbo": 16, "sbo": 1024, "swizzle": "128B"}
        >>> hex(operand_byte_address(fields, 1, 0, 2, "K")), hex(operand_byte_address(fields, 1, 8, 2, "K"))
        ('0x490', '0x480')
    """
    if major not in ("K", "MN"):
        raise DescriptorError(f"major must be 'K' or 'MN', got {major!r}")
    if dtype_bytes not in (1, 2, 4):
        raise DescriptorError(f"dtype_bytes must be 1, 2 or 4 (8/16/32-bit elements), got {dtype_bytes!r}")
    k_bytes = np.asarray(k) * dtype_bytes
    if np.any(np.asarray(row) < 0) or np.any(k_bytes < 0) or np.any(k_bytes >= K_BYTES):
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
    width = SWIZZLE_WIDTH[mode]
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
    return swizzle_address(linear, mode)


@functools.lru_cache(maxsize=4096)
def _cached_addresses(fields: tuple, rows: int, dtype_bytes: int, major: str) -> np.ndarray:
    desc_fields = dict(fields)
    r = np.arange(rows, dtype=np.int64)[:, None]
    k = np.arange(K_BYTES // dtype_bytes, dtype=np.int64)[None, :]
    addresses = operand_byte_address(desc_fields, r, k, dtype_bytes, major)
    addresses = np.broadcast_to(np.asarray(addresses, np.int64), (rows, K_BYTES // dtype_bytes)).copy()
    addresses.flags.writeable = False
    return addresses


def operand_addresses(desc_fields: dict[str, Any], rows: int, dtype_bytes: int, major: str) -> np.ndarray:
    """The byte address (:func:`operand_byte_address`) of every element ``(row, k)`` of one instruction's ``rows x
    K`` operand, as a read-only ``int64`` array (cached by the fields: a K loop and its stages repeat them).

    Example (16-bit, K-major, no swizzle: row 1 is the second 16-byte row of a core matrix; k = 8 is LBO on):
        >>> fields = {"start_address": 0, "lbo": 128, "sbo": 256, "swizzle": "none"}
        >>> operand_addresses(fields, 8, 2, "K")[1, :9].tolist()
        [16, 18, 20, 22, 24, 26, 28, 30, 144]
    """
    return _cached_addresses(tuple(sorted(desc_fields.items())), rows, dtype_bytes, major)


def read_shared_operand(interp, start: int, addresses: np.ndarray, dtype, readers, where: str, what: str, space=None):
    """``rows x K`` elements of an operand read through the async proxy from the CTA's shared space.

    ``start`` is the descriptor's start address (an address of ``interp.launch.shared_space``); ``addresses`` the
    absolute byte address of every element (:func:`operand_addresses`), all of which must lie in the buffer
    ``start`` lies in; ``dtype`` the element type (a numpy dtype); ``readers`` the CTA-local threads whose access it
    is (each must see the bytes written as ``memory.check_async_read`` demands). ``where`` names the operand in
    address errors, ``what`` the reading instruction in race errors. ``space`` is the shared space read, when it is
    another CTA's (a pair MMA reading its peer's half, ``tcgen05_pair``: the same addresses there, the readers
    still ``interp``'s threads). Returns ``(values, memory, elements)``: the operand, the buffer, and the buffer
    elements read (for an in-flight ``AsyncRead``).

    Example: ``read_shared_operand(interp, 1024, operand_addresses(fields, 64, 2, "K"), np.float16, [0], "A", "the
    MMA")``.
    """
    dtype = np.dtype(dtype)
    memory, offset = (space or interp.launch.shared_space).find(start, 1, where)
    base = start - offset
    lowest, end = int(addresses.min()), int(addresses.max()) + dtype.itemsize
    if lowest < base or end > base + memory.data.nbytes:
        raise OutOfBounds(
            f"{where} reads shared bytes {lowest}..{end - 1}, outside {memory.name} (bytes {base}.."
            f"{base + memory.data.nbytes - 1}), the buffer its start address {start} lies in"
        )
    if memory.data.dtype.name in _SUB_BYTE:  # one numpy item per element: the bytes are not the hardware's
        raise SimulationError(
            f"{where} is in {memory.name}, a {memory.data.dtype.name} buffer; the simulator reads MMA "
            "operands from the bytes of 8-bit or wider buffers only"
        )
    image = memory.data.view(np.uint8)
    element_bytes = (addresses - base)[..., None] + np.arange(dtype.itemsize)
    elements = np.unique(element_bytes // memory.data.dtype.itemsize)
    launch = interp.launch
    for reader in readers:
        gid = int(launch.block * interp.count + reader)
        memory.check_async_read(elements, gid, launch.block, launch.interval, what, interp.sync)
    values = image[element_bytes].reshape(addresses.shape[0], -1).view(dtype)
    return values, memory, elements


# --- Arithmetic ---


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
    """The result of one MMA step: ``A @ B + (D if scale_d else 0)``, in D's dtype.

    ``a`` is M x K, ``b`` is K x N, ``d`` is M x N. The kind follows from the operand dtypes: float16 / bfloat16,
    fp8 ``float8_e4m3fn`` / ``float8_e5m2`` from ml_dtypes with a float32 or float16 D; float32 operands are tf32
    (the low 13 mantissa bits are ignored) with a float32 D; int8 / uint8 with an int32 D, wrapping modulo 2**32.
    Products are exact and summed in float64, then rounded once to D's dtype (the ISA does not fix the hardware's
    summation order or intermediate precision, so float results agree with hardware within the dtype's tolerance,
    integer ones exactly). ``scale_d`` is the instruction's enable-input-d (tcgen05) / scale-d (wgmma) predicate:
    false overwrites D.

    Block scaling (tcgen05 kind::mxf8f6f4): ``scale_a`` (M values) multiplies row ``m`` of A and ``scale_b`` (N
    values) column ``n`` of B before the product (both or neither). ``saturate`` (kind::i8's bit 3) clamps the
    int32 result to its range instead of wrapping.

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
    elif kinds == {np.dtype(np.float16)}:  # f16 inputs may accumulate in f16
        allowed_d = (np.float32, np.float16)
    elif kinds == {np.dtype(ml_dtypes.bfloat16)}:
        allowed_d = (np.float32,)
    elif kinds <= _FP8_INPUTS:  # A and B may differ
        allowed_d = (np.float32, np.float16)
    else:
        raise DescriptorError(f"no MMA kind takes A {a.dtype} with B {b.dtype}")
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
