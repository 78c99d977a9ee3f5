"""The simulator's own model of ``tcgen05.mma``: its descriptors, its operand addressing and its arithmetic.

Written from the PTX ISA text (tcgen05 "Instruction descriptor", "Shared memory descriptor", "Canonical layouts",
"Shared memory layout and swizzling", "Data path layout organization"), as restated with sources in
``docs/notes/tcgen05-mma-facts.md`` -- never from the project's layouts or its lowering, so that the two can check
each other.

The canonical layouts, the swizzles and the arithmetic are the same text for ``wgmma`` and live in
``matrix_operands`` (re-exported here: :func:`operand_byte_address`, :func:`mma_reference`).

* :func:`decode_instruction_descriptor` reads the 32-bit ``idesc`` of one kind (the kind is in the instruction's
  name, not in the descriptor, so it is an argument).
* :func:`decode_shared_descriptor` reads a 64-bit shared-memory matrix descriptor, and :func:`operand_byte_address`
  says which shared-memory byte holds element ``(row, k)`` of the operand it describes.
* :func:`load_operand` gathers one instruction's operand out of a shared-memory byte image by those addresses.
* :func:`mma_reference` is the arithmetic of one MMA step on numpy arrays; :func:`accumulator_place` is where
  element ``(row, col)`` of D sits in tensor memory.
* :func:`issue` runs the MMA helpers of a lowered kernel (``mma_<kind>_ss`` / ``_ts``, named by
  ``ir/device_calls``; the tcgen05 executor, ``tmem.HELPERS``, reads the kind and form from the name) inside the
  interpreter: it reads A, B (and scale factors) as the ISA's descriptors and
  datapaths say, computes with :func:`mma_reference`, writes D into tensor memory, and records the instruction as
  asynchronous (``tmem_order``: TMEM accesses of kind ``mma``; ``memory.AsyncRead``: shared bytes in flight)
  until a ``tcgen05.commit`` and an mbarrier wait complete it (``mbarrier.py``).

Bad encodings raise :class:`DescriptorError` (a :class:`SimulationError` and a ``ValueError``) naming the field.
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np

from .matrix_operands import (
    ACCUMULATOR_TYPES,
    K_BYTES,
    OPERAND_ELEMENTS,
    DescriptorError,
    bit_field,
    mma_reference,
    operand_addresses,
    operand_byte_address,
    read_shared_operand,
    unsigned_field,
)
from .memory import AsyncRead, OutOfBounds, SimulationError

__all__ = [
    "DescriptorError",
    "accumulator_place",
    "decode_instruction_descriptor",
    "decode_shared_descriptor",
    "issue",
    "load_operand",
    "mma_reference",
    "operand_byte_address",
]


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
    value = unsigned_field(value, 32, "an instruction descriptor")
    if kind not in _OPERAND_TYPES:
        raise DescriptorError(f"unknown tcgen05.mma kind {kind!r}; expected one of {sorted(_OPERAND_TYPES)}")
    scaled = kind == "mxf8f6f4"
    for name, (low, width) in (_RESERVED_SCALED if scaled else _RESERVED_DENSE).items():
        if bit_field(value, low, width):
            raise DescriptorError(f"instruction descriptor {value:#010x}: reserved field {name} must be 0")
    fields: dict[str, Any] = {"kind": kind}
    fields["sparse"] = bool(bit_field(value, 2, 1))
    fields["sparsity_selector"] = bit_field(value, 0, 2)
    if not fields["sparse"] and fields["sparsity_selector"]:
        raise DescriptorError(
            f"instruction descriptor {value:#010x}: sparsity selector (bits 0-1) is "
            f"{fields['sparsity_selector']} but the sparse flag (bit 2) is 0"
        )
    for operand, low in (("a", 7), ("b", 10)):
        code = bit_field(value, low, 3)
        if code not in _OPERAND_TYPES[kind]:
            raise DescriptorError(
                f"instruction descriptor {value:#010x}: {operand.upper()} type code {code} (bits {low}-{low + 2}) "
                f"is not one of kind::{kind}'s {_OPERAND_TYPES[kind]}"
            )
        fields[f"{operand}_dtype"] = _OPERAND_TYPES[kind][code]
    for operand, negate_bit, major_bit in (("a", 13, 15), ("b", 14, 16)):
        fields[f"negate_{operand}"] = bool(bit_field(value, negate_bit, 1))
        fields[f"{operand}_major"] = "MN" if bit_field(value, major_bit, 1) else "K"
        if fields[f"{operand}_major"] == "MN" and fields[f"{operand}_dtype"] not in _TRANSPOSABLE:
            raise DescriptorError(
                f"instruction descriptor {value:#010x}: transpose {operand.upper()} (bit {major_bit}) set, but "
                f"{fields[f'{operand}_dtype']} operands can only be K-major"
            )
    if kind == "i8" and (fields["negate_a"] or fields["negate_b"]):
        raise DescriptorError(f"instruction descriptor {value:#010x}: negate A/B (bits 13-14) must be 0 for kind::i8")
    fields["n"] = 8 * bit_field(value, 17, 6)
    if not 8 <= fields["n"] <= 256:
        raise DescriptorError(f"instruction descriptor {value:#010x}: N>>3 field (bits 17-22) gives N = {fields['n']}")
    if scaled:
        fields["d_dtype"] = "float32"
        fields["sf_b_id"] = bit_field(value, 4, 2)
        fields["sf_a_id"] = bit_field(value, 29, 2)
        if not bit_field(value, 23, 1):
            raise DescriptorError(
                f"instruction descriptor {value:#010x}: scale type (bit 23) is 0 (UE4M3), which kind::mxf8f6f4 "
                "does not take; it needs 1 (UE8M0)"
            )
        fields["scale_dtype"] = "ue8m0"
        fields["m"] = 128 * bit_field(value, 27, 2)
        allowed_m = (128, 256)
    else:
        code = bit_field(value, 4, 2)
        if code not in _ACCUMULATOR_TYPES[kind]:
            raise DescriptorError(
                f"instruction descriptor {value:#010x}: D type code {code} (bits 4-5) is not one of kind::{kind}'s "
                f"{_ACCUMULATOR_TYPES[kind]}"
            )
        fields["d_dtype"] = _ACCUMULATOR_TYPES[kind][code]
        if kind == "f16" and fields["d_dtype"] == "float16" and "bfloat16" in (fields["a_dtype"], fields["b_dtype"]):
            raise DescriptorError(f"instruction descriptor {value:#010x}: an f16 D needs f16 A and B, not bf16")
        fields["saturate"] = bool(bit_field(value, 3, 1))
        if fields["saturate"] and kind != "i8":
            raise DescriptorError(f"instruction descriptor {value:#010x}: saturate (bit 3) is for kind::i8 only")
        fields["m"] = 16 * bit_field(value, 24, 5)
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
    value = unsigned_field(value, 64, "a shared-memory descriptor")
    for name, low, width in (("bits 14-15", 14, 2), ("bits 30-31", 30, 2), ("bits 53-60", 53, 8)):
        if bit_field(value, low, width):
            raise DescriptorError(f"shared-memory descriptor {value:#018x}: unused {name} must be 0")
    if bit_field(value, 46, 3) != 0b001:
        raise DescriptorError(
            f"shared-memory descriptor {value:#018x}: fixed field (bits 46-48) is {bit_field(value, 46, 3):#05b}, "
            "must be 0b001"
        )
    layout = bit_field(value, 61, 3)
    if layout not in _SWIZZLE_MODES:
        raise DescriptorError(
            f"shared-memory descriptor {value:#018x}: layout type {layout} (bits 61-63) is undefined; "
            f"valid: {sorted(_SWIZZLE_MODES)}"
        )
    return {
        "start_address": 16 * bit_field(value, 0, 14),
        "lbo": 16 * bit_field(value, 16, 14),
        "sbo": 16 * bit_field(value, 32, 14),
        "base_offset": bit_field(value, 49, 3),
        "lbo_mode": bit_field(value, 52, 1),
        "swizzle": _SWIZZLE_MODES[layout][0],
    }


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
    k_extent = K_BYTES // dtype.itemsize
    addresses = operand_addresses(fields, rows, dtype.itemsize, major)
    if addresses.size and addresses.max() + dtype.itemsize > shared.size:
        raise DescriptorError(
            f"the operand reaches byte {int(addresses.max()) + dtype.itemsize} of a {shared.size}-byte shared image"
        )
    element_bytes = addresses[..., None] + np.arange(dtype.itemsize)
    return shared[element_bytes].reshape(rows, k_extent * dtype.itemsize).view(dtype)


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

#: TMEM geometry (PTX ISA, "Tensor Memory"): lanes x 32-bit columns of one CTA.
_LANES, _COLUMNS = 128, 512


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
            raise SimulationError(f"{self.name} takes {expected} arguments (ops/helpers/tcgen05.py), got {len(args)}")
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
            if self.idesc[f"{operand}_dtype"] not in OPERAND_ELEMENTS:
                raise DescriptorError(
                    f"{self.what}: {operand.upper()} type {self.idesc[f'{operand}_dtype']} is not modelled "
                    "(6- and 4-bit types are not)"
                )
        if self.idesc["b_major"] == "MN" and OPERAND_ELEMENTS[self.idesc["b_dtype"]].itemsize == 1 and self.n % 16:
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
        fields = decode_shared_descriptor(descriptor)
        dtype = OPERAND_ELEMENTS[self.idesc[f"{operand}_dtype"]]
        addresses = operand_addresses(fields, rows, dtype.itemsize, self.idesc[f"{operand}_major"])
        where = f"{self.what}: {operand.upper()} (descriptor {descriptor:#018x})"
        what = f"{self.what} ({operand.upper()})"
        start = fields["start_address"]
        values, memory, elements = read_shared_operand(self.interp, start, addresses, dtype, [self.thread], where, what)
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
        cols = (taddr & 0xFFFF) + np.arange(K_BYTES // 4)
        words = self._read_tmem(lanes_of_d[:, None], cols[None, :], "A")
        dtype = OPERAND_ELEMENTS[self.idesc["a_dtype"]]
        return np.ascontiguousarray(words).view(np.uint8).reshape(self.m, K_BYTES).view(dtype)

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
        d_dtype = ACCUMULATOR_TYPES[self.idesc["d_dtype"]]
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


def issue(interp, args, kind: str, form: str) -> None:
    """Run the MMA helper ``mma_<kind>_<form>`` (``ops/helpers``; ``form`` ``ss``: A and B from shared memory,
    ``ts``: A from tensor memory) with TIR ``args``: one ``tcgen05.mma`` per active thread, each read and computed
    when it is issued and recorded as an asynchronous access of its warp (TMEM, ``interp.tmem``, which the tcgen05
    executor has made) and an in-flight read (shared memory) until a commit and a wait complete it.

    Example: ``issue(interp, args, "f16", "ss")`` for ``args`` = (d_taddr, a_desc, b_desc, idesc, enable_input_d).
    """
    for thread in np.nonzero(interp.mask)[0].tolist():
        _Mma(interp, kind, form, args, thread).run()
