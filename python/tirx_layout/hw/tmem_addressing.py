"""Where ``tcgen05.mma`` reads and writes tensor memory, checked against a buffer's layout (PTX ISA 9.1, tcgen05
chapter: "Data path layout organization", "Packing formats", "Block scaling"; restated in
``docs/notes/tcgen05-mma-facts.md`` §2.3 and §5).

An MMA is told TMEM addresses, not layouts: this module reads them off the layout of the TMEM buffer a region of
which the MMA uses, after checking element by element that the layout puts the region where the hardware reads it.

* the accumulator D on the datapath lanes of its M (Layout D for M = 128, Layout F for M = 64) —
  :func:`datapath_lane`, :func:`accumulator_taddr_offset`;
* an A operand read from TMEM, K packed along 32-bit columns — :func:`tmem_operand_offset`;
* the scale factors of a block-scaled MMA, replicated over the four warp windows — :func:`scale_factor_taddr`.
"""

from __future__ import annotations

import numpy as np
import tvm

from ..core.values import static_int
from ..layout.axis import TCol, TLane
from ..layout.swizzle import ComposeLayout
from ..layout.tile import TileLayout
from .memory import dtype_bytes
from .tcgen05 import LANES_PER_WARP, SCALE_FACTORS_PER_COLUMN, TMEM_COLUMNS, TMEM_LANES
from .tcgen05_mma import K_BYTES_PER_INSTRUCTION

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


def pair_accumulator_taddr_offset(layout, region_start, shape, dtype, buffer_shape=None) -> tuple[int, object]:
    """:func:`accumulator_taddr_offset` for one CTA's half of a ``cta_group::2`` pair's accumulator (``shape`` the
    CTA's ``(M/2, N)``): M/2 = 128 (the pair's M = 256) is Layout A, row i on lane i (Layout D's places); M/2 = 64
    (the pair's M = 128) is Layout B: row i on lane i for columns ``0 .. N/2 - 1`` and on lane ``64 + i`` for the
    others, column j on column ``c0 + j % (N/2)`` (ISA "Data path layout organization"). Lane offset 0 in both.

    Example:
        >>> from tirx_layout import tmem_datapath_layout
        >>> pair_accumulator_taddr_offset(tmem_datapath_layout("B", 64, 64), (0, 0), (64, 64), "float32")
        (0, 0)
        >>> layout_f = tmem_datapath_layout("F", 64, 64)
        >>> pair_accumulator_taddr_offset(layout_f, (0, 0), (64, 64), "float32")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: D's layout ... is not a pair's accumulator layout: element (0, 32) sits at lane 0 TCol 32, Layout B
        puts it at lane 64 TCol 0
    """
    m, n = _mn_shape(shape, "D", "(M/2, N)")
    if m == 128:
        return accumulator_taddr_offset(layout, region_start, shape, dtype, buffer_shape)
    dtype = str(dtype)
    if dtype not in ACCUMULATOR_DTYPES:
        raise ValueError(f"D is {dtype}; an MMA accumulates into {' / '.join(ACCUMULATOR_DTYPES)}")
    if n % 2:
        raise ValueError(f"Layout B folds D's {n} columns in two halves; N must be even")
    region = _TmemRegion(layout, region_start, (m, n), buffer_shape, "D", dtype)
    if region.replicated:
        raise ValueError(f"{region.what}: it is replicated, but the MMA writes each accumulator element once")
    unit = 4 // dtype_bytes(dtype)
    tcol0 = int(region.tcols[0, 0])
    rows, cols = np.meshgrid(np.arange(m), np.arange(n), indexing="ij")
    want_lanes = rows + 64 * (cols // (n // 2))
    want_tcols = tcol0 - tcol0 % unit + unit * (cols % (n // 2))
    region.check(want_lanes, want_tcols, "Layout B puts it at", "a pair's accumulator layout")
    return 0, region.column_offset(unit)


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
