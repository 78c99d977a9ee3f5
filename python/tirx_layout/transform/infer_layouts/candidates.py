"""The layouts inference tries for a buffer left without one: for a shared tile, the swizzle candidates of the bank
analysis; for a register fragment, the usual thread partitions of its CTA."""

from __future__ import annotations

import math

from ...analysis.bank_conflicts import swizzle_candidates
from ...hw.constructors import wg_local_layout
from ...hw.memory import THREAD_REGISTER_BYTES, VECTOR_BYTES, check_register_file, dtype_bytes
from ...hw.threads import WARP_THREADS, WARPGROUP_THREADS, level_threads
from ...layout import S, TileLayout
from ...layout.axis import laneid, tx, warpid, wid_in_wg
from ...layout.indexing import row_major_strides
from ...layout.placement import slot_count


def _tile(shape: list, strides: list) -> TileLayout:
    """A TileLayout from (extent, stride) pairs, dropping extent-1 iters (so candidates print canonically)."""
    kept = [(e, s) for e, s in zip(shape, strides, strict=True) if e != 1] or [(1, 1)]
    return TileLayout(S[tuple(e for e, _ in kept) : tuple(s for _, s in kept)])


def fragment_candidates(shape, dtype, threads: int, scope: str = "cta", name: str = "fragment") -> list:
    """Fragment layouts for a ``shape`` register tile over ``threads`` CTA threads, in preference order (see the
    module docstring), for ops run at ``scope``: at scope "warp" or "warpgroup" each unit holds the whole tile on its
    own axes (``laneid``; ``wid_in_wg`` and ``tid_in_wg`` too), never on the CTA's (``warpid``), which would leave
    other units without it (the rule ``OpSpec.check_operands`` applies). Layouts larger than a thread's register
    file are left out.

    Example:
        >>> [str(c) for c in fragment_candidates((229,), "float32", 128)]
        ['S[(2, 4, 32):(1, 1@warpid, 1@laneid)]']
        >>> [str(c) for c in fragment_candidates((32, 96), "float32", 256, "warpgroup")][-1]
        'S[(24, 4, 32):(1, 1@wid_in_wg, 1@laneid)]'
    """
    shape = tuple(int(e) for e in shape)
    element = dtype_bytes(dtype)
    threads = level_threads(scope, threads)
    warps = threads // WARP_THREADS
    warp_axis = warpid if scope == "cta" else wid_in_wg  # (a warp-scope unit has one warp: no warp axis is read)
    out = []
    if len(shape) == 2 and shape[0] == threads <= WARPGROUP_THREADS:  # one row per thread
        out.append(wg_local_layout(shape[1], shape[0]) if scope != "warp" else _tile(list(shape), [1 @ laneid, 1]))
    if len(shape) == 2 and threads % WARP_THREADS == 0 and shape[0] == 8 * warps and shape[1] % 8 == 0:
        out.append(_tile([8, warps, shape[1] // 8, 4, 2], [4 @ laneid, 1 @ warp_axis, 2, 1 @ laneid, 1]))
    n = math.prod(shape)
    for nbytes in (*VECTOR_BYTES, element):
        v = max(nbytes // element, 1)
        if shape[-1] % v:
            continue
        rounds = -(-n // (threads * v))
        if threads % WARP_THREADS == 0:
            out.append(_tile([rounds, warps, WARP_THREADS, v], [v, 1 @ warp_axis, 1 @ laneid, 1]))
        else:  # a partial warp: lanes if one warp, else the CTA-wide thread index
            axis = laneid if threads <= WARP_THREADS else tx
            out.append(_tile([rounds, threads, v], [v, 1 @ axis, 1]))
    unique = {}
    for c in out:
        if slot_count(c) * element <= THREAD_REGISTER_BYTES:
            unique.setdefault(str(c), c)
    if not unique:  # even the most spread-out layout is too big: the rule's own refusal, naming its bytes
        check_register_file(f"{name} ({shape} {dtype} over {threads} threads)", min(map(slot_count, out)), dtype)
    return list(unique.values())


def shared_candidates(shape, dtype) -> list:
    """Shared tile layouts to try: every swizzle candidate of a 2-D tile; for a ring of such tiles (leading stage
    dimensions, ``(stages, rows, cols)``), every candidate of one tile repeated stage after stage (each stage laid
    out alike, so a copy of any stage meets the banks as stage 0 does); else the row-major tile.

    Example:
        >>> [str(c) for c in shared_candidates((4, 4), "float32")][:2]
        ['S[(4, 4):(4, 1)]', 'ComposeLayout(SwizzleLayout(2, 1, 1), TileLayout(S[(4, 4):(4, 1)]))']
        >>> len(shared_candidates((3, 4, 4), "float32")) == len(shared_candidates((4, 4), "float32"))
        True
    """
    shape = tuple(int(e) for e in shape)
    if len(shape) == 2:
        return swizzle_candidates(dtype, shape, search="all")
    row_major = TileLayout(S[shape : tuple(row_major_strides(shape))])
    if len(shape) < 2:
        return [row_major]
    *stages, rows, cols = shape
    outer = TileLayout(S[(*stages, 1, 1) : (*row_major_strides(stages), 1, 1)])
    inner = (1,) * len(stages) + (rows, cols)
    ring = []
    for tile in swizzle_candidates(dtype, (rows, cols), search="all"):
        try:
            ring.append(tile.tile(outer, (*stages, 1, 1), inner))
        except ValueError:
            continue
    return ring or [row_major]
