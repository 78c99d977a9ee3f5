"""LowerTileOps: ``T.tile_copy(dst, src)`` becomes per-thread loads and stores.

Who moves what is the copy's plan (:mod:`tirx_layout.transform.copy_plan`): memory-to-memory copies deal vectors
round-robin to the threads of the copy's scope, a register fragment is filled or drained by each thread through its
own slots, fragment-to-fragment copies go slot by slot. This pass only writes a plan down as TIR: a loop over the
plan's steps (rounds or slot vectors), the step's load and stores on the operands' flat views, and its guards as
nested ``if``s. Copies that touch tensor memory become ``tcgen05`` instructions (``transform/tmem/``), and TMEM
allocations become ``tcgen05.alloc`` ... ``tcgen05.dealloc`` around their scope.

Replica guards: a fragment replicated over threads stores from replica 0 only; a memory destination with replicas
(``R[...]`` on ``m``) is written at every replica place; a fragment destination replicated over threads is loaded
by every replica.
"""

from __future__ import annotations

import tvm
from tvm import tirx

from ..ir.annotations import buffer_layouts
from ..ir.rewrite import load, map_function, sequence, store, walk
from ..ir.spans import located_errors
from ..ir.threads import Threads, bind_threads, cta_threads
from ..ir.tile_ops import as_copy
from .copy_plan import LayoutTables, MemoryCopy, TmemOperand, check_operands, operand, plan_copy
from .tmem import TmemLowering


def _lanes(index, v: int):
    return index if v == 1 else tirx.Ramp(index, 1, v)


class _CopyLowering:
    def __init__(self, func):
        self.layouts = buffer_layouts(func)
        self.func = func
        self._threads = None
        self.analyzer = tvm.sym.Analyzer()
        self.tables = LayoutTables()
        self.tmem = TmemLowering(func, lambda: self.threads)
        self._loops_bound = False

    @property
    def threads(self) -> Threads:
        if self._threads is None:
            self._threads = cta_threads(self.func)
            bind_threads(self.analyzer, self._threads)
        return self._threads

    def bind_loops(self):
        """Tell the analyzer the range of every thread index and loop variable (once), so that a copy region
        inside its buffer for every value they take gets no tail guard."""
        if self._loops_bound:
            return
        self._loops_bound = True
        _ = self.threads

        def bind(loop):
            self.analyzer.bind(loop.loop_var, tvm.ir.Range.from_min_extent(loop.min, loop.extent))

        def bind_scope(stmt):  # CTA indices in the grid, and thread indices bind_threads did not bind
            definition = getattr(stmt, "def")
            for var, extent in zip(definition.def_ids, definition.extents, strict=True):
                if var not in self.threads.bounds:
                    self.analyzer.bind(var, tvm.ir.Range(0, extent))

        walk(self.func.body, [(tirx.For, bind), (tirx.ScopeIdDefStmt, bind_scope)])

    def loop_var(self, name: str, extent: int):
        """A loop variable over ``range(extent)``, known to the simplifier; the constant 0 for a one-trip loop."""
        if extent == 1:
            return 0
        var = tirx.Var(name, "int32")
        self.analyzer.bind(var, tvm.ir.Range(0, extent))
        return var

    def simplify(self, expr):
        return expr if isinstance(expr, int | bool) else self.analyzer.simplify(expr)

    def aligned(self, index, v: int):
        """The simplified ``index``, written so that its alignment to ``v`` is visible. CUDA code generation issues
        a vector load only when TVM's modular analysis proves the base a multiple of the vector length, which it
        cannot see through a swizzle's XOR; there ``(a // v) * v``, equal to ``a`` (every base was checked aligned
        on the layout's whole address table), shows it."""
        index = self.simplify(index)
        if v == 1 or isinstance(index, int):
            return index
        known = self.analyzer.modular_set(index)
        return index if known.coeff % v == 0 and known.base % v == 0 else tirx.floordiv(index, v) * v

    def lower(self, copy):
        self.bind_loops()
        dst = operand(copy.dst, self.layouts, "destination", self.tables, self.analyzer)
        src = operand(copy.src, self.layouts, "source", self.tables, self.analyzer)
        check_operands(dst, src)
        if isinstance(dst, TmemOperand) or isinstance(src, TmemOperand):
            return self.tmem.copy(dst, src, copy.scope)
        if copy.scope == "thread":
            raise ValueError(
                f"tile_copy from {src} to {dst} at scope 'thread': that scope is for tcgen05.cp (shared memory -> "
                "TMEM), which one thread issues; copy at scope 'cta', 'warpgroup' or 'warp'"
            )
        plan = plan_copy(dst, src, copy.scope, self.threads.count)
        if isinstance(plan, MemoryCopy):
            steps, name, kind = plan.rounds, "copy_round", tirx.ForKind.SERIAL
        else:
            steps, name, kind = plan.slots, "slot", tirx.ForKind.UNROLLED
        var = self.loop_var(name, steps)
        body = self.emit(plan.step(var, self.threads.index), plan.v)
        loop = body if steps == 1 else tirx.For(var, 0, steps, kind, body)
        return sequence([dst.declaration(), src.declaration(), loop])

    def emit(self, step, v: int):
        """One plan step as TIR: the load, its stores, then the guards around them (innermost first)."""
        value = load(step.load.operand.view, _lanes(self.aligned(step.load.address, v), v))
        body = sequence([store(s.operand.view, value, _lanes(self.aligned(s.address, v), v)) for s in step.stores])
        for guard in step.guards:
            condition = self.simplify(guard)
            if isinstance(condition, bool | tirx.IntImm):  # decided statically: always, or never
                if not bool(condition):
                    return tirx.Evaluate(0)
                continue
            body = tirx.IfThenElse(condition, body, None)
        return body


def lower_tile_ops(func):
    """``func`` with every ``T.tile_copy`` lowered to per-thread accesses (see the module docstring).

    Example (a column-major shared tile, filled in its storage order: each thread reads a column of ``A``):
        >>> import tvm
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
    lowering = _CopyLowering(func)

    def lower_one(stmt):
        copy = as_copy(stmt)
        return stmt if copy is None else lowering.lower(copy)

    def on_evaluate(stmt):
        return located_errors(lower_one, stmt)

    # The TMEM address of a buffer, as the MMA lowering wrote it, is the address its allocation returns.
    rules = [(tvm.ir.Call, lowering.tmem.base_address), (tirx.Evaluate, on_evaluate)]
    if lowering.tmem.allocs:  # TMEM allocations become tcgen05.alloc ... tcgen05.dealloc around their scope
        rules.append((tirx.SeqStmt, lowering.tmem.expand))
    return map_function(func, rules)


@tvm.tirx.transform.prim_func_pass(opt_level=0, name="tirx_layout.LowerTileOps")
class LowerTileOps:
    """The registered pass: :func:`lower_tile_ops` on every PrimFunc of a module.

    Example: ``LowerTileOps()(mod)`` is ``mod`` with :func:`lower_tile_ops` applied to each of its functions (that
    function's example shows the output).
    """

    def transform_function(self, func, mod, ctx):
        return lower_tile_ops(func)
