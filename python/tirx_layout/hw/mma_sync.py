"""The warp-level ``mma.sync.aligned.m16n8k*`` instructions as data, and the register fragments they read and write
(PTX ISA 9.x, "Warp Level Matrix Multiply-Accumulate Instructions": ``mma`` syntax and "Target ISA notes", "Matrix
Fragments for mma.m16n8k4 / m16n8k8 / m16n8k16 / m16n8k32").

One warp computes a ``16 x 8`` block of D per instruction over ``k`` elements of K (``.row.col``: A is M x K, B is
K x N). Each operand is a register fragment spread over the warp's 32 lanes; with ``groupID = laneid >> 2`` and
``threadID_in_group = laneid % 4`` the ISA's tables are, for ``r`` elements per 32-bit register (2 for 16-bit
types, 4 for 8-bit, 1 for tf32):

* A (16 x k): element ``a_i``, ``i = 2r q + r h + e`` (``q`` the block of ``4r`` columns, ``h`` the row half, ``e``
  the element of the register), sits at row ``groupID + 8h``, column ``4r q + r threadID_in_group + e``;
* B (k x 8): ``b_i``, ``i = r q + e``, at row (K) ``4r q + r threadID_in_group + e``, column (N) ``groupID``;
* C and D (16 x 8): ``c_i``, ``i = 2h + e``, at row ``groupID + 8h``, column ``2 threadID_in_group + e``.

The ISA lists each shape separately; read this way they are one rule, and a larger K is the same fragment with
further ``q`` blocks: m16n8k16's A (f16) is two m16n8k8 A's side by side, m16n8k32's (8-bit) two m16n8k16 ones,
m16n8k8's (tf32) two m16n8k4 ones. So a fragment of a whole tile is a grid of **atoms**, the ``q`` blocks (A:
``16 x 4r``, B: ``8 x 4r`` as ``(N, K)``, C: ``16 x 8``), and an instruction takes ``k / 4r`` consecutive atoms of
K. The constructors here lay a tile out as such a grid, tiled over a grid of warps (``warpid``) and over registers
(``m``); the recogniser reads any layout back into its atoms: which warp holds each, in which registers.

Operands here follow ``T.tile_mma``: D ``(M, N)``, A ``(M, K)``, B ``(N, K)`` (the ISA's K x N B, stored by N).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..core.values import static_int
from ..layout.axis import Iter, laneid, warpid
from ..layout.tile import TileLayout
from .memory import dtype_bytes, operand_kind
from .targets import parse_arch
from .threads import WARP_THREADS, thread_unit

#: Operand element types of each kind ("Matrix Data-types"); A and B of ``fp8`` and ``int8`` may differ
#: (e4m3 x e5m2, s8 x u8).
OPERAND_DTYPES = {
    "f16": ("float16",),
    "bf16": ("bfloat16",),
    "tf32": ("float32",),  # tf32 operands are 32-bit floats whose low 13 mantissa bits the instruction ignores
    "int8": ("int8", "uint8"),
    "fp8": ("float8_e4m3fn", "float8_e5m2"),
}
#: Accumulator types of each kind: f16 into f32 or f16, bf16 and tf32 into f32, 8-bit integers into s32, 8-bit
#: floats into f32 or f16 (the f16 accumulator of the fp8 forms needs PTX ISA 8.7).
ACCUMULATOR_DTYPES = {
    "f16": ("float32", "float16"),
    "bf16": ("float32",),
    "tf32": ("float32",),
    "int8": ("int32",),
    "fp8": ("float32", "float16"),
}
#: ``k -> the oldest sm_XY that has m16n8k<k>`` of each kind ("Target ISA notes" of ``mma``): m16n8k8 f16 from
#: sm_75, the rest of f16/bf16/tf32/int8 from sm_80, the 8-bit floats from sm_89 (m16n8k32 from PTX ISA 8.4,
#: m16n8k16 from 8.7).
SHAPES = {
    "f16": {8: 75, 16: 80},
    "bf16": {8: 80, 16: 80},
    "tf32": {4: 80, 8: 80},
    "int8": {16: 80, 32: 80},
    "fp8": {16: 89, 32: 89},
}
#: Rows of A and D, and columns of B and D, of one instruction.
MMA_M, MMA_N = 16, 8
#: PTX spellings of the operand and accumulator types.
PTX_TYPE = {
    "float16": "f16",
    "bfloat16": "bf16",
    "float32": "tf32",  # as an operand; as the accumulator f32 (see ptx_type)
    "int8": "s8",
    "uint8": "u8",
    "float8_e4m3fn": "e4m3",
    "float8_e5m2": "e5m2",
    "int32": "s32",
}
#: The fragment operands: the two multiplicands and the accumulator (C and D share one fragment).
OPERANDS = ("A", "B", "C")


def mma_sync_kind(a_dtype, b_dtype) -> str:
    """The ``mma.sync`` kind that multiplies A and B of these element types; ``ValueError`` listing every kind's
    types otherwise.

    Example:
        >>> mma_sync_kind("bfloat16", "bfloat16"), mma_sync_kind("int8", "uint8")
        ('bf16', 'int8')
        >>> mma_sync_kind("float16", "int8")
        Traceback (most recent call last):
        ...
        ValueError: no mma.sync kind multiplies A float16 by B int8; the kinds take f16: float16; bf16: bfloat16;
        tf32: float32; int8: int8, uint8; fp8: float8_e4m3fn, float8_e5m2
    """
    return operand_kind(OPERAND_DTYPES, a_dtype, b_dtype, "mma.sync")


def elements_per_register(dtype) -> int:
    """How many elements of ``dtype`` one 32-bit fragment register holds (``r`` of the module's rule).

    Example:
        >>> elements_per_register("bfloat16"), elements_per_register("int8"), elements_per_register("float32")
        (2, 4, 1)
    """
    size = dtype_bytes(dtype)
    if size not in (1, 2, 4):
        raise ValueError(f"an mma.sync fragment holds 8-, 16- or 32-bit elements, got {dtype}")
    return 4 // size


@dataclass(frozen=True)
class MmaSyncInstruction:
    """One ``mma.sync.aligned.m16n8k<k>.row.col`` of a warp, checked against the ISA on construction: operand and
    accumulator types, and ``k`` among the kind's shapes.

    Example:
        >>> i = MmaSyncInstruction("bfloat16", "bfloat16", "float32", 16)
        >>> i.operation, i.registers, i.min_sm
        ('mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32', {'A': 4, 'B': 2, 'C': 4}, 80)
        >>> MmaSyncInstruction("float8_e4m3fn", "float8_e5m2", "float32", 32).check_arch("sm_80")
        Traceback (most recent call last):
        ...
        ValueError: mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e5m2.f32 needs sm_89 or newer; the target is sm_80
    """

    a_dtype: str
    b_dtype: str
    d_dtype: str
    k: int

    def __post_init__(self) -> None:
        for name in ("a_dtype", "b_dtype", "d_dtype"):
            object.__setattr__(self, name, str(getattr(self, name)))
        kind = mma_sync_kind(self.a_dtype, self.b_dtype)
        if self.d_dtype not in ACCUMULATOR_DTYPES[kind]:
            raise ValueError(
                f"mma.sync kind {kind} ({self.a_dtype} x {self.b_dtype}) accumulates into "
                f"{' or '.join(ACCUMULATOR_DTYPES[kind])}, got D {self.d_dtype}"
            )
        k = static_int(self.k, "K")
        object.__setattr__(self, "k", k)
        if k not in SHAPES[kind]:
            raise ValueError(f"mma.sync kind {kind} has m16n8k{' / k'.join(map(str, SHAPES[kind]))}, not K={k}")

    @property
    def kind(self) -> str:
        """The kind (``f16``, ``bf16``, ``tf32``, ``int8``, ``fp8``)."""
        return mma_sync_kind(self.a_dtype, self.b_dtype)

    @property
    def shape(self) -> str:
        """The ``.shape`` suffix, ``m16n8k<k>``."""
        return f"m{MMA_M}n{MMA_N}k{self.k}"

    @property
    def operation(self) -> str:
        """The PTX operation up to its operands: ``mma.sync.aligned.<shape>.row.col.<D>.<A>.<B>.<C>``."""
        d = ptx_type(self.d_dtype, accumulator=True)
        return f"mma.sync.aligned.{self.shape}.row.col.{d}.{ptx_type(self.a_dtype)}.{ptx_type(self.b_dtype)}.{d}"

    @property
    def atoms(self) -> int:
        """How many K atoms (``4r`` columns) one instruction takes."""
        return self.k // (4 * elements_per_register(self.a_dtype))

    @property
    def registers(self) -> dict[str, int]:
        """32-bit registers per thread of each operand: A ``2 * atoms``, B ``atoms``, C/D 4 (2 for f16)."""
        return {"A": 2 * self.atoms, "B": self.atoms, "C": 4 // elements_per_register(self.d_dtype)}

    @property
    def min_sm(self) -> int:
        """The oldest ``sm_XY`` number that has this instruction."""
        return SHAPES[self.kind][self.k]

    def check_arch(self, arch: str) -> None:
        """``ValueError`` unless target ``arch`` (``"sm_80"``) has this instruction (every later number does:
        ``mma.sync`` is no architecture-specific feature)."""
        if parse_arch(arch).sm < self.min_sm:
            raise ValueError(f"{self.operation} needs sm_{self.min_sm} or newer; the target is {arch}")


def ptx_type(dtype, accumulator: bool = False) -> str:
    """The PTX type suffix of ``dtype`` in an ``mma.sync``: the accumulator float32 is ``.f32``, an operand float32
    ``.tf32``.

    Example:
        >>> ptx_type("float32"), ptx_type("float32", accumulator=True), ptx_type("float8_e5m2")
        ('tf32', 'f32', 'e5m2')
    """
    dtype = str(dtype)
    if accumulator and dtype in ("float32", "float16"):
        return {"float32": "f32", "float16": "f16"}[dtype]
    if dtype not in PTX_TYPE:
        raise ValueError(f"{dtype} is no mma.sync operand or accumulator type; expected one of {sorted(PTX_TYPE)}")
    return PTX_TYPE[dtype]


def best_k(a_dtype, b_dtype, k_total: int, arch: str) -> int:
    """The largest instruction K of the kind that ``arch`` has and that divides ``k_total``: fewer, wider
    instructions for the same tile.

    Example:
        >>> best_k("float16", "float16", 32, "sm_80"), best_k("float16", "float16", 8, "sm_80")
        (16, 8)
        >>> best_k("float8_e4m3fn", "float8_e4m3fn", 48, "sm_89")
        16
    """
    kind = mma_sync_kind(a_dtype, b_dtype)
    sm = parse_arch(arch).sm
    oldest = min(SHAPES[kind].values())
    if sm < oldest:
        raise ValueError(
            f"mma.sync of kind {kind} ({a_dtype} x {b_dtype}) needs sm_{oldest} or newer; the target is {arch}"
        )
    usable = [k for k, first in SHAPES[kind].items() if first <= sm and k_total % k == 0]
    if not usable:
        raise ValueError(
            f"no mma.sync of kind {kind} on {arch} divides K={k_total}: its shapes are "
            + ", ".join(f"m16n8k{k} (sm_{first}+)" for k, first in SHAPES[kind].items())
        )
    return max(usable)


# ---- the fragment layouts ----------------------------------------------------------------------------------------


def atom_shape(operand: str, dtype) -> tuple[int, int]:
    """The shape of one atom of ``operand``'s fragment (A ``(16, 4r)``, B ``(8, 4r)`` as ``(N, K)``, C ``(16, 8)``).

    Example:
        >>> atom_shape("A", "float16"), atom_shape("B", "int8"), atom_shape("C", "float32")
        ((16, 8), (8, 16), (16, 8))
    """
    _check_operand(operand)
    if operand == "C":
        return (MMA_M, MMA_N)
    width = 4 * elements_per_register(dtype)
    return (MMA_M if operand == "A" else MMA_N, width)


def _check_operand(operand: str) -> None:
    if operand not in OPERANDS:
        raise ValueError(f"an mma.sync fragment operand is one of {OPERANDS}, got {operand!r}")


def _warp_grid(warps, who: str) -> tuple[int, int]:
    if isinstance(warps, str) or not isinstance(warps, Sequence) or len(warps) != 2:
        raise ValueError(f"{who}: warps is (warps along M, warps along N), got {warps!r}")
    wm, wn = (static_int(w, "a warp count") for w in warps)
    if wm < 1 or wn < 1 or wm * wn > 32:
        raise ValueError(f"{who}: warps must be >= 1 each and at most 32 in all (1024 threads), got {warps!r}")
    return wm, wn


def _extents(shape, atom: tuple[int, int], warps: tuple[int, int], who: str, names: tuple[str, str]) -> list[int]:
    """Atoms per warp along each dimension, checked: each dimension a whole number of atoms per warp."""
    if isinstance(shape, str) or not isinstance(shape, Sequence) or len(shape) != 2:
        raise ValueError(f"{who}: shape must be ({names[0]}, {names[1]}), got {shape!r}")
    per_warp = []
    for extent, unit, count, name in zip(shape, atom, warps, names, strict=True):
        extent = static_int(extent, name)
        if extent < unit * count or extent % (unit * count):
            raise ValueError(
                f"{who}: {name}={extent} must be a positive multiple of {unit * count} ({count} warp(s) of "
                f"{unit}-wide fragment atoms)"
            )
        per_warp.append(extent // (unit * count))
    return per_warp


def _layout(iters: list, replicas: list) -> TileLayout:
    keep = lambda its: [Iter(e, s, a) for e, s, a in its if e > 1]  # noqa: E731 -- a one-line filter
    return TileLayout.from_iters(keep(iters), keep(replicas))


def mma_sync_c_layout(shape, dtype="float32", warps=(1, 1)) -> TileLayout:
    """The register fragment of an ``(M, N)`` accumulator C/D that ``mma.sync.m16n8k*`` reads and writes, tiled
    over a ``warps = (wm, wn)`` grid of warps (``warpid = i * wn + j`` holds rows ``i M/wm ..`` and columns ``j
    N/wn ..``) and, within a warp, over ``16 x 8`` blocks in registers: block ``(bi, bj)`` of the warp's
    ``(rm, rn)`` takes slots ``4(bi rn + bj) ..``, its ``c_i`` in slot ``+ i`` (``c_i`` at row ``groupID + 8(i >>
    1)``, column ``2 threadID_in_group + (i & 1)``). A float16 D packs ``c0, c1`` and ``c2, c3`` in one register
    each, the same slots.

    Example:
        >>> c = mma_sync_c_layout((16, 8))
        >>> c
        TileLayout(S[(2, 8, 4, 2):(2, 4@laneid, 1@laneid, 1)])
        >>> c.apply(9, 5, shape=[16, 8])  # row groupID + 8 (groupID 1), column 2*2 + 1: c3 of lane 6
        {'m': 3, 'laneid': 6}
        >>> mma_sync_c_layout((64, 32), warps=(2, 2)).apply(40, 17, shape=[64, 32])  # warp 3's row 8, column 1: c3
        {'warpid': 3, 'm': 3, 'laneid': 0}
    """
    who = "mma_sync_c_layout"
    if str(dtype) not in {d for ds in ACCUMULATOR_DTYPES.values() for d in ds}:
        raise ValueError(f"{who}: mma.sync accumulates into float32, float16 or int32, got {dtype}")
    wm, wn = _warp_grid(warps, who)
    rm, rn = _extents(shape, (MMA_M, MMA_N), (wm, wn), who, ("M", "N"))
    rows = [(wm, wn, warpid), (rm, 4 * rn, "m"), (2, 2, "m"), (8, 4, laneid)]
    cols = [(wn, 1, warpid), (rn, 4, "m"), (4, 1, laneid), (2, 1, "m")]
    return _layout(rows + cols, [])


def mma_sync_a_layout(shape, dtype, warps=(1, 1)) -> TileLayout:
    """The register fragment of an ``(M, K)`` multiplicand A that ``mma.sync.m16n8k*`` reads, tiled over a ``warps
    = (wm, wn)`` grid (warp ``i * wn + j`` holds rows ``i M/wm ..``; the ``wn`` warps of a row of the grid hold the
    same A, a replica each) and over ``16 x 4r`` atoms in registers: atom ``(bi, q)`` of the warp's ``(rm, K/4r)``
    takes slots ``2r(bi K/4r + q) ..``, its element ``(h, e)`` (row ``groupID + 8h``, column ``r threadID_in_group +
    e``) slot ``+ r h + e``. So an instruction's A is consecutive slots, ``a_i`` at ``+ i``, and a K loop over the
    fragment moves its start by ``2r`` slots per atom.

    Example:
        >>> a = mma_sync_a_layout((16, 16), "float16")
        >>> a
        TileLayout(S[(2, 8, 2, 4, 2):(2, 4@laneid, 4, 1@laneid, 1)])
        >>> a.apply(8, 9, shape=[16, 16])  # row 8, column 9 = 8 + 1: a7 of lane 0 (m16n8k16's a4..a7: columns 8..15)
        {'m': 7, 'laneid': 0}
        >>> mma_sync_a_layout((32, 32), "int8", warps=(2, 2)).num_replicas()
        2
    """
    who = "mma_sync_a_layout"
    r = elements_per_register(dtype)
    wm, wn = _warp_grid(warps, who)
    rm, q = _extents(shape, atom_shape("A", dtype), (wm, 1), who, ("M", "K"))
    rows = [(wm, wn, warpid), (rm, 2 * r * q, "m"), (2, r, "m"), (8, 4, laneid)]
    cols = [(q, 2 * r, "m"), (4, 1, laneid), (r, 1, "m")]
    return _layout(rows + cols, [(wn, 1, warpid)])


def mma_sync_b_layout(shape, dtype, warps=(1, 1)) -> TileLayout:
    """The register fragment of an ``(N, K)`` multiplicand B (the ISA's K x N B, stored by N as ``T.tile_mma``
    takes it) that ``mma.sync.m16n8k*`` reads, tiled over a ``warps = (wm, wn)`` grid (warp ``i * wn + j`` holds
    rows N ``j N/wn ..``, the ``wm`` warps of a column of the grid a replica each) and over ``8 x 4r`` atoms in
    registers: atom ``(bj, q)`` of the warp's ``(rn, K/4r)`` takes slots ``r(bj K/4r + q) ..``, its element ``e``
    (N ``groupID``, K ``r threadID_in_group + e``) slot ``+ e``.

    Example:
        >>> b = mma_sync_b_layout((8, 16), "bfloat16")
        >>> b
        TileLayout(S[(8, 2, 4, 2):(4@laneid, 2, 1@laneid, 1)])
        >>> b.apply(3, 11, shape=[8, 16])  # N 3, K 11 = 8 + 2*1 + 1: b3 of lane 13
        {'laneid': 13, 'm': 3}
    """
    who = "mma_sync_b_layout"
    r = elements_per_register(dtype)
    wm, wn = _warp_grid(warps, who)
    rn, q = _extents(shape, atom_shape("B", dtype), (wn, 1), who, ("N", "K"))
    rows = [(wn, 1, warpid), (rn, r * q, "m"), (8, 4, laneid)]
    cols = [(q, r, "m"), (4, 1, laneid), (r, 1, "m")]
    return _layout(rows + cols, [(wm, wn, warpid)])


def mma_sync_layout(operand: str, shape, dtype, warps=(1, 1)) -> TileLayout:
    """The fragment layout of ``operand`` (``"A"``, ``"B"`` or ``"C"``): :func:`mma_sync_a_layout`,
    :func:`mma_sync_b_layout` or :func:`mma_sync_c_layout`.

    Example:
        >>> mma_sync_layout("C", (16, 8), "int32") == mma_sync_c_layout((16, 8), "int32")
        True
    """
    _check_operand(operand)
    build = {"A": mma_sync_a_layout, "B": mma_sync_b_layout, "C": mma_sync_c_layout}[operand]
    return build(shape, dtype, warps)


# ---- the recogniser ----------------------------------------------------------------------------------------------


def atom_places(operand: str, dtype) -> np.ndarray:
    """Where the ISA puts an atom's elements: ``places[lane, i] = (row, column)`` of the lane's ``i``-th element of
    the atom (in register order, ``r`` per register), from the module's rule.

    Example:
        >>> atom_places("C", "float32")[5].tolist()  # lane 5: groupID 1, threadID_in_group 1
        [[1, 2], [1, 3], [9, 2], [9, 3]]
    """
    _check_operand(operand)
    lane = np.arange(WARP_THREADS)[:, None]
    group, in_group = lane >> 2, lane & 3
    if operand == "C":
        i = np.arange(4)[None, :]
        return np.stack(np.broadcast_arrays(group + 8 * (i >> 1), 2 * in_group + (i & 1)), axis=-1)
    r = elements_per_register(dtype)
    if operand == "A":
        i = np.arange(2 * r)[None, :]
        return np.stack(np.broadcast_arrays(group + 8 * (i // r), r * in_group + i % r), axis=-1)
    i = np.arange(r)[None, :]
    return np.stack(np.broadcast_arrays(group, r * in_group + i), axis=-1)


@dataclass(frozen=True)
class FragmentAtoms:
    """A register fragment read as a grid of ``mma.sync`` atoms: ``operand``, the atom shape, and per atom
    ``(i, j)`` of the grid the warps holding it (``warps[i][j]``, several for a replicated A or B) and the 32-bit
    registers of its elements in the ISA's order (``registers[i][j]``, the same on every warp holding it)."""

    operand: str
    dtype: str
    atom: tuple[int, int]
    warps: tuple[tuple[frozenset, ...], ...]
    registers: tuple[tuple[tuple[int, ...], ...], ...]

    @property
    def grid(self) -> tuple[int, int]:
        """Atoms along each dimension."""
        return len(self.warps), len(self.warps[0])


def mma_sync_atoms(layout, operand: str, shape, dtype) -> FragmentAtoms:
    """Read ``layout`` (of an ``operand`` tile of ``shape`` and ``dtype``) as a grid of ``mma.sync`` fragment atoms,
    checking element by element that every atom is the ISA's fragment: all its elements on the lanes of one warp
    (of each warp, for a replicated A or B) where the ISA's tables put them, each 32-bit register a whole aligned
    group of ``r`` slots, in the same slots on every lane and every warp. ``ValueError`` names the first element
    out of place.

    Example:
        >>> atoms = mma_sync_atoms(mma_sync_a_layout((32, 16), "float16", warps=(2, 1)), "A", (32, 16), "float16")
        >>> atoms.grid, [sorted(w) for w in atoms.warps[1]], atoms.registers[1]
        ((2, 2), [[1], [1]], ((0, 1), (2, 3)))
        >>> mma_sync_atoms(mma_sync_c_layout((16, 8)), "A", (16, 8), "float32")
        Traceback (most recent call last):
        ...
        ValueError: the layout S[(2, 8, 4, 2):(2, 4@laneid, 1@laneid, 1)] of a 16x8 float32 A is not an mma.sync A
        fragment: element (0, 1) of atom (0, 0) sits on lane 0 of warp 0, slot 1; the ISA reads it as element 0 of
        the atom (register 0) of lane 1 of warp 0, in slot 0 (where lane 0 keeps its element 0)
    """
    _check_operand(operand)
    dtype = str(dtype)
    if not isinstance(layout, TileLayout):
        raise ValueError(f"an mma.sync {operand} fragment is a TileLayout on thread axes and m, got {layout!r}")
    rows, cols = _shape2(shape, operand)
    atom = atom_shape(operand, dtype)
    if rows % atom[0] or cols % atom[1]:
        raise ValueError(f"a {rows}x{cols} {operand} is no whole grid of {atom[0]}x{atom[1]} mma.sync atoms")
    if layout.size() != rows * cols:
        raise ValueError(f"the layout {layout} places {layout.size()} elements, not the {rows}x{cols} of {operand}")
    thread, slot = fragment_places(layout, (rows, cols), operand)
    per_register = elements_per_register(dtype)
    what = f"the layout {layout} of a {rows}x{cols} {dtype} {operand}"
    places = atom_places(operand, dtype)
    lanes = np.arange(WARP_THREADS)[:, None]
    warps_grid, registers_grid = [], []
    for bi in range(rows // atom[0]):
        warps_row, registers_row = [], []
        for bj in range(cols // atom[1]):
            r_idx = bi * atom[0] + places[..., 0]
            c_idx = bj * atom[1] + places[..., 1]
            t, s = thread[:, r_idx, c_idx], slot[:, r_idx, c_idx]  # (replica, lane, i)
            warp = t[:, :1, :1] // WARP_THREADS
            lane_ok = t == warp * WARP_THREADS + lanes[None]
            uniform = s == s[:, :1, :]
            group_start = s[..., ::per_register]
            packed = (s == np.repeat(group_start, per_register, axis=2) + np.arange(s.shape[2]) % per_register) & (
                np.repeat(group_start % per_register == 0, per_register, axis=2)
            )
            same_on_warps = s == s[:1]
            bad = ~(lane_ok & uniform & packed & same_on_warps)
            if bad.any():
                rep, lane, i = (int(v) for v in np.argwhere(bad)[0])
                element = (int(r_idx[lane, i]), int(c_idx[lane, i]))
                got_thread, got_slot = int(t[rep, lane, i]), int(s[rep, lane, i])
                want_slot = int(s[0, 0, i - i % per_register]) + i % per_register
                raise ValueError(
                    f"{what} is not an mma.sync {operand} fragment: element {element} of atom ({bi}, {bj}) sits on "
                    f"lane {got_thread % WARP_THREADS} of warp {got_thread // WARP_THREADS}, slot {got_slot}; the ISA "
                    f"reads it as element {i} of the atom (register {i // per_register}) of lane {lane} of warp "
                    f"{int(warp[rep, 0, 0])}, in slot {want_slot} (where lane 0 keeps its element {i})"
                )
            warps_row.append(frozenset(int(w) for w in warp.ravel()))
            registers_row.append(tuple(int(v) // per_register for v in group_start[0, 0]))
        warps_grid.append(tuple(warps_row))
        registers_grid.append(tuple(registers_row))
    return FragmentAtoms(operand, dtype, atom, tuple(warps_grid), tuple(registers_grid))


def recognise_mma_sync_fragment(layout, shape, dtype) -> str:
    """Which ``mma.sync`` fragment ``layout`` is for a tile of ``shape`` and ``dtype``: ``"A"``, ``"B"`` or
    ``"C"`` (C/D); ``ValueError`` with each operand's reason when it is none. A tile that fits two readings is the
    first of A, B, C it fits: a 16-bit ``16 x 8`` A *is* the C fragment (the ISA places ``a0..a3`` of m16n8k8 as
    ``c0..c3``, which lets an f16 D feed the next A), and two 8-wide B atoms stacked along N read as one A atom.

    Example:
        >>> recognise_mma_sync_fragment(mma_sync_b_layout((8, 32), "int8"), (8, 32), "int8")
        'B'
        >>> recognise_mma_sync_fragment(mma_sync_c_layout((32, 16), warps=(2, 2)), (32, 16), "float32")
        'C'
    """
    reasons = []
    for operand in OPERANDS:
        try:
            mma_sync_atoms(layout, operand, shape, dtype)
        except ValueError as err:
            reasons.append(f"{operand}: {err}")
            continue
        return operand
    raise ValueError(f"{layout} is no mma.sync fragment of a {shape} {dtype} tile; " + "; ".join(reasons))


@dataclass(frozen=True)
class WarpProgram:
    """The ``mma.sync`` instructions every warp of ``warps`` issues for one tile MMA, the same on each (the code
    is one for all warps): ``steps`` lists per instruction the first 32-bit register of its D, A and B fragments
    (each operand's registers consecutive from there), K steps outermost."""

    instruction: MmaSyncInstruction
    warps: tuple[int, ...]
    steps: tuple[tuple[int, int, int], ...]


def warp_program(instruction: MmaSyncInstruction, d: FragmentAtoms, a: FragmentAtoms, b: FragmentAtoms) -> WarpProgram:
    """The instructions of ``D (M, N) (+)= A (M, K) @ B (N, K).T`` on fragments read as atoms: for every K step
    of ``instruction`` and every ``16 x 8`` block of D, the warp holding the block must hold A's rows and B's rows
    of that block and K step, each operand's registers consecutive (the helper reads them from one pointer), and
    every warp holding D must issue the same instructions on the same registers. ``ValueError`` names the first
    block that breaks one of these.

    Example:
        >>> i = MmaSyncInstruction("float16", "float16", "float32", 16)
        >>> grid = dict(warps=(2, 1))
        >>> atoms = [mma_sync_atoms(mma_sync_layout(op, shape, dt, **grid), op, shape, dt)
        ...          for op, shape, dt in (("C", (32, 16), "float32"), ("A", (32, 32), "float16"),
        ...                                ("B", (16, 32), "float16"))]
        >>> program = warp_program(i, *atoms)
        >>> program.warps, program.steps
        ((0, 1), ((0, 0, 0), (4, 0, 4), (0, 4, 2), (4, 4, 6)))
    """
    per_step = instruction.atoms
    k_atoms = a.grid[1]
    if b.grid[1] != k_atoms or k_atoms % per_step:
        raise ValueError(
            f"A has {k_atoms} and B {b.grid[1]} K atoms; {instruction.operation} takes {per_step} per instruction"
        )
    if (a.grid[0], b.grid[0]) != d.grid:
        raise ValueError(f"D's atom grid {d.grid} does not match A's rows {a.grid[0]} and B's rows {b.grid[0]}")
    warps = sorted({w for row in d.warps for held in row for w in held})
    programs = {}
    for w in warps:
        steps = []
        for ks in range(k_atoms // per_step):
            ks_atoms = range(ks * per_step, (ks + 1) * per_step)
            for i, j in np.ndindex(*d.grid):
                if w not in d.warps[i][j]:
                    continue
                where = f"the 16x8 block ({16 * i}, {8 * j}) of D on warp {w}, K step {ks}"
                starts = [_consecutive(d.registers[i][j], f"D at {where}")]
                for side, row in (("A", i), ("B", j)):
                    atoms = a if side == "A" else b
                    missing = [q for q in ks_atoms if w not in atoms.warps[row][q]]
                    if missing:
                        raise ValueError(
                            f"{where}: warp {w} does not hold {side}'s atom ({row}, {missing[0]}) (it is on warps "
                            f"{sorted(atoms.warps[row][missing[0]])}); a warp multiplies only its own registers"
                        )
                    registers = tuple(r for q in ks_atoms for r in atoms.registers[row][q])
                    starts.append(_consecutive(registers, f"{side} at {where}"))
                steps.append(tuple(starts))
        programs[w] = tuple(steps)
    first = programs[warps[0]]
    for w in warps[1:]:
        if programs[w] != first:
            raise ValueError(
                f"warps {warps[0]} and {w} would issue different mma.sync instructions ({list(first)} and "
                f"{list(programs[w])}, as (D, A, B) first registers): the fragments must put every warp's blocks in "
                "the same registers, as the mma_sync_*_layout constructors do"
            )
    return WarpProgram(instruction, tuple(warps), first)


def _consecutive(registers: tuple[int, ...], what: str) -> int:
    if list(registers) != list(range(registers[0], registers[0] + len(registers))):
        raise ValueError(
            f"{what}: its registers {list(registers)} are not consecutive; the instruction's operand is one run of "
            "registers"
        )
    return registers[0]


def _shape2(shape, operand: str) -> tuple[int, int]:
    if isinstance(shape, str) or not isinstance(shape, Sequence) or len(shape) != 2:
        raise ValueError(f"{operand}'s shape must be (rows, columns), got {shape!r}")
    return tuple(static_int(s, f"an extent of {operand}") for s in shape)


def fragment_places(layout: TileLayout, shape, operand: str) -> tuple[np.ndarray, np.ndarray]:
    """CTA thread and register slot of every element of a register fragment of ``shape`` in every replica: arrays
    ``(replica, rows, cols)`` (``operand`` names the fragment in messages).

    Example:
        >>> thread, slot = fragment_places(mma_sync_c_layout((16, 8)), (16, 8), "D")
        >>> int(thread[0, 9, 5]), int(slot[0, 9, 5])
        (6, 3)
    """
    r, c = np.meshgrid(np.arange(shape[0]), np.arange(shape[1]), indexing="ij")
    places = layout.apply_all(r, c, shape=list(shape))
    count = layout.num_replicas()
    thread = np.zeros((count, *shape), np.int64)
    slot = np.zeros((count, *shape), np.int64)
    for name, value in places.items():
        value = np.broadcast_to(np.asarray(value, np.int64).reshape((-1, *shape)), thread.shape)
        if name == "m":
            slot = slot + value
            continue
        try:
            unit = thread_unit(name)
        except (KeyError, ValueError):
            raise ValueError(
                f"{operand}'s layout {layout} places elements on {name}; an mma.sync fragment lives in registers "
                "(thread axes and the slot m)"
            ) from None
        thread = thread + unit * value
    return thread, slot


__all__ = [
    "ACCUMULATOR_DTYPES",
    "MMA_M",
    "MMA_N",
    "OPERANDS",
    "OPERAND_DTYPES",
    "SHAPES",
    "FragmentAtoms",
    "MmaSyncInstruction",
    "WarpProgram",
    "atom_places",
    "atom_shape",
    "best_k",
    "elements_per_register",
    "fragment_places",
    "mma_sync_a_layout",
    "mma_sync_atoms",
    "mma_sync_b_layout",
    "mma_sync_c_layout",
    "mma_sync_kind",
    "mma_sync_layout",
    "ptx_type",
    "recognise_mma_sync_fragment",
    "warp_program",
]
