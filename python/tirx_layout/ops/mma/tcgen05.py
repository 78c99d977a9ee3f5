"""``T.tile_mma`` lowered for ``tcgen05``: a K loop of ``tcgen05.mma`` instructions issued by one thread, from the
:class:`~tirx_layout.ops.mma.spec.Tcgen05Mma` record, whose every number came from the operands' layouts and dtypes:

* the instruction descriptor from the kind, dtypes, M, N and each operand's majorness;
* each shared operand's matrix descriptor: the issuing thread makes the full descriptor once (``smem_descriptor``:
  the fields ORed with the shared address of the first step's first element), and K step ``s`` adds its offset
  ``>> 4`` to it; a stage index moves the descriptor by whole 16-byte units;
* the accumulator's (and a TMEM A's) TMEM address: the allocation's base address (``ir.placeholders``, filled in by
  the TMEM allocation, ``ops/tmem/alloc.py``) plus the record's lane and column.

What is emitted, by ``scope`` (PTX ISA, tcgen05 memory consistency: the MMA reads shared memory through the async
proxy, and orders with other threads' tcgen05 accesses only through the thread-sync fences):

* ``"cta"`` -- every thread: ``fence.proxy.async.shared::cta`` (its shared-memory writes become visible to the
  MMA), ``tcgen05.fence::before_thread_sync``, a CTA barrier, ``tcgen05.fence::after_thread_sync``; the lane
  ``elect.sync`` elects in warp 0 issues the K loop and the commit.
* ``"warp"`` -- the warp's threads: the proxy fence and the fences around ``__syncwarp()``; the lane ``elect.sync``
  elects issues. ``"thread"`` -- the thread issues, after the proxy fence. With ``barrier=`` both are the
  warp-specialised issuer, whose operands were published to it through mbarriers (an arrive fences the proxy; a TMA
  load writes through the async proxy), and fence no proxy of their own. The issuing warp is the faster of the two:
  ptxas knows an elected lane to be alone in a converged warp, where a lone thread costs it an election loop around
  every ``tcgen05.mma`` (issue 34). Operands the issuing thread or warp wrote itself need an arrive (or the
  synchronous form, or scope "cta") first; the simulator reports an unfenced write as a DataRace.
* The synchronous form (no ``barrier``) commits to an mbarrier of the call site's own, initialised once at the start
  of the kernel (published by the site's own CTA barrier before the issue; a CTA barrier after the initialisation
  only when a synchronous site is "warp" or "thread" scope); every thread of the scope waits for the phase its own
  counter tracks, then ``tcgen05.fence::after_thread_sync``: D is readable after the op. With ``barrier=bars[i]``
  the commit arrives on ``bars[i]`` and the kernel waits with ``T.mbarrier_wait`` before reading D or overwriting
  A or B.

The K loop is unrolled: step ``s`` reads K elements ``s*k .. (s+1)*k - 1``; its enable-input-d is ``accumulate`` for
step 0 and 1 after (the pipelined MMA -> MMA pair needs no fence between steps).

Example (f16, 128x64x32: two K steps, issued by an elected lane of warp 0, then every thread waits):
    >>> import re, tvm, tirx_layout
    >>> from tirx_layout.transform import lower_tile_ops
    >>> func = tvm.script.from_source('''
    ... @T.prim_func
    ... def k():
    ...     T.device_entry()
    ...     tx = T.thread_id([128])
    ...     A = T.alloc_shared((128, 32), "float16", layout=mma_shared_layout("float16", "64B", (128, 32)),
    ...                        align=1024)
    ...     B = T.alloc_shared((64, 32), "float16", layout=mma_shared_layout("float16", "64B", (64, 32)),
    ...                        align=1024)
    ...     acc = T.alloc_tmem((128, 64), "float32", layout=tmem_datapath_layout("D", 128, 64))
    ...     T.tile_mma(acc, A, B)
    ... ''', extra_vars={"T": tvm.script.tirx, "mma_shared_layout": mma_shared_layout,
    ...                 "tmem_datapath_layout": tmem_datapath_layout})
    >>> calls = re.findall(r'func_call\\("tirx_layout_(\\w+)"', lower_tile_ops(func).script())
    >>> calls  # doctest: +NORMALIZE_WHITESPACE
    ['mbarrier_init', 'tcgen05_alloc', 'tcgen05_relinquish_alloc_permit', 'sync_fence_proxy_async',
     'tcgen05_fence_before', 'tcgen05_fence_after', 'sync_elect', 'tcgen05_smem_descriptor', 'tcgen05_smem_descriptor',
     'tcgen05_mma_f16_ss', 'tcgen05_mma_f16_ss', 'tcgen05_commit', 'mbarrier_wait', 'tcgen05_fence_after',
     'tcgen05_dealloc']
"""

from __future__ import annotations

import tvm
import tvm_ffi
from tvm import tirx

from ...hw.tcgen05_mma import K_BYTES_PER_INSTRUCTION
from ...ir.device_calls import cta_barrier, warp_barrier
from ...ir.placeholders import tmem_base_address
from ...ir.rewrite import AllocBuffer, sequence, store
from ..helpers import cluster, mbarrier, sync, tcgen05
from ..issue import issued_once
from ..tmem.alloc import TmemAllocations
from .shared_operands import advanced, as_u32, descriptor_value
from .spec import TILE_MMA, Tcgen05Mma, TmemColumn


def _taddr(address: TmemColumn, column_shift: int = 0):
    """The TMEM address of ``address`` (plus ``column_shift`` columns) on top of its buffer's allocation."""
    offset = (address.lane << 16) + (address.column + column_shift)
    return tmem_base_address(address.buffer) + (
        tirx.const(offset, "uint32") if isinstance(offset, int) else tirx.Cast("uint32", offset)
    )


def _scale_taddr(address: TmemColumn):
    """The TMEM address of a scale factor column (lane 0; the column an int or an ``int32`` expression)."""
    column = address.column
    return tmem_base_address(address.buffer) + (
        tirx.const(column, "uint32") if isinstance(column, int) else tirx.Cast("uint32", column)
    )


class OwnMbarriers:
    """The mbarriers of a function's synchronous tile MMA sites (one each, with each thread's phase counter),
    allocated and initialised once right after the kernel's thread definitions (by :meth:`finish`). No thread may use
    an mbarrier before a barrier orders its initialisation: a "cta"-scope site has one, the CTA barrier every thread
    passes before the issue, so a CTA barrier after the initialisation is needed only when some synchronous site is
    "warp" or "thread" scope."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.sites = []  # (mbarrier buffer, phase buffer)
        self.unbarriered = False

    def new_site(self, scope: str):
        site = len(self.sites)
        bar = tvm.tirx.decl_buffer((1,), "uint64", f"tile_mma_bar_{site}", scope="shared")
        phase = tvm.tirx.decl_buffer((1,), "uint32", f"tile_mma_phase_{site}", scope="local")
        self.sites.append((bar, phase))
        self.unbarriered |= scope != "cta"
        return bar, phase

    def finish(self, func):
        stmts = []
        for bar, phase in self.sites:
            stmts += [AllocBuffer(bar), AllocBuffer(phase), store(phase, tirx.const(0, "uint32"), 0)]
        inits = [
            mbarrier.init(tvm.tirx.address_of(tvm.tirx.BufferLoad(bar, [tirx.IntImm("int32", 0)])), 1)
            for bar, _ in self.sites
        ]
        init = tirx.IfThenElse(self.ctx.threads.index == 0, sequence(inits), None)
        prologue = [*stmts, init, cta_barrier()] if self.unbarriered else [*stmts, init]
        return func.with_body(_after_thread_definitions(func.body, prologue))


def _after_thread_definitions(body, prologue: list):
    """``body`` with ``prologue`` placed right after the kernel's thread index definitions (the outermost sequence
    holding them), where every thread runs it once."""
    done = []

    def insert(seq):
        if done:
            return seq
        stmts = list(seq.seq)
        defs = [i for i, s in enumerate(stmts) if isinstance(s, tirx.ScopeIdDefStmt)]
        if not defs:
            return seq
        done.append(True)
        at = defs[-1] + 1
        return sequence([*stmts[:at], *prologue, *stmts[at:]])

    # pre-order, so that the outermost sequence with thread definitions takes the prologue
    mapped = tvm_ffi.structural_map(body, [(tirx.SeqStmt, insert)], order="pre")
    if not done:
        raise ValueError("T.tile_mma: the kernel defines no thread index (T.thread_id) before its first statement")
    return mapped


@TILE_MMA.lowering("tcgen05")
def lower_tcgen05_mma(record: Tcgen05Mma, ctx):
    """The fences, the issue (the K loop and the commit, by one thread) and the wait of the synchronous form."""
    call, b, a = record.call, record.b_shared, record.a_shared
    declarations = [record.b.declaration()] if a is None else [record.a.declaration(), record.b.declaration()]
    d_taddr = _taddr(record.d_address)
    # Each shared operand's descriptor is made once, in the issuing thread; K step s adds its start offset (in
    # 16-byte units) with one 64-bit add. It cannot carry out of the 14-bit start field: the field holds the
    # step's shared address >> 4, the address of an element of the operand inside the CTA's shared memory,
    # which is below 2^18 bytes (228 KiB on sm_100), so the sum stays below 2^14.
    b_base = tirx.Var("b_desc", "uint64")
    issue = [tirx.Bind(b_base, descriptor_value(b, tcgen05.smem_descriptor, b.descriptor.encode()))]
    if a is not None:
        a_base = tirx.Var("a_desc", "uint64")
        issue.insert(0, tirx.Bind(a_base, descriptor_value(a, tcgen05.smem_descriptor, a.descriptor.encode())))
    for s in range(record.steps):
        enable = as_u32(call.accumulate) if s == 0 else tirx.const(1, "uint32")
        b_arg = advanced(b_base, b.steps[s])
        if a is None:  # one instruction step of K is 32 bytes: 8 32-bit columns
            a_arg = _taddr(record.a_address, s * K_BYTES_PER_INSTRUCTION // 4)
        else:
            a_arg = advanced(a_base, a.steps[s])
        if record.scales is None:
            group = record.instruction.cta_group
            issue.append(
                tcgen05.mma(
                    record.kind, d_taddr, a_arg, b_arg, record.descriptor, enable, a_in_tmem=a is None, cta_group=group
                )
            )
            continue
        scale = record.scales[s]  # K step s reads K-block s: the SF ids pick its byte
        issue.append(
            tcgen05.block_scaled_mma(
                d_taddr,
                a_arg,
                b_arg,
                record.step_descriptor(s),
                _scale_taddr(scale.a),
                _scale_taddr(scale.b),
                enable,
                a_in_tmem=a is None,
            )
        )
    return sequence([*declarations, *_complete(record, issue, ctx)])


def _complete(record: Tcgen05Mma, issue: list, ctx) -> list:
    """The fences before the issue, the guarded issue and commit, and the wait of the synchronous form."""
    call = record.call
    # Every thread's generic shared-memory writes become visible to the async proxy the MMA reads through; a
    # barrier of the scope then orders them (and earlier tcgen05 accesses of the scope's threads, through the
    # thread-sync fences) before the issuing thread's MMA.
    # A "thread"- or "warp"-scope MMA with barrier= is the warp-specialised issuer: its operands reach it through
    # mbarriers, published by their writers (an arrive fences the proxy; a TMA load writes through the async
    # proxy already), so a fence of its own (MEMBAR + FENCE.VIEW.ASYNC in SASS, per K tile) orders nothing.
    issuer = call.scope in ("thread", "warp") and call.barrier is not None
    pair = record.instruction.cta_group == 2
    before = [] if issuer else [sync.fence_proxy_async()]
    if call.scope == "cta":
        # a pair's cluster barrier publishes the peer CTA's operands (and its TMEM and mbarriers) to the issuer
        meet = [cluster.arrive(), cluster.wait()] if pair else [cta_barrier()]
        before += [tcgen05.simple("fence_before"), *meet, tcgen05.simple("fence_after")]
    elif call.scope == "warp":
        before += [tcgen05.simple("fence_before"), warp_barrier(), tcgen05.simple("fence_after")]
    if call.barrier is None:
        # (mbarrier.init fences its init to cluster scope; a pair's cluster barrier then orders it before the
        # peer's commit arrives)
        bar, phase = ctx.state(OwnMbarriers).new_site(call.scope)
        bar_address = tvm.tirx.address_of(tvm.tirx.BufferLoad(bar, [tirx.IntImm("int32", 0)]))
    else:
        bar_address = tvm.tirx.address_of(call.barrier)
    if pair:
        guarded = _pair_issue(issue, bar_address, call.scope, ctx)
    else:
        guarded = issued_once(call.scope, sequence([*issue, tcgen05.commit(bar_address)]), ctx.threads.index)
    after = []
    if call.barrier is None:
        parity = tvm.tirx.BufferLoad(phase, [tirx.IntImm("int32", 0)])
        after = [
            mbarrier.wait(bar_address, parity),
            tcgen05.simple("fence_after"),
            store(phase, parity ^ tirx.const(1, "uint32"), tirx.IntImm("int32", 0)),
        ]
    return [*before, guarded, *after]


def _pair_issue(issue: list, bar_address, scope: str, ctx):
    """A pair MMA's issue: the even CTA of the pair (``hw.tcgen05_mma.leader_rank``) issues, its commit arriving on
    the mbarrier at ``bar_address``'s offset in both CTAs (ctaMask ``0b11 << leader rank``,
    ``hw.tcgen05_mma.pair_cta_mask``); its TMEM is allocated with ``cta_group::2`` (the allocation state is told)."""
    ctx.state(TmemAllocations).use_cta_group(2, "T.tile_mma(cta_group=2)")
    rank = tirx.Var("cta_rank", "uint32")
    leader = rank & tirx.const(0xFFFFFFFE, "uint32")
    mask = tirx.const(3, "uint32") << leader
    body = issued_once(scope, sequence([*issue, tcgen05.commit_pair(bar_address, mask)]), ctx.threads.index)
    is_leader = (rank & tirx.const(1, "uint32")) == tirx.const(0, "uint32")
    return sequence([tirx.Bind(rank, cluster.rank()), tirx.IfThenElse(is_leader, body, None)])
