"""``T.tile_copy_async`` lowered to ``cp.async`` (the ``cpasync`` family, sm_80 onwards) and
``T.tile_copy_async_wait`` to ``cp.async.wait_group`` and a barrier of its scope, from the
:class:`~tirx_layout.ops.cp_async.spec.CpAsyncCopy` and :class:`~tirx_layout.ops.cp_async.spec.CpAsyncWait`
records.

A copy is its plan's loop (``ops/copy/plan.py``: vectors dealt round-robin to the threads of the scope, in the
shared tile's storage order) with one ``cp.async`` per vector in place of the load and store, guarded as the plan
guards its rounds, except that a vector past the global tensor's edge is not skipped but zero-filled: its
``src-size`` is 0 (and its source address the region's first element, so nothing past the tensor is addressed).
After the loop every thread of the scope commits its copies as one group.

Example (a 64 x 64 float16 tile by 128 threads: 512 16-byte vectors, four rounds, then the commit; the wait):
    >>> import re, tvm, tirx_layout
    >>> from tirx_layout.transform import lower_tile_ops
    >>> func = tvm.script.from_source('''
    ... @T.prim_func
    ... def k(A: T.Buffer((64, 64), "float16")):
    ...     T.func_attr({"target": T.target({"kind": "cuda", "arch": "sm_80"})})
    ...     T.device_entry()
    ...     tx = T.thread_id([128])
    ...     As = T.alloc_shared((64, 64), "float16")
    ...     T.tile_copy_async(As, A)
    ...     T.tile_copy_async_wait(0)
    ... ''', extra_vars={"T": tvm.script.tirx})
    >>> re.findall(r'func_call\\("tirx_layout_(\\w+)"', lower_tile_ops(func).script())
    ['cpasync_copy_16', 'cpasync_commit_group', 'cpasync_wait_group_0']
"""

from __future__ import annotations

import tvm
import tvm_ffi
from tvm import tirx

from ...ir.device_calls import cta_barrier, warp_barrier
from ...layout.indexing import all_of
from ..copy.lower import aligned, loop_var, simplify
from ..helpers import cpasync
from ..tma.spec import TILE_COPY_ASYNC
from .spec import TILE_COPY_ASYNC_WAIT, CpAsyncCopy, CpAsyncWait


def _pointer(view, index):
    return tvm.tirx.address_of(tvm.tirx.BufferLoad(view, [index]))


def _inside(src, local, ctx) -> list:
    """``begin + c < extent`` for each dimension where the source region may pass the tensor's edge, static begins
    included (a tile whose last rows lie past a static tensor end is zero-filled there)."""
    guards = []
    for begin, c, e, extent in zip(src.begins, local, src.extents, src.shape, strict=True):
        if not ctx.analyzer.can_prove(tvm.tirx.const(0, "int32") + begin + e <= extent):
            guards.append(begin + c < extent)
    return guards


@TILE_COPY_ASYNC.lowering("cpasync")
def lower_cp_async(record: CpAsyncCopy, ctx):
    plan, nbytes = record.plan, record.nbytes
    var = loop_var(ctx, "copy_round", plan.rounds)
    step = plan.step(var, ctx.threads.index)
    source_bounds = record.src.bounds_guards(step.source_local)
    guards = [g for g in step.guards if not any(tvm_ffi.structural_equal(g, b) for b in source_bounds)]
    inside = simplify(ctx, all_of(_inside(record.src, step.source_local, ctx)))
    src_index = aligned(ctx, step.load.address, plan.v)
    if inside is True or (isinstance(inside, tirx.IntImm) and int(inside)):
        src_size = nbytes
    else:  # zero-fill: read nothing, from the region's first element (always inside the tensor's storage)
        first = record.src.addresses([0] * len(record.src.extents), every_replica=False)[0]
        src_index = tirx.Select(inside, src_index, first)
        src_size = tirx.Select(inside, tvm.tirx.const(nbytes, "uint32"), tvm.tirx.const(0, "uint32"))
    source = _pointer(step.load.operand.view, src_index)
    copies = [
        cpasync.copy(nbytes, _pointer(store.operand.view, aligned(ctx, store.address, plan.v)), source, src_size)
        for store in step.stores
    ]
    body = copies[0] if len(copies) == 1 else tirx.SeqStmt(copies)
    for guard in guards:
        condition = simplify(ctx, guard)
        if isinstance(condition, bool | tirx.IntImm):
            if not bool(condition):
                body = tirx.Evaluate(0)
            continue
        body = tirx.IfThenElse(condition, body, None)
    loop = body if plan.rounds == 1 else tirx.For(var, 0, plan.rounds, tirx.ForKind.SERIAL, body)
    return tirx.SeqStmt([record.dst.declaration(), record.src.declaration(), loop, cpasync.commit_group()])


@TILE_COPY_ASYNC_WAIT.lowering("cpasync")
def lower_cp_async_wait(record: CpAsyncWait, ctx):
    barrier = cta_barrier() if record.call.scope == "cta" else warp_barrier()
    return tirx.SeqStmt([cpasync.wait_group(record.pending), barrier])
