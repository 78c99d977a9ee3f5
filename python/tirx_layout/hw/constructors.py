"""Layouts of the Blackwell and Hopper hardware (SPEC §4): warpgroup fragments, TMEM datapaths, tcgen05.ld/st
register fragments, shared-memory operand tiles with their swizzle modes, and the register fragments of ``wgmma``
(with their recognisers).

Facts come from the PTX ISA (tcgen05 "Data Movement Shape" / "Matrix fragments for shape ...", "Data Path Layout
Organization", "Tensor Memory" access restrictions; wgmma "Register Fragments"); each constructor names the section
it encodes.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..core.values import static_int
from ..layout.axis import Iter, TCol, TLane, laneid, tid_in_wg, wgid, wid_in_wg
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
from .tcgen05 import LANES_PER_WARP, LD_ST_SHAPES, SCALE_FACTORS_PER_COLUMN, TMEM_COLUMNS, TMEM_LANES
from .threads import WARPGROUP_THREADS, thread_unit
from .tmem_addressing import ACCUMULATOR_DTYPES
from .wgmma import ACCUMULATOR_DTYPES as WGMMA_ACCUMULATOR_DTYPES
from .wgmma import OPERAND_DTYPES as WGMMA_OPERAND_DTYPES
from .wgmma import WGMMA_M, k_per_instruction


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


def mma_scale_factor_layout(rows: int, k_blocks: int, column: int = 0, stages: int = 1) -> TileLayout:
    """Where a block-scaled ``tcgen05.mma`` (``kind::mxf8f6f4.block_scale.scale_vec::1X``) reads a ``(rows,
    k_blocks)`` matrix of one-byte ``ue8m0`` scale factors in tensor memory: one scale per row of A (or column of
    B) per block of 32 K elements. Row ``r`` sits on lane ``r % 32`` of each of the four 32-lane warp windows (the
    ISA asks for the copy in all four), in the 32-bit column ``r // 32`` after ``column``, and K-block ``b`` in byte
    ``b % 4`` of that cell (the SF id of the instruction descriptor); every further group of four K-blocks takes the
    next ``rows / 32`` columns. TCol counts bytes, the unit of an 8-bit TMEM buffer. For 128 rows and four K-blocks
    this is the guide's atom ``S[(32, 16):(1@TLane, 1@TCol)] + R[4:32@TLane]`` read as ``(128, 4)``. With
    ``stages > 1`` the buffer is ``(stages, rows, k_blocks)``, each stage in the columns after the previous one
    (a pipelined kernel copies the next stage's scales while an MMA still reads the current ones).

    Example:
        >>> layout = mma_scale_factor_layout(128, 4)
        >>> layout
        TileLayout(S[(4, 32, 4):(4@TCol, 1@TLane, 1@TCol)] + R[4:32@TLane])
        >>> layout.apply(33, 2, shape=[128, 4])
        {'TCol': 6, 'TLane': 1}
    """
    rows, k_blocks, column = static_int(rows, "rows"), static_int(k_blocks, "k_blocks"), static_int(column, "column")
    groups = _scale_factor_row_groups(rows, "mma_scale_factor_layout")
    if k_blocks < 1 or (k_blocks > SCALE_FACTORS_PER_COLUMN and k_blocks % SCALE_FACTORS_PER_COLUMN):
        raise ValueError(
            f"mma_scale_factor_layout: k_blocks must be 1..{SCALE_FACTORS_PER_COLUMN} or a multiple of "
            f"{SCALE_FACTORS_PER_COLUMN} (one byte per K-block in each 32-bit cell), got {k_blocks}"
        )
    if column < 0:
        raise ValueError(f"mma_scale_factor_layout: column must be >= 0, got {column}")
    stages = static_int(stages, "stages")
    if stages < 1:
        raise ValueError(f"mma_scale_factor_layout: stages must be >= 1, got {stages}")
    per_cell = min(k_blocks, SCALE_FACTORS_PER_COLUMN)
    cell = SCALE_FACTORS_PER_COLUMN  # bytes of one 32-bit column
    row_iters = [Iter(groups, cell, TCol), Iter(LANES_PER_WARP, 1, TLane)]
    k_iters = [Iter(per_cell, 1, TCol)]
    if k_blocks > per_cell:
        k_iters.insert(0, Iter(k_blocks // per_cell, groups * cell, TCol))
    replicas = [Iter(TMEM_LANES // LANES_PER_WARP, LANES_PER_WARP, TLane)]
    offset = {TCol: cell * column} if column else {}
    stage_iters = [Iter(stages, groups * cell * -(-k_blocks // per_cell), TCol)] if stages > 1 else []
    return TileLayout.from_iters([*stage_iters, *row_iters, *k_iters], replicas, offset)


def mma_scale_factor_shared_layout(rows: int, k_blocks: int) -> TileLayout:
    """The shared-memory image of a ``(rows, k_blocks)`` ``ue8m0`` scale-factor matrix that
    ``tcgen05.cp.32x128b.warpx4`` copies into :func:`mma_scale_factor_layout`: for each group of four K-blocks,
    lane ``l``'s bytes (row ``32c + l``, K-block ``b`` at byte ``4c + b``) are one 16-byte row of the descriptor's
    canonical no-swizzle K-major image (rows 16 bytes apart), so 128 rows x 4 K-blocks are one 512-byte chunk;
    a further 128 rows, or a further group of K-blocks, is the next chunk. ``rows`` is a multiple of 128.

    Example:
        >>> layout = mma_scale_factor_shared_layout(128, 4)
        >>> layout
        TileLayout(S[(4, 32, 4):(4, 16, 1)])
        >>> layout.apply(32 * 2 + 5, 3, shape=[128, 4])  # row 32*2 + 5, K-block 3: byte 16*5 + 4*2 + 3
        {'m': 91}
    """
    rows, k_blocks = static_int(rows, "rows"), static_int(k_blocks, "k_blocks")
    groups = _scale_factor_row_groups(rows, "mma_scale_factor_shared_layout")
    cell = SCALE_FACTORS_PER_COLUMN
    if groups % cell or k_blocks < 1 or k_blocks % cell:
        raise ValueError(
            f"mma_scale_factor_shared_layout: tcgen05.cp moves 16 bytes per lane, so rows must be a multiple of "
            f"{cell * LANES_PER_WARP} and k_blocks of {cell}; got ({rows}, {k_blocks})"
        )
    chunk = LANES_PER_WARP * 16  # bytes of one 32 x 128-bit copy
    chunks_per_group = groups // cell
    row_iters = [Iter(cell, cell), Iter(LANES_PER_WARP, 16)]
    if chunks_per_group > 1:
        row_iters.insert(0, Iter(chunks_per_group, chunk))
    k_iters = [Iter(cell, 1)]
    if k_blocks > cell:
        k_iters.insert(0, Iter(k_blocks // cell, chunks_per_group * chunk))
    return TileLayout.from_iters([*row_iters, *k_iters])


def _scale_factor_row_groups(rows: int, who: str) -> int:
    if rows < LANES_PER_WARP or rows % LANES_PER_WARP or rows > 2 * TMEM_LANES:
        raise ValueError(
            f"{who}: rows must be a multiple of {LANES_PER_WARP} up to {2 * TMEM_LANES} (M or N of the MMA, "
            f"rounded up to whole 32-row groups), got {rows}"
        )
    return rows // LANES_PER_WARP


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


# ---- wgmma register fragments (Hopper) ---------------------------------------------------------------------------

#: Accumulator element types of any wgmma kind, and operand types A may have in registers.
_WGMMA_D_DTYPES = tuple(sorted({d for ds in WGMMA_ACCUMULATOR_DTYPES.values() for d in ds}))
_WGMMA_A_DTYPES = tuple(d for ds in WGMMA_OPERAND_DTYPES.values() for d in ds)
#: The most warpgroups one CTA has (1024 threads).
_MAX_WARPGROUPS = 8


def _warpgroups(warpgroups, first_warpgroup, who: str) -> tuple[int, dict]:
    """The checked warpgroup count, and the layout offset that puts the fragment on warpgroups ``first_warpgroup``
    onwards (a kernel whose warpgroup 0 produces and the others consume)."""
    warpgroups, first = static_int(warpgroups, "warpgroups"), static_int(first_warpgroup, "first_warpgroup")
    if warpgroups < 1 or first < 0 or first + warpgroups > _MAX_WARPGROUPS:
        raise ValueError(
            f"{who}: warpgroups >= 1 from first_warpgroup >= 0 must fit the {_MAX_WARPGROUPS} warpgroups of a CTA "
            f"(1024 threads), got warpgroups={warpgroups}, first_warpgroup={first}"
        )
    return warpgroups, ({wgid: first} if first else None)


def _row_iters(warpgroups: int, half_stride: int) -> list[Iter]:
    """The rows of a wgmma fragment, slowest first: warpgroup g holds rows 64g..64g+63, warp w of it rows 16w..16w+15,
    lane l rows l/4 and l/4 + 8 (the second in the slot ``half_stride`` further)."""
    iters = [Iter(4, 1, wid_in_wg), Iter(2, half_stride, "m"), Iter(8, 4, laneid)]
    return [Iter(warpgroups, 1, wgid), *iters] if warpgroups > 1 else iters


def wgmma_accumulator_layout(n: int, dtype="float32", warpgroups: int = 1, first_warpgroup: int = 0) -> TileLayout:
    """The register fragment in which ``wgmma.mma_async.m64nNkK`` keeps its accumulator D of shape ``(64 *
    warpgroups, n)`` (ISA "Register Fragments", accumulator D of ``m64nNk16``, the same for every K): warp ``w`` of
    warpgroup ``g`` holds rows ``64g + 16w .. + 15``; lane ``l`` holds rows ``l/4`` and ``l/4 + 8`` of that slab and,
    in every 8-column block ``j``, columns ``8j + 2(l%4)`` and ``+1``. Slot ``i`` (the ISA's ``d_i``, the thread's
    ``i``-th element) is column ``8(i/4) + 2(l%4) + i%2`` of row ``l/4 + 8((i/2)%2)``. Every thread holds ``n/2``
    elements: ``n/2`` f32/s32 registers, or ``n/4`` ``.f16x2`` registers for float16 (two slots per register).
    ``first_warpgroup`` moves the fragment to warpgroups ``first_warpgroup ..`` of the CTA (``wgid`` offset), for
    kernels whose first warpgroups do something else (a TMA producer).

    Example:
        >>> d = wgmma_accumulator_layout(64)
        >>> d
        TileLayout(S[(4, 2, 8, 8, 4, 2):(1@wid_in_wg, 2, 4@laneid, 4, 1@laneid, 1)])
        >>> d.apply(17, 2, shape=[64, 64])  # row 16 + 1 (warp 1, lane/4 = 1), column 2 (lane%4 = 1): d_0 of lane 5
        {'wid_in_wg': 1, 'm': 0, 'laneid': 5}
        >>> wgmma_accumulator_layout(8, warpgroups=2).apply(64 + 9, 7, shape=[128, 8])
        {'wgid': 1, 'wid_in_wg': 0, 'm': 3, 'laneid': 7}
    """
    n = static_int(n, "n")
    dtype = str(dtype)
    if dtype not in _WGMMA_D_DTYPES:
        raise ValueError(
            f"wgmma_accumulator_layout: a wgmma accumulates into {', '.join(_WGMMA_D_DTYPES)}, got {dtype}"
        )
    if not 8 <= n <= 256 or n % 8:
        raise ValueError(f"wgmma_accumulator_layout: a wgmma's N is 8..256 in steps of 8, got {n}")
    warpgroups, offset = _warpgroups(warpgroups, first_warpgroup, "wgmma_accumulator_layout")
    blocks = [Iter(n // 8, 4, "m")] if n > 8 else []
    iters = [*_row_iters(warpgroups, 2), *blocks, Iter(4, 1, laneid), Iter(2, 1, "m")]
    return TileLayout.from_iters(iters, [], offset)


def wgmma_operand_a_layout(k: int, dtype, warpgroups: int = 1, first_warpgroup: int = 0) -> TileLayout:
    """The register fragment from which ``wgmma.mma_async`` (the form with A in registers, K-major) reads A of shape
    ``(64 * warpgroups, k)``, ``k`` whole instruction steps of 32 bytes (16 f16/bf16, 8 tf32, 32 8-bit elements). Per
    step (ISA "Register Fragments", multiplicand A of ``m64nNk16``/``k8``/``k32``), warp ``w`` holds rows ``16w ..
    16w + 15`` and lane ``l`` rows ``l/4`` (and ``+ 8``):

    * 16-bit: 8 elements ``a0..a7`` in 4 ``.f16x2`` registers: ``a_i`` at row ``l/4 + 8((i/2)%2)``, column
      ``8(i/4) + 2(l%4) + i%2``;
    * tf32: 4 elements ``a0..a3`` in 4 registers: row ``l/4 + 8(i%2)``, column ``4(i/2) + l%4``;
    * 8-bit: 16 elements ``a0..a15`` in 4 registers of four: row ``l/4 + 8((i/4)%2)``, column
      ``16(i/8) + 4(l%4) + i%4``.

    Step ``s`` takes the next slots (register ``i`` of step ``s`` is slot ``s * per_step + i``), so one fragment
    feeds a K loop, step ``s`` reading from slot ``s * per_step``. ``first_warpgroup`` as for
    :func:`wgmma_accumulator_layout`.

    Example:
        >>> a = wgmma_operand_a_layout(16, "bfloat16")
        >>> a
        TileLayout(S[(4, 2, 8, 2, 4, 2):(1@wid_in_wg, 2, 4@laneid, 4, 1@laneid, 1)])
        >>> wgmma_operand_a_layout(64, "int8").apply(8, 37, shape=[64, 64])  # step 1 (slots 16..31), a_5 of lane 1
        {'wid_in_wg': 0, 'm': 21, 'laneid': 1}
    """
    k = static_int(k, "k")
    dtype = str(dtype)
    if dtype not in _WGMMA_A_DTYPES:
        raise ValueError(f"wgmma_operand_a_layout: A in registers is one of {', '.join(_WGMMA_A_DTYPES)}, got {dtype}")
    step = k_per_instruction(dtype)
    if k < step or k % step:
        raise ValueError(
            f"wgmma_operand_a_layout: k must be a positive multiple of {step} (one wgmma reads {step} {dtype} "
            f"elements of K), got {k}"
        )
    warpgroups, offset = _warpgroups(warpgroups, first_warpgroup, "wgmma_operand_a_layout")
    size = dtype_bytes(dtype)
    per_thread = 4 * 4 // size  # 4 registers of 32 bits
    if size == 4:  # tf32: a_i at row + 8(i%2), column 4(i/2) + l%4
        rows, columns = _row_iters(warpgroups, 1), [Iter(2, 2, "m"), Iter(4, 1, laneid)]
    else:  # 2 (16-bit) or 4 (8-bit) consecutive columns per slot run, two runs per row half
        run = 4 // size
        rows = _row_iters(warpgroups, run)
        columns = [Iter(2, 2 * run, "m"), Iter(4, 1, laneid), Iter(run, 1, "m")]
    steps = [Iter(k // step, per_thread, "m")] if k > step else []
    return TileLayout.from_iters([*rows, *steps, *columns], [], offset)


def wgmma_accumulator_check(layout, shape, dtype="float32") -> int:
    """Check that ``layout`` places a ``(rows, n)`` wgmma accumulator of ``dtype`` where the ISA keeps it (see
    :func:`wgmma_accumulator_layout`), element by element: each on the same CTA thread (``laneid + 32 wid_in_wg +
    128 wgid``, whatever thread axes the layout uses) and slot. The warpgroups are those from the one holding
    element (0, 0) on (any ``first_warpgroup``). Returns the number of warpgroups (``rows / 64``); a ``ValueError``
    names the first element placed elsewhere.

    Example:
        >>> wgmma_accumulator_check(wgmma_accumulator_layout(32, warpgroups=2), (128, 32))
        2
        >>> wgmma_accumulator_check(wg_local_layout(8, 64), (64, 8))  # one row per thread is not the ISA's fragment
        Traceback (most recent call last):
        ...
        ValueError: D's layout S[(64, 8):(1@tid_in_wg, 1)] is not the wgmma accumulator fragment of a 64x8 float32 D:
        element (0, 2) sits on thread 0 slot 2; the ISA puts it on thread 1 slot 0
    """
    rows, n = _fragment_shape(shape, "D")
    warpgroups = rows // WGMMA_M
    expected = wgmma_accumulator_layout(n, dtype, warpgroups, _first_warpgroup(layout, (rows, n), "D"))
    _check_fragment(layout, expected, (rows, n), f"the wgmma accumulator fragment of a {rows}x{n} {dtype} D", "D")
    return warpgroups


def wgmma_operand_a_check(layout, shape, dtype) -> int:
    """Check that ``layout`` places a ``(rows, k)`` A of ``dtype`` where a wgmma with A in registers reads it (see
    :func:`wgmma_operand_a_layout`), element by element (thread and slot, as :func:`wgmma_accumulator_check`).
    Returns the number of warpgroups; a ``ValueError`` names the first element placed elsewhere.

    Example:
        >>> wgmma_operand_a_check(wgmma_operand_a_layout(32, "float16"), (64, 32), "float16")
        1
    """
    rows, k = _fragment_shape(shape, "A")
    warpgroups = rows // WGMMA_M
    expected = wgmma_operand_a_layout(k, dtype, warpgroups, _first_warpgroup(layout, (rows, k), "A"))
    _check_fragment(layout, expected, (rows, k), f"the wgmma A fragment of a {rows}x{k} {dtype} A", "A")
    return warpgroups


def _fragment_shape(shape, operand: str) -> tuple[int, int]:
    if isinstance(shape, str) or not isinstance(shape, Sequence) or len(shape) != 2:
        raise ValueError(f"{operand}'s shape must be (rows, columns), got {shape!r}")
    rows, cols = (static_int(s, f"an extent of {operand}") for s in shape)
    if rows < WGMMA_M or rows % WGMMA_M or rows > WGMMA_M * _MAX_WARPGROUPS:
        raise ValueError(
            f"{operand} has {rows} rows; a wgmma fragment has 64 rows per warpgroup (64, 128, ..., "
            f"{WGMMA_M * _MAX_WARPGROUPS})"
        )
    return rows, cols


def _first_warpgroup(layout, shape, operand: str) -> int:
    """The warpgroup holding element (0, 0), kept in the CTA's range so the expected layout can be built."""
    thread, _ = _thread_and_slot(layout, shape, operand)
    first = int(thread[0, 0]) // WARPGROUP_THREADS
    return min(max(first, 0), _MAX_WARPGROUPS - shape[0] // WGMMA_M)


def _thread_and_slot(layout, shape, operand: str) -> tuple[np.ndarray, np.ndarray]:
    """CTA thread and register slot of every element of a register-fragment layout over ``shape``."""
    if not isinstance(layout, TileLayout):
        raise ValueError(f"{operand}'s layout {layout!r} is not a register fragment (a TileLayout on thread axes)")
    if layout.num_replicas() > 1:
        raise ValueError(f"{operand}'s layout {layout} is replicated; a wgmma fragment holds each element once")
    if layout.size() != shape[0] * shape[1]:
        raise ValueError(f"{operand}'s layout {layout} places {layout.size()} elements, not the {shape[0]}x{shape[1]}")
    r, c = np.meshgrid(np.arange(shape[0]), np.arange(shape[1]), indexing="ij")
    places = layout.apply(r, c, shape=list(shape))
    thread, slot = np.zeros(r.shape, np.int64), np.zeros(r.shape, np.int64)
    for name, value in places.items():
        if name == "m":
            slot = slot + np.asarray(value, np.int64)
            continue
        try:
            unit = thread_unit(name)
        except (KeyError, ValueError):
            raise ValueError(
                f"{operand}'s layout {layout} places elements on {name}; a wgmma fragment lives in registers "
                "(thread axes and the slot m)"
            ) from None
        thread = thread + unit * np.asarray(value, np.int64)
    return thread, slot


def _check_fragment(layout, expected: TileLayout, shape, what: str, operand: str) -> None:
    got_thread, got_slot = _thread_and_slot(layout, shape, operand)
    want_thread, want_slot = _thread_and_slot(expected, shape, operand)
    bad = np.argwhere((got_thread != want_thread) | (got_slot != want_slot))
    if bad.size:
        i, j = (int(v) for v in bad[0])
        raise ValueError(
            f"{operand}'s layout {layout} is not {what}: element ({i}, {j}) sits on thread {int(got_thread[i, j])} "
            f"slot {int(got_slot[i, j])}; the ISA puts it on thread {int(want_thread[i, j])} slot "
            f"{int(want_slot[i, j])}"
        )
