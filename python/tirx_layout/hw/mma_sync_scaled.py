"""The block-scaled forms of the warp-level ``mma.sync`` (consumer Blackwell, ``sm_120a``/``sm_120f`` family) as data,
and the register fragments of their scale factors (PTX ISA 9.x, "Warp Level Matrix Multiply-Accumulate
Instructions": ``mma`` syntax, "Block Scaling for mma.sync", Tables "Shapes for scale matrices", "Valid combinations
of .scale_vec_size and .kind qualifier", "Valid values for various selector components", "Target ISA notes").

``mma.sync.aligned.m16n8k<k>.row.col.kind::<kind>.block_scale.scale_vec::<X>X.f32.<a>.<b>.f32.<stype> d, a, b, c,
scale-a-data, {byte-id-a, thread-id-a}, scale-b-data, {byte-id-b, thread-id-b}`` computes ``D = (A * scale_A) *
(B * scale_B) + C``: each row of A (16 x k) is cut into ``X`` chunks of ``k / X`` elements along K, each chunk
multiplied by its own scale ``SF_A`` (``scale_A`` is 16 x X), and each column of B likewise (``scale_B`` is X x 8):

* ``kind::mxf8f6f4``: m16n8k32, A and B any of e4m3, e5m2, e3m2, e2m3, e2m1 (each element in an 8-bit container,
  so the A/B fragments are the 8-bit m16n8k32 ones), ue8m0 scales, ``scale_vec::1X`` (one scale per 32 elements);
* ``kind::mxf4``: m16n8k64, e2m1 x e2m1 packed eight to a register, ue8m0, ``scale_vec::2X`` (32 per scale);
* ``kind::mxf4nvf4``: m16n8k64, e2m1 x e2m1, ue8m0 with ``2X`` or ``4X``, or ue4m3 with ``4X`` (16 per scale).

The scale operands are one 32-bit register per lane each, read in bytes:

* ``thread-id-a`` (0 or 1) picks a pair of lanes of every quad to supply ``SF_A``: with ``groupID = laneid >> 2``,
  lane ``4 g + 2 thread-id-a + h`` (``h`` 0 or 1) supplies row ``g + 8 h`` (Figure 43 of the ISA; CuTe's
  ``SFALayout`` of the SM120 atoms, ``((2,2,8),K):((8,0,1),16)``, reads it the same way);
* ``thread-id-b`` (0..3) picks one lane of every quad: lane ``4 n + thread-id-b`` supplies column ``n`` of
  ``scale_B`` (Figure 44; CuTe's ``SFBLayout`` ``((4,8),K):((0,1),8)``);
* ``byte-id`` picks the bytes: chunk ``j`` of the row's (column's) ``X`` chunks is byte ``byte-id + j`` of the
  register (1X: one byte, any of 0..3; 2X: a byte pair, 0 or 2; 4X: all four, 0).

So one register per lane holds scales of four K chunks of two 16-row blocks of A (the two lane pairs), or of four
8-column blocks of B (the four lanes of a quad). The constructors here lay a scale tile ``(rows, K / (k / X))`` of a
warp grid out that way: a lane's blocks one after another in its bytes (K chunk ``c`` of its ``b``-th block in
byte ``b C + c``, four to a register), 16-row block ``bi`` of a warp
in lane pair ``bi % 2`` (when the warp has an even number of them) and 8-column block ``bj`` in quad lane ``bj % 4``
(likewise). The recogniser reads any layout back into, per instruction (block, K step), the register, byte-id and
thread-id the instruction names, checking element by element where the ISA reads each scale.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..core.values import static_int
from ..layout.axis import Iter, laneid, warpid
from ..layout.tile import TileLayout
from .mma_sync import MMA_M, MMA_N, FragmentAtoms, WarpProgram, fragment_places
from .targets import parse_arch, targets_with
from .threads import WARP_THREADS

#: The family of targets that has the block-scaled forms (a key of ``hw.targets.INSTRUCTION_TARGETS``).
TARGET_FAMILY = "mmasync_block_scale"
#: The scale-factor types (``.stype``) and the TVM dtype that holds each: ue8m0 is ``float8_e8m0fnu``; ue4m3 (an
#: unsigned e4m3, its top bit zero) is held in ``float8_e4m3fn`` with the sign bit clear.
SCALE_DTYPES = {"ue8m0": "float8_e8m0fnu", "ue4m3": "float8_e4m3fn"}
#: PTX spellings of the operand element types.
PTX_OPERAND = {
    "float8_e4m3fn": "e4m3",
    "float8_e5m2": "e5m2",
    "float6_e3m2fn": "e3m2",
    "float6_e2m3fn": "e2m3",
    "float4_e2m1fn": "e2m1",
}


@dataclass(frozen=True)
class BlockScaledKind:
    """One ``.kind`` of the block-scaled ``mma.sync``: its K, operand types and ``{stype: scale_vec sizes}``."""

    k: int
    operands: tuple[str, ...]
    scales: dict


#: Table "Valid combinations of .scale_vec_size and .kind qualifier", with each kind's shape.
KINDS = {
    "mxf8f6f4": BlockScaledKind(32, tuple(PTX_OPERAND), {"ue8m0": (1,)}),
    "mxf4": BlockScaledKind(64, ("float4_e2m1fn",), {"ue8m0": (2,)}),
    "mxf4nvf4": BlockScaledKind(64, ("float4_e2m1fn",), {"ue8m0": (2, 4), "ue4m3": (4,)}),
}
#: Forms the ISA's table lists that ptxas (CUDA 13.0) refuses ("Illegal modifier '.scale_vec::4X' for instruction
#: 'mma' with type '.ue8m0'"), as (kind, stype, scale_vec): refused here too, so a kernel never reaches ptxas with one.
PTXAS_REFUSES = {("mxf4nvf4", "ue8m0", 4)}
#: Table "Valid values for various selector components": scale_vec size -> (byte-id-a, thread-id-a, byte-id-b,
#: thread-id-b) values.
SELECTORS = {
    1: ((0, 1, 2, 3), (0, 1), (0, 1, 2, 3), (0, 1, 2, 3)),
    2: ((0, 2), (0, 1), (0, 2), (0, 1, 2, 3)),
    4: ((0,), (0, 1), (0,), (0, 1, 2, 3)),
}
#: Rows of scale_A (columns of scale_B) one 16 x 8 instruction reads: A's 16 rows, B's 8 columns.
SCALE_BLOCK = {"A": MMA_M, "B": MMA_N}


def scale_type(dtype) -> str:
    """The ``.stype`` a scale buffer of ``dtype`` holds.

    Example:
        >>> scale_type("float8_e8m0fnu"), scale_type("float8_e4m3fn")
        ('ue8m0', 'ue4m3')
    """
    for stype, held in SCALE_DTYPES.items():
        if str(dtype) == held:
            return stype
    raise ValueError(
        f"a block-scaled mma.sync scale factor is ue8m0 (float8_e8m0fnu) or ue4m3 (float8_e4m3fn), got {dtype}"
    )


@dataclass(frozen=True)
class BlockScaledMmaSync:
    """One block-scaled ``mma.sync`` of a warp, checked against the ISA on construction: the kind (inferred when
    not given: e2m1 x e2m1 is ``mxf4`` with 2X ue8m0 scales and ``mxf4nvf4`` otherwise, every other pair
    ``mxf8f6f4``), its operand types, a float32 D, the scale type and ``scale_vec``.

    Example:
        >>> i = BlockScaledMmaSync("float8_e4m3fn", "float8_e5m2")
        >>> i.operation
        'mma.sync.aligned.m16n8k32.row.col.kind::mxf8f6f4.block_scale.scale_vec::1X.f32.e4m3.e5m2.f32.ue8m0'
        >>> i.elements_per_scale, BlockScaledMmaSync("float4_e2m1fn", "float4_e2m1fn", "float32",
        ...                                          "float8_e4m3fn", 4).kind
        (32, 'mxf4nvf4')
        >>> BlockScaledMmaSync("float8_e4m3fn", "float8_e4m3fn", scale_vec=2)
        Traceback (most recent call last):
        ...
        ValueError: kind::mxf8f6f4 with ue8m0 scales has scale_vec::1X, not 2X (one scale per 16 of its K=32)
    """

    a_dtype: str
    b_dtype: str
    d_dtype: str = "float32"
    scale_dtype: str = "float8_e8m0fnu"
    scale_vec: int = 1
    kind: str | None = None

    def __post_init__(self) -> None:
        for name in ("a_dtype", "b_dtype", "d_dtype", "scale_dtype"):
            object.__setattr__(self, name, str(getattr(self, name)))
        stype = scale_type(self.scale_dtype)
        x = static_int(self.scale_vec, "scale_vec")
        object.__setattr__(self, "scale_vec", x)
        kind = self.kind
        if kind is None:
            fp4 = self.a_dtype == self.b_dtype == "float4_e2m1fn"
            kind = ("mxf4" if (stype, x) == ("ue8m0", 2) else "mxf4nvf4") if fp4 else "mxf8f6f4"
        if kind not in KINDS:
            raise ValueError(f"a block-scaled mma.sync kind is one of {sorted(KINDS)}, got {kind!r}")
        object.__setattr__(self, "kind", kind)
        facts = KINDS[kind]
        for side, dtype in (("A", self.a_dtype), ("B", self.b_dtype)):
            if dtype not in facts.operands:
                raise ValueError(
                    f"kind::{kind} multiplies {', '.join(facts.operands)}; {side} is {dtype} (no block-scaled "
                    "mma.sync takes it)"
                )
        if self.d_dtype != "float32":
            raise ValueError(f"a block-scaled mma.sync accumulates into float32, got D {self.d_dtype}")
        if stype not in facts.scales:
            raise ValueError(f"kind::{kind} takes {' or '.join(facts.scales)} scale factors, not {stype}")
        if x not in facts.scales[stype]:
            sizes = " or ".join(f"scale_vec::{v}X" for v in facts.scales[stype])
            raise ValueError(
                f"kind::{kind} with {stype} scales has {sizes}, not {x}X (one scale per {facts.k // x} of its "
                f"K={facts.k})"
            )
        if (kind, stype, x) in PTXAS_REFUSES:
            raise ValueError(
                f"kind::{kind} with {stype} scales and scale_vec::{x}X: the ISA lists it but ptxas refuses it "
                "(Illegal modifier); use ue4m3 scales for scale_vec::4X"
            )

    @property
    def k(self) -> int:
        """K of the instruction (32 for ``mxf8f6f4``, 64 for the fp4 kinds)."""
        return KINDS[self.kind].k

    @property
    def stype(self) -> str:
        """The PTX scale type, ``ue8m0`` or ``ue4m3``."""
        return scale_type(self.scale_dtype)

    @property
    def elements_per_scale(self) -> int:
        """K elements one scale factor covers: ``k / scale_vec`` (32, or 16 for ``mxf4nvf4`` 4X)."""
        return self.k // self.scale_vec

    @property
    def shape(self) -> str:
        """The ``.shape`` suffix, ``m16n8k<k>``."""
        return f"m{MMA_M}n{MMA_N}k{self.k}"

    @property
    def operation(self) -> str:
        """The PTX operation up to its operands."""
        a, b = PTX_OPERAND[self.a_dtype], PTX_OPERAND[self.b_dtype]
        return (
            f"mma.sync.aligned.{self.shape}.row.col.kind::{self.kind}.block_scale.scale_vec::{self.scale_vec}X"
            f".f32.{a}.{b}.f32.{self.stype}"
        )

    @property
    def registers(self) -> dict[str, int]:
        """32-bit registers per thread of each operand: A 4, B 2, C/D 4 (16 x 32 bytes of A, 8 x 32 of B whether
        the elements are 8-bit containers or packed fp4), one each for the scale factors."""
        return {"A": 4, "B": 2, "C": 4, "scale_a": 1, "scale_b": 1}

    def check_arch(self, arch: str) -> None:
        """``ValueError`` unless target ``arch`` has the block-scaled ``mma.sync`` (``sm_120a``, ``sm_120f`` and the
        rest of that family)."""
        if not parse_arch(arch).has(TARGET_FAMILY):
            raise ValueError(
                f"{self.operation} (mma.sync with .block_scale) needs {', '.join(targets_with(TARGET_FAMILY))}; "
                f"the target is {arch}"
            )

    def check_selectors(self, byte_a: int, thread_a: int, byte_b: int, thread_b: int) -> None:
        """``ValueError`` unless the selectors are among the ISA's valid values for this ``scale_vec``."""
        valid = SELECTORS[self.scale_vec]
        for name, value, allowed in zip(
            ("byte-id-a", "thread-id-a", "byte-id-b", "thread-id-b"),
            (byte_a, thread_a, byte_b, thread_b),
            valid,
            strict=True,
        ):
            if value not in allowed:
                raise ValueError(f"{name} {value} is invalid for scale_vec::{self.scale_vec}X; it is one of {allowed}")


def block_scaled_instruction(a_dtype, b_dtype, d_dtype, scale_dtype, k_total: int, scale_columns: int):
    """The instruction of a block-scaled tile MMA whose K is ``k_total`` and whose scale tiles have
    ``scale_columns`` K chunks: the chunk is ``k_total / scale_columns`` elements, which fixes ``scale_vec`` as the
    instruction's K over it. ``ValueError`` naming the values when they make no form the ISA lists.

    Example:
        >>> block_scaled_instruction("float8_e4m3fn", "float8_e4m3fn", "float32", "float8_e8m0fnu", 128, 4).operation
        'mma.sync.aligned.m16n8k32.row.col.kind::mxf8f6f4.block_scale.scale_vec::1X.f32.e4m3.e4m3.f32.ue8m0'
    """
    k_total, columns = static_int(k_total, "K"), static_int(scale_columns, "scale columns")
    fp4 = str(a_dtype) == str(b_dtype) == "float4_e2m1fn"
    k = KINDS["mxf4nvf4" if fp4 else "mxf8f6f4"].k
    if columns < 1 or k_total % columns or k_total % k:
        raise ValueError(
            f"a block-scaled tile MMA of K={k_total} needs K a multiple of the instruction's {k} and the scale "
            f"tiles' {columns} K chunks to divide K"
        )
    per_scale = k_total // columns
    if k % per_scale:
        raise ValueError(
            f"the scale tiles have {columns} K chunks for K={k_total}: one scale per {per_scale} elements, which no "
            f"scale_vec of a K={k} block-scaled mma.sync reads (it takes k/1, k/2 or k/4 elements per scale)"
        )
    return BlockScaledMmaSync(a_dtype, b_dtype, d_dtype, scale_dtype, k // per_scale)


# ---- the scale-factor fragments ----------------------------------------------------------------------------------


def _warp_grid(warps, who: str) -> tuple[int, int]:
    if isinstance(warps, str) or not isinstance(warps, Sequence) or len(warps) != 2:
        raise ValueError(f"{who}: warps is (warps along M, warps along N), got {warps!r}")
    wm, wn = (static_int(w, "a warp count") for w in warps)
    if wm < 1 or wn < 1 or wm * wn > 32:
        raise ValueError(f"{who}: warps must be >= 1 each and at most 32 in all (1024 threads), got {warps!r}")
    return wm, wn


def _blocks(shape, block: int, warps: int, who: str) -> tuple[int, int]:
    """(blocks of ``block`` rows per warp, K chunks) of a scale tile, checked."""
    if isinstance(shape, str) or not isinstance(shape, Sequence) or len(shape) != 2:
        raise ValueError(f"{who}: shape must be (rows, K chunks), got {shape!r}")
    rows, chunks = static_int(shape[0], "rows"), static_int(shape[1], "K chunks")
    if rows < block * warps or rows % (block * warps):
        raise ValueError(
            f"{who}: rows={rows} must be a positive multiple of {block * warps} ({warps} warp(s) of {block}-row "
            "instruction blocks)"
        )
    if chunks < 1:
        raise ValueError(f"{who}: K chunks={chunks} must be positive")
    return rows // (block * warps), chunks


def _layout(iters: list, replicas: list) -> TileLayout:
    keep = lambda its: [Iter(e, s, a) for e, s, a in its if e > 1]  # noqa: E731 -- a one-line filter
    return TileLayout.from_iters(keep(iters), keep(replicas))


def scale_lane(operand: str, row, thread_id):
    """The lane that supplies row ``row`` of ``scale_A`` (``operand="A"``; row 0..15) or column ``row`` of
    ``scale_B`` (``"B"``; 0..7) when the instruction names ``thread_id``.

    Example:
        >>> [int(scale_lane("A", 9, 0)), int(scale_lane("A", 9, 1)), int(scale_lane("B", 3, 2))]
        [5, 7, 14]
    """
    row = np.asarray(row)
    if operand == "A":
        return 4 * (row % 8) + 2 * thread_id + row // 8
    if operand == "B":
        return 4 * row + thread_id
    raise ValueError(f"a scale-factor operand is 'A' or 'B', got {operand!r}")


def mma_sync_scale_layout(operand: str, shape, warps=(1, 1)) -> TileLayout:
    """The register fragment of a scale tile of a block-scaled ``mma.sync``: ``scale_a`` ``(M, C)`` (``operand
    "A"``) or ``scale_b`` ``(N, C)`` (``"B"``), ``C`` K chunks, over a ``warps = (wm, wn)`` grid as the A and B
    fragments are (``scale_a`` rows on warp row ``i``, a replica on each warp of the row; ``scale_b`` rows on warp
    column ``j``). A lane's blocks follow one another in its slots, ``C`` each, chunk ``c`` of its ``b``-th at slot
    ``b C + c``: byte ``slot % 4`` of 32-bit register ``slot // 4`` (an instruction's ``X`` chunks then share one
    register whenever ``X`` divides ``C``); A's 16-row block ``bi`` of the warp
    sits in lane pair ``bi % 2`` when the warp has an even number of blocks (else pair 0), row ``g + 8 h`` of it on
    lane ``4 g + 2 (bi % 2) + h``; B's 8-row block ``bj`` in quad lane ``bj % q`` (``q`` the largest of 4, 2, 1
    dividing the warp's blocks), row ``n`` on lane ``4 n + bj % q``.

    Example:
        >>> a = mma_sync_scale_layout("A", (32, 4))
        >>> a
        TileLayout(S[(2, 2, 8, 4):(2@laneid, 1@laneid, 4@laneid, 1)])
        >>> a.apply(25, 3, shape=[32, 4])  # block 1 (lane pair 1), row 9 = g 1 + 8: lane 4 + 2 + 1, byte 3
        {'laneid': 7, 'm': 3}
        >>> mma_sync_scale_layout("B", (32, 1)).apply(13, 0, shape=[32, 1])  # block 1, column 5: lane 21
        {'laneid': 21}
    """
    who = "mma_sync_scale_layout"
    if operand not in SCALE_BLOCK:
        raise ValueError(f"{who}: operand is 'A' (scale_a) or 'B' (scale_b), got {operand!r}")
    block = SCALE_BLOCK[operand]
    wm, wn = _warp_grid(warps, who)
    blocks, chunks = _blocks(shape, block, wm if operand == "A" else wn, who)
    cols = [(chunks, 1, "m")]
    span = chunks  # slots of one block's chunks
    if operand == "A":
        pairs = 2 if blocks % 2 == 0 else 1
        rows = [(wm, wn, warpid), (blocks // pairs, span, "m"), (pairs, 2, laneid), (2, 1, laneid), (8, 4, laneid)]
        return _layout(rows + cols, [(wn, 1, warpid)])
    quad = next(q for q in (4, 2, 1) if blocks % q == 0)
    rows = [(wn, 1, warpid), (blocks // quad, span, "m"), (quad, 1, laneid), (8, 4, laneid)]
    return _layout(rows + cols, [(wm, wn, warpid)])


@dataclass(frozen=True)
class ScaleAtoms:
    """A scale-factor fragment read per instruction: for 16-row (A) or 8-row (B) block ``i`` and K step ``s``, the
    warps holding it (``warps[i][s]``), its 32-bit register (``registers[i][s]``), ``byte_ids[i][s]`` and
    ``thread_ids[i][s]``, the same on every warp holding it."""

    operand: str
    warps: tuple
    registers: tuple
    byte_ids: tuple
    thread_ids: tuple

    @property
    def grid(self) -> tuple[int, int]:
        """(blocks, K steps)."""
        return len(self.warps), len(self.warps[0])


def mma_sync_scale_atoms(layout, operand: str, shape, scale_vec: int) -> ScaleAtoms:
    """Read ``layout`` (of a scale tile ``(rows, chunks)`` of ``operand`` ``"A"`` or ``"B"``) per instruction of a
    ``scale_vec``-X block-scaled ``mma.sync``: every block of 16 (A) or 8 (B) rows and K step of ``scale_vec`` chunks
    must sit on one warp (per replica), on the lanes the ISA reads for one thread-id, in one 32-bit register, chunk
    ``j`` in byte ``byte-id + j`` with a byte-id the ISA allows. ``ValueError`` names the first element out of
    place.

    Example:
        >>> atoms = mma_sync_scale_atoms(mma_sync_scale_layout("A", (64, 8), warps=(2, 1)), "A", (64, 8), 1)
        >>> atoms.grid, atoms.registers[1], atoms.byte_ids[1][5], atoms.thread_ids[1][5], sorted(atoms.warps[3][0])
        ((4, 8), (0, 0, 0, 0, 1, 1, 1, 1), 1, 1, [1])
        >>> mma_sync_scale_atoms(mma_sync_scale_layout("B", (8, 2)), "A", (8, 2), 1)
        Traceback (most recent call last):
        ...
        ValueError: a scale_a tile is 16-row blocks of whole K steps of 1 chunks; got (8, 2)
    """
    if operand not in SCALE_BLOCK:
        raise ValueError(f"a scale-factor operand is 'A' or 'B', got {operand!r}")
    name = f"scale_{operand.lower()}"
    if not isinstance(layout, TileLayout):
        raise ValueError(f"{name}'s fragment is a TileLayout on thread axes and m, got {layout!r}")
    x = static_int(scale_vec, "scale_vec")
    if x not in SELECTORS:
        raise ValueError(f"scale_vec is 1, 2 or 4 (X), got {x}")
    rows, chunks = (static_int(v, f"an extent of {name}") for v in shape)
    block = SCALE_BLOCK[operand]
    if rows % block or chunks % x or rows == 0 or chunks == 0:
        raise ValueError(f"a {name} tile is {block}-row blocks of whole K steps of {x} chunks; got {tuple(shape)}")
    if layout.size() != rows * chunks:
        raise ValueError(f"the layout {layout} places {layout.size()} elements, not the {rows}x{chunks} of {name}")
    thread, slot = fragment_places(layout, (rows, chunks), name)
    valid = SELECTORS[x]
    byte_valid, thread_valid = (valid[0], valid[1]) if operand == "A" else (valid[2], valid[3])
    what = f"the layout {layout} of a {rows}x{chunks} {name}"
    grids = {"warps": [], "registers": [], "bytes": [], "threads": []}
    local = np.arange(block)
    for bi in range(rows // block):
        row_of = {key: [] for key in grids}
        for s in range(chunks // x):
            t = thread[:, bi * block : (bi + 1) * block, s * x : (s + 1) * x]  # (replica, row, chunk)
            sl = slot[:, bi * block : (bi + 1) * block, s * x : (s + 1) * x]
            warp = t[:, :1, :1] // WARP_THREADS
            lane = t % WARP_THREADS
            thread_id = (lane[:, :1, :1] - scale_lane(operand, 0, 0)) // (2 if operand == "A" else 1)
            register, byte_id = sl[:, :1, :1] // 4, sl[:, :1, :1] % 4
            want_lane = scale_lane(operand, local[None, :, None], thread_id)
            want_slot = register * 4 + byte_id + np.arange(x)[None, None, :]
            bad = (t // WARP_THREADS != warp) | (lane != want_lane) | (sl != want_slot)
            bad |= (register != register[:1]) | (byte_id != byte_id[:1]) | (thread_id != thread_id[:1])
            if bad.any():
                rep, r, j = (int(v) for v in np.argwhere(bad)[0])
                raise ValueError(
                    f"{what} is no block-scaled mma.sync scale fragment: row {bi * block + r}, chunk {s * x + j} "
                    f"(instruction K step {s}) sits on lane {int(lane[rep, r, j])} of warp "
                    f"{int(t[rep, r, j]) // WARP_THREADS}, slot {int(sl[rep, r, j])}; the ISA reads it from lane "
                    f"{int(want_lane[rep, r, 0])} of warp {int(warp[rep, 0, 0])} (thread-id "
                    f"{int(thread_id[rep, 0, 0])}), "
                    f"slot {int(want_slot[rep, 0, j])} (register {int(register[rep, 0, 0])}, byte-id "
                    f"{int(byte_id[rep, 0, 0])} + {j})"
                )
            tid, bid = int(thread_id[0, 0, 0]), int(byte_id[0, 0, 0])
            if tid not in thread_valid or bid not in byte_valid:
                raise ValueError(
                    f"{what}: rows {bi * block}.. K step {s} would need thread-id {tid} and byte-id {bid}; "
                    f"scale_vec::{x}X allows thread-id {thread_valid} and byte-id {byte_valid}"
                )
            row_of["warps"].append(frozenset(int(w) for w in warp.ravel()))
            row_of["registers"].append(int(register[0, 0, 0]))
            row_of["bytes"].append(bid)
            row_of["threads"].append(tid)
        for key in grids:
            grids[key].append(tuple(row_of[key]))
    return ScaleAtoms(
        operand,
        tuple(grids["warps"]),
        tuple(grids["registers"]),
        tuple(grids["bytes"]),
        tuple(grids["threads"]),
    )


@dataclass(frozen=True)
class ScaleSelect:
    """Where one instruction reads its scales: the register of each scale fragment and the selectors."""

    a_register: int
    byte_a: int
    thread_a: int
    b_register: int
    byte_b: int
    thread_b: int


def scale_program(
    instruction: BlockScaledMmaSync, program: WarpProgram, d: FragmentAtoms, sfa: ScaleAtoms, sfb: ScaleAtoms
) -> tuple[ScaleSelect, ...]:
    """Per instruction of ``program`` (in its order: K steps outermost, then D's blocks row by row), where it reads
    its scales: the block's rows of ``sfa`` and columns of ``sfb`` at the step must be on every warp issuing it, in
    the same register with the same selectors on all of them, and the selectors valid for the instruction.
    ``ValueError`` names the first block that breaks this.

    Example:
        >>> from tirx_layout.hw.mma_sync import mma_sync_atoms, mma_sync_layout, warp_program, MmaSyncInstruction
        >>> i = BlockScaledMmaSync("float8_e4m3fn", "float8_e4m3fn")
        >>> ops = [mma_sync_atoms(mma_sync_layout(o, s, dt), o, s, dt)
        ...        for o, s, dt in (("C", (32, 8), "float32"), ("A", (32, 64), "float8_e4m3fn"),
        ...                         ("B", (8, 64), "float8_e4m3fn"))]
        >>> program = warp_program(MmaSyncInstruction("float8_e4m3fn", "float8_e4m3fn", "float32", 32), *ops)
        >>> sfa = mma_sync_scale_atoms(mma_sync_scale_layout("A", (32, 2)), "A", (32, 2), 1)
        >>> sfb = mma_sync_scale_atoms(mma_sync_scale_layout("B", (8, 2)), "B", (8, 2), 1)
        >>> [(s.a_register, s.byte_a, s.thread_a, s.byte_b) for s in scale_program(i, program, ops[0], sfa, sfb)]
        [(0, 0, 0, 0), (0, 0, 1, 0), (0, 1, 0, 1), (0, 1, 1, 1)]
    """
    steps = len(program.steps) // max(1, sum(1 for row in d.warps for held in row if program.warps[0] in held))
    if sfa.grid != (d.grid[0], steps) or sfb.grid != (d.grid[1], steps):
        raise ValueError(
            f"the scale tiles' instruction grids (scale_a {sfa.grid}, scale_b {sfb.grid} as (blocks, K steps)) do "
            f"not match D's {d.grid} blocks over {steps} K steps"
        )
    selects = None
    for w in program.warps:
        here = []
        for ks in range(steps):
            for i, j in np.ndindex(*d.grid):
                if w not in d.warps[i][j]:
                    continue
                for side, atoms, row in (("scale_a", sfa, i), ("scale_b", sfb, j)):
                    if w not in atoms.warps[row][ks]:
                        raise ValueError(
                            f"the 16x8 block ({16 * i}, {8 * j}) of D on warp {w}, K step {ks}: warp {w} does not "
                            f"hold its {side} (on warps {sorted(atoms.warps[row][ks])})"
                        )
                select = ScaleSelect(
                    sfa.registers[i][ks],
                    sfa.byte_ids[i][ks],
                    sfa.thread_ids[i][ks],
                    sfb.registers[j][ks],
                    sfb.byte_ids[j][ks],
                    sfb.thread_ids[j][ks],
                )
                instruction.check_selectors(select.byte_a, select.thread_a, select.byte_b, select.thread_b)
                here.append(select)
        if selects is None:
            selects = here
        elif here != selects:
            raise ValueError(
                f"warps {program.warps[0]} and {w} would read their scales from different registers or selectors; "
                "the scale fragments must put every warp's blocks in the same registers, as mma_sync_scale_layout "
                "does"
            )
    if len(selects) != len(program.steps):
        raise ValueError(f"{len(selects)} scale reads for {len(program.steps)} instructions")
    return tuple(selects)


# ---- the fp4 operand fragments of m16n8k64 -------------------------------------------------------------------------


def fp4_places(operand: str) -> np.ndarray:
    """Where the ISA's m16n8k64 table (``.e2m1``, eight elements a register, the lowest in the low bits) puts lane
    ``l``'s element ``i`` of A (16 x 64) or B (as ``(N, K)``): ``places[lane, i] = (row, column)``. A: row
    ``groupID`` for ``a0..a7, a16..a23``, ``groupID + 8`` otherwise; column ``8 threadID_in_group + (i & 7)``, ``+ 32``
    for ``i >= 16``. B: N ``groupID``; K ``8 threadID_in_group + (i & 7)``, ``+ 32`` for ``i >= 8``. (Layouts here
    address whole bytes, so this fragment is a table, not a :class:`TileLayout`.)

    Example:
        >>> fp4_places("A")[5, [0, 8, 16]].tolist()  # lane 5: groupID 1, threadID_in_group 1
        [[1, 8], [9, 8], [1, 40]]
    """
    lane = np.arange(WARP_THREADS)[:, None]
    group, in_group = lane >> 2, lane & 3
    if operand == "A":
        i = np.arange(32)[None, :]
        rows, cols = group + 8 * ((i >> 3) & 1), 8 * in_group + (i & 7) + 32 * (i >= 16)
    elif operand == "B":
        i = np.arange(16)[None, :]
        rows, cols = group + 0 * i, 8 * in_group + (i & 7) + 32 * (i >= 8)
    else:
        raise ValueError(f"an fp4 m16n8k64 operand is 'A' or 'B', got {operand!r}")
    return np.stack(np.broadcast_arrays(rows, cols), axis=-1)


__all__ = [
    "KINDS",
    "PTXAS_REFUSES",
    "SCALE_DTYPES",
    "SELECTORS",
    "TARGET_FAMILY",
    "BlockScaledMmaSync",
    "ScaleAtoms",
    "ScaleSelect",
    "block_scaled_instruction",
    "fp4_places",
    "mma_sync_scale_atoms",
    "mma_sync_scale_layout",
    "scale_lane",
    "scale_program",
    "scale_type",
]
