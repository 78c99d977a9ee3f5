"""VerifyLayouts: a program the later passes would miscompile is refused here, at build time, first in the pipeline.

Every layout a function carries is checked against its buffer:

* **type** — a layout object that is not ours (an upstream ``tvm.tirx.layout`` one in the buffer's type, or
  anything else under our annotation key) is a ``TypeError``: no pass of ours would read it;
* **scope** — global and shared buffers take memory layouts (axis ``m`` only), TMEM buffers ``TLane``/``TCol`` only,
  register fragments (``local``) thread axes of the CTA plus ``m``; no other scope takes a layout;
* **shape** — the layout has the buffer's element count (a fragment may have more: the tail is predicated). A layout
  written for another shape with that count is reinterpreted by flattening (``explain_layouts`` says so), except
  where an instruction reads the operand's image (``tcgen05.cp``), where it is refused;
* **registers** — a register fragment's slots fit one thread's register file (``hw.memory.check_register_file``:
  255 32-bit registers), naming its bytes per thread;
* **injectivity** — a buffer that is written (a region an op writes, a store's target) has a shard that puts two
  elements in two places; replicas are asked for with ``R[...]``;
* **cluster** — a cluster shape (``T.cta_id_in_cluster``) the hardware allows: at most 8 CTAs, a grid of whole
  clusters, a target with clusters (``hw/clusters.py``);
* **target** — tensor memory (``tcgen05``) only for a target that has it (``hw/targets.py``; on sm_90a the message
  points at the register accumulator of ``wgmma``), and the target's architecture must exist.

Every tile op is checked by its own rules (``OpSpec.resolve`` in ``tirx_layout.ops``: the op's spec states them,
once, for this pass and the lowering alike), the rules every op shares among them (a region inside its buffer, a
fragment within the kernel's threads, an mbarrier in shared memory). The rules that read a layout inference has not
chosen yet wait for the lowering. Then where each op sits: an op that needs every thread of the CTA (its record's
``reach`` is ``"cta"``: a CTA barrier inside, or work shared among every thread, as a cta-scope copy) must not sit
under a condition on the thread index, and one that whole warpgroups or warps run (``"warpgroup"``: ``.sync.aligned``
over 128 threads, or a warpgroup-scope copy; ``"warp"``) under conditions that split one. A condition that reads the
thread index only through the warp index (``tx // 32``), memory included (``if vote[tx // 32 % 4] < 1``: a value
each warp reads at one address), is the same across each warp: a warp-level op, or one whose warps each run whole-warp
instructions of their own (``Reach.per_warp``: ``tcgen05.ld/st`` copies, ``T.tile_parallel``), takes it as uniform --
a warp skips its part; any other op sitting under it is refused as before.

Errors are :class:`LayoutVerificationError` (a ``ValueError``; ``TypeError`` for foreign layout objects), name the
buffer and, when the function came from TVMScript source, the line. The pass changes nothing.
"""

from __future__ import annotations

import math

import numpy as np
import tvm
import tvm_ffi
from tvm import tirx
from tvm.ir import TensorLoad

from ..analysis.injectivity import MAX_PLACES, injectivity
from ..hw.clusters import check_cluster
from ..hw.memory import check_register_file
from ..hw.targets import targets_with
from ..hw.tcgen05 import TMEM_SCOPE
from ..hw.threads import LEVEL_THREADS, WARP_THREADS, cta_thread_axis
from ..ir.annotations import foreign_layout, foreign_layout_error, function_buffers, layout_sites
from ..ir.rewrite import map_stmt, walk
from ..ir.spans import source_location
from ..ir.threads import cluster_launch
from ..layout import TileLayout
from ..layout.placement import axes_used, layout_threads, slot_count
from ..ops import find
from ..ops.context import OpContext

MEMORY_SCOPES = ("global", "shared", "shared.dyn")
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
        self.calls = []  # the OpCall of every tile op, in program order
        self.records = {}  # Evaluate statement -> the record its op's rules made of it
        self.passing = {}  # (id of a branch's conditions, per_warp) -> (them, passing_threads' table)
        self.ctx = None

    def fail(self, node, message: str, kind=LayoutVerificationError):
        raise kind(f"{message}{source_location(node)} in {self.name}")

    # ---- gathering ----------------------------------------------------------------------------------------------

    def gather(self) -> None:
        for buffer in function_buffers(self.func):
            foreign = foreign_layout(buffer)
            if foreign is not None:
                raise TypeError(f"{foreign_layout_error(buffer, foreign)} (in {self.name})")
        for buffer, layout, stmt in layout_sites(self.func):
            self.sites[buffer] = (layout, stmt)

        def on_evaluate(stmt):
            try:
                call = find(stmt)
            except ValueError as err:  # a call of ours spelled wrongly (written by hand)
                self.fail(stmt, str(err))
            if call is None:
                return
            self.calls.append(call)
            for field, region in call.regions():
                if field.writes:
                    self.written.setdefault(region.source, stmt)

        def on_store(stmt):
            self.written.setdefault(stmt.buffer, stmt)

        walk(self.func.body, [(tirx.Evaluate, on_evaluate), (tirx.For, on_evaluate), (tirx.BufferStore, on_store)])

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
            if isinstance(layout, TileLayout) and axes - {"m"}:
                try:
                    check_register_file(buffer.name, slot_count(layout), buffer.dtype)
                except ValueError as err:
                    self.fail(stmt, str(err))
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

    # ---- target -------------------------------------------------------------------------------------------------

    def check_target(self) -> None:
        try:
            self.ctx = OpContext(self.func, decided=False)
        except ValueError as err:
            raise LayoutVerificationError(f"{err} (target of {self.name})") from None
        arch = self.ctx.target
        grid, cluster = cluster_launch(self.func)
        if cluster is not None:
            try:
                check_cluster(cluster, grid or (None,), self.ctx.arch)
            except ValueError as err:
                self.fail(self.func, f"T.cta_id_in_cluster({list(cluster)}): {err}")
        if arch is None:
            return
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

    # ---- the ops ------------------------------------------------------------------------------------------------

    def check_ops(self) -> None:
        """Every op call through its spec's rules (``OpSpec.resolve``)."""
        for call in self.calls:
            try:
                self.records[call.stmt] = call.spec.resolve(call, self.ctx)
            except ValueError as err:
                self.fail(call.stmt, str(err))

    def check_reach(self) -> None:
        """Where each op sits (see the module docstring): the conditions on the thread index around it."""
        if not any(record.reach is not None for record in self.records.values()):
            return
        on_threads = self.on_threads

        def scan(stmt, conditions=()) -> None:
            if isinstance(stmt, tirx.SeqStmt):
                for part in stmt.seq:
                    scan(part, conditions)
            elif isinstance(stmt, tirx.IfThenElse):
                on = on_threads(stmt.condition)
                scan(stmt.then_case, (*conditions, stmt.condition) if on else conditions)
                if stmt.else_case is not None:
                    scan(stmt.else_case, (*conditions, tirx.Not(stmt.condition)) if on else conditions)
            elif isinstance(stmt, tirx.Evaluate) or stmt in self.records:  # a call, or a loop op's nest
                record = self.records.get(stmt)
                if record is not None and record.reach is not None:
                    self.check_reached(stmt, record, conditions)
            elif isinstance(getattr(stmt, "body", None), tirx.Stmt):
                scan(stmt.body, conditions)

        scan(self.func.body)

    def on_threads(self, expr) -> bool:
        """Whether ``expr`` reads a thread index."""
        thread_vars, found = set(self.ctx.threads.bounds), []
        walk(expr, [(tirx.Var, lambda v: found.append(v) if v in thread_vars else None)])
        return bool(found)

    def per_warp(self, expr) -> bool:
        """Whether ``expr`` reads memory, and the (one-dimensional) thread index only through the warp index: it
        stays the same when ``tx`` becomes ``tx // 32 * 32 + lane`` for any lane (every lane of a warp reads the same
        address, so the same value). A part on the thread index alone is evaluated thread by thread instead."""
        bounds, loads = self.ctx.threads.bounds, []
        walk(expr, [(TensorLoad, loads.append)])
        if len(bounds) != 1 or not loads:
            return False
        (tx, extent), lane = next(iter(bounds.items())), tirx.Var("lane", "int32")
        analyzer = tvm.sym.Analyzer()
        analyzer.bind(tx, tvm.ir.Range(0, extent))
        analyzer.bind(lane, tvm.ir.Range(0, WARP_THREADS))
        moved = map_stmt(expr, [(tirx.Var, lambda v: tx // WARP_THREADS * WARP_THREADS + lane if v.same_as(tx) else v)])
        return tvm_ffi.structural_equal(analyzer.simplify(moved), analyzer.simplify(expr))

    def uniform_parts(self, condition, parts: dict, per_warp: bool = False):
        """``condition`` with each boolean part that reads no thread index (``k >= 1`` in ``tx < 128 and k >= 1``:
        the same for every thread) -- and with ``per_warp``, each part the same across each warp (:meth:`per_warp`)
        -- replaced by a bool variable, recorded in ``parts`` (variable -> part)."""
        if isinstance(condition, tirx.And | tirx.Or):
            a = self.uniform_parts(condition.a, parts, per_warp)
            b = self.uniform_parts(condition.b, parts, per_warp)
            return type(condition)(a, b)
        if isinstance(condition, tirx.Not):
            return tirx.Not(self.uniform_parts(condition.a, parts, per_warp))
        if self.on_threads(condition) and not (per_warp and self.per_warp(condition)):
            return condition
        part = tirx.Var(f"uniform_{len(parts)}", "bool")
        parts[part] = condition
        return part

    def check_reached(self, stmt, record, conditions) -> None:
        if record.reach.level == "cta":
            if conditions:
                self.fail(stmt, record.reach.message(conditions[0]))
            return
        reaching = self.whole_units(stmt, record, conditions)
        try:
            record.check_reached_by(reaching)
        except ValueError as err:
            self.fail(stmt, str(err))

    def whole_units(self, stmt, record, conditions) -> set[int]:
        """An op whole warps or warpgroups (the record's ``reach`` level) run under ``conditions`` on the thread
        index: the threads that pass all of them must be whole units (:meth:`passing_threads`). A part of a condition
        that reads the thread index and another variable (``tx < M``) cannot be checked and is refused. Returns the
        units that reach the op for some value of the conditions' uniform parts."""
        unit = LEVEL_THREADS[record.reach.level]
        if not conditions:
            return set(range(-(-self.ctx.threads.count // unit)))
        written = " and ".join(f"`if {c}`" for c in conditions)
        rule = record.reach.refusal
        table = self.passing_threads(conditions, record.reach.level == "warp" or record.reach.per_warp)
        if table is None:
            self.fail(stmt, f"{rule}it sits under {written}, which depends on more than the thread index")
        reached = {}  # (the uniform parts' values, unit) -> whether the unit's threads pass the conditions
        for uniform, thread, passes in table:
            group = thread // unit
            if reached.setdefault((uniform, group), passes) != passes:
                self.fail(
                    stmt,
                    f"{rule}{written} splits {record.reach.level} {group} (thread {thread} differs from the others); "
                    f"branch on the {record.reach.level} index (tx // {unit})",
                )
        return {group for (_, group), passes in reached.items() if passes}

    def passing_threads(self, conditions: tuple, per_warp: bool = False) -> list | None:
        """``(values of the uniform parts, thread, whether it passes every condition)`` for every thread of the CTA
        and either value of each part of a condition that reads no thread index (``k >= 1``: the same for every
        thread; with ``per_warp``, also a part the same across each warp); ``None`` when some part reads the thread
        index and another variable. Evaluated once per branch and ``per_warp``: every op in it is handed the same
        ``conditions``."""
        key = (id(conditions), per_warp)
        if key in self.passing:
            return self.passing[key][1]
        threads, parts = self.ctx.threads, {}
        abstract = [self.uniform_parts(c, parts, per_warp) for c in conditions]
        analyzer = tvm.sym.Analyzer()
        variables = [*threads.bounds, *parts]
        extents = [int(threads.bounds[v]) for v in threads.bounds] + [2] * len(parts)
        table = []
        for values in np.ndindex(*extents):

            def bound(var, values=values):
                value = next((x for v, x in zip(variables, values, strict=True) if v.same_as(var)), None)
                return var if value is None else tirx.const(int(value), var.ty.dtype)

            thread = analyzer.simplify(map_stmt(threads.index, [(tirx.Var, bound)]))
            taken = [analyzer.simplify(map_stmt(c, [(tirx.Var, bound)])) for c in abstract]
            if not isinstance(thread, tirx.IntImm) or not all(isinstance(t, tirx.IntImm) for t in taken):
                table = None
                break
            table.append((values[len(threads.bounds) :], int(thread.value), all(bool(t.value) for t in taken)))
        self.passing[key] = (conditions, table)  # holding ``conditions`` keeps its id unique
        return table

    def run(self) -> None:
        self.gather()
        self.check_target()
        for buffer, (layout, stmt) in self.sites.items():
            self.check_layout(buffer, layout, stmt)
        for buffer, (layout, stmt) in self.sites.items():
            if buffer in self.written:
                self.check_written(buffer, layout, stmt)
        self.check_ops()
        self.check_reach()


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
