"""LowerTileMma: ``T.tile_mma`` becomes a K loop of ``tcgen05.mma`` instructions, issued by one thread, and the
``T.mbarrier_*`` operations become their PTX. On a target with ``wgmma`` (sm_90a, ``hw.targets``) the MMA and
``T.tile_mma_wait`` lower through ``transform/lower_wgmma`` instead (no user-visible switch), and the mbarrier
operations carry no ``tcgen05`` fences; the shared-operand analysis both use lives in ``transform/mma_operands``.

``T.tile_mma(D, A, B, accumulate)`` computes ``D[m, n] (+)= sum_k A[m, k] * B[n, k]`` (``D = A @ B.T``): ``D`` is
``(M, N)`` in tensor memory, ``A`` ``(M, K)`` in shared or tensor memory, ``B`` ``(N, K)`` in shared memory. Every
number the instructions need comes from the operands' layouts and dtypes:

* the kind from the dtypes (``float16``/``bfloat16`` f16, ``float32`` tf32, ``float8_*`` f8f6f4, ``int8``/``uint8``
  i8); the instruction descriptor from the kind, dtypes, M, N and each operand's majorness
  (``hw.tcgen05_mma.instruction_descriptor``);
* each shared operand's matrix descriptor from its layout (``hw.smem_descriptor.shared_matrix_descriptor``, which
  refuses a layout the MMA cannot read) and the start of every K step (``k_offsets``): the issuing thread makes the full
  descriptor once (``smem_descriptor``: the fields ORed with the shared address of the first step's first
  element), and K step ``s`` adds its offset ``>> 4`` to it;
* the accumulator's TMEM address from D's layout: the lane of row 0 and the column of column 0 of the region, on top
  of the allocation's base address (filled in by LowerTileOps, which allocates TMEM).

What is emitted, by ``scope`` (PTX ISA, tcgen05 memory consistency: the MMA reads shared memory through the async
proxy, and orders with other threads' tcgen05 accesses only through the thread-sync fences):

* ``"cta"`` -- every thread: ``fence.proxy.async.shared::cta`` (its shared-memory writes become visible to the
  MMA), ``tcgen05.fence::before_thread_sync``, a CTA barrier, ``tcgen05.fence::after_thread_sync``; the lane
  ``elect.sync`` elects in warp 0 issues the K loop and the commit.
* ``"warp"`` -- the warp's threads: the proxy fence and the fences around ``__syncwarp()``; the lane ``elect.sync``
  elects issues. ``"thread"`` -- the thread issues: after the proxy fence in the synchronous form, with no fence
  with ``barrier=``: that is the warp-specialised issuer, whose operands were published to it through mbarriers
  (an arrive fences the proxy; a TMA load writes through the async proxy). Operands the issuing thread wrote
  itself need an arrive (or scope "warp"/"cta") first; the simulator reports an unfenced write as a DataRace.
* The synchronous form (no ``barrier``) commits to an mbarrier of the call site's own, initialised once at the start
  of the kernel (published by the site's own CTA barrier before the issue; a CTA barrier after the initialisation
  only when a synchronous site is "warp" or "thread" scope); every thread of the scope waits for the phase its own
  counter tracks, then ``tcgen05.fence::after_thread_sync``: D is readable after the op. With ``barrier=bars[i]``
  the commit arrives on ``bars[i]`` and the kernel waits with ``T.mbarrier_wait`` before reading D or overwriting
  A or B.

``T.mbarrier_arrive`` and ``T.mbarrier_arrive_expect_tx`` release what the thread did before them:
``fence.proxy.async.shared::cta`` (its shared stores, for an MMA the waiter issues) and
``tcgen05.fence::before_thread_sync`` (its tcgen05 accesses, for the waiter's next MMA into the same cells);
``T.mbarrier_wait`` acquires with ``tcgen05.fence::after_thread_sync``. ``T.mbarrier_init``: thread 0 initialises,
then a CTA barrier publishes the initialisation; a run of consecutive inits (loops of nothing else included, as
``for s in T.unroll(S)`` writes them) shares one barrier after the run.

The K loop is unrolled: step ``s`` reads K elements ``s*k .. (s+1)*k - 1``; its enable-input-d is ``accumulate`` for
step 0 and 1 after (the pipelined MMA -> MMA pair needs no fence between steps).
"""

from __future__ import annotations

import dataclasses

import tvm
import tvm_ffi
from tvm import tirx

from ..hw.tcgen05_mma import K_BYTES_PER_INSTRUCTION, SCALE_DTYPE, MmaInstruction, instruction_descriptor, mma_kind
from ..hw.threads import WARP_THREADS
from ..hw.tmem_addressing import accumulator_taddr_offset, scale_factor_taddr, tmem_operand_offset
from ..ir.annotations import buffer_layouts, target_arch
from ..ir.device_calls import cta_barrier, warp_barrier
from ..ir.mma_ops import TileMma, as_mbarrier, as_mma, as_mma_wait, tmem_base_address
from ..ir.rewrite import AllocBuffer, map_function, sequence, store
from ..ir.spans import located_errors
from ..ir.threads import cta_threads
from ..ops.helpers import mbarrier, sync, tcgen05
from .copy_plan import MemoryOperand, TmemOperand, operand
from .lower_wgmma import WgmmaLowering
from .mma_operands import OPERAND_ALIGNMENT
from .mma_operands import as_u32 as _as_u32
from .mma_operands import shared_operand as _shared_operand


def _trailing(side, name: str) -> None:
    if any(e != 1 for e in side.extents[:-2]):
        raise ValueError(
            f"{name}'s TMEM region {side.region} must take one index of every dimension but the last two (M and "
            f"{'N' if name == 'D' else 'K'})"
        )


def _descriptor(view, start: int, stage_units, bits: int):
    """The full descriptor of the operand whose first K step starts at element ``start`` of ``view`` (stage 0),
    moved on by ``stage_units`` 16-byte units (an expression; ``None``: static). The add cannot carry out of the
    14-bit start field: the field holds a shared address >> 4 inside the CTA's shared memory (below 2^18 bytes,
    228 KiB on sm_100), for stage 0 and for the stage the units reach alike."""
    pointer = tvm.tirx.address_of(tvm.tirx.BufferLoad(view, [tirx.IntImm("int32", start)]))
    descriptor = tcgen05.smem_descriptor(pointer, bits)
    return descriptor if stage_units is None else descriptor + tirx.Cast("uint64", stage_units)


def _taddr(buffer, lane: int, column):
    """The TMEM address of (lane, column) of TMEM ``buffer``'s allocation (column an int or an expression)."""
    offset = (lane << 16) + column
    return tmem_base_address(buffer) + (
        tirx.const(offset, "uint32") if isinstance(offset, int) else tirx.Cast("uint32", offset)
    )


def _block_scaled(mma: TileMma) -> bool:
    """Whether ``mma`` is block-scaled (``scale_a`` and ``scale_b`` given); one without the other is refused."""
    if (mma.scale_a is None) != (mma.scale_b is None):
        given, missing = ("scale_a", "scale_b") if mma.scale_a is not None else ("scale_b", "scale_a")
        raise ValueError(
            f"tile_mma with {given} but no {missing}: a block-scaled MMA (kind mxf8f6f4) reads scale factors for "
            "both A and B"
        )
    return mma.scale_a is not None


def _scale_factor_steps(mma: TileMma, layouts: dict, m: int, n: int, steps: int) -> list:
    """Per K step of a block-scaled MMA: ``((scale_a TMEM address, SF id), (scale_b address, SF id))``. Each scale
    operand is a ``(rows, K / 32)`` region (rows = M for ``scale_a``, N for ``scale_b``) of a ``float8_e8m0fnu``
    TMEM buffer laid out as the MMA reads it (``hw.tmem_addressing.scale_factor_taddr``; ``mma_scale_factor_layout``
    makes one); a leading (stage) index may be an expression when each stage moves the scales by whole columns."""
    per_operand = []
    for name, region, rows in (("scale_a", mma.scale_a, m), ("scale_b", mma.scale_b, n)):
        side = operand(region, layouts, name)
        if not isinstance(side, TmemOperand):
            raise ValueError(
                f"{name} of tile_mma must be in tensor memory (T.alloc_tmem, filled by tcgen05.cp), "
                f"{side.buffer.name} is {side.buffer.scope()}"
            )
        if side.dtype != SCALE_DTYPE:
            raise ValueError(
                f"{name} of tile_mma holds {SCALE_DTYPE} (ue8m0) scale factors; {side.buffer.name} is {side.dtype}"
            )
        if side.layout is None:
            raise ValueError(f"{name} of tile_mma ({side.buffer.name}) needs a TMEM layout (mma_scale_factor_layout)")
        *leading, got_rows, got_blocks = side.extents
        if any(e != 1 for e in leading) or (got_rows, got_blocks) != (rows, steps):
            raise ValueError(
                f"{name} of tile_mma is a ({rows}, K/32) = ({rows}, {steps}) region (one scale per "
                f"{'row of A' if name == 'scale_a' else 'row of B'} per 32 K elements); {side.buffer.name}'s region "
                f"has extents {tuple(side.extents)}"
            )
        per_operand.append([_scale_taddr(side, rows, s, name) for s in range(steps)])
    return list(zip(*per_operand, strict=True))


def _scale_taddr(side, rows: int, k_block: int, name: str):
    """(TMEM address, SF id) of K-block ``k_block`` of a scale operand; a symbolic leading index ``i`` must move
    the scales by a fixed number of whole columns per step (a stage), the SF id staying."""
    symbolic = [d for d, b in enumerate(side.begins) if not isinstance(b, int)]
    if any(d >= len(side.begins) - 2 for d in symbolic) or len(symbolic) > 1:
        raise ValueError(
            f"{name} of tile_mma: only one leading (stage) index may be an expression, got region start {side.begins}"
        )
    if not symbolic:
        column, sf_id = scale_factor_taddr(side.layout, side.shape, side.begins, rows, k_block, name)
        return tmem_base_address(side.buffer) + tirx.const(column, "uint32"), sf_id
    (dim,) = symbolic
    at = [
        scale_factor_taddr(
            side.layout, side.shape, [v if d == dim else b for d, b in enumerate(side.begins)], rows, k_block, name
        )
        for v in range(int(side.shape[dim]))
    ]
    step = at[1][0] - at[0][0] if len(at) > 1 else 0
    if any(column != at[0][0] + v * step or sf_id != at[0][1] for v, (column, sf_id) in enumerate(at)):
        raise ValueError(
            f"{name} of tile_mma: stage {side.begins[dim]} of {side.buffer.name} does not move the scale factors "
            f"by one fixed number of columns with the same SF id (per stage: {at}); index it with a constant"
        )
    column = tirx.const(at[0][0], "int32") + side.begins[dim] * step
    return tmem_base_address(side.buffer) + tirx.Cast("uint32", column), at[0][1]


def _advanced(descriptor, units: int):
    """``descriptor`` (a ``uint64`` variable) with ``units`` added to its start field; step 0 is the variable."""
    return descriptor if units == 0 else descriptor + tirx.const(units, "uint64")


def _signed_parity(parity):
    """The parity a ``T.mbarrier_wait`` carries (``uint32``), as the ``int32`` expression it was written as when it
    is a cast of one; the helper's ``unsigned int`` parameter converts it. TVM's common-subexpression pass may hoist
    an argument out of the ``if`` guarding it (``(it // S - 1) % 2`` under ``if it >= S``, simplified to ``i - 1``
    there), and a ``uint32`` cast of an expression that is negative outside the guard then fails StmtSimplify
    ("cannot make uint from negative value")."""
    if isinstance(parity, tirx.Cast) and str(parity.ty) == "uint32" and str(parity.value.ty) == "int32":
        return parity.value
    return parity


class _MmaLowering:
    def __init__(self, func):
        self.func = func
        self.layouts = buffer_layouts(func)
        self._threads = None
        arch = target_arch(func)
        # Without a target the tcgen05 form (the pipeline binds the target before this pass runs).
        self.tcgen05 = arch is None or not arch.has("wgmma")
        self.wgmma = None if self.tcgen05 else WgmmaLowering(func, self.layouts, lambda: self.threads)
        self.own_barriers = []  # (mbarrier buffer, phase buffer) of each synchronous call site
        self.unbarriered_sites = False  # whether a synchronous site has no CTA barrier before its issue

    @property
    def threads(self):
        if self._threads is None:
            self._threads = cta_threads(self.func)
        return self._threads

    def guard_issue(self, scope: str, issue):
        """``issue`` run by the one issuing thread: for "cta" the lane ``elect.sync`` elects in warp 0, for "warp"
        the lane it elects in the warp reaching the op, for "thread" the thread itself. An elected lane is one
        ptxas knows to be alone in a converged warp, so it issues tcgen05 without a per-instruction election loop
        (which a ``threadIdx.x == 0`` guard costs, measured in bench_mma)."""
        if scope == "thread":
            return issue
        elected = tirx.IfThenElse(sync.elect() != tirx.const(0, "uint32"), issue, None)
        if scope == "warp":
            return elected
        return tirx.IfThenElse(self.threads.index < WARP_THREADS, elected, None)

    def lower(self, mma: TileMma):
        if self.wgmma is not None:
            return self.wgmma.lower(mma)
        if not mma.wait:
            raise ValueError(
                "tile_mma(..., wait=False) is the asynchronous form of wgmma (sm_90a); with tcgen05 pass "
                "barrier=bars[i] and wait with T.mbarrier_wait"
            )
        d = operand(mma.d, self.layouts, "D")
        a = operand(mma.a, self.layouts, "A")
        b = operand(mma.b, self.layouts, "B")
        if not isinstance(d, TmemOperand):
            raise ValueError(f"D of tile_mma must be in tensor memory, {d.buffer.name} is {d.buffer.scope()}")
        if not isinstance(b, MemoryOperand):
            raise ValueError(f"B of tile_mma must be in shared memory, {b.buffer.name} is {b.buffer.scope()}")
        if not isinstance(a, MemoryOperand | TmemOperand):
            raise ValueError(
                f"A of tile_mma must be in shared or tensor memory, {a.buffer.name} is a register fragment"
            )
        shapes = {"D": d.tile_shape, "A": a.tile_shape, "B": b.tile_shape}
        if any(len(s) != 2 for s in shapes.values()):
            raise ValueError(f"tile_mma takes 2-D tiles D (M, N), A (M, K), B (N, K), got {shapes}")
        (m, n), (m_a, k), (n_b, k_b) = shapes["D"], shapes["A"], shapes["B"]
        if m_a != m or n_b != n or k_b != k:
            raise ValueError(f"tile_mma: D is (M, N), A (M, K), B (N, K) (D = A @ B.T), got shapes {shapes}")
        scaled = _block_scaled(mma)
        kind = mma_kind(a.dtype, b.dtype, block_scaled=scaled)
        declarations = [b.declaration()]
        b_desc, b_start, b_stage, b_steps = _shared_operand(b, n, k, "B")
        if isinstance(a, TmemOperand):
            a_major, a_desc = "K", None
        else:
            a_desc, a_start, a_stage, a_steps = _shared_operand(a, m, k, "A")
            a_major = a_desc.major
            declarations.insert(0, a.declaration())
        try:
            instruction = MmaInstruction(kind, a.dtype, b.dtype, d.dtype, m, n, a_major, b_desc.major)
        except ValueError as err:
            raise ValueError(f"tile_mma with scale factors (block-scaled): {err}" if scaled else str(err)) from None
        steps = k // instruction.k
        scales = _scale_factor_steps(mma, self.layouts, m, n, steps) if scaled else None
        idesc = instruction_descriptor(instruction)
        _trailing(d, "D")
        if d.layout is None:
            raise ValueError(f"D of tile_mma ({d.buffer.name}) needs a TMEM layout (tmem_datapath_layout)")
        lane, column = accumulator_taddr_offset(d.layout, d.begins, (m, n), d.dtype, d.shape)
        d_taddr = _taddr(d.buffer, lane, column)
        if a_desc is None:
            _trailing(a, "A")
            if a.layout is None:
                raise ValueError(f"A of tile_mma ({a.buffer.name}) in TMEM needs a layout (tmem_datapath_layout)")
            a_lane, a_column = tmem_operand_offset(a.layout, a.begins, (m, k), a.dtype, a.shape)
            if a_lane != lane:
                raise ValueError(
                    f"A in TMEM starts at lane offset {a_lane} and D at {lane}; the ISA reads A on D's lanes"
                )
        # Each shared operand's descriptor is made once, in the issuing thread; K step s adds its start offset (in
        # 16-byte units) with one 64-bit add. It cannot carry out of the 14-bit start field: the field holds the
        # step's shared address >> 4, the address of an element of the operand inside the CTA's shared memory,
        # which is below 2^18 bytes (228 KiB on sm_100), so the sum stays below 2^14.
        b_base = tirx.Var("b_desc", "uint64")
        issue = [tirx.Bind(b_base, _descriptor(b.view, b_start, b_stage, b_desc.encode()))]
        if a_desc is not None:
            a_base = tirx.Var("a_desc", "uint64")
            issue.insert(0, tirx.Bind(a_base, _descriptor(a.view, a_start, a_stage, a_desc.encode())))
        for s in range(steps):
            enable = _as_u32(mma.accumulate) if s == 0 else tirx.const(1, "uint32")
            b_arg = _advanced(b_base, b_steps[s])
            if a_desc is None:  # one instruction step of K is 32 bytes: 8 32-bit columns
                a_arg = _taddr(a.buffer, a_lane, a_column + s * K_BYTES_PER_INSTRUCTION // 4)
            else:
                a_arg = _advanced(a_base, a_steps[s])
            in_tmem = a_desc is None
            if scales is None:
                issue.append(tcgen05.mma(kind, d_taddr, a_arg, b_arg, idesc, enable, a_in_tmem=in_tmem))
                continue
            (sfa, sfa_id), (sfb, sfb_id) = scales[s]  # K step s reads K-block s: the SF ids pick its byte
            step_idesc = instruction_descriptor(dataclasses.replace(instruction, scale_a_id=sfa_id, scale_b_id=sfb_id))
            issue.append(
                tcgen05.block_scaled_mma(d_taddr, a_arg, b_arg, step_idesc, sfa, sfb, enable, a_in_tmem=in_tmem)
            )
        return self.complete(mma, declarations, issue)

    def complete(self, mma: TileMma, declarations: list, issue: list):
        """The fences before the issue, the guarded issue and commit, and the wait of the synchronous form."""
        # Every thread's generic shared-memory writes become visible to the async proxy the MMA reads through; a
        # barrier of the scope then orders them (and earlier tcgen05 accesses of the scope's threads, through the
        # thread-sync fences) before the issuing thread's MMA.
        # A "thread"-scope MMA with barrier= is the warp-specialised issuer: its operands reach it through
        # mbarriers, published by their writers (an arrive fences the proxy; a TMA load writes through the async
        # proxy already), so a fence of its own (MEMBAR + FENCE.VIEW.ASYNC in SASS, per MMA) orders nothing.
        before = [] if mma.scope == "thread" and mma.barrier is not None else [sync.fence_proxy_async()]
        if mma.scope == "cta":
            before += [tcgen05.simple("fence_before"), cta_barrier(), tcgen05.simple("fence_after")]
        elif mma.scope == "warp":
            before += [tcgen05.simple("fence_before"), warp_barrier(), tcgen05.simple("fence_after")]
        if mma.barrier is None:
            bar, phase = self.own_barrier()
            self.unbarriered_sites |= mma.scope != "cta"
            bar_address = tvm.tirx.address_of(tvm.tirx.BufferLoad(bar, [tirx.IntImm("int32", 0)]))
        else:
            bar_address = tvm.tirx.address_of(mma.barrier)
        guarded = self.guard_issue(mma.scope, sequence([*issue, tcgen05.commit(bar_address)]))
        after = []
        if mma.barrier is None:
            parity = tvm.tirx.BufferLoad(phase, [tirx.IntImm("int32", 0)])
            after = [
                mbarrier.wait(bar_address, parity),
                tcgen05.simple("fence_after"),
                store(phase, parity ^ tirx.const(1, "uint32"), tirx.IntImm("int32", 0)),
            ]
        return sequence([*declarations, *before, guarded, *after])

    def lower_wait(self, pending: int):
        if self.wgmma is None:
            raise ValueError(
                "T.tile_mma_wait waits for wgmma groups (sm_90a); with tcgen05 an asynchronous tile_mma commits to "
                "its barrier=bars[i], and T.mbarrier_wait waits for it"
            )
        return self.wgmma.lower_wait(pending)

    def thread0_inits(self, stmt):
        """``stmt`` as thread 0's lowered ``mbarrier.init`` calls (loops kept) when initialising mbarriers is all it
        does, else ``None``."""
        op = as_mbarrier(stmt)
        if op is not None:
            return mbarrier.init(tvm.tirx.address_of(op.bar), op.value) if op.what == "init" else None
        if isinstance(stmt, tirx.SeqStmt):
            parts = [self.thread0_inits(part) for part in stmt.seq]
            return None if any(part is None for part in parts) else sequence(parts)
        if isinstance(stmt, tirx.For):
            body = self.thread0_inits(stmt.body)
            if body is None:
                return None
            return tirx.For(
                stmt.loop_var, stmt.min, stmt.extent, stmt.kind, body, stmt.thread_binding, stmt.annotations
            )
        return None

    def group_inits(self, seq):
        """``seq`` with each run of consecutive ``T.mbarrier_init`` statements (or loops of nothing else, as
        ``for s in T.unroll(S)`` writes) lowered to thread 0's initialisations and ONE CTA barrier after the run:
        no thread uses an mbarrier of the run before that barrier, so one barrier publishes them all (a barrier per
        init costs a CTA-wide wait each)."""
        out, run, grouped = [], [], False

        def close_run():
            if run:
                out.extend([tirx.IfThenElse(self.threads.index == 0, sequence(run), None), cta_barrier()])
                run.clear()

        for part in seq.seq:
            inits = self.thread0_inits(part)
            if inits is None:
                close_run()
                out.append(part)
            else:
                run.append(inits)
                grouped = True
        close_run()
        return sequence(out) if grouped else seq

    def own_barrier(self):
        site = len(self.own_barriers)
        bar = tvm.tirx.decl_buffer((1,), "uint64", f"tile_mma_bar_{site}", scope="shared")
        phase = tvm.tirx.decl_buffer((1,), "uint32", f"tile_mma_phase_{site}", scope="local")
        self.own_barriers.append((bar, phase))
        return bar, phase

    def lower_mbarrier(self, op):
        address = tvm.tirx.address_of(op.bar)
        if op.what == "init":  # one on its own; a run of them is grouped by group_inits
            return sequence(
                [tirx.IfThenElse(self.threads.index == 0, mbarrier.init(address, op.value), None), cta_barrier()]
            )
        if op.what == "wait":
            wait = mbarrier.wait(address, _signed_parity(op.value))
            if not self.tcgen05:  # no tcgen05 accesses to order on a wgmma target
                return wait
            return sequence([wait, tcgen05.simple("fence_after")])
        if op.what == "expect_tx":
            return mbarrier.expect_tx(address, op.value)
        # An arrival publishes this thread's shared-memory writes to whoever waits on the mbarrier; an MMA (or
        # tcgen05.cp) the waiter issues reads them through the async proxy, so they are made visible to it first.
        # It also hands over the thread's completed tcgen05 accesses (an epilogue's tcgen05.ld of an accumulator the
        # waiter's next MMA overwrites): tcgen05.fence::before_thread_sync, paired with the wait's fence after.
        fences = [sync.fence_proxy_async()] + ([tcgen05.simple("fence_before")] if self.tcgen05 else [])
        if op.what == "arrive":
            return sequence([*fences, mbarrier.arrive(address)])
        return sequence([*fences, mbarrier.arrive_expect_tx(address, op.value)])

    def prologue(self):
        """The call sites' own mbarriers: allocated, each thread's phase counter zeroed, initialised by thread 0
        for one arrival (the commit). No thread may use an mbarrier before a barrier orders its initialisation: a
        "cta"-scope site has one, the CTA barrier every thread passes before the issue (its commit and waits come
        after it), so a CTA barrier here is needed only when some synchronous site is "warp" or "thread" scope."""
        stmts = []
        for bar, phase in self.own_barriers:
            stmts += [AllocBuffer(bar), AllocBuffer(phase), store(phase, tirx.const(0, "uint32"), 0)]
        inits = [
            mbarrier.init(tvm.tirx.address_of(tvm.tirx.BufferLoad(bar, [tirx.IntImm("int32", 0)])), 1)
            for bar, _ in self.own_barriers
        ]
        init = tirx.IfThenElse(self.threads.index == 0, sequence(inits), None)
        return [*stmts, init, cta_barrier()] if self.unbarriered_sites else [*stmts, init]


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
        raise ValueError("tile_mma: the kernel defines no thread index (T.thread_id) before its first statement")
    return mapped


def lower_tile_mma(func):
    """``func`` with every ``T.tile_mma`` and ``T.mbarrier_*`` lowered (see the module docstring).

    Example (f16, 128x64x32: two K steps, issued by an elected lane of warp 0, then every thread waits):
        >>> import re, tvm, tirx_layout
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
        >>> re.findall(r'func_call\\("tirx_layout_(\\w+)"', lower_tile_mma(func).script())
        ... # doctest: +NORMALIZE_WHITESPACE
        ['mbarrier_init', 'sync_fence_proxy_async', 'tcgen05_fence_before', 'tcgen05_fence_after', 'sync_elect',
         'tcgen05_smem_descriptor', 'tcgen05_smem_descriptor', 'tcgen05_mma_f16_ss', 'tcgen05_mma_f16_ss',
         'tcgen05_commit', 'mbarrier_wait', 'tcgen05_fence_after']
    """
    lowering = _MmaLowering(func)

    def lower_one(stmt):
        mma = as_mma(stmt)
        if mma is not None:
            return lowering.lower(mma)
        pending = as_mma_wait(stmt)
        if pending is not None:
            return lowering.lower_wait(pending)
        op = as_mbarrier(stmt)
        return stmt if op is None else lowering.lower_mbarrier(op)

    def on_evaluate(stmt):
        return located_errors(lower_one, stmt)

    # pre-order: a run is grouped before its statements (or a loop's body) are seen one by one
    grouped = func.with_body(tvm_ffi.structural_map(func.body, [(tirx.SeqStmt, lowering.group_inits)], order="pre"))
    lowered = map_function(grouped, [(tirx.Evaluate, on_evaluate)])
    if not lowering.own_barriers:
        return lowered
    return lowered.with_body(_after_thread_definitions(lowered.body, lowering.prologue()))


@tvm.tirx.transform.prim_func_pass(opt_level=0, name="tirx_layout.LowerTileMma")
class LowerTileMma:
    """The registered pass: :func:`lower_tile_mma` on every PrimFunc of a module.

    Example: ``LowerTileMma()(mod)`` is ``mod`` with :func:`lower_tile_mma` applied to each of its functions.
    """

    def transform_function(self, func, mod, ctx):
        return lower_tile_mma(func)


__all__ = ["OPERAND_ALIGNMENT", "LowerTileMma", "lower_tile_mma"]
