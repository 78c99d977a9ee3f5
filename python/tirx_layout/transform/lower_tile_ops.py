"""LowerTileOps: every tile op becomes the code its spec's lowering emits for the function's target.

The pass knows no op. It makes one :class:`~tirx_layout.ops.context.LoweringContext` for the function (target and
its features, the CTA's threads, the buffers' layouts, an analyzer of the thread indices and loops) and, for each
statement that calls a registered op (``tirx_layout.ops.REGISTRY``), resolves it by the op's rules
(``OpSpec.resolve``, the same rules VerifyLayouts reported from) and lowers the record by the op's lowering for the
target's family (``OpSpec.lower``). Before that, each statement sequence goes to the ops that lower consecutive
calls together (``OpSpec.lower_runs``: a run of ``T.mbarrier_init`` shares one CTA barrier). After it, what the
lowerings kept for the function as a whole is finished (``LoweringContext.finish``): a synchronous MMA's own
mbarriers after the thread definitions, the TMA tensor maps' host encoding before the kernel region, and last the
TMEM allocations (``tcgen05.alloc`` ... ``tcgen05.dealloc`` around their scope, the TMEM addresses the lowerings
asked for filled in).

Example (a copy and an mbarrier wait, each lowered by its own op's lowering):
    >>> import re, tvm
    >>> func = tvm.script.from_source('''
    ... @T.prim_func
    ... def k(A: T.Buffer((32,), "float32"), B: T.Buffer((32,), "float32")):
    ...     T.device_entry()
    ...     tx = T.thread_id([32])
    ...     bars = T.alloc_shared((1,), "uint64")
    ...     T.mbarrier_wait(bars[0], 0)
    ...     T.tile_copy(B, A)
    ... ''')
    >>> text = lower_tile_ops(func).script()
    >>> re.findall(r'"tirx_layout_(\\w+)"', text), text.splitlines()[-1].strip()
    (['mbarrier_wait', 'tcgen05_fence_after'], 'B_flat[tx * 4:tx * 4 + 4] = A_flat[T.Ramp(tx * 4, 1, 4)]')
"""

from __future__ import annotations

import tvm
import tvm_ffi
from tvm import tirx

from ..ir.rewrite import map_function
from ..ir.spans import located_errors
from ..ops import REGISTRY, find
from ..ops.context import LoweringContext
from ..ops.tmem import TmemAllocations


def lower_tile_ops(func):
    """``func`` with every tile op lowered (see the module docstring).

    Example: see the module docstring; ``LowerTileOps()(mod)`` runs it on every function of a module.
    """
    ctx = LoweringContext(func)
    ctx.state(TmemAllocations)  # the function's TMEM allocations, checked before any op is lowered

    def lower_runs(seq):
        for spec in REGISTRY.values():
            if not isinstance(seq, tirx.SeqStmt):  # a run lowering made the sequence one statement (its runs
                break  # inside are seen when the pre-order walk reaches them)
            seq = spec.lower_runs(seq, ctx)
        return seq

    def lower_one(stmt):
        call = find(stmt)
        if call is None:
            return stmt
        return call.spec.lower(call.spec.resolve(call, ctx), ctx)

    # pre-order: a run is lowered before its statements (or a loop's body) are seen one by one
    body = tvm_ffi.structural_map(func.body, [(tirx.SeqStmt, lower_runs)], order="pre")

    def lower_located(stmt):
        return located_errors(lower_one, stmt)

    # a loop op (T.tile_parallel) is its nest's outermost loop
    lowered = map_function(func.with_body(body), [(tirx.Evaluate, lower_located), (tirx.For, lower_located)])
    return ctx.finish(lowered)


@tvm.tirx.transform.prim_func_pass(opt_level=0, name="tirx_layout.LowerTileOps")
class LowerTileOps:
    """The registered pass: :func:`lower_tile_ops` on every PrimFunc of a module.

    Example: ``LowerTileOps()(mod)`` is ``mod`` with :func:`lower_tile_ops` applied to each of its functions (that
    function's example shows the output).
    """

    def transform_function(self, func, mod, ctx):
        return lower_tile_ops(func)
