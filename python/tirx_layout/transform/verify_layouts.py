"""VerifyLayouts: a program the later passes would miscompile is refused here, at build time, first in the pipeline.

Every layout a function carries is checked against its buffer, and every ``T.tile_copy`` against its buffers:

* **type** — a layout object that is not ours (an upstream ``tvm.tirx.layout`` one in the buffer's type, or
  anything else under our annotation key) is a ``TypeError``: no pass of ours would read it;
* **scope** — global and shared buffers take memory layouts (axis ``m`` only), TMEM buffers ``TLane``/``TCol`` only,
  register fragments (``local``) thread axes of the CTA plus ``m``; no other scope takes a layout;
* **shape** — the layout has the buffer's element count (a fragment may have more: the tail is predicated). A layout
  written for another shape with that count is reinterpreted by flattening (``explain_layouts`` says so), except
  where an instruction reads the operand's image (``tcgen05.cp``), where it is refused;
* **injectivity** — a buffer that is written (a copy's destination, a store's target) has a shard that puts two
  elements in two places; replicas are asked for with ``R[...]``;
* **bounds** — a copy region whose bounds are constants (or provable) lies inside its buffer;
* **threads** — a fragment's thread axes reach no further than the kernel's threads, and a copy's scope (a warp, a
  warpgroup) fits in the kernel's threads. A fragment on fewer threads than its copy's scope is not an error: the
  threads it does not tell apart hold replicas, and only the first of them stores (``copy_plan``);
* **target** — tensor memory (``tcgen05``) only for a target that has it (``hw/targets.py``; on sm_90a the message
  points at the register accumulator of ``wgmma``), and the target's architecture must exist;
* **tile_mma** — a ``tcgen05`` target; D in tensor memory, A in shared or tensor memory, B in shared memory, scale
  factors (both or neither) in tensor memory as ``float8_e8m0fnu``, the mbarrier an element of a shared ``uint64``
  buffer; 2-D tiles D (M, N), A (M, K), B (N, K) whose dtypes name a kind and whose M, N, accumulator type are
  ones that kind takes (``hw/tcgen05_mma.py``), K whole instruction steps; regions inside their buffers; a cta-scope
  tile_mma or a ``T.mbarrier_init`` (both end in a CTA barrier) not under a condition on the thread index. The
  operands' layouts are checked where they are known, when the MMA is lowered (LowerTileMma);
* **wgmma** (a target with ``wgmma``, sm_90a) — D a register fragment in the wgmma accumulator layout (checked
  element by element), A in shared memory or a register fragment in the wgmma A layout, B in shared memory; no
  ``barrier=`` (``wait=False`` + ``T.tile_mma_wait``), no scale factors; scope "cta" (M = 64 per warpgroup of the
  CTA) or "warpgroup" (M = 64); a kind, N and K wgmma takes; a tile_mma or ``T.tile_mma_wait`` not under a
  condition that splits a warpgroup (wgmma is ``.sync.aligned`` over its 128 threads), and a warpgroup-scope
  tile_mma whose D lives on given warpgroups (``first_warpgroup=``) reached by exactly those.

Errors are :class:`LayoutVerificationError` (a ``ValueError``; ``TypeError`` for foreign layout objects), name the
buffer and, when the function came from TVMScript source, the line. The pass changes nothing.
"""

from __future__ import annotations

import math

import numpy as np
import tvm
import tvm_ffi
from tvm import tirx

from ..analysis.injectivity import MAX_PLACES, injectivity
from ..analysis.shape_fit import layout_dims, reinterprets
from ..hw.constructors import wgmma_accumulator_check, wgmma_operand_a_check
from ..hw.targets import targets_with
from ..hw.tcgen05 import TMEM_SCOPE
from ..hw.tcgen05_mma import SCALE_DTYPE, MmaInstruction, mma_kind
from ..hw.threads import LEVEL_THREADS, WARPGROUP_THREADS, cta_thread_axis, thread_axis_place, thread_unit
from ..hw.wgmma import WGMMA_M, WgmmaInstruction
from ..ir.annotations import foreign_layout, foreign_layout_error, function_buffers, layout_sites, target_arch
from ..ir.mma_ops import MMA_SCOPES, as_mbarrier, as_mma, as_mma_wait
from ..ir.rewrite import map_stmt, walk
from ..ir.spans import source_location
from ..ir.threads import cta_threads
from ..ir.tile_ops import COPY_SCOPES, as_copy
from ..layout import TileLayout
from ..layout.inverse import PlaceInverse
from ..layout.placement import axes_used, layout_threads

MEMORY_SCOPES = ("global", "shared", "shared.dyn")
SHARED_SCOPES = ("shared", "shared.dyn")
FRAGMENT_SCOPE = "local"


@tvm_ffi.register_error("tirx_layout.LayoutVerificationError")
class LayoutVerificationError(ValueError):
    """A program the tirx_layout passes would miscompile: the message names the buffer, the problem and, when known,
    the TVMScript line. Keeps its type through ``tvm.tirx.build`` and ``tvm.compile``.

    Example:
        >>> issubclass(LayoutVerificationError, ValueError)
        True
    """


class _Verifier:
    def __init__(self, func):
        self.func = func
        self.name = str(func.attrs["global_symbol"]) if func.attrs and "global_symbol" in func.attrs else "kernel"
        self.sites = {}  # buffer -> (layout, statement)
        self.written = {}  # buffer -> the first statement writing it
        self.copies = []  # (TileCopy, Evaluate)
        self.mmas = []  # (TileMma, Evaluate)
        self.mbarriers = []  # (MbarrierOp, Evaluate)
        self.mma_waits = []  # Evaluate of each T.tile_mma_wait
        self.arch = None  # the target's architecture, when the function has a CUDA target
        self._threads = None

    def fail(self, node, message: str, kind=LayoutVerificationError):
        raise kind(f"{message}{source_location(node)} in {self.name}")

    @property
    def threads(self) -> int:
        if self._threads is None:
            self._threads = cta_threads(self.func).count
        return self._threads

    # ---- gathering ----------------------------------------------------------------------------------------------

    def gather(self) -> None:
        for buffer in function_buffers(self.func):
            foreign = foreign_layout(buffer)
            if foreign is not None:
                raise TypeError(f"{foreign_layout_error(buffer, foreign)} (in {self.name})")
        for buffer, layout, stmt in layout_sites(self.func):
            self.sites[buffer] = (layout, stmt)

        def on_evaluate(stmt):
            copy = as_copy(stmt)
            if copy is not None:
                self.copies.append((copy, stmt))
                self.written.setdefault(copy.dst.source, stmt)
            mma = as_mma(stmt)
            if mma is not None:
                self.mmas.append((mma, stmt))
                self.written.setdefault(mma.d.source, stmt)
            op = as_mbarrier(stmt)
            if op is not None:
                self.mbarriers.append((op, stmt))
            if as_mma_wait(stmt) is not None:
                self.mma_waits.append(stmt)

        def on_store(stmt):
            self.written.setdefault(stmt.buffer, stmt)

        walk(self.func.body, [(tirx.Evaluate, on_evaluate), (tirx.BufferStore, on_store)])

    # ---- layouts ------------------------------------------------------------------------------------------------

    def check_layout(self, buffer, layout, stmt) -> None:
        scope = buffer.scope()
        axes = axes_used(layout)
        where = f"buffer {buffer.name} (scope {scope!r}) has layout {layout}"
        if scope in MEMORY_SCOPES:
            if axes - {"m"}:
                self.fail(
                    stmt,
                    f"{where} on axes {sorted(axes - {'m'})}; global and shared buffers take memory layouts "
                    "(axis m only): thread axes belong to register fragments (T.alloc_local), TLane/TCol to "
                    "tensor memory (T.alloc_tmem)",
                )
        elif scope == TMEM_SCOPE:
            if not isinstance(layout, TileLayout) or axes - {"TLane", "TCol"}:
                self.fail(stmt, f"{where}; a TMEM buffer takes a TileLayout on TLane/TCol only")
        elif scope == FRAGMENT_SCOPE:
            for axis in sorted(axes - {"m"}):
                try:
                    cta_thread_axis(axis)
                except ValueError as err:
                    self.fail(stmt, f"{where}: {err}; a register fragment takes thread axes of the CTA plus m")
        else:
            self.fail(stmt, f"{where}; only global, shared, local and tmem buffers take a tirx_layout layout")
        self.check_shape(buffer, layout, stmt, scope)

    def check_shape(self, buffer, layout, stmt, scope: str) -> None:
        try:
            count = math.prod(int(e) for e in buffer.shape)
        except TypeError:
            return  # a symbolic shape: the count is not known here
        size = int(layout.size())
        fragment = scope == FRAGMENT_SCOPE and layout_threads(layout)
        if size == count or (fragment and size > count):
            return
        self.fail(
            stmt,
            f"buffer {buffer.name} has {count} elements (shape {tuple(int(e) for e in buffer.shape)}) but its "
            f"layout {layout} lays out {size}"
            + ("; a register fragment's layout may have more (a predicated tail), never fewer" if fragment else ""),
        )

    def check_written(self, buffer, layout, stmt) -> None:
        tile = layout.tile_layout if hasattr(layout, "tile_layout") else layout
        if int(layout.size()) * int(tile.num_replicas()) > MAX_PLACES:
            return  # too large to enumerate; nothing is claimed
        report = injectivity(layout)
        if report.injective:
            return
        first, second, place = report.example
        self.fail(
            stmt,
            f"buffer {buffer.name} is written but its layout {layout} is not injective: elements {first} and "
            f"{second} (row-major) share the place {place} ({report.shared_places} places are shared); ask for "
            "copies of an element with R[...] instead",
        )

    def check_threads(self, buffer, layout, node) -> None:
        if not isinstance(layout, TileLayout):
            return
        inverse = PlaceInverse(layout)
        for axis in layout_threads(layout):
            places = thread_axis_place(axis, 0, self.threads)[1]
            if inverse.reach(axis) > places:
                self.fail(
                    node,
                    f"register fragment {buffer.name} uses {axis} up to {inverse.reach(axis) - 1} but the kernel's "
                    f"{self.threads} threads give {places} places on it",
                )

    # ---- copies -------------------------------------------------------------------------------------------------

    def check_copy(self, copy, stmt) -> None:
        if copy.scope not in COPY_SCOPES:
            self.fail(stmt, f"tile_copy scope must be one of {list(COPY_SCOPES)}, got {copy.scope!r}")
        if LEVEL_THREADS.get(copy.scope, 0) > self.threads:
            self.fail(
                stmt,
                f"a {copy.scope}-scope tile_copy of {copy.dst.source.name} needs {LEVEL_THREADS[copy.scope]} "
                f"threads; the kernel has {self.threads}",
            )
        for role, region in (("destination", copy.dst), ("source", copy.src)):
            buffer = region.source
            self.check_region_bounds(region, f"the {role}", stmt, op=" of tile_copy")
            layout = self.sites.get(buffer, (None, None))[0]
            if buffer.scope() == FRAGMENT_SCOPE and layout is not None and layout_threads(layout):
                self.check_threads(buffer, layout, stmt)
        dst, src = copy.dst.source, copy.src.source
        if dst.scope() == TMEM_SCOPE and src.scope() in ("shared", "shared.dyn"):
            for buffer in (dst, src):
                layout = self.sites.get(buffer, (None, None))[0]
                if layout is not None and reinterprets(layout, buffer.shape):
                    self.fail(
                        stmt,
                        f"tcgen05.cp reads the image of {buffer.name}, but the layout's shape differs from the "
                        f"buffer's: {layout} is written for {layout_dims(layout)}, {buffer.name} has shape "
                        f"{tuple(int(e) for e in buffer.shape)}; give {buffer.name} a layout of its own shape",
                    )

    def check_region_bounds(self, region, what: str, stmt, op: str = "") -> None:
        """Refuse ``region`` (``what`` names it: "the source", "tile_mma's A"; ``op`` follows the region in the
        message) when it provably leaves its buffer."""
        analyzer = tvm.sym.Analyzer()
        buffer = region.source
        for dim, (r, extent) in enumerate(zip(region.region, buffer.shape, strict=True)):
            begin, end = r.min, r.min + r.extent
            if analyzer.can_prove(begin < 0) or analyzer.can_prove(end > extent):
                self.fail(
                    stmt,
                    f"{what} region {region}{op} is outside buffer {buffer.name} (shape {tuple(buffer.shape)}): "
                    f"dimension {dim} runs over [{analyzer.simplify(begin)}, {analyzer.simplify(end)}), the buffer "
                    f"has [0, {extent})",
                )

    # ---- tensor-core MMAs ---------------------------------------------------------------------------------------

    @property
    def wgmma(self) -> bool:
        """Whether tile MMAs lower to wgmma (the target has it)."""
        return self.arch is not None and self.arch.has("wgmma")

    def check_mma(self, mma, stmt) -> None:
        if mma.scope not in MMA_SCOPES:
            self.fail(stmt, f"tile_mma scope must be one of {list(MMA_SCOPES)}, got {mma.scope!r}")
        if self.wgmma:
            self.check_wgmma(mma, stmt)
            return
        if mma.scope == "warpgroup":
            self.fail(stmt, 'tile_mma scope "warpgroup" is for wgmma (sm_90a); tcgen05 takes "cta", "warp", "thread"')
        if not mma.wait:
            self.fail(
                stmt,
                "tile_mma(..., wait=False) is the asynchronous form of wgmma (sm_90a); with tcgen05 pass "
                "barrier=bars[i] and wait with T.mbarrier_wait",
            )
        if (mma.scale_a is None) != (mma.scale_b is None):
            given, missing = ("scale_a", "scale_b") if mma.scale_a is not None else ("scale_b", "scale_a")
            self.fail(
                stmt, f"tile_mma has {given} but no {missing}: a block-scaled MMA takes both, a dense one neither"
            )
        places = {"D": (TMEM_SCOPE,), "A": (*SHARED_SCOPES, TMEM_SCOPE), "B": SHARED_SCOPES}
        operands = {"D": mma.d, "A": mma.a, "B": mma.b}
        if mma.scale_a is not None:
            operands.update(scale_a=mma.scale_a, scale_b=mma.scale_b)
            places.update(scale_a=(TMEM_SCOPE,), scale_b=(TMEM_SCOPE,))
        for name, region in operands.items():
            buffer = region.source
            if buffer.scope() not in places[name]:
                where = " or ".join(
                    {"shared": "shared memory", TMEM_SCOPE: "tensor memory"}[p]
                    for p in dict.fromkeys(p.split(".")[0] for p in places[name])
                )
                self.fail(
                    stmt,
                    f"tile_mma's {name} must be in {where}; {buffer.name} is in {buffer.scope()!r}",
                )
            self.check_region_bounds(region, f"tile_mma's {name}", stmt)
        for name in ("scale_a", "scale_b"):
            region = operands.get(name)
            if region is not None and str(region.source.dtype) != SCALE_DTYPE:
                self.fail(
                    stmt, f"tile_mma's {name} ({region.source.name}) must be {SCALE_DTYPE}, got {region.source.dtype}"
                )
        if mma.barrier is not None:
            self.check_mbarrier(mma.barrier, "tile_mma's barrier", stmt)
        m, n, k = self.mma_shape(operands, stmt)
        a_dtype, b_dtype, d_dtype = (str(operands[n].source.dtype) for n in ("A", "B", "D"))
        try:
            kind = mma_kind(a_dtype, b_dtype, block_scaled=mma.scale_a is not None)
            instruction = MmaInstruction(kind, a_dtype, b_dtype, d_dtype, m, n)
        except ValueError as err:
            self.fail(stmt, f"tile_mma: {err}")
        if k % instruction.k:
            self.fail(
                stmt,
                f"tile_mma's K ({k}) must be whole instruction steps: kind {kind} takes K = {instruction.k} "
                f"{a_dtype} elements per instruction",
            )

    def mma_shape(self, operands: dict, stmt) -> tuple[int, int, int]:
        """M, N, K of a tile_mma whose D, A, B regions are ``operands``: each a 2-D tile once its leading dimensions
        are indexed down to one, with the shapes ``D = A @ B.T`` needs."""
        shapes = {}
        for name in ("D", "A", "B"):
            extents = [int(r.extent) if isinstance(r.extent, tirx.IntImm) else None for r in operands[name].region]
            if None in extents:
                self.fail(stmt, f"tile_mma's {name} region {operands[name]} has a symbolic extent")
            shapes[name] = tuple(e for e in extents if e != 1)
        if any(len(shape) != 2 for shape in shapes.values()):
            self.fail(
                stmt,
                "tile_mma takes 2-D tiles D (M, N), A (M, K), B (N, K) (leading dimensions indexed down to one), got "
                + ", ".join(f"{n} {s}" for n, s in shapes.items()),
            )
        (m, n), (m_a, k), (n_b, k_b) = shapes["D"], shapes["A"], shapes["B"]
        if (m_a, n_b, k_b) != (m, n, k):
            self.fail(
                stmt,
                f"tile_mma computes D = A @ B.T: D is (M, N), A (M, K), B (N, K); got D {shapes['D']}, A "
                f"{shapes['A']}, B {shapes['B']}",
            )
        return m, n, k

    def check_wgmma(self, mma, stmt) -> None:
        """The rules of a tile_mma that lowers to wgmma (module docstring, **wgmma**)."""
        if mma.barrier is not None:
            self.fail(
                stmt,
                "tile_mma(barrier=...) is a tcgen05 feature; on sm_90a (wgmma) write tile_mma(..., wait=False) and "
                "T.tile_mma_wait(pending) (then T.mbarrier_arrive to release a stage)",
            )
        if mma.scale_a is not None or mma.scale_b is not None:
            self.fail(stmt, f"tile_mma with scale factors (block-scaled) needs tcgen05; {self.arch} (wgmma) has none")
        if mma.scope not in ("cta", "warpgroup"):
            self.fail(
                stmt,
                f"tile_mma scope {mma.scope!r} on {self.arch}: wgmma is issued by whole warpgroups (.sync.aligned "
                "over 128 threads); write scope='cta' (every warpgroup its own 64 rows) or scope='warpgroup'",
            )
        operands = {"D": mma.d, "A": mma.a, "B": mma.b}
        for name, region in operands.items():
            self.check_region_bounds(region, f"tile_mma's {name}", stmt)
        d, a, b = (operands[n].source for n in ("D", "A", "B"))
        d_layout = self.sites.get(d, (None,))[0]
        if d.scope() != FRAGMENT_SCOPE or d_layout is None:
            self.fail(
                stmt,
                f"tile_mma's D ({d.name}, {d.scope()!r}) must be a register fragment on {self.arch}: "
                f'T.alloc_local((M, N), "{d.dtype}", layout=wgmma_accumulator_layout(N))'
                + (f", not {d.scope()} memory" if d.scope() != FRAGMENT_SCOPE else "; it has no layout"),
            )
        if a.scope() not in (*SHARED_SCOPES, FRAGMENT_SCOPE):
            self.fail(stmt, f"tile_mma's A ({a.name}) must be in shared memory or registers; it is in {a.scope()!r}")
        if b.scope() not in SHARED_SCOPES:
            self.fail(stmt, f"tile_mma's B ({b.name}) must be in shared memory; it is in {b.scope()!r}")
        m, n, k = self.mma_shape(operands, stmt)
        warpgroups = m // WGMMA_M
        if m % WGMMA_M or warpgroups < 1:
            self.fail(stmt, f"tile_mma's D has M = {m}; wgmma computes 64 rows per warpgroup (M = 64 w)")
        if mma.scope == "warpgroup" and warpgroups != 1:
            self.fail(stmt, f"a warpgroup-scope tile_mma computes one warpgroup's 64 rows; D has M = {m}")
        if mma.scope == "cta" and self.threads != warpgroups * WARPGROUP_THREADS:
            self.fail(
                stmt,
                f"a cta-scope tile_mma on {self.arch} has every warpgroup of the CTA issue its own 64 rows: D has "
                f"M = {m} ({warpgroups} warpgroup(s), {warpgroups * WARPGROUP_THREADS} threads), the CTA has "
                f"{self.threads} threads; use scope='warpgroup' under a condition on the warpgroup for fewer",
            )
        try:
            wgmma_accumulator_check(d_layout, (m, n), str(d.dtype))
        except ValueError as err:
            self.fail(stmt, f"tile_mma's D ({d.name}) is not in the wgmma accumulator layout: {err}")
        if a.scope() == FRAGMENT_SCOPE:
            a_layout = self.sites.get(a, (None,))[0]
            if a_layout is None:
                self.fail(stmt, f"tile_mma's A ({a.name}) in registers needs layout=wgmma_operand_a_layout(K, dtype)")
            try:
                wgmma_operand_a_check(a_layout, (m, k), str(a.dtype))
            except ValueError as err:
                self.fail(stmt, f"tile_mma's A ({a.name}) is not in the wgmma register layout of A: {err}")
        try:
            instruction = WgmmaInstruction(str(a.dtype), str(b.dtype), str(d.dtype), n)
        except ValueError as err:
            self.fail(stmt, f"tile_mma: {err}")
        if k % instruction.k:
            self.fail(
                stmt,
                f"tile_mma's K ({k}) must be whole wgmma steps of {instruction.k} {a.dtype} elements (32 bytes)",
            )

    def check_reached_by_every_thread(self) -> None:
        """A cta-scope tile_mma and T.mbarrier_init end in a CTA barrier: under a condition on the thread index,
        the threads that skip them would leave the others waiting forever."""
        if not self.mmas and not self.mbarriers and not self.mma_waits:
            return
        threads = cta_threads(self.func)
        thread_vars = set(threads.bounds)

        def on_threads(expr) -> bool:
            found = []
            walk(expr, [(tirx.Var, lambda v: found.append(v) if v in thread_vars else None)])
            return bool(found)

        def scan(stmt, guard, conditions=()) -> None:
            if isinstance(stmt, tirx.SeqStmt):
                for part in stmt.seq:
                    scan(part, guard, conditions)
            elif isinstance(stmt, tirx.IfThenElse):
                on = on_threads(stmt.condition)
                inner = guard if guard is not None or not on else stmt.condition
                then_conditions = (*conditions, stmt.condition) if on else conditions
                scan(stmt.then_case, inner, then_conditions)
                if stmt.else_case is not None:
                    scan(stmt.else_case, inner, (*conditions, tirx.Not(stmt.condition)) if on else conditions)
            elif isinstance(stmt, tirx.Evaluate):
                mma, op = as_mma(stmt), as_mbarrier(stmt)
                owned = self.wgmma and mma is not None and mma.scope == "warpgroup"
                if self.wgmma and (mma is not None or as_mma_wait(stmt) is not None) and (guard is not None or owned):
                    reaching = self.check_whole_warpgroups(stmt, conditions, threads)
                    if owned:
                        self.check_accumulator_owner(stmt, mma, reaching)
                if guard is None:
                    return
                if mma is not None and mma.scope == "cta":
                    self.fail(
                        stmt,
                        f"a cta-scope tile_mma has a CTA barrier that every thread must reach, but it sits under "
                        f'`if {guard}`; write scope="warp" (one warp reaches it) or scope="thread"',
                    )
                if op is not None and op.what == "init":
                    self.fail(
                        stmt,
                        f"T.mbarrier_init is CTA-wide (thread 0 initialises, then a CTA barrier) but it sits under "
                        f"`if {guard}`; initialise mbarriers where every thread of the CTA passes",
                    )
            elif isinstance(getattr(stmt, "body", None), tirx.Stmt):
                scan(stmt.body, guard, conditions)

        scan(self.func.body, None)

    def check_whole_warpgroups(self, stmt, conditions, threads) -> set[int]:
        """A wgmma op (``.sync.aligned`` over the warpgroup) under ``conditions`` on the thread index: the threads
        that pass all of them must be whole warpgroups, checked thread by thread (a condition that also depends on
        other variables cannot be checked and is refused). Returns the warpgroups that reach the op."""
        if not conditions:
            return set(range(-(-threads.count // WARPGROUP_THREADS)))
        what = "T.tile_mma_wait" if as_mma_wait(stmt) is not None else "tile_mma"
        written = " and ".join(f"`if {c}`" for c in conditions)
        rule = f"{what} on {self.arch} runs on whole warpgroups (wgmma is .sync.aligned over 128 threads), but "
        analyzer = tvm.sym.Analyzer()
        variables = list(threads.bounds)
        reached = {}  # warpgroup -> whether its threads pass the conditions
        for values in np.ndindex(*[int(threads.bounds[v]) for v in variables]):

            def bound(var, values=values):
                value = next((x for v, x in zip(variables, values, strict=True) if v.same_as(var)), None)
                return var if value is None else tirx.const(int(value), var.ty.dtype)

            thread = analyzer.simplify(map_stmt(threads.index, [(tirx.Var, bound)]))
            taken = [analyzer.simplify(map_stmt(c, [(tirx.Var, bound)])) for c in conditions]
            if not isinstance(thread, tirx.IntImm) or not all(isinstance(t, tirx.IntImm) for t in taken):
                self.fail(stmt, f"{rule}it sits under {written}, which depends on more than the thread index")
            passes = all(bool(t.value) for t in taken)
            group = int(thread.value) // WARPGROUP_THREADS
            if reached.setdefault(group, passes) != passes:
                self.fail(
                    stmt,
                    f"{rule}{written} splits warpgroup {group} (thread {int(thread.value)} differs from the others); "
                    "branch on the warpgroup index (tx // 128)",
                )
        return {group for group, passes in reached.items() if passes}

    def check_accumulator_owner(self, stmt, mma, reaching: set[int]) -> None:
        """A warpgroup-scope tile_mma whose accumulator lives on given warpgroups (its layout has a ``wgid`` place,
        as ``first_warpgroup=`` gives) must be reached by exactly those: another warpgroup would multiply into
        registers that hold nothing of D, and the owner would never get its result."""
        d = mma.d.source
        layout = self.sites.get(d, (None,))[0]
        if layout is None or "wgid" not in axes_used(layout):
            return  # held by every warpgroup alike
        shape = [int(e) for e in d.shape]
        places = layout.apply(*np.meshgrid(*[np.arange(e) for e in shape], indexing="ij"), shape=shape)
        thread = sum(np.asarray(v) * thread_unit(a) for a, v in places.items() if a != "m")
        owners = {int(g) for g in np.unique(np.asarray(thread) // WARPGROUP_THREADS)}
        if reaching != owners:
            self.fail(
                stmt,
                f"tile_mma's D ({d.name}) lives on warpgroup(s) {sorted(owners)} of the CTA, but the warpgroup-scope "
                f"tile_mma is reached by warpgroup(s) {sorted(reaching)}: only D's own warpgroup can issue its "
                "wgmma (put the op under `if tx // 128 == <its warpgroup>`, or build D's layout with that "
                "first_warpgroup)",
            )

    def check_mbarrier(self, bar, what: str, stmt) -> None:
        buffer = bar.source
        if buffer.scope() not in SHARED_SCOPES or str(buffer.dtype) != "uint64":
            self.fail(
                stmt,
                f'{what} {bar} must be an element of a shared uint64 buffer (T.alloc_shared((n,), "uint64")); '
                f"{buffer.name} is {buffer.dtype} in {buffer.scope()!r}",
            )

    # ---- target -------------------------------------------------------------------------------------------------

    def check_target(self) -> None:
        try:
            arch = target_arch(self.func)
        except ValueError as err:
            raise LayoutVerificationError(f"{err} (target of {self.name})") from None
        if arch is None:
            return
        self.arch = arch
        tmem = [b for b in function_buffers(self.func) if b.scope() == TMEM_SCOPE]
        if tmem and not arch.has("tcgen05"):
            stmt = self.sites.get(tmem[0], (None, self.func))[1]
            hopper = (
                "; on Hopper the accumulator is a register fragment: T.alloc_local((M, N), dtype, "
                "layout=wgmma_accumulator_layout(N))"
                if arch.has("wgmma")
                else ""
            )
            self.fail(
                stmt,
                f"buffer {tmem[0].name} lives in tensor memory, which target {arch} does not have "
                f"(tcgen05.alloc/ld/st/cp exist on {', '.join(targets_with('tcgen05'))}){hopper}",
            )
        if (self.mmas or self.mma_waits) and not arch.has("tcgen05") and not arch.has("wgmma"):
            self.fail(
                self.mmas[0][1] if self.mmas else self.mma_waits[0],
                f"target {arch} has no tensor-core MMA tile_mma lowers to: tcgen05.mma exists on "
                f"{', '.join(targets_with('tcgen05'))}, wgmma on {', '.join(targets_with('wgmma'))}",
            )
        if self.mma_waits and not arch.has("wgmma"):
            self.fail(
                self.mma_waits[0],
                f"T.tile_mma_wait waits for wgmma groups ({', '.join(targets_with('wgmma'))}); on {arch} an "
                "asynchronous tile_mma commits to barrier=bars[i] and T.mbarrier_wait waits for it",
            )

    def run(self) -> None:
        self.gather()
        self.check_target()
        for buffer, (layout, stmt) in self.sites.items():
            self.check_layout(buffer, layout, stmt)
        for buffer, (layout, stmt) in self.sites.items():
            if buffer in self.written:
                self.check_written(buffer, layout, stmt)
        for copy, stmt in self.copies:
            self.check_copy(copy, stmt)
        for mma, stmt in self.mmas:
            self.check_mma(mma, stmt)
        for op, stmt in self.mbarriers:
            self.check_mbarrier(op.bar, f"T.mbarrier_{op.what}'s mbarrier", stmt)
        self.check_reached_by_every_thread()


def verify_layouts(func):
    """``func`` unchanged, after checking every layout and tile copy it carries (see the module docstring); raises
    :class:`LayoutVerificationError` (``TypeError`` for a layout object that is not ours) naming the buffer.

    Example (a thread-axis layout on a shared buffer):
        >>> import tvm, tirx_layout
        >>> func = tvm.script.from_source('''
        ... @T.prim_func
        ... def k(A: T.Buffer((128, 16), "float32")):
        ...     T.device_entry()
        ...     tx = T.thread_id([128])
        ...     Sm = T.alloc_shared((128, 16), "float32", layout=T.layout("S[(128, 16):(1@tid_in_wg, 1)]"))
        ...     T.tile_copy(Sm, A)
        ... ''')
        >>> verify_layouts(func)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        tirx_layout...LayoutVerificationError: buffer Sm (scope 'shared') has layout ... on axes ['tid_in_wg']; ...
    """
    _Verifier(func).run()
    return func


@tvm.tirx.transform.prim_func_pass(opt_level=0, name="tirx_layout.VerifyLayouts")
class VerifyLayouts:
    """The registered pass: :func:`verify_layouts` on every PrimFunc of a module; the module is returned unchanged.

    Example: ``VerifyLayouts()(mod)`` is ``mod`` when every function of it verifies, else the error of
    :func:`verify_layouts`'s example.
    """

    def transform_function(self, func, mod, ctx):
        return verify_layouts(func)
