"""InferLayouts: every register fragment (scope ``local``) and shared buffer that a tile op relates to others and
that was declared without a layout gets one. What relates them is each op's inference relation (``OpSpec.relations``
in ``tirx_layout.ops``): :class:`~tirx_layout.ops.Equal` (a copy: the two sides hold equal tiles),
:class:`~tirx_layout.ops.OneOf` (the op reads the buffer in one of a few layouts only) and
:class:`~tirx_layout.ops.Derived` (the buffer's layout is a function of others'). They are solved in three levels:

* **strict** — layouts the hardware forces: a ``Derived`` relation whose sources are given (a fragment copied to or
  from tensor memory takes the ``tcgen05.ld/st`` register image of the TMEM tile); a ``OneOf`` buffer (a shared
  operand of ``T.tile_mma`` takes a canonical MMA layout) takes the legal layout cheapest for its copies.
* **common** — propagation. Two fragments copied into each other must have the same layout (anything else moves
  data between threads), so an open fragment takes a known partner's layout; a ``Derived`` relation fires as soon as
  its sources are decided. An open buffer whose every partner is known takes the candidate cheapest against those
  partners: a fragment copied from a shared tile inherits the thread partition that reads that tile best.
* **free** — each connected group of open buffers: every member is tried as the root with each of its candidates,
  the others then choose greedily (breadth first: a fragment copied to or from a fragment already placed takes its
  placement, any other member the cheapest against what is fixed); the cheapest attempt is kept. Ties go to the
  earlier root and candidate. Propagation runs again after each group.

Candidates: for a shared tile, the layouts :func:`~tirx_layout.analysis.swizzle_candidates` lists (row-major, MMA
swizzles, every XOR swizzle; row-major only for non-2-D tiles); for a fragment of ``n`` threads, one row per thread
(``wg_local_layout``) when the rows equal the threads, the warp MMA-accumulator tiling when the rows are 8 per warp,
and vectors of 16, 8, 4 bytes or one element dealt round-robin to the threads — padded to whole rounds, so any width
works (the tail is predicated, see ``layout.placement.tail_padded``).

Scores come from ``cost_model`` (``"io-aware"`` by default). True conflicts raise :class:`LayoutConflict`, naming
both buffers, both copies, both layouts and the first coordinate where they disagree.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import tvm
import tvm_ffi
from tvm import tirx

from ...analysis.shape_fit import layout_dims, reinterprets
from ...analysis.thread_placement import placement_difference, same_placement
from ...hw.memory import dtype_bytes
from ...ir.annotations import LAYOUT_KEY, buffer_layouts
from ...ir.rewrite import AllocBuffer, DeclBuffer, map_function, walk
from ...ir.threads import cta_threads
from ...layout.axis import EXEC_LEVELS
from ...layout.placement import layout_threads
from ...ops import Derived, Equal, OneOf, find
from ...ops.operands import LayoutTables
from .candidates import fragment_candidates, shared_candidates
from .cost_model import DEFAULT_COST_MODEL, Cost, copy_cost, fragment_registers, score_function, worst_case

INFERRED_SCOPES = ("local", "shared")


@tvm_ffi.register_error("tirx_layout.LayoutConflict")  # keeps its type through tvm.tirx.build / tvm.compile
class LayoutConflict(ValueError):
    """Two copies demand different layouts of one buffer (or two fixed fragments copied into each other differ).

    Example:
        >>> issubclass(LayoutConflict, ValueError)
        True
    """


@dataclass
class CopyOp:
    """One ``T.tile_copy`` of the kernel: its number (in program order), regions and scope.

    Example:
        >>> import tvm
        >>> A, F = tvm.tirx.decl_buffer((4,), "float32", "A"), tvm.tirx.decl_buffer((4,), "float32", "F", scope="local")
        >>> str(CopyOp(0, F[0:4], A[0:4], "cta"))
        'copy #0 T.tile_copy(F[0:4], A[0:4])'
    """

    index: int
    dst: object
    src: object
    scope: str
    where: str = ""  # " (line N of FILE)" when parsed from TVMScript (ir.spans.source_location)

    @property
    def buffers(self):
        return (self.dst.source, self.src.source)

    def __str__(self) -> str:
        return f"copy #{self.index} T.tile_copy({self.dst}, {self.src}){self.where}"


@dataclass
class Decision:
    """The layout chosen for one buffer, the level that chose it and the cost of its copies under that choice.

    Example:
        >>> print(Decision("frag", "S[32:1@laneid]", "free", Cost(bytes=128, instructions=1), "io-aware"))
        frag: S[32:1@laneid] [free, io-aware: bytes=128 instr=1 wavefronts=0 regs=0; 1 candidate(s)]
    """

    buffer: str
    layout: object
    level: str
    cost: Cost
    model: str
    candidates: int = 1
    reason: str = ""

    def __str__(self) -> str:
        return (
            f"{self.buffer}: {self.layout} [{self.level}, {self.model}: {self.cost.short()}; "
            f"{self.candidates} candidate(s)] {self.reason}"
        ).rstrip()


def _merge_one_of(buffer, first: OneOf, second: OneOf) -> OneOf:
    """The layouts two ops can both read ``buffer`` in (by label); a :class:`LayoutConflict` if none."""
    labels = set(second.labels)
    kept = tuple(option for option in first.options if option[0] in labels)
    if not kept and first.options and second.options:
        raise LayoutConflict(
            f"layout conflict on {buffer.name}: {first.why} reads it in one of {list(first.labels)}, "
            f"{second.why} in one of {list(second.labels)}; no layout serves both"
        )
    requirement = "; ".join(r for r in (first.requirement, second.requirement) if r)
    return OneOf(buffer, f"{first.why} and {second.why}", kept, requirement)


# ---- the analysis ---------------------------------------------------------------------------------------------


@dataclass
class KernelCopies:
    """What inference sees of a kernel: its ops' relations -- the copies (:class:`CopyOp`, from ``Equal``) in program
    order, the legal layouts of operands (``OneOf``, merged per buffer) and the derived layouts (``Derived``) --,
    the buffers it may lay out (``open``: buffer -> its allocation), the layouts the author gave (``known``) and the
    direct element accesses of open buffers, which the cost model charges the worst case."""

    copies: list = field(default_factory=list)
    open: dict = field(default_factory=dict)  # buffer -> AllocBuffer statement
    known: dict = field(default_factory=dict)
    direct: dict = field(default_factory=dict)  # open buffer -> direct element accesses (charged worst case)
    operands: dict = field(default_factory=dict)  # buffer -> OneOf (the layouts its ops can read it in)
    derived: list = field(default_factory=list)  # Derived relations, in program order


def scan(func) -> KernelCopies:
    """The copies, open buffers and known layouts of ``func`` (see :class:`KernelCopies`).

    Example: ``scan(func).copies`` lists a :class:`CopyOp` per ``T.tile_copy``; ``scan(func).open`` holds every
    ``T.alloc_local``/``T.alloc_shared`` buffer without a layout that some op's relation names.
    """
    kernel = KernelCopies(known=dict(buffer_layouts(func)))
    allocs = {}

    def on_alloc(stmt):
        if LAYOUT_KEY not in stmt.annotations and stmt.buffer.scope() in INFERRED_SCOPES:
            allocs[stmt.buffer] = stmt

    def on_evaluate(stmt):
        call = find(stmt)
        if call is None:
            return
        for relation in call.spec.relations(call):
            if isinstance(relation, Equal):
                copy = CopyOp(len(kernel.copies), relation.dst, relation.src, relation.scope, relation.where)
                kernel.copies.append(copy)
            elif isinstance(relation, OneOf):
                seen = kernel.operands.get(relation.buffer)
                merged = relation if seen is None else _merge_one_of(relation.buffer, seen, relation)
                kernel.operands[relation.buffer] = merged
            elif isinstance(relation, Derived):
                kernel.derived.append(relation)

    def on_load(node):
        if node.source in allocs:
            kernel.direct[node.source] = kernel.direct.get(node.source, 0) + 1

    def on_store(node):
        if node.buffer in allocs:
            kernel.direct[node.buffer] = kernel.direct.get(node.buffer, 0) + 1

    viewed = set()

    def on_decl(stmt):
        viewed.add(stmt.buffer.data)

    walk(func.body, [(AllocBuffer, on_alloc), (DeclBuffer, on_decl)])
    # A buffer whose storage other declarations view keeps its row-major storage: the views were written for it.
    allocs = {b: s for b, s in allocs.items() if b.data not in viewed}
    walk(
        func.body,
        [
            (tirx.Evaluate, on_evaluate),
            (tirx.For, on_evaluate),
            (tvm.ir.TensorLoad, on_load),
            (tirx.BufferStore, on_store),
        ],
    )
    # The copy regions' own loads are not direct accesses; only copies count.
    used = {b for c in kernel.copies for b in c.buffers} | set(kernel.operands) | {d.target for d in kernel.derived}
    kernel.open = {b: s for b, s in allocs.items() if b in used}
    return kernel


def _conflict(buffer, first, second, threads: int) -> LayoutConflict:
    """``first`` and ``second`` are (layout, source buffer, copy) demands on ``buffer``."""
    (la, ba, ca), (lb, bb, cb) = first, second
    return LayoutConflict(
        f"layout conflict on {buffer.name}: {ca} gives it {ba.name}'s layout {la}, but {cb} gives it "
        f"{bb.name}'s layout {lb}; they disagree at {placement_difference(la, lb, buffer.shape, threads)}"
    )


class _Inference:
    def __init__(self, func, model: str):
        self.func = func
        self.model = model
        self.score = score_function(model)
        self.kernel = scan(func)
        self.threads = cta_threads(func).count if self.kernel.open else 0
        self.fixed = dict(self.kernel.known)  # buffer -> layout, grows as levels decide
        self.origin = {}  # buffer -> (layout, source buffer, copy) for conflict messages
        self.decisions: list[Decision] = []
        self.alignments = {}  # buffer -> the byte alignment its chosen layout needs, above the declared one
        self._costs = {}  # (copy, layouts of its buffers) -> Cost
        self._candidates = {}  # buffer -> its candidate layouts
        self._tables = LayoutTables()

    # -- costs ------------------------------------------------------------------------------------------------------

    def copy_cost(self, copy: CopyOp, layouts: dict) -> Cost:
        key = (copy.index, *(layouts.get(b) for b in copy.buffers))
        if key not in self._costs:
            self._costs[key] = copy_cost(copy.dst, copy.src, copy.scope, layouts, self.threads, self._tables)
        return self._costs[key]

    def buffer_cost(self, buffer, layouts: dict, only_fixed: bool = True) -> Cost:
        """Cost of ``buffer``'s copies whose other side has a layout in ``layouts`` (or is global), plus its
        registers and the worst case of its direct accesses."""
        cost = Cost()
        for copy in self.kernel.copies:
            if buffer not in copy.buffers:
                continue
            other = copy.buffers[1] if copy.buffers[0].same_as(buffer) else copy.buffers[0]
            if only_fixed and other in self.kernel.open and other not in layouts:
                continue
            cost = cost + self.copy_cost(copy, layouts)
        return cost + self.own_cost(buffer, layouts[buffer])

    def own_cost(self, buffer, layout) -> Cost:
        cost = Cost()
        if layout_threads(layout):
            cost.registers = fragment_registers(layout, dtype_bytes(buffer.dtype))
        count = self.kernel.direct.get(buffer, 0)
        if count:
            size = math.prod(int(e) for e in buffer.shape)
            unknown = worst_case(size, dtype_bytes(buffer.dtype), int(buffer.scope() == "shared"), sides=1)
            for _ in range(count):
                cost = cost + unknown
        return cost

    def candidates(self, buffer) -> list:
        if buffer not in self._candidates:
            if buffer.scope() == "local":
                self._candidates[buffer] = fragment_candidates(
                    buffer.shape, buffer.dtype, self.threads, self.narrowest_scope(buffer), buffer.name
                )
            else:
                self._candidates[buffer] = shared_candidates(buffer.shape, buffer.dtype)
        return self._candidates[buffer]

    def narrowest_scope(self, buffer) -> str:
        """The narrowest scope of the copies ``buffer`` is in: a fragment copied by each warp (or warpgroup) is
        held whole by each, so its candidates use only that unit's thread axes."""
        scopes = [copy.scope for copy in self.kernel.copies if buffer in copy.buffers] or ["cta"]
        return max(scopes, key=EXEC_LEVELS.index)

    # -- levels -----------------------------------------------------------------------------------------------------

    def assign(self, buffer, layout, level: str, source, copy, cost=None, candidates: int = 1, reason: str = ""):
        demand = (layout, source, copy)
        if buffer in self.fixed:
            if not same_placement(self.fixed[buffer], layout, buffer.shape, self.threads):
                raise _conflict(
                    buffer,
                    self.origin.get(buffer, (self.fixed[buffer], buffer, "its declaration")),
                    demand,
                    self.threads,
                )
            return
        self.fixed[buffer] = layout
        self.origin[buffer] = demand
        if cost is None:
            cost = self.buffer_cost(buffer, self.fixed)
        self.decisions.append(Decision(buffer.name, layout, level, cost, self.model, candidates, reason))

    def derive(self, level: str) -> bool:
        """Each ``Derived`` relation whose sources are decided gives its open target the derived layout (a target
        with a layout already is the lowering's to check); whether any did."""
        changed = False
        for relation in self.kernel.derived:
            target = relation.target
            if target in self.fixed or target not in self.kernel.open:
                continue
            if not all(source in self.fixed for source in relation.sources):
                continue
            layout = relation.derive(dict(self.fixed))
            self.assign(target, layout, level, target, relation.why, reason=f"forced by {relation.why}")
            changed = True
        return changed

    def propagate(self) -> None:
        """The common level's propagation until nothing changes: fragment pairs, then derived layouts."""
        self.fragment_pairs()
        while self.derive("common"):
            self.fragment_pairs()

    def partner_cost(self, copy: CopyOp, buffer, layout) -> Cost:
        """The cost of ``copy`` with ``buffer`` in ``layout``; an open partner takes its cheapest candidate."""
        other = copy.buffers[1] if copy.buffers[0].same_as(buffer) else copy.buffers[0]
        if other in self.fixed or other not in self.kernel.open:
            return self.copy_cost(copy, {**self.fixed, buffer: layout})
        costs = [self.copy_cost(copy, {**self.fixed, buffer: layout, other: c}) for c in self.candidates(other)]
        return min(costs, key=self.score)

    def operand_layouts(self):
        """Open buffers an op reads in ``OneOf`` a few layouts take the legal layout cheapest for their copies (ties
        to the earlier); the decision lists every legal layout's score."""
        for buffer, legal in self.kernel.operands.items():
            if buffer not in self.kernel.open or buffer in self.fixed:
                continue
            if not legal.options:
                shape = tuple(int(e) for e in buffer.shape)
                raise ValueError(
                    f"{legal.why}: {buffer.name} {shape} {buffer.dtype} has no layout, and none of the layouts it "
                    f"can take fits it: {legal.requirement}"
                )
            scored = []
            for i, (label, layout, alignment) in enumerate(legal.options):
                cost = self.own_cost(buffer, layout)
                for copy in self.kernel.copies:
                    if buffer in copy.buffers:
                        cost = cost + self.partner_cost(copy, buffer, layout)
                scored.append((self.score(cost), i, label, layout, alignment))
            _, _, label, layout, alignment = min(scored, key=lambda t: (t[0], t[1]))
            table = ", ".join(f"{lab} {sc}" for sc, _, lab, _, _ in scored)
            aligned = ""
            if alignment > int(buffer.data_alignment):
                self.alignments[buffer] = alignment
                aligned = f"; storage aligned to {alignment} bytes (declared {int(buffer.data_alignment)})"
            self.assign(
                buffer,
                layout,
                "strict",
                buffer,
                legal.why,
                candidates=len(scored),
                reason=f"{label}: legal for {legal.why}, cheapest for its copies ({self.model} scores: {table})"
                + aligned,
            )

    def fragment_pairs(self):
        """Fragment-to-fragment copies: equal layouts, propagated until nothing changes; a pair with an inferred side
        checked (two declared layouts that differ are a conversion the copy lowers: ``ops/copy/exchange.py``)."""
        changed = True
        while changed:
            changed = False
            for copy in self.kernel.copies:
                a, b = copy.buffers
                if a.scope() != "local" or b.scope() != "local":
                    continue
                for this, other in ((a, b), (b, a)):
                    if other not in self.fixed or not layout_threads(self.fixed[other]):
                        continue
                    if this in self.fixed:
                        if this not in self.origin and other not in self.origin:
                            continue  # both declared: a copy between different placements exchanges the data
                        if not same_placement(self.fixed[this], self.fixed[other], this.shape, self.threads):
                            # Name the buffer that was inferred (its layout came through another copy).
                            subject, fixed = (other, this) if other in self.origin else (this, other)
                            first = self.origin.get(subject, (self.fixed[subject], subject, "its declaration"))
                            raise _conflict(subject, first, (self.fixed[fixed], fixed, copy), self.threads)
                        continue
                    if this in self.kernel.open:
                        self.assign(
                            this,
                            self.fixed[other],
                            "common",
                            other,
                            copy,
                            reason=f"same layout as {other.name} ({copy})",
                        )
                        changed = True

    def groups(self) -> list[list]:
        """Connected groups of still-open buffers (linked by copies between two open buffers)."""
        open_ = [b for b in self.kernel.open if b not in self.fixed]
        parent = {b: b for b in open_}

        def find(b):
            while not parent[b].same_as(b):
                b = parent[b]
            return b

        for copy in self.kernel.copies:
            a, b = copy.buffers
            if a in parent and b in parent:
                parent[find(a)] = find(b)
        groups: dict = {}
        for b in open_:
            groups.setdefault(find(b), []).append(b)
        return list(groups.values())

    def neighbours(self, buffer, members) -> list:
        out = []
        for copy in self.kernel.copies:
            a, b = copy.buffers
            for this, other in ((a, b), (b, a)):
                if this.same_as(buffer) and other in members and not any(o.same_as(other) for o in out):
                    out.append(other)
        return out

    def group_cost(self, members, layouts) -> Cost:
        cost = Cost()
        for copy in self.kernel.copies:
            if any(b in members for b in copy.buffers):
                cost = cost + self.copy_cost(copy, layouts)
        for b in members:
            cost = cost + self.own_cost(b, layouts[b])
        return cost

    def best(self, buffer, layouts):
        options = self.candidates(buffer)
        scored = [(self.score(self.buffer_cost(buffer, {**layouts, buffer: c})), i, c) for i, c in enumerate(options)]
        return min(scored, key=lambda t: (t[0], t[1]))[2], len(options)

    def fragment_partner_layout(self, buffer, layouts):
        """The layout of a fragment ``buffer`` is copied to or from that ``layouts`` already places on threads, else
        ``None``: a copy between two fragments moves no data between threads only when both sides have one placement
        (the rule :meth:`fragment_pairs` applies), whatever each side's cheapest vector width alone would be -- a
        float16 fragment cast to float8 takes the float16 side's 16-byte vectors, not float8's."""
        if buffer.scope() != "local":
            return None
        for copy in self.kernel.copies:
            a, b = copy.buffers
            for this, other in ((a, b), (b, a)):
                local = other.scope() == "local" and other in layouts
                if this.same_as(buffer) and local and layout_threads(layouts[other]):
                    return layouts[other]
        return None

    def solve(self, members):
        if len(members) == 1:
            (buffer,) = members
            layout, count = self.best(buffer, self.fixed)
            level = "common" if self.neighbours(buffer, self.fixed) else "free"
            self.assign(
                buffer,
                layout,
                level,
                buffer,
                "cost",
                candidates=count,
                reason="cheapest against its fixed partners" if level == "common" else "cheapest alone",
            )
            return
        best = None
        tried = 0
        for r, root in enumerate(members):
            for i, candidate in enumerate(self.candidates(root)):
                layouts = {**self.fixed, root: candidate}
                order, queue = [root], [root]
                while queue:  # breadth first from the root
                    for n in self.neighbours(queue.pop(0), members):
                        if n not in order:
                            order.append(n)
                            queue.append(n)
                for b in order[1:]:
                    layouts[b] = self.fragment_partner_layout(b, layouts) or self.best(b, layouts)[0]
                tried += 1
                key = (self.score(self.group_cost(members, layouts)), r, i)
                if best is None or key < best[0]:
                    best = (key, root, layouts)
        (_, _, _), root, layouts = best
        first = len(self.decisions)
        for b in members:
            self.assign(
                b,
                layouts[b],
                "free",
                b,
                "cost",
                cost=Cost(),
                candidates=tried,
                reason=f"group {{{', '.join(m.name for m in members)}}}, root {root.name}",
            )
        for decision, b in zip(self.decisions[first:], members, strict=True):  # costs once the whole group is set
            decision.cost = self.buffer_cost(b, self.fixed)

    def run(self):
        if not self.kernel.open:
            return self
        self.derive("strict")
        self.operand_layouts()
        self.propagate()
        for group in self.groups():
            members = [b for b in group if b not in self.fixed]  # (a relation may have decided some by now)
            if members:
                self.solve(members)
                self.propagate()
        return self


def infer(func, cost_model: str = DEFAULT_COST_MODEL) -> tuple[dict, list[Decision]]:
    """The layouts inference chooses for ``func``'s open buffers (buffer -> layout) and the decisions.

    Example: ``infer(func)`` is ``({frag: TileLayout(S[(32, 4):(1@tid_in_wg, 1)])}, [Decision(...)])`` for the
    kernel of :func:`infer_layouts`'s example.
    """
    inference = _Inference(func, cost_model).run()
    chosen = {b: l for b, l in inference.fixed.items() if b in inference.kernel.open}
    return chosen, inference.decisions


def infer_layouts(func, cost_model: str = DEFAULT_COST_MODEL):
    """``func`` with every open fragment and shared buffer of its tile copies given a layout annotation.

    Example:
        >>> import tvm, tirx_layout
        >>> func = tvm.script.from_source('''
        ... @T.prim_func
        ... def k(A: T.Buffer((32, 4), "float32"), B: T.Buffer((32, 4), "float32")):
        ...     T.device_entry()
        ...     tx = T.thread_id([32])
        ...     frag = T.alloc_local((32, 4), "float32")
        ...     T.tile_copy(frag, A)
        ...     T.tile_copy(B, frag)
        ... ''')
        >>> from tirx_layout import layout_of
        >>> layout_of("frag", infer_layouts(func))
        TileLayout(S[(32, 4):(1@tid_in_wg, 1)])
    """
    inference = _Inference(func, cost_model).run()
    chosen = {b: l for b, l in inference.fixed.items() if b in inference.kernel.open}
    if not chosen:
        return func

    def on_alloc(stmt):
        layout = chosen.get(stmt.buffer)
        if layout is None:
            return stmt
        return AllocBuffer(stmt.buffer, {**stmt.annotations, LAYOUT_KEY: layout})

    func = map_function(func, [(AllocBuffer, on_alloc)])
    if not inference.alignments:
        return func
    # A buffer's alignment is part of the buffer: an aligned copy replaces it everywhere it is used.
    aligned = {
        buffer: tvm.tirx.decl_buffer(
            buffer.shape, buffer.dtype, buffer.name, scope=buffer.scope(), data_alignment=alignment
        )
        for buffer, alignment in inference.alignments.items()
    }

    def replace(var):
        return next((new for old, new in aligned.items() if old.same_as(var)), var)

    return map_function(func, [(type(next(iter(aligned))), replace)])


def explain_layouts(func, cost_model: str = DEFAULT_COST_MODEL) -> str:
    """One line per inferred buffer: its layout, the level that chose it and the cost of its copies.

    Example (a shared tile between global memory and a fragment with one row per lane):
        >>> import tvm, tirx_layout
        >>> func = tvm.script.from_source('''
        ... @T.prim_func
        ... def k(A: T.Buffer((32, 32), "float32"), B: T.Buffer((32, 32), "float32")):
        ...     T.device_entry()
        ...     tx = T.thread_id([32])
        ...     tile = T.alloc_shared((32, 32), "float32")
        ...     frag = T.alloc_local((32, 32), "float32", layout=T.layout("S[(32, 32):(1@laneid, 1)]"))
        ...     T.tile_copy(tile, A)
        ...     T.cuda.cta_sync()
        ...     T.tile_copy(frag, tile)
        ...     T.tile_copy(B, frag)
        ... ''')
        >>> print(explain_layouts(func))  # doctest: +ELLIPSIS
        tile: ComposeLayout(SwizzleLayout(2, 1, 3), ...) [common, io-aware: bytes=12288 instr=24 wavefronts=64 ...
        >>> print(explain_layouts(func, "register-count"))  # doctest: +ELLIPSIS
        tile: S[(32, 32):(32, 1)] [common, register-count: bytes=12288 instr=24 wavefronts=288 ...
    """
    _, decisions = infer(func, cost_model)
    lines = [str(d) for d in decisions]
    for buffer, layout in buffer_layouts(func).items():  # given layouts a buffer of another shape flattens
        if reinterprets(layout, buffer.shape):
            shape = tuple(int(e) for e in buffer.shape)
            lines.append(
                f"{buffer.name}: {layout} [given] is written for shape {layout_dims(layout)}; buffer shape {shape} "
                "reinterprets it through the row-major flat index"
            )
    return "\n".join(lines) or "(no buffer to infer)"


@tvm.tirx.transform.prim_func_pass(opt_level=0, name="tirx_layout.InferLayouts")
class InferLayouts:
    """The registered pass: :func:`infer_layouts` on every PrimFunc, with cost model ``cost_model``.

    Example: ``InferLayouts("register-count")(mod)`` is ``mod`` with :func:`infer_layouts` applied to each of its
    functions, under the register-count model (that function's example shows the output).
    """

    def __init__(self, cost_model: str = DEFAULT_COST_MODEL):
        score_function(cost_model)  # reject an unknown name now, not at build time
        self.cost_model = cost_model

    def transform_function(self, func, mod, ctx):
        return infer_layouts(func, self.cost_model)


__all__ = ["CopyOp", "Decision", "InferLayouts", "LayoutConflict", "explain_layouts", "infer", "infer_layouts"]
