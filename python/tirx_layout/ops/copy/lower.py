"""``T.tile_copy`` lowered to per-thread loads and stores, on every target.

Who moves what is the copy's plan (``ops/copy/plan.py``): memory-to-memory copies deal vectors round-robin to the
threads of the copy's scope, a register fragment is filled or drained by each thread through its own slots,
fragment-to-fragment copies go slot by slot. This module only writes a plan down as TIR: a loop over the plan's
steps (rounds or slot vectors), the step's load and stores on the operands' flat views, and its guards as nested
``if``s. A copy with a tensor-memory side is ``tcgen05.ld/st/cp`` (``ops/tmem/``); one between a shared tile and a
fragment of 8 x 8 matrices is ``ldmatrix``/``stmatrix`` (``ldmatrix.py``).

Replica guards: a fragment replicated over threads stores from replica 0 only; a memory destination with replicas
(``R[...]`` on ``m``) is written at every replica place; a fragment destination replicated over threads is loaded
by every replica.

Example (a column-major shared tile, filled in its storage order: each thread reads a column of ``A``):
    >>> import tvm
    >>> from tirx_layout.transform import lower_tile_ops
    >>> func = tvm.script.from_source('''
    ... @T.prim_func
    ... def k(A: T.Buffer((4, 4), "float32")):
    ...     T.device_entry()
    ...     tx = T.thread_id([4])
    ...     Sm = T.alloc_shared((4, 4), "float32")
    ...     T.tile_copy(Sm, A)
    ... ''')
    >>> print(lower_tile_ops(func).script().splitlines()[-1].strip())
    Sm_flat[tx * 4:tx * 4 + 4] = A_flat[T.Ramp(tx * 4, 1, 4)]
"""

from __future__ import annotations

import tvm
from tvm import tirx

from ...ir.annotations import LAYOUT_KEY
from ...ir.device_calls import cta_barrier
from ...ir.rewrite import AllocBuffer, sequence, store
from ..operands import FragmentOperand, MemoryOperand, TmemOperand
from ..tmem import lower_tmem_copy
from .cast import converted
from .exchange import WarpShuffle, lower_warp_shuffle
from .ldmatrix import matrix_copy
from .plan import MemoryCopy, plan_copy
from .spec import TILE_COPY, CopyRecord


def _lanes(index, v: int):
    return index if v == 1 else tirx.Ramp(index, 1, v)


def loop_var(ctx, name: str, extent: int):
    """A loop variable over ``range(extent)``, known to the context's simplifier; the constant 0 for a one-trip
    loop."""
    if extent == 1:
        return 0
    var = tirx.Var(name, "int32")
    ctx.analyzer.bind(var, tvm.ir.Range(0, extent))
    return var


def simplify(ctx, expr):
    return expr if isinstance(expr, int | bool) else ctx.analyzer.simplify(expr)


def aligned(ctx, index, v: int):
    """The simplified ``index``, written so that its alignment to ``v`` is visible. CUDA code generation issues a
    vector load only when TVM's modular analysis proves the base a multiple of the vector length, which it cannot see
    through a swizzle's XOR; there ``(a // v) * v``, equal to ``a`` (every base was checked aligned on the layout's
    whole address table), shows it."""
    index = simplify(ctx, index)
    if v == 1 or isinstance(index, int):
        return index
    known = ctx.analyzer.modular_set(index)
    return index if known.coeff % v == 0 and known.base % v == 0 else tirx.floordiv(index, v) * v


def emit(ctx, step, v: int):
    """One plan step as TIR: the load (converted to the stores' dtype in a casting copy), its stores, then the guards
    around them (innermost first)."""
    value = step.load.operand.read(_lanes(aligned(ctx, step.load.address, v), v))
    value = converted(value, step.load.operand.dtype, step.stores[0].operand.dtype, v)
    body = sequence([store(s.operand.view, value, _lanes(aligned(ctx, s.address, v), v)) for s in step.stores])
    for guard in step.guards:
        condition = simplify(ctx, guard)
        if isinstance(condition, bool | tirx.IntImm):  # decided statically: always, or never
            if not bool(condition):
                return tirx.Evaluate(0)
            continue
        body = tirx.IfThenElse(condition, body, None)
    return body


@TILE_COPY.lowering("any")
def lower_tile_copy(record: CopyRecord, ctx):
    dst, src = record.dst, record.src
    if isinstance(dst, TmemOperand) or isinstance(src, TmemOperand):
        return lower_tmem_side(record, ctx)
    if record.exchange is not None:
        return lower_exchange(record.exchange, ctx)
    matrices = matrix_copy(dst, src, record.scope, ctx)  # ldmatrix / stmatrix where the layouts allow
    if matrices is not None:
        return matrices
    return sequence(
        [dst.declaration(), src.declaration(), lower_plan(plan_copy(dst, src, record.scope, ctx.threads.count), ctx)]
    )


def lower_tmem_side(record: CopyRecord, ctx):
    """A copy with a TMEM side: ``tcgen05.ld/st/cp`` (``ops/tmem``). A casting copy between TMEM and a fragment moves
    registers of TMEM's dtype placed as the fragment (the plan's ``staging``, allocated here) and converts them slot
    by slot: after a ``tcgen05.ld`` (and its wait) into the fragment, before a ``tcgen05.st`` from it."""
    dst, src, plan = record.dst, record.src, record.tmem_plan
    staging = getattr(plan, "staging", None)
    moved = lower_tmem_copy(dst, src, record.scope, ctx, plan)
    if staging is None:
        return moved
    # The conversion reads or writes the staging registers through a view of its own (the tcgen05 side declares one).
    registers = FragmentOperand(staging.region, staging.layout, staging.role)
    fragment = dst if isinstance(src, TmemOperand) else src
    pair = (fragment, registers) if isinstance(src, TmemOperand) else (registers, fragment)
    convert = sequence(
        [registers.declaration(), fragment.declaration(), lower_plan(plan_copy(*pair, "cta", ctx.threads.count), ctx)]
    )
    allocation = AllocBuffer(staging.buffer, {LAYOUT_KEY: staging.layout})
    return sequence([allocation, moved, convert] if isinstance(src, TmemOperand) else [allocation, convert, moved])


def lower_exchange(plan, ctx):
    """A fragment-to-fragment copy that moves data between threads (``exchange.py``): warp shuffles, or the source
    stored into a shared scratch and the destination loaded from it, between CTA barriers."""
    dst, src = plan.dst, plan.src
    if isinstance(plan, WarpShuffle):

        def convert(value):
            return converted(value, src.dtype, dst.dtype, 1)

        return sequence([dst.declaration(), src.declaration(), *lower_warp_shuffle(plan, ctx, convert)])
    scratch = plan.scratch()
    # each side reaches the scratch through a view of its own
    into, out = scratch, MemoryOperand(scratch.region, None, scratch.role)
    threads = ctx.threads.count
    return sequence(
        [
            AllocBuffer(scratch.buffer),
            cta_barrier(),  # the previous turn of a loop may still be reading the scratch
            into.declaration(),
            src.declaration(),
            lower_plan(plan_copy(into, src, "cta", threads), ctx),
            cta_barrier(),
            out.declaration(),
            dst.declaration(),
            lower_plan(plan_copy(dst, out, "cta", threads), ctx),
        ]
    )


def lower_plan(plan, ctx):
    """The loop over a copy plan's steps (rounds of a memory copy, serial; slot vectors, unrolled), each step
    written down by :func:`emit`."""
    if isinstance(plan, MemoryCopy):
        steps, name, kind = plan.rounds, "copy_round", tirx.ForKind.SERIAL
    else:
        steps, name, kind = plan.slots, "slot", tirx.ForKind.UNROLLED
    var = loop_var(ctx, name, steps)
    body = emit(ctx, plan.step(var, ctx.threads.index), plan.v)
    return body if steps == 1 else tirx.For(var, 0, steps, kind, body)
