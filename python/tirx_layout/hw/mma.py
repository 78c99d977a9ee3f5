"""The ``tcgen05.mma`` descriptors as data and pure functions (PTX ISA 9.1, tcgen05 chapter: "Instruction
descriptor", "Shared memory descriptor", "Matrix shape", "Shared memory layout and swizzling"; restated in
``docs/notes/tcgen05-mma-facts.md`` §2-§4).

Two encoders, nothing lowered here:

* the 32-bit instruction descriptor, from a validated :class:`MmaInstruction` (kind, dtypes, M, N, majorness,
  negation) — :func:`instruction_descriptor`;
* the 64-bit shared-memory matrix descriptor, *derived* from an operand's layout — :func:`shared_matrix_descriptor`
  recognises the ISA's canonical K-major and MN-major layouts (no swizzle, 32B, 64B, 128B), reads the leading and
  stride byte offsets off the layout's addresses, and refuses any layout the hardware cannot read;
  :func:`advance_k` gives the descriptor of a later K step.

Only ``cta_group::1``, dense, non-``.ws`` MMAs; the fp4 block-scaled kinds (``mxf4``, ``mxf4nvf4``) are not
modelled. The 128B-with-32B-atom swizzle (MN-major 32-bit operands) is accepted only where the ISA's two readings
of its SBO agree (4-row K groups packed 512 bytes apart; see ``docs/decisions.md``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import tvm

from ..core.values import static_int
from ..layout.axis import TCol, TLane
from ..layout.swizzle import ComposeLayout
from ..layout.tile import TileLayout
from .memory import SWIZZLE_128B_BASE32B, SWIZZLE_BYTES, dtype_bytes, mode_of_swizzle, swizzle_128b_base32b
from .tcgen05 import DESCRIPTOR_SWIZZLE, LANES_PER_WARP, SCALE_FACTORS_PER_COLUMN, TMEM_COLUMNS, TMEM_LANES
from .wgmma import DESCRIPTOR_SWIZZLE as WGMMA_DESCRIPTOR_SWIZZLE
from .wgmma import MN_MAJOR_DTYPES as WGMMA_MN_MAJOR_DTYPES
from .wgmma import mn_major_refusal

#: Bytes of A and B one MMA reads per row along K, for every kind modelled here ("Matrix shape": K = 16 for
#: f16, 8 for tf32, 32 for f8f6f4/i8/mxf8f6f4).
K_BYTES_PER_INSTRUCTION = 32

#: K of one instruction per kind ("Matrix shape", dense): always 32 bytes of A/B per row; the 6- and 4-bit types of
#: f8f6f4/mxf8f6f4 sit in 8-bit containers.
K_PER_KIND = {"f16": 16, "tf32": 8, "f8f6f4": 32, "i8": 32, "mxf8f6f4": 32}
#: Operand element types of each kind and their 3-bit codes in the A/B type fields (bits 7-9, 10-12).
_F8F6F4_CODES = {"float8_e4m3fn": 0, "float8_e5m2": 1, "float6_e2m3fn": 3, "float6_e3m2fn": 4, "float4_e2m1fn": 5}
OPERAND_CODES = {
    "f16": {"float16": 0, "bfloat16": 1},
    "tf32": {"float32": 2},  # tf32 operands are stored in 32 bits
    "f8f6f4": _F8F6F4_CODES,
    "i8": {"uint8": 0, "int8": 1},
    "mxf8f6f4": _F8F6F4_CODES,
}
#: Accumulator types of each kind and their codes in bits 4-5 (block-scaled kinds have no D field: always f32).
ACCUMULATOR_CODES = {
    "f16": {"float16": 0, "float32": 1},
    "tf32": {"float32": 1},
    "f8f6f4": {"float16": 0, "float32": 1},
    "i8": {"int32": 2},
    "mxf8f6f4": {"float32": None},
}
#: The one scale-factor type of ``mxf8f6f4`` (UE8M0, code 1 in bit 23).
SCALE_DTYPE = "float8_e8m0fnu"
#: M of each kind with ``cta_group::1`` (dense, not ``.ws``).
M_VALUES = {"f16": (64, 128), "tf32": (64, 128), "f8f6f4": (64, 128), "i8": (64, 128), "mxf8f6f4": (128,)}
#: Operand types the ISA lets an MMA read MN-major ("transposed"), Table 51 / the instruction descriptor notes.
MN_MAJOR_DTYPES = frozenset({"float16", "bfloat16", "float32", "float8_e4m3fn", "float8_e5m2", "int8", "uint8"})
MAJORS = ("K", "MN")
#: Every operand type of a modelled kind that a layout can address (whole bytes: the 6- and 4-bit types are not).
OPERAND_DTYPES = frozenset(
    d for codes in OPERAND_CODES.values() for d in codes if not d.startswith(("float6", "float4"))
)


def valid_n(kind: str, m: int) -> tuple[int, ...]:
    """The N values the ISA's "Matrix shape" table allows for ``kind`` and M with ``cta_group::1``: 8..256 in steps
    of 8, except ``i8`` (8, 16, 24, 32, then 48..256 in steps of 16).

    Example:
        >>> valid_n("i8", 128)[:6], len(valid_n("f16", 64))
        ((8, 16, 24, 32, 48, 64), 32)
    """
    if kind not in M_VALUES:
        raise ValueError(f"unknown tcgen05.mma kind {kind!r}; expected one of {sorted(M_VALUES)}")
    if m not in M_VALUES[kind]:
        raise ValueError(f"kind {kind} with cta_group::1 takes M in {M_VALUES[kind]}, got M={m}")
    if kind == "i8":
        return (8, 16, 24, 32, *range(48, 257, 16))
    return tuple(range(8, 257, 8))


def k_per_instruction(dtype) -> int:
    """Elements of K one MMA consumes: 32 bytes of each operand row.

    Example:
        >>> k_per_instruction("bfloat16"), k_per_instruction("float32"), k_per_instruction("float8_e4m3fn")
        (16, 8, 32)
    """
    return K_BYTES_PER_INSTRUCTION // dtype_bytes(dtype)


def mma_kind(a_dtype, b_dtype, block_scaled: bool = False) -> str:
    """The kind that multiplies A and B of these dtypes: the one whose operand types hold both (for 8-bit floats
    ``f8f6f4``, or ``mxf8f6f4`` when ``block_scaled``). ``ValueError`` listing every kind's types otherwise.

    Example:
        >>> mma_kind("bfloat16", "bfloat16"), mma_kind("float8_e4m3fn", "float8_e5m2", block_scaled=True)
        ('f16', 'mxf8f6f4')
    """
    a_dtype, b_dtype = str(a_dtype), str(b_dtype)
    kinds = [k for k, codes in OPERAND_CODES.items() if a_dtype in codes and b_dtype in codes]
    kinds = [k for k in kinds if k.startswith("mx") == block_scaled]
    if len(kinds) != 1:
        scaled = " with scale factors" if block_scaled else ""
        raise ValueError(
            f"no tcgen05.mma kind multiplies A {a_dtype} by B {b_dtype}{scaled}; the kinds take "
            + "; ".join(f"{k}: {', '.join(sorted(codes))}" for k, codes in OPERAND_CODES.items())
        )
    return kinds[0]


@dataclass(frozen=True)
class MmaInstruction:
    """One ``tcgen05.mma.cta_group::1`` as its instruction descriptor describes it; every field is checked against
    the ISA on construction. ``a_major``/``b_major`` are "K" or "MN"; ``saturate`` is for ``i8`` only;
    ``scale_a_id``/``scale_b_id`` (0..3, ``mxf8f6f4`` only) pick the byte of the TMEM scale-factor cell.

    Example:
        >>> MmaInstruction("f16", "bfloat16", "bfloat16", "float32", m=128, n=128).k
        16
        >>> MmaInstruction("f16", "bfloat16", "bfloat16", "float16", m=128, n=128)
        Traceback (most recent call last):
        ...
        ValueError: kind f16: a float16 accumulator needs float16 A and B, got A bfloat16, B bfloat16
    """

    kind: str
    a_dtype: str
    b_dtype: str
    d_dtype: str
    m: int
    n: int
    a_major: str = "K"
    b_major: str = "K"
    negate_a: bool = False
    negate_b: bool = False
    saturate: bool = False
    scale_a_id: int = 0
    scale_b_id: int = 0

    def __post_init__(self) -> None:
        kind = self.kind
        if kind not in OPERAND_CODES:
            raise ValueError(f"unknown tcgen05.mma kind {kind!r}; expected one of {sorted(OPERAND_CODES)}")
        for name in ("a_dtype", "b_dtype", "d_dtype"):
            object.__setattr__(self, name, str(getattr(self, name)))
        for side, dtype in (("A", self.a_dtype), ("B", self.b_dtype)):
            if dtype not in OPERAND_CODES[kind]:
                raise ValueError(f"kind {kind}: {side} must be one of {sorted(OPERAND_CODES[kind])}, got {dtype}")
        if self.d_dtype not in ACCUMULATOR_CODES[kind]:
            raise ValueError(
                f"kind {kind}: the accumulator must be one of {sorted(ACCUMULATOR_CODES[kind])}, got {self.d_dtype}"
            )
        if kind == "f16" and self.a_dtype != self.b_dtype:
            # The ISA's kind::f16 rows (Matrix Shape table, instruction descriptor) name A/B as f16 or bf16 and list
            # no mixed pair, unlike kind::f8f6f4 and kind::i8 whose mixed pairs are documented: refuse it.
            raise ValueError(
                f"kind f16 multiplies float16 x float16 or bfloat16 x bfloat16; the ISA lists no mixed pair, got A "
                f"{self.a_dtype}, B {self.b_dtype}"
            )
        if kind == "f16" and self.d_dtype == "float16" and (self.a_dtype, self.b_dtype) != ("float16", "float16"):
            raise ValueError(
                f"kind f16: a float16 accumulator needs float16 A and B, got A {self.a_dtype}, B {self.b_dtype}"
            )
        m, n = static_int(self.m, "M"), static_int(self.n, "N")
        object.__setattr__(self, "m", m)
        object.__setattr__(self, "n", n)
        if n not in valid_n(kind, m):
            raise ValueError(f"kind {kind} with M={m} takes N in {_ranges(valid_n(kind, m))}, got N={n}")
        for side, major, dtype in (("A", self.a_major, self.a_dtype), ("B", self.b_major, self.b_dtype)):
            if major not in MAJORS:
                raise ValueError(f"{side}'s majorness must be 'K' or 'MN', got {major!r}")
            if major == "MN" and dtype not in MN_MAJOR_DTYPES:
                raise ValueError(f"{side} is {dtype}: the ISA reads only {sorted(MN_MAJOR_DTYPES)} MN-major")
        if self.b_major == "MN" and dtype_bytes(self.b_dtype) == 1 and n % 16:
            raise ValueError(f"an MN-major 8-bit B needs N a multiple of 16, got N={n}")
        for flag in ("negate_a", "negate_b", "saturate"):
            if not isinstance(getattr(self, flag), bool):
                raise TypeError(f"{flag} must be a bool, got {getattr(self, flag)!r}")
        if kind == "i8" and (self.negate_a or self.negate_b):
            raise ValueError("kind i8 cannot negate A or B")
        if self.saturate and kind != "i8":
            raise ValueError(f"saturate is for kind i8 only, got kind {kind}")
        for name in ("scale_a_id", "scale_b_id"):
            value = static_int(getattr(self, name), name)
            if kind == "mxf8f6f4" and not 0 <= value <= 3:
                raise ValueError(f"{name} must be in 0..3 (the byte of the 32-bit scale cell), got {value}")
            if kind != "mxf8f6f4" and value:
                raise ValueError(f"{name} is for block-scaled kinds only, got {value} with kind {kind}")

    @property
    def k(self) -> int:
        """K of one instruction (32 bytes of A per row; 6- and 4-bit types in 8-bit containers).

        Example:
            >>> MmaInstruction("tf32", "float32", "float32", "float32", m=64, n=8).k
            8
        """
        return K_PER_KIND[self.kind]


def _ranges(values: tuple[int, ...]) -> str:
    if values == tuple(range(8, 257, 8)):
        return "8..256 step 8"
    return "8, 16, 24, 32, 48..256 step 16"


def instruction_descriptor(instruction: MmaInstruction) -> int:
    """The 32-bit instruction descriptor of ``instruction`` (ISA "Instruction descriptor", the table for
    f16/tf32/f8f6f4/i8 and the one for mxf8f6f4): D type at 4-5 (scale-B id for mxf8f6f4), A/B types at 7-9 and
    10-12, negation at 13-14, transposition (MN-major) at 15-16, N >> 3 at 17-22, M >> 4 at 24-28 (the block-scaled
    table's M >> 7 at 27-28 is the same bits), saturate at 3, scale type at 23 and scale-A id at 29-30 for mxf8f6f4.

    Example:
        >>> hex(instruction_descriptor(MmaInstruction("f16", "bfloat16", "bfloat16", "float32", m=128, n=128)))
        '0x8200490'
    """
    if not isinstance(instruction, MmaInstruction):
        raise TypeError(f"instruction_descriptor takes an MmaInstruction, got {instruction!r}")
    i = instruction
    codes = OPERAND_CODES[i.kind]
    bits = codes[i.a_dtype] << 7 | codes[i.b_dtype] << 10
    bits |= int(i.negate_a) << 13 | int(i.negate_b) << 14
    bits |= int(i.a_major == "MN") << 15 | int(i.b_major == "MN") << 16
    bits |= (i.n >> 3) << 17 | (i.m >> 4) << 24
    if i.kind == "mxf8f6f4":
        bits |= i.scale_b_id << 4 | 1 << 23 | i.scale_a_id << 29
    else:
        bits |= ACCUMULATOR_CODES[i.kind][i.d_dtype] << 4 | int(i.saturate) << 3
    return bits


# ---- the shared-memory matrix descriptor ------------------------------------------------------------------------

#: Bytes of one swizzle row, and rows per repeat of the XOR pattern, of every descriptor swizzle mode (ISA Table 55:
#: 8 rows, except 4 for the 128B-with-32B-atom mode).
_ROW_BYTES = {**SWIZZLE_BYTES, SWIZZLE_128B_BASE32B: 128}
_REPEAT_ROWS = {**dict.fromkeys(SWIZZLE_BYTES, 8), SWIZZLE_128B_BASE32B: 4}
#: Field limits: addresses and offsets are 18-bit byte values stored as 14 bits of 16-byte units.
_ADDRESS_LIMIT = 1 << 18
_UNIT = 16
#: The fixed constant 0b001 in bits 46-48 (tcgen05 only; the wgmma descriptor has nothing there).
_FIXED_BITS = 1 << 46
#: The instruction families that read a shared-memory matrix descriptor: Blackwell's ``tcgen05.mma`` and Hopper's
#: ``wgmma.mma_async``. They share the canonical layouts and the meaning of every field; they differ in the bits
#: (see :meth:`SharedDescriptor.encode`) and in what they accept (see :func:`shared_matrix_descriptor`).
FAMILIES = ("tcgen05", "wgmma")


def _check_family(family) -> str:
    if family not in FAMILIES:
        raise ValueError(f"family must be one of {FAMILIES} (the instruction reading the descriptor), got {family!r}")
    return family


@dataclass(frozen=True)
class SharedDescriptor:
    """A shared-memory matrix descriptor, its fields in bytes: ``start`` (shared-window address), ``lbo`` and ``sbo``
    (leading and stride byte offsets), ``base_offset`` (0: operands start on their swizzle repeat), ``swizzle``
    ("none", "32B", "64B", "128B", "128B_base32B") and ``major`` ("K" or "MN", which the instruction carries, not
    this descriptor). ``k_offsets[s]`` is the byte offset of K step ``s`` from ``start`` (see :func:`advance_k`).
    The same fields serve ``tcgen05.mma`` and ``wgmma``; :meth:`encode` writes either family's bits.

    Example:
        >>> d = SharedDescriptor(0x400, 16, 1024, 0, "128B", "K", (0, 32))
        >>> hex(d.encode()), hex(d.encode(family="wgmma"))
        ('0x4000404000010040', '0x4000004000010040')
    """

    start: int
    lbo: int
    sbo: int
    base_offset: int
    swizzle: str
    major: str
    k_offsets: tuple[int, ...] = (0,)

    def encode(self, family: str = "tcgen05") -> int:
        """The 64-bit value. Both families: start >> 4 at bits 0-13, LBO >> 4 at 16-29, SBO >> 4 at 32-45, base
        offset at 49-51. ``family="tcgen05"`` (ISA "Shared memory descriptor"): the fixed 0b001 at 46-48 and the
        3-bit swizzle code at 61-63 (0 none, 1 128B with 32-byte atoms, 2 128B, 4 64B, 6 32B). ``family="wgmma"``
        (ISA "Matrix Descriptor Format"): nothing at 46-48 and the 2-bit code at 62-63 (0 none, 1 128B, 2 64B,
        3 32B); it has no 128B-with-32-byte-atom mode.

        Example:
            >>> hex(SharedDescriptor(0, 256, 128, 0, "none", "K").encode())
            '0x400800100000'
            >>> hex(SharedDescriptor(0, 256, 128, 0, "none", "K").encode(family="wgmma"))
            '0x800100000'
        """
        family = _check_family(family)
        for name in ("start", "lbo", "sbo"):
            value = getattr(self, name)
            if not 0 <= value < _ADDRESS_LIMIT or value % _UNIT:
                raise ValueError(f"descriptor {name} must be a 16-byte multiple in [0, 2^18), got {value}")
        if not 0 <= self.base_offset <= 7:
            raise ValueError(f"descriptor base offset must be in 0..7, got {self.base_offset}")
        codes = DESCRIPTOR_SWIZZLE if family == "tcgen05" else WGMMA_DESCRIPTOR_SWIZZLE
        if self.swizzle not in codes:
            raise ValueError(
                f"the {family} descriptor's swizzle must be one of {sorted(codes)}, got {self.swizzle!r}"
                + (" (Hopper has no 128B swizzle with 32-byte atoms)" if self.swizzle in DESCRIPTOR_SWIZZLE else "")
            )
        fields = self.start >> 4 | (self.lbo >> 4) << 16 | (self.sbo >> 4) << 32 | self.base_offset << 49
        if family == "wgmma":
            return fields | codes[self.swizzle] << 62
        return fields | _FIXED_BITS | codes[self.swizzle] << 61


def _canonical(major: str, mode: str, element: int, lbo: int, sbo: int, rows, ks):
    """Byte offsets of elements (row, k) of one K step in the ISA's canonical layout ("Canonical layouts"), before the
    swizzle; ``rows`` index M or N, ``ks`` the K element inside the step."""
    width, group = _ROW_BYTES[mode], _REPEAT_ROWS[mode]
    if major == "K":
        b = ks * element  # byte along K
        if mode == "none":
            return (rows // 8) * sbo + (rows % 8) * _UNIT + (b // _UNIT) * lbo + b % _UNIT
        return (rows // 8) * sbo + (rows % 8) * width + b
    b = rows * element  # byte along MN
    if mode == "none":
        return (b // _UNIT) * sbo + (ks // 8) * lbo + (ks % 8) * _UNIT + b % _UNIT
    return (b // width) * lbo + (ks // group) * sbo + (ks % group) * width + b % width


def _mode_and_tile(layout, dtype, operand: str) -> tuple[str, TileLayout]:
    if isinstance(layout, TileLayout):
        return "none", layout
    if not isinstance(layout, ComposeLayout):
        raise TypeError(f"{operand}'s layout must be a TileLayout or a swizzled ComposeLayout, got {layout!r}")
    if not isinstance(layout.tile_layout, TileLayout):
        raise ValueError(f"{operand}'s layout {layout}: the swizzle must be over a TileLayout")
    swizzle = layout.swizzle
    if _same_swizzle(swizzle, swizzle_128b_base32b(dtype)):  # refused below unless MN-major 32-bit
        return SWIZZLE_128B_BASE32B, layout.tile_layout
    try:
        return mode_of_swizzle(swizzle, dtype), layout.tile_layout
    except ValueError as err:
        raise ValueError(
            f"{operand}'s layout {layout} is swizzled by {swizzle!r}, which is none of the MMA's swizzle modes: {err}"
        ) from None


def _same_swizzle(a, b) -> bool:
    fields = ("per_element", "swizzle_len", "atom_len", "swizzle_inner")
    return all(getattr(a, f) == getattr(b, f) for f in fields)


def _mode_words(mode: str) -> str:
    """How a message names a swizzle mode."""
    if mode == "none":
        return "unswizzled"
    if mode == SWIZZLE_128B_BASE32B:
        return "128B-swizzled with 32-byte atoms"
    return f"{mode}-swizzled"


def _offset_meaning(name: str, major: str, mode: str) -> str:
    """What LBO or SBO steps between in the ISA's canonical layout ("Canonical layouts"), in words."""
    if major == "K":
        return "8-row groups" if name == "SBO" else "16-byte core matrices along K"
    if mode == "none":
        return "16-byte core matrices along the rows" if name == "SBO" else "8-row groups along K"
    width, group = _ROW_BYTES[mode], _REPEAT_ROWS[mode]
    return f"{width}-byte atoms along the rows" if name == "LBO" else f"{group}-row groups along K"


def shared_matrix_descriptor(
    layout, shape, dtype, start_byte: int = 0, *, operand: str = "the operand", family: str = "tcgen05"
) -> SharedDescriptor:
    """The shared-memory matrix descriptor of MMA operand ``operand`` ("A" or "B", named in every error) stored in
    ``layout`` over its logical ``(rows, K)`` ``shape`` (rows = M for A, N for B), ``dtype`` elements, the buffer at
    shared byte address ``start_byte``.

    The layout must be one of the ISA's canonical layouts: K-major (K contiguous) or MN-major (rows contiguous),
    with no swizzle (8 x 16-byte core matrices) or a 32B/64B/128B swizzle (atoms of 8 rows of the swizzle width;
    MN-major 32-bit operands: the 128B-with-32B-atom swizzle, 4 rows of 128 bytes), the same for every K step of
    ``32 / element bytes`` columns. LBO and SBO are read off the layout's addresses; anything else — a foreign
    swizzle, rows of the wrong width, addresses no canonical formula gives, offsets that are not whole core
    matrices or swizzle repeats, a misaligned start — is a ``ValueError`` naming the operand and the fault.

    ``family`` is the instruction that reads the descriptor. The canonical layouts and the meaning of LBO and SBO
    are the same for both (the wgmma "Shared Memory Matrix Layout"/"Strides" text and tcgen05's say the same; see
    ``docs/notes/wgmma-facts.md``); ``family="wgmma"`` adds Hopper's limits: no 128B swizzle with 32-byte atoms,
    and MN-major operands only for 16-bit types (the ``imm-trans`` operands exist only for f16/bf16).

    Example:
        >>> from tirx_layout.hw.constructors import mma_shared_layout
        >>> d = shared_matrix_descriptor(mma_shared_layout("bfloat16", "128B", (128, 64)), (128, 64), "bfloat16", 0x400)
        >>> d.sbo, d.swizzle, d.major, d.k_offsets, hex(d.encode())
        (1024, '128B', 'K', (0, 32, 64, 96), '0x4000404000010040')
        >>> shared_matrix_descriptor(mma_shared_layout("bfloat16", "64B", (64, 32)), (64, 32), "bfloat16", 256,
        ...                          operand="B")
        Traceback (most recent call last):
        ...
        ValueError: B's layout is 64B-swizzled, but its buffer starts at shared byte 256, not a multiple of the 512-byte
        swizzle repeat (the hardware swizzles absolute addresses: align the buffer to 512 bytes)
        >>> hex(shared_matrix_descriptor(mma_shared_layout("float16", "64B", (64, 32), major="MN"), (64, 32), "float16",
        ...                              family="wgmma").encode(family="wgmma"))
        '0x8000002000800000'
    """
    family = _check_family(family)
    if not isinstance(operand, str):
        raise TypeError(f"operand names the MMA operand ('A' or 'B'), got {operand!r}")
    if str(dtype) not in OPERAND_DTYPES:
        raise ValueError(f"{operand} is {dtype}; the MMA reads {', '.join(sorted(OPERAND_DTYPES))} from shared memory")
    element = dtype_bytes(dtype)
    if not isinstance(shape, tuple | list) or len(shape) != 2:
        raise ValueError(f"{operand}'s shape is (rows, K), got {shape!r}")
    rows, cols = (static_int(s, f"an extent of {operand}") for s in shape)
    k_step = K_BYTES_PER_INSTRUCTION // element
    if rows < 8 or rows % 8 or cols < k_step or cols % k_step:
        raise ValueError(
            f"{operand} is {rows}x{cols} {dtype}: the MMA needs its rows a multiple of 8 and its K a multiple of "
            f"{k_step} (one instruction reads {k_step} {dtype} elements, 32 bytes, of K)"
        )
    start_byte = static_int(start_byte, "start_byte")
    mode, tile = _mode_and_tile(layout, dtype, operand)
    width = _ROW_BYTES[mode]
    repeat = _REPEAT_ROWS[mode] * width  # where the hardware's XOR pattern repeats (16-byte granules for "none")
    if start_byte < 0 or start_byte % (repeat if mode != "none" else _UNIT):
        if mode == "none":
            raise ValueError(f"{operand}'s buffer starts at shared byte {start_byte}, not 16-byte aligned")
        raise ValueError(
            f"{operand}'s layout is {_mode_words(mode)}, but its buffer starts at shared byte {start_byte}, not a "
            f"multiple of the {repeat}-byte swizzle repeat (the hardware swizzles absolute addresses: align the "
            f"buffer to {repeat} bytes)"
        )
    grid_r, grid_k = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    place = tile.apply(grid_r, grid_k, shape=(rows, cols))
    if set(place) != {"m"}:
        raise ValueError(
            f"{operand} must be in shared memory: its layout {layout} places elements on {sorted(place)}, "
            "not on memory addresses alone"
        )
    address = np.asarray(place["m"], dtype=np.int64) * element  # unswizzled byte offsets from the buffer
    what = f"{operand}'s layout {layout} ({rows}x{cols} {dtype})"
    major = _majorness(address, element, operand, layout)
    kind = f"{major}-major {_mode_words(mode)}"
    if family == "wgmma" and mode == SWIZZLE_128B_BASE32B:
        raise ValueError(
            f"{operand}'s layout is {kind}: wgmma (Hopper) has no 128B swizzle with 32-byte atoms; use none, 32B, "
            "64B or 128B"
        )
    if family == "wgmma" and major == "MN" and str(dtype) not in WGMMA_MN_MAJOR_DTYPES:
        raise ValueError(f"{operand}'s layout is {kind}, but " + mn_major_refusal(operand, dtype))
    if mode == SWIZZLE_128B_BASE32B and not (major == "MN" and element == 4):
        raise ValueError(
            f"{operand}'s layout is {major}-major {dtype} and 128B-swizzled with 32-byte atoms: the ISA allows that "
            "swizzle only for MN-major 32-bit operands"
        )
    if major == "MN" and element == 4 and mode != SWIZZLE_128B_BASE32B:
        raise ValueError(
            f"{operand}'s layout is {kind} {dtype}: the ISA reads MN-major 32-bit operands only 128B-swizzled with "
            "32-byte atoms (swizzle_128b_base32b)"
        )
    _check_rows(address, major, mode, element, operand, kind)
    lbo, sbo = _offsets(address, major, mode, element, k_step)
    for name, value in (("LBO", lbo), ("SBO", sbo)):
        meaning = _offset_meaning(name, major, mode)
        if value < 0 or value % _UNIT or value >= _ADDRESS_LIMIT:
            raise ValueError(
                f"{operand}'s layout is {kind}, but its {meaning} are {value} bytes apart ({name}); the descriptor "
                "needs a non-negative multiple of 16 below 2^18"
            )
        if mode != "none" and _spans(name, major, rows, element, mode, k_step) and value % repeat:
            raise ValueError(
                f"{operand}'s layout is {kind}, but its {meaning} are {value} bytes apart ({name}), not a whole "
                f"number of {repeat}-byte swizzle repeats"
            )
    r, kk = np.meshgrid(np.arange(rows), np.arange(k_step), indexing="ij")
    want = _canonical(major, mode, element, lbo, sbo, r, kk)
    offsets = []
    for step in range(cols // k_step):
        got = address[:, step * k_step : (step + 1) * k_step]
        first = int(got[0, 0])
        bad = np.argwhere(got != first + want)
        if bad.size:
            row, k = (int(v) for v in bad[0])
            raise ValueError(
                f"{what} is not the ISA's {kind} canonical layout: element ({row}, {step * k_step + k}) is at "
                f"byte {int(got[row, k])} before the swizzle, but with LBO {lbo} and SBO {sbo} K step {step} "
                f"puts it at {first + int(want[row, k])}"
            )
        if mode != "none" and first % repeat >= width:
            raise ValueError(
                f"{operand}'s layout is {kind}, but K step {step} (K {step * k_step}..{(step + 1) * k_step - 1}) "
                f"starts in row {first % repeat // width} of a swizzle atom, not its first row; the descriptor's "
                f"base offset would be needed (unsupported): start every atom on a {repeat}-byte boundary"
            )
        offsets.append(first - int(address[0, 0]))
    start = start_byte + int(address[0, 0])
    lowest, highest = start + int(address.min() - address[0, 0]), start + int(address.max() - address[0, 0])
    if start % _UNIT:
        raise ValueError(f"{operand}'s first element is at shared byte {start}, not 16-byte aligned")
    if lowest < 0 or highest + element > _ADDRESS_LIMIT:
        raise ValueError(
            f"{operand} occupies shared bytes {lowest}..{highest + element - 1}, outside the 2^18 bytes a "
            "descriptor addresses"
        )
    if mode == SWIZZLE_128B_BASE32B and sbo != repeat:
        raise ValueError(
            f"{operand}'s layout is {kind}, but its 4-row K groups are {sbo} bytes apart; they must be packed "
            f"{repeat} bytes apart (where the ISA's readings of SBO for this mode agree)"
        )
    if major == "K" and mode != "none":
        lbo = _UNIT  # unused by the hardware; the ISA says "assumed 1" (one 16-byte unit)
    return SharedDescriptor(start, lbo, sbo, 0, mode, major, tuple(offsets))


def _majorness(address: np.ndarray, element: int, operand: str, layout) -> str:
    along_k = int(address[0, 1] - address[0, 0])
    along_rows = int(address[1, 0] - address[0, 0])
    if along_k == element:
        return "K"
    if along_rows == element:
        return "MN"
    raise ValueError(
        f"{operand}'s layout {layout} is neither K-major nor MN-major: consecutive K elements are "
        f"{along_k // element} elements apart and consecutive rows {along_rows // element}; the MMA reads an "
        "operand with K or its rows contiguous"
    )


def _check_rows(address: np.ndarray, major: str, mode: str, element: int, operand: str, kind: str) -> None:
    """The first thing a canonical layout fixes, said in the user's terms: the rows of a swizzle atom (K-major: the
    M/N rows; MN-major: the K rows) are exactly the swizzle width apart (16 bytes without a swizzle: a core matrix)
    and hold that many contiguous bytes (or the whole operand, if narrower)."""
    width = _ROW_BYTES[mode]
    along, across = (address[0, :], address[:, 0]) if major == "K" else (address[:, 0], address[0, :])
    what = "rows" if major == "K" else "K rows"
    if across.size > 1 and int(across[1] - across[0]) != width:
        raise ValueError(
            f"{operand}'s layout is {kind}, but its {what} are {int(across[1] - across[0])} bytes apart; the ISA's "
            f"{kind} atom has {what} of exactly {width} bytes"
        )
    run = min(width // element, along.size)
    contiguous = np.flatnonzero(along[:run] - along[0] != np.arange(run) * element)
    if contiguous.size:
        held = int(contiguous[0]) * element
        line = "K" if major == "K" else "the rows"
        raise ValueError(
            f"{operand}'s layout is {kind}, but each of its {what} holds only {held} contiguous bytes of {line}; "
            f"the {kind} atom's {what} hold {min(width, along.size * element)}"
        )


def _offsets(address: np.ndarray, major: str, mode: str, element: int, k_step: int) -> tuple[int, int]:
    """(LBO, SBO) in bytes read off the addresses; where the operand has only one core matrix (atom) along a
    direction, the packed value, which the hardware then never uses."""
    rows = address.shape[0]
    width, group = _ROW_BYTES[mode], _REPEAT_ROWS[mode]

    def step(r: int, k: int, packed: int) -> int:
        inside = r < rows and k < address.shape[1]
        return int(address[r, k] - address[0, 0]) if inside else packed

    if major == "K":
        sbo = step(8, 0, 8 * width)
        lbo = step(0, _UNIT // element, 8 * _UNIT) if mode == "none" else _UNIT
        return lbo, sbo
    if mode == "none":
        return step(0, 8, 8 * _UNIT) if k_step > 8 else 8 * _UNIT, step(_UNIT // element, 0, 8 * _UNIT)
    return step(width // element, 0, group * width), step(0, group, group * width) if k_step > group else group * width


def _spans(name: str, major: str, rows: int, element: int, mode: str, k_step: int) -> bool:
    """Whether offset ``name`` moves between swizzle atoms the MMA reads (then it must keep them repeat-aligned)."""
    if major == "K":
        return name == "SBO" and rows > 8
    if name == "LBO":
        return rows * element > _ROW_BYTES[mode]
    return k_step > _REPEAT_ROWS[mode]


def advance_k(descriptor: SharedDescriptor, k_step: int) -> SharedDescriptor:
    """The descriptor of K step ``k_step`` (an MMA over K elements ``k_step*K .. (k_step+1)*K - 1``): the start
    address moves by that step's unswizzled byte offset in the layout (inside a swizzle atom, 32 bytes per step; the
    hardware XORs the absolute address, so the swizzle follows), LBO, SBO and swizzle unchanged.

    Example:
        >>> from tirx_layout.hw.constructors import mma_shared_layout
        >>> d = shared_matrix_descriptor(mma_shared_layout("float16", "128B", (64, 128)), (64, 128), "float16", 0)
        >>> [advance_k(d, s).start for s in range(6)]
        [0, 32, 64, 96, 8192, 8224]
    """
    if not isinstance(descriptor, SharedDescriptor):
        raise TypeError(f"advance_k takes a SharedDescriptor, got {descriptor!r}")
    k_step = static_int(k_step, "k_step")
    if not 0 <= k_step < len(descriptor.k_offsets):
        raise IndexError(f"k_step {k_step} is outside the operand's {len(descriptor.k_offsets)} K steps")
    moved = descriptor.start + descriptor.k_offsets[k_step]
    return dataclasses.replace(descriptor, start=moved, k_offsets=(0,))


# ---- where the accumulator and a tensor-memory A operand sit ----------------------------------------------------

#: Accumulator element types an MMA writes; each takes one whole 32-bit TMEM cell, an f16 in its low half (ISA
#: "Packing formats": D is never packed), so a 16-bit accumulator layout steps TCol (16-bit halves) by 2.
ACCUMULATOR_DTYPES = ("float32", "int32", "float16")
#: The datapath layouts of a ``cta_group::1`` dense accumulator by M (ISA "Data path layout organization"), and the
#: lane offsets (the lane field of the TMEM address) each allows: Layout D only 0, Layout F 0 or 16.
DATAPATH_OF_M = {128: "D", 64: "F"}
_LANE_OFFSETS = {128: (0,), 64: (0, 16)}


def datapath_lane(m: int, row, lane_offset: int = 0):
    """The TMEM lane of accumulator row ``row`` (an int or an integer numpy array) for an M-row MMA: Layout D (M =
    128) puts row i on lane i; Layout F (M = 64) puts 16 rows on each warp's 32-lane window, at lane offset 0 or 16.

    Example:
        >>> datapath_lane(128, 37), datapath_lane(64, 37), datapath_lane(64, 37, 16)
        (37, 69, 85)
    """
    if m == 128:
        return row + lane_offset
    if m == 64:
        return 32 * (row // 16) + row % 16 + lane_offset
    raise ValueError(f"an MMA datapath (cta_group::1) has M = 64 (Layout F) or 128 (Layout D), got M={m}")


def accumulator_taddr_offset(layout, region_start, shape, dtype, buffer_shape=None) -> tuple[int, object]:
    """Where the MMA must be told its accumulator starts, ``(lane_offset, column_offset)`` (the TMEM address minus
    the allocation's base; columns in 32-bit units), for the ``(M, N)`` region of a TMEM buffer in ``layout``
    that starts at index ``region_start`` (one entry per buffer dimension; leading dimensions, such as a stage,
    take one index). ``buffer_shape`` is the buffer's shape; without it the layout's own shard extents, or ``(M,
    N)`` for a two-dimensional region. A leading start may be a ``PrimExpr`` (a loop over stages) where every step
    moves the region by whole columns: the column offset is then an expression.

    The layout restricted to the region must be the ISA's datapath layout for M, checked element by element: Layout
    D (M = 128, row i on lane i) or Layout F (M = 64, lane ``32(i//16) + i%16`` plus 0 or 16), column j on column
    ``c0 + j``, one 32-bit column per element (for a float16 accumulator, whose TCol counts 16-bit halves, a TCol
    stride of 2). Otherwise a ``ValueError`` naming "D", the layout, and the first element out of place.

    Example:
        >>> from tirx_layout import S, TCol, TLane, TileLayout
        >>> two_stages = TileLayout(S[(2, 128, 112):(112 @ TCol, 1 @ TLane, 1 @ TCol)])
        >>> accumulator_taddr_offset(two_stages, (1, 0, 0), (128, 112), "float32")
        (0, 112)
        >>> accumulator_taddr_offset(two_stages, (0, 0, 0), (64, 112), "float32")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: D's layout ... (the 64x112 float32 region at (0, 0, 0)) is not an MMA accumulator layout:
        element (16, 0) sits at lane 16 TCol 0, Layout F puts it at lane 32 TCol 0
    """
    dtype = str(dtype)
    if dtype not in ACCUMULATOR_DTYPES:
        raise ValueError(f"D is {dtype}; an MMA accumulates into {' / '.join(ACCUMULATOR_DTYPES)}")
    m, n = _mn_shape(shape, "D", "(M, N)")
    region = _TmemRegion(layout, region_start, (m, n), buffer_shape, "D", dtype)
    if region.replicated:
        raise ValueError(f"{region.what}: it is replicated, but the MMA writes each accumulator element once")
    unit = 4 // dtype_bytes(dtype)  # TCol per 32-bit column: 2 for an unpacked float16
    lane0, tcol0 = int(region.lanes[0, 0]), int(region.tcols[0, 0])
    lane_offset = lane0 if lane0 in _LANE_OFFSETS[m] else 0
    rows, cols = np.meshgrid(np.arange(m), np.arange(n), indexing="ij")
    want_lanes = datapath_lane(m, rows, lane_offset)
    want_tcols = tcol0 - tcol0 % unit + unit * cols
    region.check(want_lanes, want_tcols, f"Layout {DATAPATH_OF_M[m]} puts it at", "an MMA accumulator layout")
    return lane_offset, region.column_offset(unit)


def tmem_operand_offset(layout, region_start, shape, dtype, buffer_shape=None) -> tuple[int, object]:
    """Where an MMA reading A from tensor memory must be told A starts, ``(lane_offset, column_offset)`` (columns
    in 32-bit units), for the ``(M, K)`` region of a TMEM buffer in ``layout`` that starts at ``region_start``
    (``buffer_shape`` and symbolic leading starts as in :func:`accumulator_taddr_offset`).

    The ISA reads A from TMEM K-major only, on the accumulator's datapath lanes (Layout D for M = 128, Layout F for
    M = 64, lane offset 0 or 16) with K packed along 32-bit columns: 2 16-bit, 4 8-bit or 1 32-bit element per
    column, so element ``(i, k)`` at TCol (which counts elements) ``t0 + k``, ``t0`` on a column boundary. K must be
    whole instruction steps (32 bytes: 8 columns each; step ``s`` reads from ``column_offset + 8 s``). Otherwise a
    ``ValueError`` naming "A".

    Example:
        >>> from tirx_layout import tmem_datapath_layout
        >>> tmem_operand_offset(tmem_datapath_layout("D", 128, 64), (0, 32), (128, 32), "bfloat16")
        (0, 16)
    """
    dtype = str(dtype)
    element = dtype_bytes(dtype)
    if element not in (1, 2, 4):
        raise ValueError(f"A is {dtype}; an MMA reads 8-, 16- or 32-bit operands")
    m, k = _mn_shape(shape, "A", "(M, K)")
    k_step = K_BYTES_PER_INSTRUCTION // element
    if k % k_step:
        raise ValueError(f"A's K ({k}) must be whole instruction steps of {k_step} {dtype} elements (32 bytes)")
    region = _TmemRegion(layout, region_start, (m, k), buffer_shape, "A", dtype)
    pack = 4 // element  # elements per 32-bit column; TCol counts elements
    lane0, tcol0 = int(region.lanes[0, 0]), int(region.tcols[0, 0])
    lane_offset = lane0 if lane0 in _LANE_OFFSETS[m] else 0
    rows, ks = np.meshgrid(np.arange(m), np.arange(k), indexing="ij")
    want_lanes = datapath_lane(m, rows, lane_offset)
    want_tcols = tcol0 - tcol0 % pack + ks
    region.check(
        want_lanes,
        want_tcols,
        f"the MMA reads it (K-major, {pack} per 32-bit column, Layout {DATAPATH_OF_M[m]} lanes) at",
        "a TMEM operand layout the MMA reads",
    )
    return lane_offset, region.column_offset(pack)


def _mn_shape(shape, operand: str, names: str) -> tuple[int, int]:
    if isinstance(shape, str) or not isinstance(shape, tuple | list) or len(shape) != 2:
        raise ValueError(f"{operand}'s shape is {names}, got {shape!r}")
    m, other = (static_int(s, f"an extent of {operand}") for s in shape)
    if m not in DATAPATH_OF_M:
        raise ValueError(
            f"{operand} has {m} rows; an MMA (cta_group::1) has M = 64 (Layout F) or 128 (Layout D) rows in TMEM"
        )
    if other < 1:
        raise ValueError(f"{operand}'s shape {(m, other)} must have a positive second extent")
    return m, other


class _TmemRegion:
    """The TMEM places (TLane, TCol arrays over the region's two dimensions, symbolic starts at 0) of a region of a
    TMEM buffer, and the TCol step of each symbolic leading start."""

    def __init__(self, layout, region_start, shape, buffer_shape, operand: str, dtype: str) -> None:
        if not isinstance(layout, TileLayout):
            kind = "a swizzled layout" if isinstance(layout, ComposeLayout) else repr(layout)
            raise TypeError(f"{operand}'s TMEM layout must be a TileLayout on TLane/TCol, got {kind}")
        if isinstance(region_start, str) or not isinstance(region_start, tuple | list) or len(region_start) < 2:
            raise ValueError(f"{operand}'s region start must have one entry per buffer dimension, got {region_start!r}")
        rank = len(region_start)
        if buffer_shape is None:
            extents = [it.extent for it in layout.shard]
            if len(extents) == rank:
                buffer_shape = extents
            elif rank == 2:
                buffer_shape = list(shape)
            else:
                raise ValueError(
                    f"{operand}'s layout {layout} has {len(extents)} shard iters but the region {rank} dimensions: "
                    "pass buffer_shape"
                )
        buffer_shape = [static_int(e, f"an extent of {operand}'s buffer") for e in buffer_shape]
        if len(buffer_shape) != rank:
            raise ValueError(
                f"{operand}'s region start {tuple(region_start)} and buffer shape {tuple(buffer_shape)} differ in rank"
            )
        if int(np.prod(buffer_shape)) != layout.size():
            raise ValueError(
                f"{operand}'s buffer shape {tuple(buffer_shape)} has {int(np.prod(buffer_shape))} elements but its "
                f"layout {layout} places {layout.size()}; pass the buffer's shape as buffer_shape"
            )
        begins, symbolic = [], []
        for d, b in enumerate(region_start):
            if tvm.ir.is_prim_expr(b) and not isinstance(b, tvm.tirx.IntImm):
                if d >= rank - 2:
                    raise ValueError(
                        f"{operand}'s region starts at {b} on dimension {d}; only leading (stage) dimensions may "
                        "start at a symbolic index"
                    )
                begins.append(0)
                symbolic.append((d, b))
                continue
            b = static_int(b, f"a start of {operand}'s region")
            extent = shape[d - rank + 2] if d >= rank - 2 else 1
            if b < 0 or b + extent > buffer_shape[d]:
                raise ValueError(
                    f"{operand}'s region starting at {tuple(region_start)} with shape {tuple(shape)} leaves its "
                    f"buffer of shape {tuple(buffer_shape)} on dimension {d}"
                )
            begins.append(b)
        self.what = f"{operand}'s layout {layout} (the {shape[0]}x{shape[1]} {dtype} region at {_show(region_start)})"
        self.layout, self.buffer_shape, self.begins, self.shape = layout, buffer_shape, begins, shape
        self.replicated = layout.num_replicas() > 1
        axes = {it.axis.name for it in layout.shard} | {a.name for a in layout.offset}
        if not axes <= {TLane.name, TCol.name}:
            raise ValueError(f"{self.what}: a TMEM layout places elements on TLane and TCol only, got {sorted(axes)}")
        if any(not isinstance(v, int) for v in layout.offset.values()):
            raise ValueError(f"{self.what}: its offset must be static")
        self.lanes, self.tcols = self._places(begins)
        self.symbolic = []
        for d, expr in symbolic:
            self.symbolic.append((d, expr, self._tcol_step(d)))

    def _places(self, begins) -> tuple[np.ndarray, np.ndarray]:
        rows, cols = np.meshgrid(np.arange(self.shape[0]), np.arange(self.shape[1]), indexing="ij")
        coords = [np.full(rows.shape, b, np.int64) for b in begins[:-2]]
        coords += [rows + begins[-2], cols + begins[-1]]
        places = self.layout.apply(*coords, shape=self.buffer_shape)
        zero = np.zeros(rows.shape, np.int64)
        return (np.asarray(places.get("TLane", zero), np.int64), np.asarray(places.get("TCol", zero), np.int64))

    def _tcol_step(self, dim: int) -> int:
        """The TCol distance between consecutive indices of symbolic dimension ``dim``, checked for every index."""
        step = None
        for v in range(1, self.buffer_shape[dim]):
            begins = list(self.begins)
            begins[dim] = v
            lanes, tcols = self._places(begins)
            moved = tcols - self.tcols
            if step is None:
                step = int(moved[0, 0]) // v
            if (lanes != self.lanes).any() or (moved != step * v).any():
                raise ValueError(
                    f"{self.what}: index {v} of dimension {dim} does not move the whole region by one fixed number "
                    "of columns on the same lanes; index that dimension with a constant"
                )
        return step or 0

    def check(self, want_lanes: np.ndarray, want_tcols: np.ndarray, expected: str, wanted: str) -> None:
        bad = np.argwhere((self.lanes != want_lanes) | (self.tcols != want_tcols))
        if bad.size:
            i, j = (int(v) for v in bad[0])
            raise ValueError(
                f"{self.what} is not {wanted}: element ({i}, {j}) sits at lane {int(self.lanes[i, j])} TCol "
                f"{int(self.tcols[i, j])}, {expected} lane {int(want_lanes[i, j])} TCol {int(want_tcols[i, j])}"
            )
        if self.lanes.min() < 0 or self.lanes.max() >= TMEM_LANES or self.tcols.min() < 0:
            raise ValueError(f"{self.what}: its lanes or columns fall outside tensor memory")

    def column_offset(self, unit: int):
        """The region's first 32-bit column (``unit`` TCol each), an expression of the symbolic starts."""
        last = int(self.tcols.max()) + sum(step * (self.buffer_shape[d] - 1) for d, _, step in self.symbolic)
        if last // unit >= TMEM_COLUMNS:
            raise ValueError(f"{self.what}: it reaches 32-bit column {last // unit}, past the {TMEM_COLUMNS} of TMEM")
        column = int(self.tcols[0, 0]) // unit
        for d, expr, step in self.symbolic:
            if step % unit:
                raise ValueError(
                    f"{self.what}: dimension {d} moves it by {step} TCol, not whole 32-bit columns of {unit}"
                )
            column = expr * (step // unit) + column
        return column


def _show(start) -> str:
    return "(" + ", ".join(str(s) for s in start) + ")"


# ---- block scaling: where the MMA reads its scale factors --------------------------------------------------------

#: The four 32-lane warp windows a block-scaled MMA reads scale factors from ("Block scaling": the scale factors
#: must be present in all four sub-partitions of tensor memory).
_SCALE_WINDOWS = tuple(range(0, TMEM_LANES, LANES_PER_WARP))


def scale_factor_taddr(
    layout, buffer_shape, region_start, rows: int, k_block: int, operand: str = "scale_a"
) -> tuple[int, int]:
    """Where one block-scaled MMA K step (``kind::mxf8f6f4``, ``.scale_vec::1X``) reads the scale factors of K-block
    ``k_block`` of a ``(rows, k_blocks)`` ``ue8m0`` matrix held in TMEM in ``layout`` (an 8-bit buffer: TCol counts
    bytes), the region starting at index ``region_start`` of a buffer of shape ``buffer_shape`` (leading indices
    pick a stage): ``(column, sf_id)``, the 32-bit column of
    ``[scale-tmem]`` relative to the buffer's TMEM address and the byte (0..3) the instruction descriptor's SF id
    selects. The ISA's placement (see :func:`~tirx_layout.hw.constructors.mma_scale_factor_layout`): row ``r`` on
    lane ``r % 32`` of every one of the four warp windows, in byte ``sf_id`` of column ``column + r // 32``. Any
    other placement is a ``ValueError`` naming ``operand`` and the first element out of place.

    Example:
        >>> from tirx_layout.hw.constructors import mma_scale_factor_layout
        >>> layout = mma_scale_factor_layout(128, 8, column=224)
        >>> scale_factor_taddr(layout, (128, 8), (0, 0), 128, 6)
        (228, 2)
    """
    if not isinstance(layout, TileLayout):
        raise ValueError(f"{operand}'s layout {layout!r} is not a TMEM TileLayout; scale factors live in tensor memory")
    rows, k_block = static_int(rows, f"{operand}'s rows"), static_int(k_block, f"{operand}'s K-block")
    if not isinstance(region_start, tuple | list) or len(region_start) < 2:
        raise ValueError(f"{operand}'s region must start at an index of at least (row, K-block), got {region_start!r}")
    *leading, row0, block0 = (static_int(i, f"{operand}'s region start") for i in region_start)
    shape = [static_int(e, f"{operand}'s buffer extent") for e in buffer_shape]
    if len(shape) != len(region_start):
        raise ValueError(f"{operand}: region start {tuple(region_start)} does not index a buffer of shape {shape}")
    if rows < 1 or rows > 2 * TMEM_LANES:
        raise ValueError(f"{operand}: rows must be in 1..{2 * TMEM_LANES}, got {rows}")
    what = f"{operand}'s layout {layout}"
    r = np.arange(rows)
    coords = [np.full(rows, i) for i in leading] + [row0 + r, np.full(rows, block0 + k_block)]
    try:
        places = layout.apply_all(*coords, shape=shape)
    except ValueError as err:
        raise ValueError(f"{what}: K-block {k_block} of {rows} rows is outside the layout ({err})") from None
    if set(places) - {"TLane", "TCol"}:
        raise ValueError(f"{what}: scale factors are placed on TLane/TCol only, got axes {sorted(places)}")
    lanes = np.asarray(places.get("TLane", np.zeros((1, rows))), np.int64)
    cols = np.asarray(places.get("TCol", np.zeros((1, rows))), np.int64)
    first = int(cols[0, 0])
    column, sf_id = first // SCALE_FACTORS_PER_COLUMN, first % SCALE_FACTORS_PER_COLUMN
    want_col = first + SCALE_FACTORS_PER_COLUMN * (r // LANES_PER_WARP)
    for i in range(rows):
        got_lanes = sorted(int(x) for x in lanes[:, i])
        want = sorted(w + i % LANES_PER_WARP for w in _SCALE_WINDOWS)
        got_cols = {int(x) for x in cols[:, i]}
        if got_lanes != want or got_cols != {int(want_col[i])}:
            raise ValueError(
                f"{what}: the scale factor of row {row0 + i}, K-block {block0 + k_block} sits on lanes {got_lanes}, "
                f"byte column(s) {sorted(got_cols)}; a block-scaled MMA reads it on lanes {want} (lane r % 32 of "
                f"every warp window), byte {int(want_col[i])} (byte {sf_id} of column {column} + r // 32)"
            )
    return column, sf_id
