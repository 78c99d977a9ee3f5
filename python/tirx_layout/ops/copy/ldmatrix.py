"""``T.tile_copy`` between a shared tile and a register fragment through ``ldmatrix`` (shared -> fragment, sm_75
onwards) and ``stmatrix`` (fragment -> shared, sm_90 onwards), where the layouts allow: the fragment is a sequence
of 8 x 8 matrix pieces (``hw.ldmatrix.matrix_registers``) of a 16-bit tile, and each matrix row is 16 contiguous,
aligned bytes of the shared tile (``MemoryOperand.vector_ok(8)``); otherwise the copy's plan (``plan.py``) as
before.

For each group of matrices each lane gives the shared address of one row: lane ``l`` of the warp, for matrix
``(l / 8) % count`` of the group, row ``l % 8``. That row's first element is the one the ISA puts in a known lane
and slot of the same warp (``MatrixGroup.source_lane``), so the fragment layout's inverse names it, and the shared
layout (swizzle included) gives its address: nothing here depends on a particular fragment or swizzle.

Not on the datacenter Blackwell (tcgen05) targets yet: there the layout inference's cost model, which counts the
plan's accesses, chooses the layouts of such copies, and it does not know ldmatrix.

An ``ldmatrix`` is ordered after the tile's writers by the program's own barrier, as a plain load is (a
``cp.async`` ring's ``T.tile_copy_async_wait`` ends with one; a fill by the threads wants ``T.cuda.cta_sync()``):
the simulator reports the race where there is none. A ``stmatrix`` is still bracketed by barriers of the copy's
scope (the CTA's, or ``__syncwarp``): other threads may have read the tile before, or read it after.

Each row address is written as a careful person writes it (``_row_addresses``): the thread's row in the tile as bit
fields of the thread index, read off the layouts' table of it over every thread, then the group's constant offset
and the stage, through ``SwizzleLayout.swizzle_sum``, so that the swizzle is of a loop-invariant value and the
stage and the matrix blocks are adds (or XORs) of constants after it.

Example (an mma.sync A fragment of a 16 x 16 float16 tile: one ``ldmatrix.x4``):
    >>> import re, tvm, tirx_layout
    >>> from tirx_layout.transform import lower_tile_ops
    >>> func = tvm.script.from_source('''
    ... @T.prim_func
    ... def k():
    ...     T.func_attr({"target": T.target({"kind": "cuda", "arch": "sm_80"})})
    ...     T.device_entry()
    ...     tx = T.thread_id([32])
    ...     As = T.alloc_shared((16, 16), "float16")
    ...     a = T.alloc_local((16, 16), "float16", layout=mma_sync_a_layout((16, 16), "float16"))
    ...     T.tile_copy(a, As)
    ... ''', extra_vars={"T": tvm.script.tirx, "mma_sync_a_layout": tirx_layout.mma_sync_a_layout})
    >>> re.findall(r'func_call\\("tirx_layout_(\\w+)"', lower_tile_ops(func).script())
    ['ldmatrix_load_x4']
    >>> "T.cuda.cta_sync()" in lower_tile_ops(func).script()  # the program orders the tile's writers before it
    False
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import tvm
from tvm import tirx

from ...hw import ldmatrix as facts
from ...ir.device_calls import cta_barrier, warp_barrier
from ...layout.indexing import bit_fields, unflatten
from ...layout.placement import storage_addresses
from ...layout.swizzle import ComposeLayout, SwizzleLayout
from ..helpers import ldmatrix
from ..operands import FragmentOperand, MemoryOperand
from .plan import FragmentCopy

#: Elements of one matrix row (16 bytes of 16-bit elements).
_ROW = 8


def _source_places(group, plan, tid, lane):
    """The fragment places of the first element of the matrix row whose address ``lane`` of CTA thread ``tid``
    gives for ``group`` (ints, arrays or expressions)."""
    _, holder, slot = group.source_lane(lane)
    places = plan.places(0, tid - lane + holder)
    places["m"] = 2 * group.first + slot
    return places


def _row_addresses_symbolic(groups, plan, memory, ctx) -> list:
    """Each group's row address, the layouts applied to the thread index as an expression."""
    tid = ctx.threads.index
    addresses = []
    for group in groups:
        local = unflatten(
            plan.inverse.flat_index(_source_places(group, plan, tid, tirx.floormod(tid, 32))), memory.extents
        )
        addresses.append(ctx.analyzer.simplify(memory.addresses(local, every_replica=False)[0]))
    return addresses


#: The most combinations of the symbolic begins' values (stage x K block ...) the row addresses are checked at.
_MOST_PLACEMENTS = 4096


def _begin_values(begin, extent: int, size: int, analyzer) -> list[int] | None:
    """The values a region's begin on a dimension of ``size`` can take for a region ``extent`` long (its bounds
    and stride, from ``analyzer``), or ``None`` when unbounded."""
    if isinstance(begin, int):
        return [begin]
    bound, known = analyzer.const_int_bound(begin), analyzer.modular_set(begin)
    low, high = max(int(bound.min_value), 0), min(int(bound.max_value), size - extent)
    if high - low > _MOST_PLACEMENTS:
        return None
    step, base = int(known.coeff), int(known.base)
    return [v for v in range(low, high + 1) if (v == base if step == 0 else (v - base) % step == 0)]


def _row_addresses(groups, plan, memory, ctx) -> list | None:
    """Each group's row address as a careful person writes it: the row of the thread's matrix in the tile, a sum
    of bit fields of the thread index (``bit_fields``, read off the layouts' table of it over every thread), plus
    the group's constant offset and the region's symbolic begins (a stage, a K block) times their strides, through
    the swizzle (``SwizzleLayout.swizzle_sum``: the loop-invariant part once, the stage and the matrix blocks added
    or XOR-ed after it). Checked against the layout at every value the begins can take; ``None`` where the
    addresses are not of that form (then the layouts' expressions are emitted as they are)."""
    layout = memory.layout
    swizzle, linear = None, layout
    if isinstance(layout, ComposeLayout):
        swizzle, linear = layout.swizzle, layout.tile_layout
    elif isinstance(layout, SwizzleLayout):
        swizzle, linear = layout, None
    shape = [int(e) for e in memory.shape]
    values = [
        _begin_values(b, int(e), n, ctx.analyzer) for b, e, n in zip(memory.begins, memory.extents, shape, strict=True)
    ]
    if any(v is None or not v for v in values) or math.prod(len(v) for v in values) > _MOST_PLACEMENTS:
        return None
    symbolic = [d for d, b in enumerate(memory.begins) if not isinstance(b, int)]

    def linear_at(coords):
        return np.asarray(storage_addresses(linear, shape, coords)[0], dtype=np.int64)

    origin = [0] * len(shape)
    units = {}
    for d in symbolic:
        one = list(origin)
        one[d] = 1
        units[d] = int(linear_at(one))
    tid = np.arange(int(ctx.threads.count))
    locals_ = [
        [
            np.asarray(c, dtype=np.int64) + np.zeros_like(tid)
            for c in unflatten(plan.inverse.flat_index(_source_places(group, plan, tid, tid % 32)), memory.extents)
        ]
        for group in groups
    ]
    first = [values[d][0] if d not in symbolic else 0 for d in range(len(shape))]
    tables = [linear_at([f + c for f, c in zip(first, local, strict=True)]) for local in locals_]
    # every placement of the region moves every row by the begins times their strides
    for placement in itertools.product(*values):
        shift = sum(placement[d] * units[d] for d in symbolic)
        for local, table in zip(locals_, tables, strict=True):
            if not np.array_equal(linear_at([p + c for p, c in zip(placement, local, strict=True)]), table + shift):
                return None
    base = bit_fields(tables[0], ctx.threads.index)
    if base is None:
        return None
    moved = sum((memory.begins[d] * units[d] for d in symbolic), tvm.tirx.const(0, "int32"))
    addresses = []
    for table in tables:
        offset = table - tables[0]
        if (offset != offset[0]).any():
            return None
        total = base + int(offset[0]) + moved
        addresses.append(
            swizzle.swizzle_sum(total, ctx.analyzer) if swizzle is not None else ctx.analyzer.simplify(total)
        )
    return addresses


def matrix_copy(dst, src, scope: str, ctx):
    """The ``ldmatrix``/``stmatrix`` lowering of a copy between a fragment and a shared tile, or ``None`` when the
    target or the layouts do not allow it (the caller then lowers the copy's plan)."""
    storing = isinstance(src, FragmentOperand)
    fragment, memory = (src, dst) if storing else (dst, src)
    instruction = "stmatrix" if storing else "ldmatrix"
    if not (isinstance(fragment, FragmentOperand) and isinstance(memory, MemoryOperand)):
        return None
    if scope not in ("cta", "warp") or memory.buffer.scope() not in ("shared", "shared.dyn"):
        return None
    if not facts.has(instruction, str(ctx.arch)) or ctx.arch.has("tcgen05"):
        # (on the tcgen05 targets the layout inference's cost model, which counts the vector path's accesses, still
        # decides such copies: teaching it ldmatrix is left for a next change)
        return None
    if fragment.padded or not memory.vector_ok(_ROW) or memory.dtype != fragment.dtype:
        return None
    groups = facts.matrix_registers(fragment.layout, fragment.shape, fragment.dtype)
    if not groups:
        return None
    plan = FragmentCopy(fragment, memory, storing, 1, ctx.threads.count, scope)
    if plan.holes or plan.unread:
        return None  # threads the fragment does not tell apart, or slots holding nothing: the plan's guards
    rows = _row_addresses(groups, plan, memory, ctx) or _row_addresses_symbolic(groups, plan, memory, ctx)
    body = []
    for group, address in zip(groups, rows, strict=True):
        row = tvm.tirx.address_of(tvm.tirx.BufferLoad(memory.view, [address]))
        regs = tvm.tirx.address_of(tvm.tirx.BufferLoad(fragment.view, [tirx.IntImm("int32", 2 * group.first)]))
        body.append(ldmatrix.store(group, row, regs) if storing else ldmatrix.load(group, regs, row))
    if not storing:  # ordered after the tile's writers by the program's own barrier, as a plain load would be
        return tirx.SeqStmt([dst.declaration(), src.declaration(), *body])
    barrier = cta_barrier() if scope == "cta" else warp_barrier()
    return tirx.SeqStmt([dst.declaration(), src.declaration(), barrier, *body, barrier])
