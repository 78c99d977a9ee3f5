"""The context an op's rules and lowerings read, made once per function (as TVM's dispatch hands each tile primitive a
``DispatchContext``): the target and its features, the CTA's threads, the buffers' layouts, an analyzer that knows
the range of every thread index and loop variable, and the address tables of the layouts seen so far.

:class:`OpContext` is what VerifyLayouts and InferLayouts give :meth:`OpSpec.resolve <tirx_layout.ops.spec.OpSpec>`;
:class:`LoweringContext` is what LowerTileOps gives the lowerings: the same, plus the state lowerings keep for the
function as a whole (an op's own mbarriers, the tensor maps the host encodes, the TMEM allocations), each finished
once every op is lowered.
"""

from __future__ import annotations

import tvm
from tvm import tirx

from ..hw.targets import Arch, parse_arch
from ..ir.annotations import buffer_layouts, target_arch
from ..ir.rewrite import walk
from ..ir.threads import Threads, bind_threads, cta_threads
from .operands import LayoutTables

#: The architecture a function without a target is lowered for.
DEFAULT_ARCH = parse_arch("sm_100a")
#: Buffers inference may still lay out: an allocation in these scopes without a layout.
INFERRED_SCOPES = ("local", "shared")


class OpContext:
    """What every op's rules read of the function ``func`` (see the module docstring). ``decided``: whether every
    layout is final (after InferLayouts); before, a shared or local buffer without a layout may still get one, and
    the rules that read such a buffer's layout wait for the lowering (:meth:`decided`).

    Example:
        >>> import tvm
        >>> func = tvm.script.from_source('''
        ... @T.prim_func
        ... def k(A: T.Buffer((64,), "float32")):
        ...     T.func_attr({"target": T.target({"kind": "cuda", "arch": "sm_90a"})})
        ...     T.device_entry()
        ...     tx = T.thread_id([64])
        ...     A[tx] = T.float32(0)
        ... ''')
        >>> ctx = OpContext(func)
        >>> str(ctx.arch), ctx.arch.has("wgmma"), ctx.threads.count
        ('sm_90a', True, 64)
    """

    def __init__(self, func, decided: bool = True):
        self.func = func
        self.name = str(func.attrs["global_symbol"]) if func.attrs and "global_symbol" in func.attrs else "kernel"
        #: the function's own target architecture, ``None`` without one
        self.target: Arch | None = target_arch(func)
        #: the architecture the ops are lowered for: the target's, else :data:`DEFAULT_ARCH`
        self.arch: Arch = self.target or DEFAULT_ARCH
        self.layouts: dict = buffer_layouts(func)
        self.all_decided = decided
        self.tables = LayoutTables()
        self._threads: Threads | None = None
        self._analyzer: tvm.sym.Analyzer | None = None
        self._cache: dict = {}

    def cached(self, key: str, compute):
        """``compute()``, once per function: a fact of the whole function an op's rules read at every call (the
        accumulators of its asynchronous MMAs, its TMEM allocations).

        Example: ``ctx.cached("tmem allocations", lambda: tmem_allocations(ctx.func))``.
        """
        if key not in self._cache:
            self._cache[key] = compute()
        return self._cache[key]

    @property
    def threads(self) -> Threads:
        """The CTA's thread index and count (``ValueError`` when the kernel defines no threads)."""
        if self._threads is None:
            self._threads = cta_threads(self.func)
        return self._threads

    @property
    def analyzer(self) -> tvm.sym.Analyzer:
        """An analyzer told the range of every thread index, CTA index and loop variable of the function."""
        if self._analyzer is None:
            self._analyzer = bind_threads(tvm.sym.Analyzer(), self.threads)

            def bind_loop(loop):
                self._analyzer.bind(loop.loop_var, tvm.ir.Range.from_min_extent(loop.min, loop.extent))

            def bind_scope(stmt):  # CTA indices in the grid, and thread indices bind_threads did not bind
                definition = getattr(stmt, "def")
                for var, extent in zip(definition.def_ids, definition.extents, strict=True):
                    if var not in self.threads.bounds:
                        self._analyzer.bind(var, tvm.ir.Range(0, extent))

            walk(self.func.body, [(tirx.For, bind_loop), (tirx.ScopeIdDefStmt, bind_scope)])
        return self._analyzer

    def decided(self, buffer) -> bool:
        """Whether ``buffer``'s layout is final: it has one, every layout is decided, or it is not a buffer
        inference lays out.

        Example: before inference, ``ctx.decided(tile)`` is False for ``tile = T.alloc_shared(...)`` without a
        layout.
        """
        return self.all_decided or buffer in self.layouts or buffer.scope() not in INFERRED_SCOPES


class LoweringContext(OpContext):
    """:class:`OpContext` after inference, for the lowerings, with their function-wide state: :meth:`state` makes
    (once) and returns the state a lowering keeps across the function's calls, whose ``finish(func)`` the pass calls
    after every op is lowered, in the order the states were made (a state class with ``FINISH_LAST`` goes after the
    others: the TMEM allocations, which wrap everything the lowerings emitted).

    Example:
        >>> class Count:
        ...     def __init__(self, ctx):
        ...         self.calls = 0
        ...     def finish(self, func):
        ...         return func
        >>> import tvm
        >>> func = tvm.tirx.PrimFunc([], tvm.tirx.Evaluate(0))
        >>> ctx = LoweringContext(func)
        >>> ctx.state(Count).calls += 1
        >>> ctx.state(Count).calls
        1
    """

    def __init__(self, func):
        super().__init__(func, decided=True)
        self._states: dict[type, object] = {}

    def state(self, kind: type):
        """The function's state of lowering ``kind`` (made as ``kind(self)`` the first time)."""
        if kind not in self._states:
            self._states[kind] = kind(self)
        return self._states[kind]

    def finish(self, func):
        """``func`` after every state's ``finish``."""
        states = sorted(self._states.values(), key=lambda s: bool(getattr(s, "FINISH_LAST", False)))
        for state in states:
            func = state.finish(func)
        return func
