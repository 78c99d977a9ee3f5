"""Shared memory -> TMEM tile copies as ``tcgen05.cp`` (PTX ISA, ``tcgen05.cp``).

The TMEM layout picks the shape and multicast: ``R[4:32@TLane]`` over 32 rows is ``.32x128b.warpx4``; 64 rows with
a ``64@TLane`` replica ``.64x128b.warpx2::02_13``; 64 rows split 32/32 over lanes 0-31 and 64-95 with a ``32@TLane``
replica ``.64x128b.warpx2::01_23``; 4 rows on lanes 0, 32, 64, 96 ``.4x256b``; 128 rows without replicas
``.128x256b`` (or ``.128x128b`` when the row is no whole number of 256-bit pieces or the shared layout has no single
leading byte offset). Each instruction moves 128
(256) bits of every row; wider rows take several, one TMEM column group after another.

The shared layout must be the descriptor's canonical K-major image (PTX ISA, "Shared Memory Descriptor"
and the canonical layouts): before the swizzle, row ``r`` of an instruction's tile at ``start + (r//8)*SBO +
(r%8)*W`` bytes, ``W`` the swizzle width (32/64/128 bytes; 16 without a swizzle), the second 128-bit piece of a
256-bit shape (no swizzle) at ``+ LBO``. The swizzle is the layout's own (``swizzle_mode``); the hardware applies it
to absolute addresses, so a swizzled buffer must be aligned to the pattern's repeat (``align=`` 256/512/1024).

One thread issues the copies and commits them to an mbarrier every thread then waits on.

Example (the guide's scale factors: 32 rows of 16 bytes, each row in all four warps' lane windows, one
``tcgen05.cp.32x128b.warpx4`` from a row-major shared tile):
    >>> import tvm
    >>> from tirx_layout import R, S, TCol, TileLayout, TLane
    >>> from tirx_layout.ops.operands import operand
    >>> sf = tvm.tirx.decl_buffer((32, 16), "uint8", "sf", scope="tmem")
    >>> staged = tvm.tirx.decl_buffer((32, 16), "uint8", "staged", scope="shared")
    >>> layouts = {sf: TileLayout(S[(32, 16):(1 @ TLane, 1 @ TCol)] + R[4:32 @ TLane])}
    >>> plan = plan_shared_to_tmem(operand(sf[0:32, 0:16], layouts, "dst"), operand(staged[0:32, 0:16], layouts, "src"),
    ...                            "cta")
    >>> plan.shape, plan.mode, plan.instructions  # (start element, LBO, SBO) per instruction
    ('32x128b.warpx4', 'none', [(0, 0, 128)])
"""

from __future__ import annotations

import contextlib
import copy
from dataclasses import dataclass

import numpy as np
import tvm
from tvm import tirx

from ...hw.constructors import mma_scale_factor_shared_layout, mma_shared_layout, swizzle_mode
from ...hw.memory import SWIZZLE_BYTES, SWIZZLE_MODES, dtype_bytes, swizzle_128b_base32b, swizzle_repeat_bytes
from ...hw.tcgen05 import CP_SHAPES
from ...hw.threads import WARP_THREADS
from ...ir.device_calls import cta_barrier, warp_barrier
from ...ir.rewrite import sequence, store
from ...layout import ComposeLayout, S, TileLayout
from ...layout.indexing import flatten
from ..helpers import mbarrier, sync, tcgen05
from ..operands import operand
from .ld_st import layout_places


def _grid(side, rows: int, cols: int, order=None) -> list:
    """Coordinate grids of the region's elements; ``order`` (see :func:`storage_order`) lists the tile's elements
    in TMEM storage order instead of the tile's own."""
    begins = []
    for b in side.begins:
        if not isinstance(b, tirx.IntImm | int):
            raise ValueError(f"the region of {side.buffer.name} starts at {b}; tcgen05.cp needs constant offsets")
        begins.append(int(b))
    tile = iter(order if order is not None else np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij"))
    return [
        np.full((rows, cols), b, np.int64) if e == 1 else next(tile) + b
        for b, e in zip(begins, side.extents, strict=True)
    ]


def storage_order(tmem, rows: int, cols: int):
    """The tile's elements rearranged as the TMEM rows and columns they fill, when the tile's own rows are not TMEM
    rows: ``(tile rows, tile columns)`` index grids of shape ``(lanes, columns)``, element ``[i, j]`` of them being
    the one on the ``i``-th lane and ``j``-th column the region covers (base replica). ``None`` when every tile row
    already fills consecutive columns of a lane of its own. A scale-factor matrix ``(128, 4)`` in
    ``mma_scale_factor_layout`` is stored as 32 lanes x 16 bytes: its copy is the guide atom's. ``ValueError`` if
    the region does not fill a whole rectangle of lanes x columns exactly once.

    Example: for a ``(128, 4)`` region in ``mma_scale_factor_layout(128, 4)`` the grids are ``(32, 16)``, and
    element ``[5, 6]`` is tile element ``(32 * 1 + 5, 2)``.
    """
    r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    places = layout_places(tmem.layout, _grid(tmem, rows, cols), tmem.shape)
    lanes = places.get("TLane", np.zeros((rows, cols), np.int64))
    columns = places.get("TCol", np.zeros((rows, cols), np.int64))
    one_lane_each = (lanes == lanes[:, :1]).all() and np.unique(lanes[:, 0]).size == rows
    if one_lane_each and (columns - columns[:, :1] == np.arange(cols)[None, :]).all():
        return None
    lane_set, column_set = np.unique(lanes), np.unique(columns)
    position = lanes * (int(column_set.max()) + 1) + columns
    if lane_set.size * column_set.size != rows * cols or np.unique(position).size != rows * cols:
        raise ValueError(
            f"tcgen05.cp into TMEM {tmem.layout}: the region's {rows * cols} elements do not fill lanes "
            f"{lane_set.tolist()[:4]}... x columns {int(column_set.min())}..{int(column_set.max())} exactly once"
        )
    i, j = np.searchsorted(lane_set, lanes), np.searchsorted(column_set, columns)
    order_r = np.empty((lane_set.size, column_set.size), np.int64)
    order_c = np.empty_like(order_r)
    order_r[i, j], order_c[i, j] = r, c
    return order_r, order_c


def cp_shapes(tmem, rows: int, cols: int, pack: int, order=None) -> tuple[list[str], int]:
    """The tcgen05.cp shapes (best first) whose lane pattern is the TMEM region's, and its first 32-bit column.

    Example: a ``(32, 16)`` uint8 region in ``S[(32, 16):(1@TLane, 1@TCol)] + R[4:32@TLane]`` gives
    ``(["32x128b.warpx4"], 0)``.
    """
    places = layout_places(tmem.layout, _grid(tmem, rows, cols, order), tmem.shape, every_replica=True)
    lanes = places.get("TLane", np.zeros((1, rows, cols), np.int64))
    columns = places.get("TCol", np.zeros((1, rows, cols), np.int64))
    what = f"tcgen05.cp into TMEM {tmem.layout}"
    col0 = int(columns[0, 0, 0])
    if (columns - np.arange(cols)[None, None, :] != col0).any():
        raise ValueError(f"{what}: tile column c must be at TMEM column col0 + c in every row and replica")
    if col0 % (4 * pack) or (cols // pack) % 4 or cols % pack:
        raise ValueError(
            f"{what}: rows must start on a 128-bit column boundary and be whole 128-bit pieces "
            f"(first column {col0}, {cols} elements)"
        )
    if (lanes != lanes[:, :, :1]).any():
        raise ValueError(f"{what}: a row must stay on one TMEM lane")
    base = lanes[0, :, 0]
    deltas = lanes - lanes[:1]
    if (deltas != deltas[:, :1, :1]).any():
        raise ValueError(f"{what}: every replica must be its base rows shifted by one lane offset")
    offsets = tuple(sorted({int(d) for d in deltas[:, 0, 0]}))
    shapes = []
    for shape, record in CP_SHAPES.items():
        if rows == record.rows and offsets == record.replica_lanes and (base == record.lane_of(np.arange(rows))).all():
            if record.bits == 256 and (cols // pack) % 8:
                continue
            shapes.append(shape)
    if not shapes:
        raise ValueError(
            f"{what}: its {rows} rows sit on lanes {int(base.min())}..{int(base.max())} with replicas "
            f"{offsets} lanes apart; tcgen05.cp moves 128 rows, 64 rows replicated 64 apart "
            "(warpx2::02_13) or split 32/32 and replicated 32 apart (warpx2::01_23), or 32 rows "
            "replicated over the four 32-lane windows (warpx4)"
        )
    return shapes, col0 // pack


def _swizzle(shared, what: str) -> tuple[str, object]:
    """The shared layout's swizzle mode and its unswizzled tile layout (``None`` for a row-major buffer)."""
    layout = shared.layout
    if not isinstance(layout, ComposeLayout):
        return "none", layout
    try:
        mode = swizzle_mode(layout, shared.dtype)
    except ValueError:
        raise ValueError(_no_cp_swizzle(shared, what)) from None
    if mode != "none":
        repeat = swizzle_repeat_bytes(mode)
        if int(shared.buffer.data_alignment) < repeat:
            raise ValueError(
                f"{what}: the {mode} swizzle is applied by the hardware to absolute shared addresses; "
                f"declare {shared.buffer.name} with align={repeat} (it has "
                f"{int(shared.buffer.data_alignment)})"
            )
    return mode, layout.tile_layout


def _no_cp_swizzle(shared, what: str) -> str:
    """The refusal of a shared layout whose swizzle is none of the modes ``tcgen05.cp`` reads, with the layouts that
    would do for the buffer."""
    layout, dtype = shared.layout, str(shared.dtype)
    shape = tuple(int(e) for e in shared.buffer.shape)
    named = ""
    with contextlib.suppress(ValueError):
        if layout.swizzle == swizzle_128b_base32b(dtype):
            named = " (the 128B swizzle with 32-byte atoms, an MN-major MMA operand mode)"
    fits = []
    for mode in reversed(SWIZZLE_MODES):
        with contextlib.suppress(ValueError):
            mma_shared_layout(dtype, mode, shape)
            align = f", align={swizzle_repeat_bytes(mode)}" if mode != "none" else ""
            fits.append(f'mma_shared_layout("{dtype}", "{mode}", {shape}){align}')
    fix = f"; {shared.buffer.name} would do as {' or '.join(fits[:2])}" if fits else ""
    return (
        f"{what}: the shared tile's swizzle {layout.swizzle!r}{named} is not one tcgen05.cp reads: its descriptor "
        "takes the K-major canonical image (each row's bytes contiguous) with swizzle none, 32B, 64B or 128B over "
        f"16-byte chunks (the MMA's MN-major and 32-byte-atom modes are not for tcgen05.cp){fix}"
    )


def _descriptors(shared, rows: int, cols: int, bits: int, what: str, order=None):
    """``(swizzle mode, [(start element, LBO bytes, SBO bytes)] per instruction)``, or ``None`` if the shared tile
    is not the descriptor's canonical K-major image: before the swizzle, row ``r`` of an instruction at
    ``start + (r//8)*SBO + (r%8)*W`` bytes with ``W`` the swizzle width (16 bytes without one), its second 128-bit
    piece (256-bit shapes, no swizzle) at ``+ LBO``."""
    size = shared.element_bytes
    mode, tile = _swizzle(shared, what)
    row_bytes = SWIZZLE_BYTES[mode]
    if mode != "none" and bits != 128:
        return None
    grids = _grid(shared, rows, cols, order)
    flat = flatten(grids, shared.shape) if tile is None else layout_places(tile, grids, shared.shape)["m"]
    address = flat * size
    width = bits // 8 // size  # elements per instruction row
    r = np.arange(rows)[:, None]
    out = []
    for first in range(0, cols, width):
        block = address[:, first : first + width]
        start = int(block[0, 0])
        sbo = int(block[8, 0] - start) if rows > 8 else 16 * (8 if mode == "none" else row_bytes // 16)
        piece = np.arange(width)[None, :] * size
        lbo = int(block[0, 16 // size] - start) if bits == 256 else 16 * (mode != "none")
        want = start + (r // 8) * sbo + (r % 8) * row_bytes + (piece // 16) * lbo + piece % 16
        if (block != want).any() or start % 16 or sbo % 16 or lbo % 16 or min(sbo, lbo) < 0 or max(sbo, lbo) >= 1 << 18:
            return None
        out.append((start // size, lbo, sbo))
    return mode, out


def shared_operand_for(tmem, shared_region, known: dict):
    """A layout for the open shared buffer of ``T.tile_copy(tmem, shared)`` that the ``tcgen05.cp`` descriptor can
    express: row-major if that is already the canonical K-major image, else the first MMA operand layout
    (``mma_shared_layout``: 128B, 64B, 32B swizzle, then none) that is. The region is the buffer's last two
    dimensions whole, after leading (stage) indices; each candidate is tried by the rule the copy is then checked
    by (:func:`plan_shared_to_tmem`, with the buffer's declared alignment), so inference proposes only what that rule
    accepts. ``tmem`` is the copy's :class:`~tirx_layout.ops.operands.TmemOperand`.

    Example: a ``(32, 8)`` float32 tile for the guide's scale-factor layout gets ``mma_shared_layout("float32",
    "none", (32, 8))`` (two 16-byte pieces per row: row-major is not canonical, and the default alignment holds no
    swizzle); a ``(2, 128, 32)`` float32 ring copied a stage at a time into ``S[(128, 32):(1@TLane, 1@TCol)]``
    gets ``mma_shared_layout("float32", "none", (2, 128, 32))``, each stage the canonical image.
    """
    buffer = shared_region.source
    shape = tuple(int(e) for e in buffer.shape)
    rows, cols = shape[-2:]
    order = storage_order(tmem, rows, cols)
    if order is not None:
        rows, cols = order[0].shape
    cp_shapes(tmem, rows, cols, 4 // dtype_bytes(buffer.dtype), order)  # the TMEM side's own faults, named first
    candidates = [TileLayout(S[shape])]
    if dtype_bytes(buffer.dtype) == 1 and len(shape) == 2:
        # A block-scaled MMA's scale factors: the image tcgen05.cp.32x128b.warpx4 copies from, where the shape has one.
        with contextlib.suppress(ValueError):
            candidates.append(mma_scale_factor_shared_layout(*shape))
    for mode in reversed(SWIZZLE_MODES):  # widest swizzle first
        with contextlib.suppress(ValueError):  # the tile is not whole atoms of this mode
            candidates.append(mma_shared_layout(str(buffer.dtype), mode, shape))
    for layout in candidates:
        try:
            plan_shared_to_tmem(tmem, operand(shared_region, {**known, buffer: layout}, "source"), "cta")
        except ValueError:
            continue
        return layout
    raise ValueError(
        f"tcgen05.cp from {buffer.name} into {tmem}: no row-major or MMA operand layout of a {shape} {buffer.dtype} "
        f"tile (aligned to {int(buffer.data_alignment)} bytes) is the descriptor's canonical K-major image"
    )


def _symbolic_stage(side, what: str):
    """``(dimension, index expression)`` of the one region start of ``side`` that is an expression (a stage picked
    at run time, on a dimension the region takes one index of), or ``None`` when every start is a constant."""
    dims = [d for d, b in enumerate(side.begins) if not isinstance(b, int)]
    if not dims:
        return None
    if len(dims) > 1 or side.extents[dims[0]] != 1:
        raise ValueError(
            f"{what}: the region of {side.buffer.name} starts at {side.begins}; tcgen05.cp takes constant offsets "
            "but for one leading (stage) index"
        )
    return dims[0], side.begins[dims[0]]


def _at(side, stage, value: int):
    """``side`` with its stage index (``_symbolic_stage``) set to ``value``; ``side`` itself when it has none."""
    if stage is None:
        return side
    moved = copy.copy(side)
    moved.begins = [value if d == stage[0] else b for d, b in enumerate(side.begins)]
    return moved


def _linear_step(values: list, what: str) -> int:
    step = values[1] - values[0] if len(values) > 1 else 0
    if any(v != values[0] + i * step for i, v in enumerate(values)):
        raise ValueError(f"{what}are {values}, not one fixed step apart; index that dimension with a constant")
    return step


def _cp_plan(tmem, shared, what: str):
    """``(shape, bits, first 32-bit column, swizzle mode, [(start element, LBO, SBO)] per instruction)`` of the copy
    of constant regions (see :func:`lower_shared_to_tmem`)."""
    tile = shared.tile_shape
    if len(tile) != 2:
        raise ValueError(f"tcgen05.cp copies a 2-D (rows, cols) tile; the region of {shared.buffer.name} is {tile}")
    rows, cols = tile
    pack = 4 // shared.element_bytes
    order = storage_order(tmem, rows, cols)
    if order is not None:
        rows, cols = order[0].shape
    shapes, column = cp_shapes(tmem, rows, cols, pack, order)
    for shape in shapes:
        bits = CP_SHAPES[shape].bits
        found = _descriptors(shared, rows, cols, bits, what, order)
        if found is not None:
            return (shape, bits, column, *found)
    raise ValueError(
        f"{what}: the shared tile is not the descriptor's canonical K-major image (before the "
        "swizzle, row r at start + (r//8)*SBO + (r%8)*W bytes, W the swizzle width or 16, "
        "16-byte aligned)"
    )


@dataclass(frozen=True)
class CpPlan:
    """A ``tcgen05.cp`` copy planned: the shape and its bits per row, the first 32-bit TMEM column, the swizzle mode,
    ``(start element, LBO, SBO)`` of each instruction, and how a symbolic (stage) begin moves the TMEM columns
    (``column_shift``) and the shared elements (``element_shift``)."""

    shape: str
    bits: int
    column: int
    mode: str
    instructions: list
    column_shift: object = 0
    element_shift: object = 0


def plan_shared_to_tmem(tmem, shared, scope: str) -> CpPlan:
    """The ``tcgen05.cp`` copies of a shared tile into a TMEM region, planned and checked: the tile is the
    descriptor's canonical K-major image of a shape the TMEM layout takes; a leading (stage) index of either region
    may be an expression (``sfa[t % 2, ...]``) when every stage moves the copy by whole columns (TMEM) or by the
    same canonical image a fixed number of elements on (shared); one thread issues it (scope "cta", "warp" or
    "thread").

    Example: ``T.tile_copy(sf, sf_shared)`` with ``sf`` in ``S[(32, 16):(1@TLane, 1@TCol)] + R[4:32@TLane]``
    (uint8) and ``sf_shared`` row-major ``(32, 16)`` is one ``tcgen05.cp.cta_group::1.32x128b.warpx4``.
    """
    if shared.buffer.scope() != "shared":
        raise ValueError(f"tcgen05.cp copies from shared memory; {shared.buffer.name} is in {shared.buffer.scope()}")
    what = f"tcgen05.cp from {shared} into {tmem}"
    tmem_stage, shared_stage = _symbolic_stage(tmem, what), _symbolic_stage(shared, what)
    base_tmem = _at(tmem, tmem_stage, 0)
    base_shared = _at(shared, shared_stage, 0)
    shape, bits, column, mode, plan = _cp_plan(base_tmem, base_shared, what)
    column_shift = element_shift = 0
    if tmem_stage is not None:  # each stage moves the copy by whole 32-bit columns
        dim, expr = tmem_stage
        columns = [_cp_plan(_at(tmem, tmem_stage, v), base_shared, what)[2] for v in range(tmem.shape[dim])]
        column_shift = expr * _linear_step(columns, f"{what}: the TMEM columns of stages 0, 1, ... ")
    if shared_stage is not None:  # each stage moves the source by whole elements, with the same descriptors
        dim, expr = shared_stage
        stages = [_cp_plan(base_tmem, _at(shared, shared_stage, v), what) for v in range(shared.shape[dim])]
        step = _linear_step([p[4][0][0] for p in stages], f"{what}: the shared start of stages 0, 1, ... ")
        same = all(
            p[3] == mode and [(a - v * step, lbo, sbo) for a, lbo, sbo in p[4]] == plan for v, p in enumerate(stages)
        )
        repeat = swizzle_repeat_bytes(mode) or 16
        if not same or (step * shared.element_bytes) % repeat:
            raise ValueError(
                f"{what}: the stages of {shared.buffer.name} are not the same canonical image {step} elements apart "
                f"(a whole number of {repeat}-byte {mode} repeats); index that dimension with a constant"
            )
        element_shift = expr * step
    if scope not in ("cta", "warp", "thread"):
        raise ValueError(
            f"{what}: tcgen05.cp is issued by one thread; copy at scope 'cta' (complete after the copy), 'warp' "
            f"(lane 0 issues, asynchronous) or 'thread' (the thread reaching it issues, asynchronous), not {scope!r}"
        )
    return CpPlan(shape, bits, column, mode, plan, column_shift, element_shift)


def lower_shared_to_tmem(plan: CpPlan, shared, threads, taddr, scope: str = "cta", own_barrier=None):
    """The planned ``tcgen05.cp`` copies of a shared tile into TMEM (``taddr``: the TMEM base address), issued by one
    thread of ``scope``.

    ``scope="cta"`` (every thread reaches the copy): thread 0 issues, commits to an mbarrier of the call site's
    own, and every thread waits for the phase its own counter tracks, so the copy is complete after it
    (``own_barrier()`` gives the site's ``(mbarrier, phase)`` buffers, initialised once where the TMEM is allocated:
    a copy in a loop must not initialise an mbarrier other threads may still be waiting on).
    ``scope="warp"`` (the warp reaching it; a warp-specialised kernel): the warp's shared writes are made visible to
    the async proxy, a warp barrier, then lane 0 issues and nothing waits. ``scope="thread"``: the one thread
    reaching it issues, with no proxy fence of its own: the tile's writers publish it to the async proxy (an
    mbarrier arrive fences the proxy, a TMA load writes through it, a thread writing the tile itself fences before
    issuing). Both are asynchronous: an MMA the same thread issues next reads what
    was copied (``tcgen05.cp`` -> ``tcgen05.mma`` is a pipelined pair, PTX ISA tcgen05 memory consistency), and the
    copy is complete only once a later ``tcgen05.commit`` of that thread (a ``T.tile_mma``'s) has arrived and been
    waited for: before the TMEM is read by others, freed, or the shared tile overwritten.

    Example: the plan of :func:`plan_shared_to_tmem`'s example at scope "cta" becomes the proxy fence, a CTA
    barrier, thread 0's ``tcgen05.cp`` and commit, and every thread's wait.
    """
    copies = []
    for i, (start, lbo, sbo) in enumerate(plan.instructions):
        index = tirx.IntImm("int32", start) + plan.element_shift
        source = tvm.tirx.address_of(tvm.tirx.BufferLoad(shared.view, [index]))
        address = taddr + tirx.IntImm("uint32", plan.column + i * plan.bits // 32)
        if not isinstance(plan.column_shift, int):
            address = address + tirx.Cast("uint32", plan.column_shift)
        copies.append(tcgen05.cp(plan.shape, address, source, lbo, sbo, plan.mode))
    if scope == "thread":
        # The warp-specialised form: its source was published to the issuer through an mbarrier (the writers'
        # arrive fences the proxy; a TMA load writes through the async proxy), so a fence here (MEMBAR +
        # FENCE.VIEW.ASYNC in SASS, per copy) would order only this thread's own writes. As for T.tile_mma at thread
        # scope with barrier=; the simulator names an unfenced writer.
        return sequence([shared.declaration(), *copies])
    if scope == "warp":
        lane0 = tvm.tirx.floormod(threads.index, WARP_THREADS) == 0
        return sequence(
            [
                shared.declaration(),
                sync.fence_proxy_async(),
                tcgen05.simple("fence_before"),
                warp_barrier(),
                tcgen05.simple("fence_after"),
                tirx.IfThenElse(lane0, sequence(copies), None),
            ]
        )
    bar, phase = own_barrier()
    bar_address = tvm.tirx.address_of(tvm.tirx.BufferLoad(bar, [tirx.IntImm("int32", 0)]))
    parity = tvm.tirx.BufferLoad(phase, [tirx.IntImm("int32", 0)])
    first = threads.index == 0
    return sequence(
        [
            shared.declaration(),
            sync.fence_proxy_async(),
            cta_barrier(),
            tirx.IfThenElse(first, sequence([*copies, tcgen05.commit(bar_address)]), None),
            mbarrier.wait(bar_address, parity),
            tcgen05.simple("fence_after"),
            store(phase, parity ^ tirx.const(1, "uint32"), tirx.IntImm("int32", 0)),
        ]
    )
