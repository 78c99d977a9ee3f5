"""The shared-memory matrix descriptor as data and pure functions (PTX ISA 9.1, tcgen05 chapter: "Shared memory
descriptor", "Shared memory layout and swizzling", "Canonical layouts"; warpgroup MMA chapter: "Matrix Descriptor
Format", "Shared Memory Matrix Layout"; restated in ``docs/notes/tcgen05-mma-facts.md`` §4 and
``docs/notes/wgmma-facts.md`` §4).

Two instruction families read a 64-bit descriptor of a shared-memory matrix: Blackwell's ``tcgen05`` (``tcgen05.mma``
and ``tcgen05.cp``) and Hopper's ``wgmma.mma_async``. They share the canonical layouts and the meaning of every field;
what differs between them is one :class:`DescriptorFamily` record each (:data:`TCGEN05_DESCRIPTOR`,
:data:`WGMMA_DESCRIPTOR`): the swizzle codes and their bits, the fixed bits, which swizzle modes exist, which operand
types may be MN-major. Nothing lowered here:

* :class:`SharedDescriptor` holds the fields in bytes and encodes them in either family's bits;
* :func:`shared_matrix_descriptor` *derives* them from an operand's layout: it recognises the ISA's canonical K-major
  and MN-major layouts (no swizzle, 32B, 64B, 128B, 128B with 32-byte atoms), reads the leading and stride byte
  offsets off the layout's addresses, and refuses any layout the family's hardware cannot read; :func:`advance_k`
  gives the descriptor of a later K step.

The 128B-with-32B-atom swizzle (MN-major 32-bit operands) is accepted only where the ISA's two readings of its SBO
agree (4-row K groups packed 512 bytes apart; see ``docs/decisions.md``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..core.values import static_int
from ..layout.swizzle import ComposeLayout
from ..layout.tile import TileLayout
from . import tcgen05_mma, wgmma
from .memory import (
    SWIZZLE_128B_BASE32B,
    SWIZZLE_BYTES,
    SWIZZLE_REPEAT_ROWS,
    dtype_bytes,
    mode_of_swizzle,
    swizzle_128b_base32b,
)
from .tcgen05_mma import K_BYTES_PER_INSTRUCTION, OPERAND_DTYPES

#: Bytes of one swizzle row, and rows per repeat of the XOR pattern, of every descriptor swizzle mode (ISA Table 55:
#: 8 rows, except 4 for the 128B-with-32B-atom mode: ``hw.memory.SWIZZLE_REPEAT_ROWS``; 8 core-matrix rows unswizzled).
_ROW_BYTES = {**SWIZZLE_BYTES, SWIZZLE_128B_BASE32B: 128}
_REPEAT_ROWS = {"none": 8, **SWIZZLE_REPEAT_ROWS}
#: Field limits: addresses and offsets are 18-bit byte values stored as 14 bits of 16-byte units.
_ADDRESS_LIMIT = 1 << 18
_UNIT = 16


@dataclass(frozen=True)
class DescriptorFamily:
    """What one instruction family's shared-memory matrix descriptor has of its own; the other fields (start >> 4
    at bits 0-13, LBO >> 4 at 16-29, SBO >> 4 at 32-45, base offset at 49-51) and the canonical layouts are common.

    ``name`` is the family (``family=`` of :meth:`SharedDescriptor.encode` and :func:`shared_matrix_descriptor`),
    ``architecture`` the GPUs that have it; ``swizzle_codes`` maps every swizzle mode the family has to the code of
    its swizzle field, whose lowest bit is ``swizzle_bit``; ``fixed_bits`` are constant bits of every descriptor;
    ``mn_major_dtypes`` are the operand types the family reads MN-major, and ``mn_major_refusal(operand, dtype)``
    the message refusing another (the instruction's own wording, which its instruction record also uses).

    Example:
        >>> WGMMA_DESCRIPTOR.swizzle_modes, hex(TCGEN05_DESCRIPTOR.fixed_bits)
        (('none', '32B', '64B', '128B'), '0x400000000000')
    """

    name: str
    architecture: str
    swizzle_codes: dict[str, int]
    swizzle_bit: int
    fixed_bits: int
    mn_major_dtypes: frozenset[str]
    mn_major_refusal: Callable[[str, str], str]

    @property
    def swizzle_modes(self) -> tuple[str, ...]:
        """The swizzle modes the family has, narrowest first.

        Example:
            >>> TCGEN05_DESCRIPTOR.swizzle_modes
            ('none', '32B', '64B', '128B', '128B_base32B')
        """
        return tuple(mode for mode in _ROW_BYTES if mode in self.swizzle_codes)


#: ``tcgen05.mma`` and ``tcgen05.cp`` (ISA "Shared memory descriptor"): the fixed constant 0b001 at bits 46-48 and a
#: 3-bit swizzle field at 61-63 that has every mode, 128B with 32-byte atoms included.
TCGEN05_DESCRIPTOR = DescriptorFamily(
    name="tcgen05",
    architecture="Blackwell",
    swizzle_codes={"none": 0, "128B_base32B": 1, "128B": 2, "64B": 4, "32B": 6},
    swizzle_bit=61,
    fixed_bits=0b001 << 46,
    mn_major_dtypes=tcgen05_mma.MN_MAJOR_DTYPES,
    mn_major_refusal=tcgen05_mma.mn_major_refusal,
)
#: ``wgmma.mma_async`` (ISA "Matrix Descriptor Format"): nothing at bits 46-48 and a 2-bit swizzle field at 62-63
#: with no 128B-with-32-byte-atom mode; MN-major operands only where the ``imm-trans`` operands exist (16-bit types).
WGMMA_DESCRIPTOR = DescriptorFamily(
    name="wgmma",
    architecture="Hopper",
    swizzle_codes={"none": 0, "128B": 1, "64B": 2, "32B": 3},
    swizzle_bit=62,
    fixed_bits=0,
    mn_major_dtypes=wgmma.MN_MAJOR_DTYPES,
    mn_major_refusal=wgmma.mn_major_refusal,
)
#: The families by name: the instructions that read a shared-memory matrix descriptor.
DESCRIPTOR_FAMILIES = {family.name: family for family in (TCGEN05_DESCRIPTOR, WGMMA_DESCRIPTOR)}


def _family(name) -> DescriptorFamily:
    if not isinstance(name, str) or name not in DESCRIPTOR_FAMILIES:
        raise ValueError(
            f"family must be one of {tuple(DESCRIPTOR_FAMILIES)} (the instruction reading the descriptor), got {name!r}"
        )
    return DESCRIPTOR_FAMILIES[name]


def _swizzle_noun(mode: str) -> str:
    """How a message names a swizzle mode a family may lack."""
    return "128B swizzle with 32-byte atoms" if mode == SWIZZLE_128B_BASE32B else f"{mode} swizzle"


@dataclass(frozen=True)
class SharedDescriptor:
    """A shared-memory matrix descriptor, its fields in bytes: ``start`` (shared-window address), ``lbo`` and ``sbo``
    (leading and stride byte offsets), ``base_offset`` (0: operands start on their swizzle repeat), ``swizzle``
    ("none", "32B", "64B", "128B", "128B_base32B") and ``major`` ("K" or "MN", which the instruction carries, not
    this descriptor). ``k_offsets[s]`` is the byte offset of K step ``s`` from ``start`` (see :func:`advance_k`).
    The same fields serve every :class:`DescriptorFamily`; :meth:`encode` writes the bits of either.

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
        """The 64-bit value as ``family`` (a name of :data:`DESCRIPTOR_FAMILIES`) reads it. Every family: start >> 4
        at bits 0-13, LBO >> 4 at 16-29, SBO >> 4 at 32-45, base offset at 49-51; then the family's fixed bits and
        the code of the swizzle at its swizzle bit (:data:`TCGEN05_DESCRIPTOR`: 0b001 at 46-48, a 3-bit code at
        61-63; :data:`WGMMA_DESCRIPTOR`: nothing at 46-48, a 2-bit code at 62-63 and no 128B-with-32-byte-atom mode).

        Example:
            >>> hex(SharedDescriptor(0, 256, 128, 0, "none", "K").encode())
            '0x400800100000'
            >>> hex(SharedDescriptor(0, 256, 128, 0, "none", "K").encode(family="wgmma"))
            '0x800100000'
        """
        family = _family(family)
        for name in ("start", "lbo", "sbo"):
            value = getattr(self, name)
            if not 0 <= value < _ADDRESS_LIMIT or value % _UNIT:
                raise ValueError(f"descriptor {name} must be a 16-byte multiple in [0, 2^18), got {value}")
        if not 0 <= self.base_offset <= 7:
            raise ValueError(f"descriptor base offset must be in 0..7, got {self.base_offset}")
        codes = family.swizzle_codes
        if self.swizzle not in codes:
            lacks = ""
            if self.swizzle in _ROW_BYTES:  # a mode of another family: say that this one lacks it
                lacks = f" ({family.architecture} has no {_swizzle_noun(self.swizzle)})"
            raise ValueError(
                f"the {family.name} descriptor's swizzle must be one of {sorted(codes)}, got {self.swizzle!r}{lacks}"
            )
        fields = self.start >> 4 | (self.lbo >> 4) << 16 | (self.sbo >> 4) << 32 | self.base_offset << 49
        return fields | family.fixed_bits | codes[self.swizzle] << family.swizzle_bit


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

    ``family`` names the instruction that reads the descriptor (:data:`DESCRIPTOR_FAMILIES`). The canonical
    layouts and the meaning of LBO and SBO are the same for every family (the wgmma "Shared Memory Matrix
    Layout"/"Strides" text and tcgen05's say the same; see ``docs/notes/wgmma-facts.md``); the family's record adds
    its limits: the swizzle modes it has (``"wgmma"``: no 128B swizzle with 32-byte atoms) and the operand types it
    reads MN-major (``"wgmma"``: 16-bit types only, where the ``imm-trans`` operands exist).

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
    family = _family(family)
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
    if mode not in family.swizzle_codes:
        *others, last = family.swizzle_modes
        raise ValueError(
            f"{operand}'s layout is {kind}: {family.name} ({family.architecture}) has no {_swizzle_noun(mode)}; use "
            f"{', '.join(others)} or {last}"
        )
    if major == "MN" and str(dtype) not in family.mn_major_dtypes:
        raise ValueError(f"{operand}'s layout is {kind}, but " + family.mn_major_refusal(operand, dtype))
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
