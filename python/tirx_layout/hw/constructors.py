"""Layouts of the Blackwell hardware (SPEC §4): warpgroup fragments, TMEM datapaths, tcgen05.ld/st register
fragments, and shared-memory operand tiles with their swizzle modes.

Facts come from the PTX ISA (tcgen05 "Data Movement Shape" / "Matrix fragments for shape ...", "Data Path Layout
Organization", "Tensor Memory" access restrictions); each constructor names the section it encodes.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..core.values import static_int
from ..layout.axis import Iter, TCol, TLane, laneid, tid_in_wg, wid_in_wg
from ..layout.indexing import row_major_strides
from ..layout.spec import S
from ..layout.swizzle import ComposeLayout
from ..layout.tile import TileLayout
from .memory import (
    SWIZZLE_128B_BASE32B,
    SWIZZLE_BYTES,
    SWIZZLE_MODES,
    dtype_bytes,
    mode_of_swizzle,
    swizzle_128b_base32b,
    swizzle_for_mode,
)
from .mma import ACCUMULATOR_DTYPES
from .tcgen05 import LD_ST_SHAPES, TMEM_COLUMNS, TMEM_LANES
from .threads import WARPGROUP_THREADS


def wg_local_layout(cols: int, rows: int = 128) -> TileLayout:
    """A warpgroup register tile: row ``r`` in thread ``r`` of the warpgroup, its ``cols`` values in that thread's
    registers in order.

    Example:
        >>> wg_local_layout(8).apply(5, 3)
        {'tid_in_wg': 5, 'm': 3}
    """
    cols, rows = static_int(cols, "cols"), static_int(rows, "rows")
    if not 1 <= rows <= WARPGROUP_THREADS:
        raise ValueError(
            f"wg_local_layout: rows must be in [1, {WARPGROUP_THREADS}] (one row per warpgroup thread), got {rows}"
        )
    if cols < 1:
        raise ValueError(f"wg_local_layout: cols must be >= 1, got {cols}")
    return TileLayout(S[(rows, cols) : (1 @ tid_in_wg, 1)])


def tmem_datapath_layout(datapath: str, rows: int, cols: int, sub_slab: int = 0) -> TileLayout:
    """Where ``tcgen05.mma`` leaves a ``(rows, cols)`` accumulator in tensor memory, per CTA (PTX ISA "Data Path
    Layout Organization"): ``"A"``/``"D"`` (M=256 two-CTA / M=128: row i on lane i), ``"B"``/``"E"`` (64 rows,
    the two column halves on lanes 0-63 and 64-127), ``"C"``/``"F"`` (64 rows, 16 per warp slab, in the slab half
    ``sub_slab``), ``"G"`` (32 rows, the four column quarters on the four warp slabs).

    Example:
        >>> tmem_datapath_layout("F", 64, 32, sub_slab=1).apply(17, 0, shape=[64, 32])
        {'TLane': 49, 'TCol': 0}
    """
    rows, cols, sub_slab = static_int(rows, "rows"), static_int(cols, "cols"), static_int(sub_slab, "sub_slab")
    lane, col = TLane, TCol
    expected_rows = {"A": 128, "D": 128, "B": 64, "E": 64, "C": 64, "F": 64, "G": 32}
    if not isinstance(datapath, str) or datapath not in expected_rows:
        raise ValueError(
            f"tmem_datapath_layout: unknown datapath {datapath!r}; expected one of {sorted(expected_rows)}"
        )
    if rows != expected_rows[datapath]:
        raise ValueError(
            f"tmem_datapath_layout: datapath {datapath!r} holds {expected_rows[datapath]} rows, got {rows}"
        )
    if cols < 1:
        raise ValueError(f"tmem_datapath_layout: cols must be >= 1, got {cols}")
    if datapath in "CF":
        if sub_slab not in (0, 1):
            raise ValueError(f"tmem_datapath_layout: sub_slab must be 0 or 1 (which 16-lane half), got {sub_slab}")
        return TileLayout(S[(4, 16, cols) : (32 @ lane, 1 @ lane, 1 @ col)] + (16 * sub_slab) @ lane)
    if sub_slab:
        raise ValueError(f"tmem_datapath_layout: sub_slab applies to datapaths C and F only, got {sub_slab}")
    if datapath in "AD":
        return TileLayout(S[(128, cols) : (1 @ lane, 1 @ col)])
    parts = 2 if datapath in "BE" else 4
    if cols % parts:
        raise ValueError(f"tmem_datapath_layout: datapath {datapath!r} splits columns in {parts}; {cols} does not")
    return TileLayout(S[(rows, parts, cols // parts) : (1 @ lane, (TMEM_LANES // parts) @ lane, 1 @ col)])


def tcgen05_atom_layout(instr_shape: str, tensor_shape, dtype) -> TileLayout:
    """The warpgroup register fragment that ``tcgen05.ld/st.<instr_shape>.x<N>.b32`` moves, for a ``(rows, cols)``
    tile of ``dtype`` (float32, or 16-bit types packed two per register and per TMEM column). ``N`` follows from
    ``cols``; rows are 128 for ``32x32b`` and 64 or 128 (both halves of each warp's slab) for the 16-lane shapes.
    Thread coordinates are ``wid_in_wg`` and ``laneid`` (``tid_in_wg`` for ``32x32b``); ``m`` is the register
    slot in elements. Per warp (PTX ISA "Matrix fragments for shape ..."), lane ``l``, register ``r``:
    16x64b: row ``(l>>2) + 8(l&1)``, column ``((l>>1)&1) + 2r``; 16x128b: row ``(l>>2) + 8(r&1)``, column
    ``(l&3) + 4(r>>1)``; 16x256b: row ``(l>>2) + 8((r>>1)&1)``, column ``2(l&3) + (r&1) + 8(r>>2)``.

    Example:
        >>> frag = tcgen05_atom_layout("16x64b", (64, 8), "float32")  # .16x64b.x4
        >>> frag.apply(9, 3, shape=[64, 8])
        {'wid_in_wg': 0, 'laneid': 7, 'm': 1}
    """
    if not isinstance(instr_shape, str) or instr_shape not in LD_ST_SHAPES:
        raise ValueError(f"tcgen05_atom_layout: instr_shape must be one of {list(LD_ST_SHAPES)}, got {instr_shape!r}")
    record = LD_ST_SHAPES[instr_shape]
    if not isinstance(tensor_shape, Sequence) or isinstance(tensor_shape, str) or len(tensor_shape) != 2:
        raise ValueError(f"tcgen05_atom_layout: tensor_shape must be (rows, cols), got {tensor_shape!r}")
    rows, cols = (static_int(s, "a tensor_shape entry") for s in tensor_shape)
    size = dtype_bytes(dtype)
    if size not in (2, 4):
        raise ValueError(f"tcgen05_atom_layout: dtype must be 32- or 16-bit, got {dtype!r}")
    if rows not in record.rows:
        raise ValueError(f"tcgen05_atom_layout: {instr_shape} takes rows in {record.rows}, got {rows}")
    per_register = 4 // size
    unit = record.columns_per_num * per_register
    num = cols // unit if cols % unit == 0 else 0
    if num < 1 or num & (num - 1) or num > record.max_num:
        raise ValueError(
            f"tcgen05_atom_layout: cols={cols} of {dtype} needs .num = cols / {unit} to be a power of two up to "
            f"{record.max_num} for {instr_shape}"
        )
    if instr_shape == "32x32b":
        return TileLayout(S[(rows, cols) : (1 @ tid_in_wg, 1)])

    warp, lane = wid_in_wg, laneid
    # Iters in 32-bit register units, slowest first: (extent, stride, axis); "m" is the register slot.
    if instr_shape == "16x64b":  # regs N: row = t2 + 8 t0, col = t1 + 2 r
        row_iters, col_iters, registers = [(2, 1, lane), (8, 4, lane)], [(num, 1, "m"), (2, 2, lane)], num
    elif instr_shape == "16x128b":  # regs 2N, r = a + 2 b: row = t1 + 8 a, col = t0 + 4 b
        row_iters, col_iters, registers = [(2, 1, "m"), (8, 4, lane)], [(num, 2, "m"), (4, 1, lane)], 2 * num
    else:  # 16x256b, regs 4N, r = v + 2 a + 4 b: row = t1 + 8 a, col = v + 2 t0 + 8 b
        row_iters = [(2, 2, "m"), (8, 4, lane)]
        col_iters, registers = [(num, 4, "m"), (4, 1, lane), (2, 1, "m")], 4 * num
    # Warps take consecutive 16-row slabs; with 128 rows each warp's second 16 lanes follow in the next registers.
    halves = [(2, registers, "m")] if rows == 128 else []
    iters = [(4, 1, warp), *halves, *row_iters, *col_iters]
    # 16-bit data: two elements per register, so slots count elements and each register holds a column pair.
    scaled = [(e, s * per_register if a == "m" else s, a) for e, s, a in iters]
    if per_register > 1:
        scaled.append((per_register, 1, "m"))
    return TileLayout.from_iters([Iter(e, s, a) for e, s, a in scaled])


def mma_shared_layout(dtype, mode: str, shape, major: str = "K") -> TileLayout | ComposeLayout:
    """The shared-memory layout of a ``(rows, K)`` MMA operand in one of the ISA's canonical layouts ("Canonical
    layouts"; rows are M for A, N for B), swizzle ``mode`` "none", "32B", "64B", "128B" or, for MN-major 32-bit
    operands only, "128B_base32B" (128B with 32-byte atoms).

    ``major="K"`` (K contiguous): atoms of 8 rows by the swizzle width of K (16 bytes for "none"), stacked along
    the rows first, then along K. ``major="MN"`` (rows contiguous): atoms of the swizzle width of rows by 8 K rows
    (4 for "128B_base32B"), stacked along K first, then along the rows. So in both, one column of atoms holds the
    whole other extent, as one TMA box of the swizzle width fills it. Each atom is row-major and swizzled with
    16-byte vectors kept whole (32-byte ones for "128B_base32B"). Leading dimensions (``(stages, rows, K)``, as a
    pipelined kernel allocates) stack whole ``(rows, K)`` operands; each is a whole number of swizzle repeats, so
    every stage is swizzled alike.

    Example:
        >>> mma_shared_layout("float16", "128B", (16, 128))
        ComposeLayout(SwizzleLayout(3, 3, 3), TileLayout(S[(16, 2, 64):(64, 1024, 1)]))
        >>> mma_shared_layout("float16", "128B", (3, 16, 128))
        ComposeLayout(SwizzleLayout(3, 3, 3), TileLayout(S[(3, 16, 2, 64):(2048, 64, 1024, 1)]))
        >>> mma_shared_layout("bfloat16", "64B", (64, 32), major="MN")
        ComposeLayout(SwizzleLayout(3, 2, 3), TileLayout(S[(2, 32, 32):(1024, 1, 32)]))
    """
    if major not in ("K", "MN"):
        raise ValueError(f"mma_shared_layout: major must be 'K' or 'MN', got {major!r}")
    if not isinstance(shape, Sequence) or isinstance(shape, str) or len(shape) < 2:
        raise ValueError(f"mma_shared_layout: shape must be (..., rows, K), at least two entries, got {shape!r}")
    *leading, rows, cols = (static_int(s, "a shape entry") for s in shape)
    size = dtype_bytes(dtype)
    modes = (*SWIZZLE_MODES, SWIZZLE_128B_BASE32B)
    if not isinstance(mode, str) or mode not in modes:
        raise ValueError(f"mma_shared_layout: unknown swizzle mode {mode!r}; expected one of {modes}")
    if major == "MN" and size == 4 and mode != SWIZZLE_128B_BASE32B:
        raise ValueError(
            f"mma_shared_layout: the ISA reads MN-major 32-bit operands ({dtype}) only with the 128B swizzle with "
            f"32-byte atoms, mode {SWIZZLE_128B_BASE32B!r}; got {mode!r}"
        )
    if mode == SWIZZLE_128B_BASE32B and (major, size) != ("MN", 4):
        raise ValueError(
            f"mma_shared_layout: mode {SWIZZLE_128B_BASE32B!r} is for MN-major 32-bit operands only, got "
            f"{major}-major {dtype}"
        )
    if any(n < 1 for n in leading):
        raise ValueError(f"mma_shared_layout: leading dimensions of {tuple(shape)} must be >= 1")
    width = 128 if mode == SWIZZLE_128B_BASE32B else SWIZZLE_BYTES[mode]
    atom_rows = 4 if mode == SWIZZLE_128B_BASE32B else 8
    line = width // size  # elements along the contiguous dimension in one atom row
    if major == "K":
        if rows % atom_rows or cols % line or rows < atom_rows or cols < line:
            raise ValueError(
                f"mma_shared_layout: shape {tuple(shape)} must be whole atoms of {atom_rows} rows x {line} {dtype} "
                "columns of K"
            )
        atom = TileLayout(S[(atom_rows, line) : (line, 1)])  # row-major: K contiguous
        atom_shape = [atom_rows, line]
        blocks = (rows // atom_rows, cols // line)
        order = S[blocks : (1, blocks[0])]  # atoms down the rows first
    else:
        if rows % line or cols % atom_rows or rows < line or cols < atom_rows:
            raise ValueError(
                f"mma_shared_layout: shape {tuple(shape)} must be whole atoms of {line} {dtype} rows x "
                f"{atom_rows} K rows"
            )
        atom = TileLayout(S[(line, atom_rows) : (1, line)])  # each K row of the atom holds `line` rows
        atom_shape = [line, atom_rows]
        blocks = (rows // line, cols // atom_rows)
        order = S[blocks : (blocks[1], 1)]  # atoms along K first
    tile = atom.tile(TileLayout(order), list(blocks), atom_shape).group([rows, cols])[0]
    if leading:
        strides = row_major_strides([*leading, rows * cols])
        stages = [Iter(n, stride) for n, stride in zip(leading, strides, strict=False)]
        tile = TileLayout.from_iters([*stages, *tile.shard])
    if mode == SWIZZLE_128B_BASE32B:
        return ComposeLayout(swizzle_128b_base32b(dtype), tile)
    swizzle = swizzle_for_mode(mode, dtype)
    return tile if swizzle is None else ComposeLayout(swizzle, tile)


def mma_accumulator_layout(m: int, n: int, dtype="float32", stages: int = 1, sub_slab: int = 0) -> TileLayout:
    """The TMEM layout of an MMA accumulator ``D`` of ``(M, N)`` (``(stages, M, N)`` when ``stages > 1``), where
    ``tcgen05.mma`` (``cta_group::1``) writes it (ISA "Data path layout organization"): M = 128 is Layout D (row i on
    lane i), M = 64 Layout F (16 rows per 32-lane warp window, in the half ``sub_slab`` 0 or 1); column j of stage s
    on 32-bit column ``s * N + j``: stages side by side, as the guide's two-stage accumulator. Each element takes one
    32-bit column (ISA "Packing formats": D is never packed), so a float16 accumulator, whose TCol counts 16-bit
    halves, steps TCol by 2.

    Example:
        >>> mma_accumulator_layout(128, 112, stages=2)
        TileLayout(S[(2, 128, 112):(112@TCol, 1@TLane, 1@TCol)])
        >>> mma_accumulator_layout(64, 16, "float16").apply(17, 3, shape=[64, 16])
        {'TLane': 33, 'TCol': 6}
    """
    m, n, stages = static_int(m, "m"), static_int(n, "n"), static_int(stages, "stages")
    sub_slab = static_int(sub_slab, "sub_slab")
    if str(dtype) not in ACCUMULATOR_DTYPES:
        raise ValueError(f"mma_accumulator_layout: an MMA accumulates into {ACCUMULATOR_DTYPES}, got {dtype}")
    if m not in (64, 128):
        raise ValueError(f"mma_accumulator_layout: M is 64 (Layout F) or 128 (Layout D) with cta_group::1, got {m}")
    if not 8 <= n <= 256 or n % 8:
        raise ValueError(f"mma_accumulator_layout: an MMA's N is 8..256 in steps of 8, got {n}")
    if stages < 1 or stages * n > TMEM_COLUMNS:
        raise ValueError(
            f"mma_accumulator_layout: {stages} stages of {n} columns must fit the {TMEM_COLUMNS} columns of TMEM"
        )
    if sub_slab not in (0, 1) or (sub_slab and m == 128):
        raise ValueError(f"mma_accumulator_layout: sub_slab is 0 or 1, and 1 only for M = 64; got {sub_slab}")
    unit = 4 // dtype_bytes(dtype)  # TCol per 32-bit column
    lanes = [Iter(m, 1, TLane)] if m == 128 else [Iter(4, 32, TLane), Iter(16, 1, TLane)]
    iters = [*lanes, Iter(n, unit, TCol)]
    if stages > 1:
        iters.insert(0, Iter(stages, n * unit, TCol))
    return TileLayout.from_iters(iters, [], {TLane: 16 * sub_slab} if sub_slab else None)


def swizzle_mode(layout, dtype) -> str:
    """The swizzle mode ("none", "32B", "64B", "128B") a shared-memory layout of ``dtype`` uses, for a descriptor;
    ``ValueError`` when its swizzle is none of them.

    Example:
        >>> swizzle_mode(mma_shared_layout("bfloat16", "64B", (64, 64)), "bfloat16")
        '64B'
    """
    if isinstance(layout, TileLayout):
        return "none"
    if not isinstance(layout, ComposeLayout):
        raise TypeError(f"swizzle_mode takes a TileLayout or ComposeLayout, got {layout!r}")
    return mode_of_swizzle(layout.swizzle, dtype)
