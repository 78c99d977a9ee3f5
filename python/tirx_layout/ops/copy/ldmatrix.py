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

TVM's barrier insertion does not see accesses made through a helper's pointer, so the lowering orders them itself:
a barrier of the copy's scope (the CTA's, or ``__syncwarp``) before an ``ldmatrix`` (other threads wrote the tile)
and before and after a ``stmatrix`` (other threads read the tile before, or read it after).

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
    >>> "T.cuda.cta_sync()" in lower_tile_ops(func).script()
    True
"""

from __future__ import annotations

import tvm
from tvm import tirx

from ...hw import ldmatrix as facts
from ...ir.device_calls import cta_barrier, warp_barrier
from ...layout.indexing import unflatten
from ..helpers import ldmatrix
from ..operands import FragmentOperand, MemoryOperand
from .plan import FragmentCopy

#: Elements of one matrix row (16 bytes of 16-bit elements).
_ROW = 8


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
    tid = ctx.threads.index
    lane = tirx.floormod(tid, 32)
    body = []
    for group in groups:
        _, holder, slot = group.source_lane(lane)
        places = plan.places(0, tid - lane + holder)
        places["m"] = 2 * group.first + slot
        local = unflatten(plan.inverse.flat_index(places), memory.extents)
        address = ctx.analyzer.simplify(memory.addresses(local, every_replica=False)[0])
        row = tvm.tirx.address_of(tvm.tirx.BufferLoad(memory.view, [address]))
        regs = tvm.tirx.address_of(tvm.tirx.BufferLoad(fragment.view, [tirx.IntImm("int32", 2 * group.first)]))
        body.append(ldmatrix.store(group, row, regs) if storing else ldmatrix.load(group, regs, row))
    barrier = cta_barrier() if scope == "cta" else warp_barrier()
    after = [barrier] if storing else []
    return tirx.SeqStmt([dst.declaration(), src.declaration(), barrier, *body, *after])
