"""Tile copies between tensor memory and a register fragment: ``tcgen05.ld`` / ``tcgen05.st`` (then
``tcgen05.wait::ld/st``).

The fragment must be, column chunk by column chunk, the register image of one shape (``tcgen05_atom_layout``):
chunks are the widest power-of-two ``.xN`` first, their registers one after another. The TMEM side must put each
32-row (``32x32b``) or 16-row group of the tile on consecutive lanes inside the 32-lane window of the warp that
moves it, and column ``c`` at ``col0 + c`` (PTX ISA 9.7.16.8.1, "warp w of a warpgroup accesses lanes 32*(w%4) ..
32*(w%4)+31"). Anything else is a ``ValueError`` naming both layouts and the reason.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import tvm
from tvm import tirx

from ...analysis.thread_placement import element_holders
from ...hw.constructors import tcgen05_atom_layout
from ...hw.memory import dtype_bytes
from ...hw.tcgen05 import LANES_PER_WARP, LD_ST_SHAPES, TMEM_LANES
from ...hw.threads import WARP_THREADS
from ...ir.rewrite import sequence
from ...ir.threads import bind_threads
from ...layout import R, S, TileLayout
from ...layout.axis import Iter, tid_in_wg
from ...layout.placement import slot_count
from ..helpers import tcgen05
from ..operands import provably_multiple


def layout_places(layout, coords, shape, every_replica: bool = False) -> dict:
    """``layout`` applied to numpy coordinate grids: axis -> array (a leading replica axis if ``every_replica``).

    Example:
        >>> from tirx_layout import tmem_datapath_layout
        >>> layout_places(tmem_datapath_layout("D", 128, 4), [np.arange(2), np.zeros(2, int)], [128, 4])["TLane"]
        array([0, 1])
    """
    places = layout.apply_all(*coords, shape=list(shape)) if every_replica else layout.apply(*coords, shape=list(shape))
    return {axis: np.asarray(value, np.int64) for axis, value in places.items()}


# ---- TMEM <-> register fragment -------------------------------------------------------------------------------


def _chunks(cols: int, unit: int, max_num: int) -> list[tuple[int, int]]:
    """Column chunks ``(start, width)``: widest power-of-two repetition counts first."""
    out, start = [], 0
    while start < cols:
        num = min(max_num, 1 << ((cols - start) // unit).bit_length() - 1)
        out.append((start, num * unit))
        start += num * unit
    return out


def _stack_replicas(fragment, rows: int, cols: int, tmem_replicas: dict, describe: str):
    """A load of a replicated TMEM tile into a fragment replicated over warps, as one unreplicated load: each
    fragment replica is paired with the TMEM replica in the lane windows of its own warps (PTX ISA 9.7.16.8.1),
    and the pairs are stacked as rows. Returns the stacked (thread, slot) tables and TMEM places."""
    threads, slots = element_holders(fragment, (rows, cols), every_replica=True)
    lanes, columns = tmem_replicas["TLane"], tmem_replicas["TCol"]
    windows = [frozenset(np.unique(lanes[t] // LANES_PER_WARP).tolist()) for t in range(lanes.shape[0])]
    pairs = []
    for f in range(threads.shape[0]):
        warps = frozenset(np.unique(threads[f] // WARP_THREADS).tolist())
        if warps not in windows:
            raise ValueError(
                f"{describe}: fragment replica {f} is held by warps {sorted(warps)} of the warpgroup, "
                f"but no TMEM replica lies in their lane windows (the replicas' windows: "
                f"{[sorted(w) for w in windows]}; warp w reads lanes 32w..32w+31, "
                "PTX ISA 9.7.16.8.1)"
            )
        pairs.append((f, windows.index(warps)))
    if len({t for _, t in pairs}) != len(pairs) or len(pairs) != len(windows):
        raise ValueError(
            f"{describe}: the fragment's {threads.shape[0]} replicas and the TMEM layout's "
            f"{len(windows)} replicas do not pair up warp window by warp window"
        )
    thread = np.concatenate([threads[f] for f, _ in pairs])
    slot = np.concatenate([slots[f] for f, _ in pairs])
    places = {
        "TLane": np.concatenate([lanes[t] for _, t in pairs]),
        "TCol": np.concatenate([columns[t] for _, t in pairs]),
    }
    return thread, slot, places


def _lane_space(thread, slot, places: dict, describe: str):
    """The copy re-indexed by TMEM position: row = rank of the element's lane among the lanes the tile uses,
    column = its TMEM column minus the first. Datapaths D and F keep their logical order; B (two column halves
    on lanes 0-63 and 64-127) becomes one 128-lane tile of half the columns, which 32x32b moves."""
    lanes, cols = places["TLane"], places["TCol"]
    used_lanes, used_cols = np.unique(lanes), np.unique(cols)
    if used_lanes.size * used_cols.size != lanes.size or (used_cols != used_cols[0] + np.arange(used_cols.size)).any():
        raise ValueError(f"{describe}: the tile does not fill a block of TMEM lanes x consecutive columns")
    row, col = np.searchsorted(used_lanes, lanes), cols - used_cols[0]
    shape = (used_lanes.size, used_cols.size)
    out_thread, out_slot = np.zeros(shape, np.int64), np.zeros(shape, np.int64)
    out_thread[row, col], out_slot[row, col] = thread, slot
    grid_lanes = np.broadcast_to(used_lanes[:, None], shape)
    grid_cols = np.broadcast_to(used_cols[None, :], shape)
    return out_thread, out_slot, {"TLane": grid_lanes, "TCol": grid_cols}


def _unpacked16(places: dict) -> bool:
    """Whether 16-bit data sits one element per 32-bit TMEM column, in its low half (TCol, counted in 16-bit
    halves, steps by 2 between a row's elements), as an MMA writes an f16 accumulator."""
    cols = np.unique(places["TCol"])
    return cols.size > 1 and not (cols % 2).any()


class TmemCopy:
    """How one TMEM <-> fragment copy is issued: the shape, the column chunks and the lane bases.

    16-bit data kept one element per 32-bit column (an f16 accumulator) moves with ``.pack::16b`` (ld) /
    ``.unpack::16b`` (st): the registers hold two elements each as for packed 16-bit data, and each register covers
    two adjacent 32-bit columns, so the copy is planned as a packed one whose element ``j`` sits at 32-bit column
    ``col0 + j`` (``unpacked16``).
    """

    def __init__(self, tmem, fragment, dtype: str, rows: int, cols: int, tmem_places: dict, tmem_replicas=None):
        """``tmem_places``: the tile's TMEM lanes and columns; ``tmem_replicas``: the same for every replica (a
        load into a fragment replicated over warps reads each warp's own replica)."""
        self.dtype = dtype
        self.pack = 4 // dtype_bytes(dtype)
        self.rows, self.cols = rows, cols
        self.describe = f"TMEM {tmem} and fragment {fragment}"
        if self.pack not in (1, 2):
            raise ValueError(f"{self.describe}: tcgen05.ld/st move 32- or 16-bit data, not {dtype}")
        # one 16-bit element per 32-bit column: plan it as packed data with the element's 32-bit column as its
        # position, which .pack::16b / .unpack::16b move as two elements per register
        self.unpacked16 = self.pack == 2 and _unpacked16(tmem_places)
        if self.unpacked16:
            tmem_places = {**tmem_places, "TCol": tmem_places["TCol"] // 2}
            if tmem_replicas is not None:
                tmem_replicas = {**tmem_replicas, "TCol": tmem_replicas["TCol"] // 2}
        if fragment.replica:
            if tmem_replicas is None or not tmem.replica:
                raise ValueError(
                    f"{self.describe}: a fragment replicated over threads is loaded from TMEM that "
                    "holds one copy per warp window (a replicated TMEM layout); here it would need "
                    "one warp to read another's lanes"
                )
            thread, slot, tmem_places = _stack_replicas(fragment, rows, cols, tmem_replicas, self.describe)
        else:
            thread, slot = element_holders(fragment, (rows, cols))
        thread, slot, tmem_places = _lane_space(thread, slot, tmem_places, self.describe)
        self.rows, self.cols = thread.shape
        self._where = tmem_places
        reasons = []
        for shape in LD_ST_SHAPES:
            reason = self._match(shape, thread, slot)
            if reason is None:
                break
            reasons.append(f"{shape}: {reason}")
        else:
            raise ValueError(
                f"no tcgen05.ld/st shape moves {self.describe}: "
                + "; ".join(reasons)
                + " (warp w of a warpgroup moves TMEM lanes 32w..32w+31, PTX ISA 9.7.16.8.1)"
            )
        self._place(tmem_places)

    def _match(self, shape: str, thread, slot) -> str | None:
        record = LD_ST_SHAPES[shape]
        if self.rows not in record.rows:
            return f"takes {record.rows} rows, the tile has {self.rows}"
        unit = record.columns_per_num * self.pack
        if self.cols % unit:
            return f"moves columns in units of {unit}, the tile has {self.cols}"
        chunks, offset = [], 0
        want_thread, want_slot = np.zeros_like(thread), np.zeros_like(slot)
        for start, width in _chunks(self.cols, unit, record.max_num):
            atom = tcgen05_atom_layout(shape, (self.rows, width), self.dtype)
            t, s = element_holders(atom, (self.rows, width))
            want_thread[:, start : start + width], want_slot[:, start : start + width] = t, s + offset
            chunks.append((start, width, offset))
            offset += slot_count(atom)
        if (want_thread != thread).any() or (want_slot != slot).any():
            r, c = np.argwhere((want_thread != thread) | (want_slot != slot))[0]
            lane, col = self._where["TLane"][r, c], self._where["TCol"][r, c]
            return (
                f"the element at TMEM lane {lane} column {col} would be in thread {want_thread[r, c]} slot "
                f"{want_slot[r, c]}, the fragment has it in thread {thread[r, c]} slot {slot[r, c]}"
            )
        self.shape, self.chunks = shape, chunks
        return None

    def _place(self, places: dict) -> None:
        lanes, cols = places["TLane"], places["TCol"]
        col0 = int(cols[0, 0])
        if (cols - np.arange(self.cols)[None, :] != col0).any():
            raise ValueError(f"{self.describe}: tcgen05.ld/st need tile column c at TMEM column col0 + c")
        if self.unpacked16:  # the places already count 32-bit columns
            self.column = col0
        elif col0 % self.pack:
            raise ValueError(f"{self.describe}: 16-bit data starts on a whole 32-bit column, not at element {col0}")
        else:
            self.column = col0 // self.pack
        group = LD_ST_SHAPES[self.shape].lanes
        halves = 2 if group == 16 and self.rows == 128 else 1
        # bases[h][w]: first lane of the rows warp w moves in its half h (rows 32w+16h.. or 16w..).
        self.bases = [[0] * 4 for _ in range(halves)]
        for q in range(self.rows // group):
            warp, half = divmod(q, halves)
            block = lanes[q * group : (q + 1) * group]
            base = int(block[0, 0])
            if (block - np.arange(group)[:, None] != base).any():
                raise ValueError(
                    f"{self.describe}: rows {q * group}..{(q + 1) * group - 1} are not on "
                    f"consecutive TMEM lanes ({self.shape} moves {group} consecutive lanes)"
                )
            # PTX ISA 9.7.16.8.1 (Tensor Memory access restrictions): warp w%4 of a warpgroup reaches lanes
            # 32(w%4)..+31.
            if base // LANES_PER_WARP != warp or base % group:
                raise ValueError(
                    f"{self.describe}: rows {q * group}..{(q + 1) * group - 1} are moved by warp {warp},"
                    f" which may only access lanes {LANES_PER_WARP * warp}.."
                    f"{LANES_PER_WARP * warp + LANES_PER_WARP - 1}; they are at lanes "
                    f"{base}..{base + group - 1}"
                )
            self.bases[half][warp] = base

    def lane_base(self, half: int, warp):
        """The first lane of warp ``warp``'s rows in ``half``, as an expression of the warp index."""
        b = self.bases[half]
        step = b[1] - b[0]
        if any(b[w] != b[0] + step * w for w in range(4)):
            return tirx.Select(warp == 0, b[0], tirx.Select(warp == 1, b[1], tirx.Select(warp == 2, b[2], b[3])))
        return b[0] + step * warp

    def instructions(self):
        """``(num, half, register slot offset, 32-bit column)`` of each instruction, in issue order."""
        record = LD_ST_SHAPES[self.shape]
        per_half = record.registers_per_num * self.pack
        unit = record.columns_per_num * self.pack
        out = []
        for start, width, offset in self.chunks:
            num = width // unit
            for half in range(len(self.bases)):
                column = self.column + (start if self.unpacked16 else start // self.pack)
                out.append((num, half, offset + half * per_half * num, column))
        return out


def _region_offset(side):
    """Constant begins of a TMEM region, and the 32-bit column offset expression of its symbolic begins (a loop over
    accumulator stages, or over column chunks: ``acc[0:128, c * 32 : c * 32 + 32]``). A symbolic begin is allowed
    on a dimension the layout moves by the same number of columns per index over its whole extent, on the same lanes
    (so the warps' lane windows hold wherever the region starts); the tile is then planned as if it started at 0
    there, and the address moves by the begin's columns (16-bit data: a whole number of 32-bit columns, which the
    begin must provably give). Where the kernel's loop ranges are known (``side.analyzer``: the op's rules and
    lowering), the region must provably stay inside the buffer: no tail guard reaches TMEM."""
    begins, col_step = [], 0
    shape = [int(e) for e in side.shape]
    pack = 4 // side.element_bytes
    analyzer = side.analyzer or tvm.sym.Analyzer()
    for d, b in enumerate(side.begins):
        if isinstance(b, tirx.IntImm | int):
            begins.append(int(b))
            continue
        steps = np.arange(shape[d])
        coords = [np.zeros(shape[d], np.int64) if k != d else steps for k in range(len(shape))]
        places = layout_places(side.layout, coords, shape)
        lanes, cols = places.get("TLane", 0 * steps), places.get("TCol", 0 * steps)
        dl, dc = (int(lanes[1] - lanes[0]), int(cols[1] - cols[0])) if shape[d] > 1 else (0, 0)
        if dl or (lanes != lanes[0]).any() or (cols - cols[0] != dc * steps).any():
            raise ValueError(
                f"TMEM {side.layout} does not move dimension {d} of {side.buffer.name} by a fixed number "
                f"of columns (on the same lanes), so the region {side.region} cannot start at the symbolic {b} there; "
                "index it with a constant"
            )
        inside = tirx.all(b >= 0, b + side.extents[d] <= shape[d])
        if side.analyzer is not None and not side.analyzer.can_prove(inside):  # no tail guard reaches TMEM
            raise ValueError(
                f"the TMEM region {side.region} may reach outside {side.buffer.name} (shape {tuple(shape)}): "
                f"dimension {d} runs over [{b}, {b} + {side.extents[d]}) for the values {b} may take; bound the "
                "loop so that it stays inside"
            )
        shift = analyzer.simplify(b * dc)
        if not provably_multiple(shift, pack):
            raise ValueError(
                f"the TMEM region {side.region} of 16-bit {side.buffer.name} starts {shift} 16-bit columns in, "
                f"which is not provably a whole number of 32-bit columns; start it at a multiple of {pack}"
            )
        begins.append(0)
        col_step = col_step + analyzer.simplify(tirx.floordiv(shift, pack)) if pack > 1 else col_step + shift
    return begins, col_step


def tile_places(tmem, rows: int, cols: int, every_replica: bool = False) -> tuple[dict, object]:
    """TMEM lane and column of each element of a ``(rows, cols)`` tile read from region ``tmem`` (a
    :class:`~tirx_layout.ops.operands.TmemOperand`; a leading replica axis if ``every_replica``), and the
    column shift of its symbolic begins.

    Example: for ``acc[0:128, 0:64]`` in ``tmem_datapath_layout("D", 128, 64)``, ``places["TLane"][r, c] == r``.
    """
    begins, column_shift = _region_offset(tmem)
    grids, tile = [], iter(np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij"))
    for b, e in zip(begins, tmem.extents, strict=True):
        grids.append(np.full((rows, cols), b, np.int64) if e == 1 else next(tile) + b)
    places = layout_places(tmem.layout, grids, tmem.shape, every_replica)
    shape = next(iter(places.values())).shape
    places.setdefault("TLane", np.zeros(shape, np.int64))
    places.setdefault("TCol", np.zeros(shape, np.int64))
    return places, column_shift


def chunked_fragment(shape: str, rows: int, cols: int, dtype: str) -> TileLayout:
    """The register fragment a ``(rows, cols)`` tile fills when it is moved with ``shape`` in column chunks, the
    widest power-of-two ``.xN`` first (see :class:`TmemCopy`): the atom of one instruction when ``cols`` needs a
    single one. For ``32x32b`` any column count works: thread ``t`` holds lane ``t`` and register ``r`` column ``r``
    in every chunk (PTX ISA, "Matrix fragments for shape .32x32b"), so the chunks' registers one after another hold
    the columns in order. For a 16-lane shape over 64 rows (one half-slab per warp), chunk ``k`` starts at register
    ``num_0 + ... + num_(k-1)`` times the registers of one repetition, which is where the one-instruction formula
    with ``.num`` = all chunks' sum puts it: the atom's repetition iter takes the total count. At 128 rows each chunk
    interleaves its two half-slabs, which no single layout expresses; ``ValueError`` there (the caller tries the
    next shape).

    Example:
        >>> chunked_fragment("32x32b", 128, 112, "float32")  # .x64 + .x32 + .x16
        TileLayout(S[(128, 112):(1@tid_in_wg, 1)])
        >>> chunked_fragment("16x64b", 64, 48, "float32")  # .x16 + .x8
        TileLayout(S[(4, 2, 8, 24, 2):(1@wid_in_wg, 1@laneid, 4@laneid, 1, 2@laneid)])
    """
    try:
        return tcgen05_atom_layout(shape, (rows, cols), dtype)
    except ValueError:
        unit = LD_ST_SHAPES[shape].columns_per_num * (4 // dtype_bytes(dtype))
        if cols % unit or cols < unit:
            raise
        if shape == "32x32b" and rows == TMEM_LANES:
            return TileLayout(S[(rows, cols) : (1 @ tid_in_wg, 1)])
        if shape == "32x32b" or rows != TMEM_LANES // 2:
            raise
        # The repetition iter is the one whose extent grows from .x1 to .x2.
        one, two = (tcgen05_atom_layout(shape, (rows, n * unit), dtype).shard for n in (1, 2))
        (grown,) = [i for i, (a, b) in enumerate(zip(one, two, strict=True)) if a.extent != b.extent]
        return TileLayout.from_iters(
            [Iter(cols // unit if i == grown else it.extent, it.stride, it.axis) for i, it in enumerate(one)]
        )


def fragment_for(tmem, rows: int, cols: int, dtype: str) -> TileLayout:
    """The register fragment that ``tcgen05.ld/st`` moves for a ``(rows, cols)`` tile of TMEM region ``tmem``: the
    first shape of ``LD_ST_SHAPES`` whose register image (``tcgen05_atom_layout``) the copy accepts. ``ValueError`` with
    every shape's reason when none does.

    A tile of replicated TMEM (one copy per group of lane windows) that the warpgroup's 128 lanes hold ``n`` times
    gets the fragment replicated over warps: ``S[(rows, cols):(1@tid_in_wg, 1)] + R[n:rows@tid_in_wg]``, each warp
    loading the copy in its own lane window with ``32x32b``.

    Example: ``acc`` in ``tmem_datapath_layout("D", 128, 64)`` gives ``tcgen05_atom_layout("32x32b", (128, 64), dt)``;
    a (32, 8) tile of ``S[(32, 8):(1@TLane, 1@TCol)] + R[4:32@TLane]`` gives ``S[(32, 8):(1@tid_in_wg, 1)] +
    R[4:32@tid_in_wg]``.
    """
    places, _ = tile_places(tmem, rows, cols)
    reasons = []
    if tmem.layout.replica:
        replicas = tile_places(tmem, rows, cols, every_replica=True)[0]
        copies = replicas["TLane"].shape[0]
        if rows * copies == TMEM_LANES:
            candidate = TileLayout(S[(rows, cols) : (1 @ tid_in_wg, 1)] + R[copies : rows @ tid_in_wg])
            try:
                TmemCopy(tmem.layout, candidate, dtype, rows, cols, places, replicas)
                return candidate
            except ValueError as err:
                reasons.append(f"one copy per warp window: {err}")
    for shape in LD_ST_SHAPES:
        try:
            candidate = chunked_fragment(shape, rows, cols, dtype)
            TmemCopy(tmem.layout, candidate, dtype, rows, cols, places)
            return candidate
        except ValueError as err:
            reasons.append(f"{shape}: {err}")
    raise ValueError(
        f"no tcgen05.ld/st fragment moves a ({rows}, {cols}) {dtype} tile of TMEM {tmem.layout}: " + "; ".join(reasons)
    )


@dataclass(frozen=True)
class FragmentCopyPlan:
    """A TMEM <-> fragment copy planned: the instructions (:class:`TmemCopy`) and the 32-bit column shift of the TMEM
    region's symbolic (stage) begin. ``staging``: for a casting copy (the fragment's dtype is not TMEM's), the
    fragment of TMEM's dtype, placed as the copy's fragment, that the instructions move (the copy converts between
    the two in registers)."""

    copy: TmemCopy
    column_shift: object
    loading: bool
    staging: object = None


def check_tcgen05_ld_st(tmem, fragment_shape: tuple, fragment_layout, loading: bool, scope: str, threads: int):
    """The rules of any ``tcgen05.ld``/``st`` between a TMEM region (``tmem``, a ``TmemOperand``) and a register
    fragment: whole warpgroups run it (several of them: each its own, at ``scope="warpgroup"``; a kernel whose last
    warpgroup is partial, such as attention's producer and MMA warps after whole softmax and correction
    warpgroups, copies at ``scope="warpgroup"`` from its whole ones, which the reach check of VerifyLayouts
    enforces), the fragment is a whole ``(rows, cols)`` buffer, and a store does not write TMEM that holds each
    element more than once.

    Example: a 256-thread kernel copying at ``scope="cta"`` is refused: 'a TMEM copy is run by whole warpgroups: the
    kernel has 256 threads; with several warpgroups write scope="warpgroup" (each warpgroup copies)'.
    """
    if threads < 128 or (threads > 128 and scope != "warpgroup"):
        raise ValueError(
            f"a TMEM copy is run by whole warpgroups: the kernel has {threads} threads; "
            'with several warpgroups write scope="warpgroup" (each warpgroup copies)'
        )
    if len(fragment_shape) != 2:
        raise ValueError(f"the fragment of a TMEM copy is a whole (rows, cols) buffer; it has shape {fragment_shape}")
    if tmem.layout.replica and not loading:
        raise ValueError(
            f"TMEM {tmem.layout} replicates elements over lanes; tcgen05.st would write one copy "
            f"only (fragment {fragment_layout}); fill it with tcgen05.cp from shared memory"
        )


def plan_tmem_fragment_copy(tmem, fragment, loading: bool, scope: str, threads: int) -> FragmentCopyPlan:
    """The ``tcgen05.ld`` (``loading``) or ``tcgen05.st`` of a TMEM <-> fragment copy, planned and checked
    (:func:`check_tcgen05_ld_st`, and the fragment must be the register image of a shape, chunk by chunk).

    Example: ``T.tile_copy(frag, acc)`` with ``frag`` in ``tcgen05_atom_layout("32x32b", (128, 64), "float32")`` and
    ``acc`` in ``tmem_datapath_layout("D", 128, 64)`` is one ``32x32b.x64`` load.
    """
    if fragment.shape != fragment.tile_shape:
        raise ValueError(
            f"the fragment of a TMEM copy is a whole (rows, cols) buffer; {fragment.buffer.name} has "
            f"shape {fragment.shape}"
        )
    check_tcgen05_ld_st(tmem, fragment.shape, fragment.layout, loading, scope, threads)
    rows, cols = fragment.shape
    places, column_shift = tile_places(tmem, rows, cols)
    replicas = tile_places(tmem, rows, cols, every_replica=True)[0] if loading and fragment.layout.replica else None
    plan = TmemCopy(tmem.layout, fragment.layout, fragment.dtype, rows, cols, places, replicas)
    return FragmentCopyPlan(plan, column_shift, loading)


def lower_tmem_fragment_copy(plan: FragmentCopyPlan, fragment, threads, taddr):
    """The planned ``tcgen05.ld``/``st`` sequence, then its wait. ``fragment`` is the copy's
    :class:`~tirx_layout.ops.operands.FragmentOperand`, ``taddr`` the TMEM base address expression. In a CTA of
    several warpgroups every warpgroup runs it (its region may depend on the warpgroup, e.g. ``acc[tx // 128, 0:128,
    0:112]``); a load into a fragment replicated over warps reads, in each warp, the TMEM replica in that warp's lane
    window.

    Example: the plan of :func:`plan_tmem_fragment_copy`'s example becomes ``tcgen05.ld.sync.aligned.32x32b.x64``
    then ``tcgen05.wait::ld``.
    """
    copy = plan.copy
    warp = tirx.floormod(tirx.floordiv(threads.index, WARP_THREADS), TMEM_LANES // LANES_PER_WARP)
    analyzer = bind_threads(tvm.sym.Analyzer(), threads)
    stmts = []
    for num, half, slot, column in copy.instructions():
        offset = analyzer.simplify(copy.lane_base(half, warp) * 65536 + column + plan.column_shift)
        address = taddr + tirx.Cast("uint32", offset)
        registers = tvm.tirx.address_of(tvm.tirx.BufferLoad(fragment.view, [tirx.IntImm("int32", slot)]))
        kind = "ld" if plan.loading else "st"
        stmts.append(tcgen05.ld_st(kind, copy.shape, num, address, registers, unpacked16=copy.unpacked16))
    stmts.append(tcgen05.simple("wait_ld" if plan.loading else "wait_st"))
    return sequence([fragment.declaration(), *stmts])
