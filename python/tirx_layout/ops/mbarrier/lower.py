"""The mbarrier ops lowered, the same on every target (PTX ISA, "mbarrier"; the helpers: ``ops/helpers/mbarrier.py``):

* ``T.mbarrier_init``: thread 0 initialises, then a CTA barrier publishes the initialisation; a run of consecutive
  inits (loops of nothing else included, as ``for s in T.unroll(S)`` writes them) shares one barrier after the run:
  no thread uses an mbarrier of the run before that barrier, and a barrier per init costs a CTA-wide wait each.
* ``T.mbarrier_arrive`` and ``T.mbarrier_arrive_expect_tx`` release what the thread did before them:
  ``fence.proxy.async.shared::cta`` (its shared stores, for an MMA or a TMA store the waiter issues, which read
  through the async proxy) and, on a target with tensor memory, ``tcgen05.fence::before_thread_sync`` (its tcgen05
  accesses, e.g. an epilogue's ``tcgen05.ld`` of an accumulator the waiter's next MMA overwrites).
* ``T.mbarrier_wait`` acquires: on a target with tensor memory, ``tcgen05.fence::after_thread_sync`` follows it.
* ``T.mbarrier_expect_tx`` adds to the transaction count.

Example (two inits, one CTA barrier; the arrive fences then arrives):
    >>> import re, tvm
    >>> from tirx_layout.transform import lower_tile_ops
    >>> func = tvm.script.from_source('''
    ... @T.prim_func
    ... def k():
    ...     T.device_entry()
    ...     tx = T.thread_id([128])
    ...     bars = T.alloc_shared((2,), "uint64")
    ...     T.mbarrier_init(bars[0], 1)
    ...     T.mbarrier_init(bars[1], 1)
    ...     T.mbarrier_arrive(bars[0])
    ... ''')
    >>> re.findall(r'tirx_layout_(\\w+)"|(cta_sync)', lower_tile_ops(func).script())  # doctest: +NORMALIZE_WHITESPACE
    [('mbarrier_init', ''), ('mbarrier_init', ''), ('', 'cta_sync'), ('sync_fence_proxy_async', ''),
     ('tcgen05_fence_before', ''), ('mbarrier_arrive', '')]
"""

from __future__ import annotations

import tvm
from tvm import tirx

from ...ir.device_calls import cta_barrier
from ...ir.rewrite import sequence
from ..helpers import mbarrier, sync, tcgen05
from ..spec import Record, find
from .spec import MBARRIER_ARRIVE, MBARRIER_ARRIVE_EXPECT_TX, MBARRIER_EXPECT_TX, MBARRIER_INIT, MBARRIER_WAIT


def _address(record: Record):
    return tvm.tirx.address_of(record.call.bar)


def _signed_parity(parity):
    """The parity a ``T.mbarrier_wait`` carries (``uint32``), as the ``int32`` expression it was written as when it
    is a cast of one; the helper's ``unsigned int`` parameter converts it. TVM's common-subexpression pass may hoist
    an argument out of the ``if`` guarding it (``(it // S - 1) % 2`` under ``if it >= S``, simplified to ``i - 1``
    there), and a ``uint32`` cast of an expression that is negative outside the guard then fails StmtSimplify
    ("cannot make uint from negative value")."""
    if isinstance(parity, tirx.Cast) and str(parity.ty) == "uint32" and str(parity.value.ty) == "int32":
        return parity.value
    return parity


def _release(ctx) -> list:
    """The fences an arrival makes before it (see the module docstring)."""
    return [sync.fence_proxy_async()] + ([tcgen05.simple("fence_before")] if ctx.arch.has("tcgen05") else [])


@MBARRIER_INIT.lowering("any")
def lower_init(record: Record, ctx):
    """One init on its own: thread 0 initialises, a CTA barrier publishes it."""
    init = mbarrier.init(_address(record), record.call.count)
    return sequence([tirx.IfThenElse(ctx.threads.index == 0, init, None), cta_barrier()])


def _thread0_inits(stmt):
    """``stmt`` as thread 0's lowered ``mbarrier.init`` calls (loops kept) when initialising mbarriers is all it does,
    else ``None``."""
    call = find(stmt) if isinstance(stmt, tirx.Evaluate) else None
    if call is not None:
        return mbarrier.init(tvm.tirx.address_of(call.bar), call.count) if call.spec is MBARRIER_INIT else None
    if isinstance(stmt, tirx.SeqStmt):
        parts = [_thread0_inits(part) for part in stmt.seq]
        return None if any(part is None for part in parts) else sequence(parts)
    if isinstance(stmt, tirx.For):
        body = _thread0_inits(stmt.body)
        if body is None:
            return None
        return tirx.For(stmt.loop_var, stmt.min, stmt.extent, stmt.kind, body, stmt.thread_binding, stmt.annotations)
    return None


@MBARRIER_INIT.run_lowering("any")
def lower_init_runs(seq, ctx):
    """``seq`` with each run of consecutive inits (or loops of nothing else) lowered to thread 0's initialisations
    and ONE CTA barrier after the run."""
    out, run, grouped = [], [], False

    def close_run():
        if run:
            out.extend([tirx.IfThenElse(ctx.threads.index == 0, sequence(run), None), cta_barrier()])
            run.clear()

    for part in seq.seq:
        inits = _thread0_inits(part)
        if inits is None:
            close_run()
            out.append(part)
        else:
            run.append(inits)
            grouped = True
    close_run()
    return sequence(out) if grouped else seq


@MBARRIER_ARRIVE.lowering("any")
def lower_arrive(record: Record, ctx):
    return sequence([*_release(ctx), mbarrier.arrive(_address(record))])


@MBARRIER_ARRIVE_EXPECT_TX.lowering("any")
def lower_arrive_expect_tx(record: Record, ctx):
    return sequence([*_release(ctx), mbarrier.arrive_expect_tx(_address(record), record.call.nbytes)])


@MBARRIER_EXPECT_TX.lowering("any")
def lower_expect_tx(record: Record, ctx):
    return mbarrier.expect_tx(_address(record), record.call.nbytes)


@MBARRIER_WAIT.lowering("any")
def lower_wait(record: Record, ctx):
    wait = mbarrier.wait(_address(record), _signed_parity(record.call.parity))
    if not ctx.arch.has("tcgen05"):  # no tensor-memory accesses to order
        return wait
    return sequence([wait, tcgen05.simple("fence_after")])
