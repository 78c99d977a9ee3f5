"""TMEM allocations, as the lowering state :class:`TmemAllocations` of a function (``ops/context.LoweringContext``).

A TMEM buffer (``T.alloc_tmem(shape, dtype, layout=L)``, ``L`` on ``TLane``/``TCol``) becomes

* a one-word shared slot ``<name>_taddr`` that ``tcgen05.alloc`` (warp 0) fills with the TMEM address, then
  ``tcgen05.relinquish_alloc_permit`` after the kernel's last TMEM allocation, and a CTA barrier;
* at the end of the allocation's scope: a barrier, then ``tcgen05.dealloc`` by warp 0;
* in between, tcgen05 thread-sync fences around each barrier that separates asynchronous TMEM accesses
  (:func:`~tirx_layout.ops.tmem.fences.fence_barriers_between_accesses`).

The column count is the smallest power of two >= 32 covering the layout's 32-bit column span, replicas included
(PTX ISA, tcgen05.alloc/dealloc). The lowerings ask the state for a buffer's TMEM address
(:meth:`TmemAllocations.taddr`; the MMA lowering writes ``ir.placeholders.tmem_base_address`` instead, which
:meth:`TmemAllocations.finish` fills in) and for the mbarrier of a CTA-wide ``tcgen05.cp`` (initialised where the
allocation is made).
"""

from __future__ import annotations

import numpy as np
import tvm
from tvm import tirx

from ...hw.memory import dtype_bytes
from ...hw.tcgen05 import MIN_ALLOC_COLUMNS, TMEM_COLUMNS, TMEM_LANES, TMEM_SCOPE
from ...hw.threads import WARP_THREADS
from ...ir.annotations import LAYOUT_KEY, TMEM_OVERLAP_KEY, TMEM_WITHIN_KEY, one_cta_per_sm
from ...ir.device_calls import cta_barrier
from ...ir.placeholders import tmem_base_buffer
from ...ir.rewrite import AllocBuffer, map_function, sequence, store, walk
from ...layout import TileLayout
from ..helpers import cluster, mbarrier, tcgen05
from .fences import fence_barriers_between_accesses
from .ld_st import layout_places


def allocation_columns(layout, shape, dtype) -> int:
    """The ``nCols`` of ``tcgen05.alloc`` for a TMEM buffer: a power of two >= 32 covering every 32-bit column the
    layout touches (replicas included). ``ValueError`` if it needs more than 512 columns or 128 lanes.

    Example:
        >>> from tirx_layout import TileLayout, S, TLane, TCol
        >>> allocation_columns(TileLayout(S[(2, 128, 112):(112@TCol, 1@TLane, 1@TCol)]), (2, 128, 112), "float32")
        256
    """
    if not isinstance(layout, TileLayout):
        raise ValueError(f"a TMEM buffer needs a TileLayout on TLane/TCol, got {layout!r}")
    axes = {it.axis.name for it in (*layout.shard, *layout.replica)}
    if not axes <= {"TLane", "TCol"}:
        raise ValueError(
            f"TMEM layout {layout} uses axes {sorted(axes - {'TLane', 'TCol'})}; only TLane and TCol "
            "are tensor-memory coordinates"
        )
    shape = [int(e) for e in shape]
    grids = np.meshgrid(*[np.arange(e) for e in shape], indexing="ij")
    places = layout_places(layout, grids, shape, every_replica=True)
    lanes, cols = places.get("TLane", np.zeros(1, np.int64)), places.get("TCol", np.zeros(1, np.int64))
    if lanes.min() < 0 or lanes.max() >= TMEM_LANES:
        raise ValueError(f"TMEM layout {layout} reaches lanes {lanes.min()}..{lanes.max()}; TMEM has {TMEM_LANES}")
    if dtype_bytes(dtype) > 4:
        raise ValueError(f"TMEM holds 32-bit columns; dtype {dtype} is wider")
    per_column = 4 // dtype_bytes(dtype)
    if cols.min() < 0:
        raise ValueError(f"TMEM layout {layout} has negative columns")
    span = -(-(int(cols.max()) + 1) // per_column)
    ncols = max(MIN_ALLOC_COLUMNS, 1 << (span - 1).bit_length())
    if ncols > TMEM_COLUMNS:
        raise ValueError(f"TMEM layout {layout} spans {span} 32-bit columns; TMEM has {TMEM_COLUMNS}")
    return ncols


def check_total_columns(columns: dict) -> int:
    """The columns all TMEM allocations of one kernel take together (``{buffer name: nCols}``); ``ValueError``
    naming each allocation when they exceed the CTA's 512. Every allocation is live at once in the worst case, and
    ``tcgen05.alloc`` blocks until its columns are free, so a kernel asking for more would wait forever (PTX ISA,
    tcgen05.alloc/dealloc).

    Example:
        >>> check_total_columns({"acc": 256, "acc2": 128})
        384
        >>> check_total_columns({"acc": 512, "acc2": 256})
        Traceback (most recent call last):
        ...
        ValueError: TMEM allocations acc (512 columns) + acc2 (256 columns) = 768 columns, more than the 512 a CTA has
    """
    total = sum(columns.values())
    if total > TMEM_COLUMNS:
        parts = " + ".join(f"{name} ({n} columns)" for name, n in columns.items())
        raise ValueError(f"TMEM allocations {parts} = {total} columns, more than the {TMEM_COLUMNS} a CTA has")
    return total


def tmem_allocations(func) -> list:
    """The ``AllocBuffer`` statements of TMEM buffers in ``func``, in program order.

    Example: ``tmem_allocations(func)`` for a kernel with ``acc = T.alloc_tmem(...)`` is ``[AllocBuffer(acc)]``.
    """
    found = []

    def on_alloc(stmt):
        if stmt.buffer.scope() == TMEM_SCOPE:
            found.append(stmt)

    walk(func.body, [(AllocBuffer, on_alloc)])
    return found


def within_allocations(allocations: list) -> list:
    """``(AllocBuffer, owner buffer)`` of every TMEM buffer placed ``within`` another's allocation, checked: the owner
    is an allocated TMEM buffer of the kernel, not itself within another, declared before it, and the two layouts'
    32-bit columns do not overlap (the shared allocation then covers both; see :func:`allocation_columns`) unless
    the buffer is declared ``overlap=True`` (a second view of the same cells).

    Example: for ``acc = T.alloc_tmem(...)`` then ``sfa = T.alloc_tmem(..., within=acc)``, ``[(AllocBuffer(sfa),
    acc)]``.
    """
    owners = {}
    found = []
    for stmt in allocations:
        within = stmt.annotations.get(TMEM_WITHIN_KEY)
        if within is None:
            owners[stmt.buffer] = stmt
            continue
        named = _buffer_of(within)
        owner = next((o for b, o in owners.items() if named is not None and b.same_as(named)), None)
        if owner is None:
            raise ValueError(
                f"TMEM buffer {stmt.buffer.name} is placed within {named.name if named is not None else within}, "
                "which is no TMEM allocation of its own declared before it (T.alloc_tmem(..., within=acc) with "
                "acc = T.alloc_tmem(...) earlier, not itself within another)"
            )
        mine = set() if stmt.annotations.get(TMEM_OVERLAP_KEY) else _columns_used(stmt)
        for other in [owner, *(w for w, o in found if o.same_as(owner.buffer))]:
            common = sorted(mine & _columns_used(other))
            if common:
                raise ValueError(
                    f"TMEM buffer {stmt.buffer.name} within {owner.buffer.name}'s allocation uses 32-bit columns "
                    f"{common[0]}..{common[-1]}, which {other.buffer.name} uses too"
                )
        found.append((stmt, owner.buffer))
    return found


def _buffer_of(data):
    """The buffer of ``buffer_data(B)`` (how TVMScript spells ``B.data``), else ``None``."""
    if isinstance(data, tvm.ir.Call) and getattr(data.op, "name", "") == "tirx.buffer_data":
        return data.args[0]
    return None


def _columns_used(stmt) -> set:
    layout, buffer = stmt.annotations[LAYOUT_KEY], stmt.buffer
    shape = [int(e) for e in buffer.shape]
    grids = np.meshgrid(*[np.arange(e) for e in shape], indexing="ij")
    columns = layout_places(layout, grids, shape, every_replica=True).get("TCol", np.zeros(1, np.int64))
    return set((np.unique(columns) // (4 // dtype_bytes(str(buffer.dtype)))).tolist())


class TmemAllocations:
    """The TMEM allocations of one function, made once per function by the lowering context (see the module
    docstring); :meth:`finish` rewrites them, after every op is lowered.

    Example: ``ctx.state(TmemAllocations).taddr(acc)`` is the variable holding ``acc``'s TMEM address.
    """

    #: finished after every other lowering state: it wraps what they emitted, and fills in their TMEM addresses
    FINISH_LAST = True

    def __init__(self, ctx):
        every = tmem_allocations(ctx.func)
        for stmt in every:
            if LAYOUT_KEY not in stmt.annotations:
                raise ValueError(
                    f"TMEM buffer {stmt.buffer.name} needs a tirx_layout layout on TLane/TCol "
                    "(T.alloc_tmem(shape, dtype, layout=...))"
                )
        # A buffer placed ``within`` another shares its tcgen05.alloc: no slot, no alloc, the owner's address.
        self.allocs = [stmt for stmt in every if TMEM_WITHIN_KEY not in stmt.annotations]
        self.windows = within_allocations(every)
        self.slots, self.columns, self.addresses = {}, {}, {}
        for stmt in self.allocs:
            buffer = stmt.buffer
            inside = [w for w, owner in self.windows if owner.same_as(buffer)]
            self.columns[buffer] = max(
                allocation_columns(s.annotations[LAYOUT_KEY], s.buffer.shape, str(s.buffer.dtype))
                for s in [stmt, *inside]
            )
            self.slots[buffer] = tvm.tirx.decl_buffer((1,), "uint32", f"{buffer.name}_taddr", scope="shared")
            # Read once after the allocation barrier: each tcgen05 helper is an asm volatile with a memory clobber,
            # after which nvcc would load the slot again.
            self.addresses[buffer] = tirx.Var(f"{buffer.name}_taddr", "uint32")
        self.total_columns = check_total_columns({b.name: n for b, n in self.columns.items()})
        self.last = self.allocs[-1].buffer if self.allocs else None
        self.cp_barriers = {}  # allocated buffer -> [(mbarrier, phase)] of the CTA-wide tcgen05.cp sites into it
        self.ctx = ctx
        self.cta_group, self.cta_group_user = 1, None

    def use_cta_group(self, cta_group: int, user: str) -> None:
        """The kernel's tcgen05 instructions use ``cta_group`` (``user`` says which op asked): its allocations then
        use it too (``cta_group::2``: the same columns in both CTAs of the pair; one warp of each allocates, and a
        cluster barrier precedes the deallocation, so that neither CTA frees TMEM the pair's MMA may still use).
        The ISA lets a kernel use one ``cta_group`` only: a tcgen05.cp (``cta_group::1``) in a pair kernel is
        refused by :meth:`finish`."""
        self.cta_group, self.cta_group_user = cta_group, user

    def finish(self, func):
        """``func`` with every TMEM address the lowerings asked for filled in and every allocation made around its
        scope."""
        if self.cta_group == 2 and any(self.cp_barriers.values()):
            raise ValueError(
                f"{self.cta_group_user} makes every tcgen05 instruction of the kernel cta_group::2 (PTX ISA: one "
                "cta_group per kernel), but the kernel also copies into TMEM with tcgen05.cp.cta_group::1"
            )
        # The TMEM address of a buffer, as the MMA lowering wrote it, is the address its allocation returns.
        rules = [(tvm.ir.Call, self.base_address)]
        if self.allocs:  # TMEM allocations become tcgen05.alloc ... tcgen05.dealloc around their scope
            rules.append((tirx.SeqStmt, self.expand))
        result = map_function(func, rules)
        # more than half of the columns: a second CTA's tcgen05.alloc on this SM would wait for this one to end
        return one_cta_per_sm(result) if self.total_columns > TMEM_COLUMNS // 2 else result

    def cp_barrier(self, tmem):
        """A new ``(mbarrier, phase)`` pair for a CTA-wide tcgen05.cp into ``tmem``: both allocated, the phase
        zeroed and the mbarrier initialised once, where the allocation holding ``tmem`` is made (see ``_around``)."""
        owner = next(b for b in self.slots if b.same_as(self._owner(tmem.buffer)))
        sites = self.cp_barriers.setdefault(owner, [])
        name = f"{tmem.buffer.name}_cp_bar_{len(sites)}"
        bar = tvm.tirx.decl_buffer((1,), "uint64", name, scope="shared")
        phase = tvm.tirx.decl_buffer((1,), "uint32", f"{name}_phase", scope="local")
        sites.append((bar, phase))
        return bar, phase

    def _owner(self, buffer):
        """The allocated TMEM buffer whose ``tcgen05.alloc`` holds ``buffer`` (itself, or the one it is within)."""
        for window, owner in self.windows:
            if window.buffer.same_as(buffer):
                return owner
        return buffer

    def is_tmem(self, buffer) -> bool:
        owner = self._owner(buffer)
        return any(owner.same_as(b) for b in self.slots)

    def taddr(self, buffer):
        """The TMEM address of ``buffer``: a variable bound from its shared slot after the allocation barrier (the
        slot of the allocation it is placed within, if any)."""
        owner = self._owner(buffer)
        return next(a for b, a in self.addresses.items() if b.same_as(owner))

    def base_address(self, expr):
        """``expr`` with the base address of a TMEM buffer (``tmem_base_address(buffer)``, which the MMA lowering
        writes) replaced by the address its allocation returns."""
        wanted = tmem_base_buffer(expr)
        if wanted is None:
            return expr
        if self.is_tmem(wanted):
            return self.taddr(wanted)
        raise ValueError(
            f"the TMEM address of {wanted.name} is asked for, but no TMEM buffer of this kernel has it; "
            "allocate it with T.alloc_tmem(shape, dtype, layout=...)"
        )

    def expand(self, seq):
        """A ``SeqStmt`` whose TMEM allocations become alloc ... dealloc around the rest of the sequence; a later
        allocation in the same sequence nests inside the earlier one's scope (and is freed first)."""
        stmts = list(seq.seq)
        expanded = self._expand(stmts)
        return seq if expanded is stmts else sequence(expanded)

    def _expand(self, stmts: list) -> list:
        kept = [s for s in stmts if not (isinstance(s, AllocBuffer) and TMEM_WITHIN_KEY in s.annotations)]
        if len(kept) != len(stmts):  # a buffer within another allocation takes no tcgen05.alloc of its own
            return self._expand(kept)
        for i, stmt in enumerate(stmts):
            if isinstance(stmt, AllocBuffer) and self.is_tmem(stmt.buffer):
                return [*stmts[:i], *self._around(stmt.buffer, self._expand(stmts[i + 1 :]))]
        return stmts

    def _around(self, buffer, rest):
        buffer = next(b for b in self.slots if b.same_as(buffer))
        slot, ncols = self.slots[buffer], self.columns[buffer]
        first_warp = tvm.tirx.floordiv(self.ctx.threads.index, WARP_THREADS) == 0
        group = self.cta_group
        slot_address = tvm.tirx.address_of(tvm.tirx.BufferLoad(slot, [tirx.IntImm("int32", 0)]))
        issue = [tcgen05.alloc(slot_address, ncols, cta_group=group)]
        if buffer.same_as(self.last):
            issue.append(tcgen05.relinquish(cta_group=group))
        # No tcgen05 fences around these two barriers: alloc and dealloc are synchronous tcgen05 instructions,
        # which the thread-sync fences do not order (PTX ISA 9.7.16.6.1, 9.7.16.6.3). The address reaches the other
        # warps through shared memory, which the barrier orders (alloc's shared-memory write keeps same-address
        # order with ordinary instructions, 9.7.16.6.1). Before dealloc, every ld/st this lowering emits has been
        # completed by its tcgen05.wait and every cp by its mbarrier wait, ahead of the barrier.
        # The CTA-wide tcgen05.cp sites into this allocation (lowered already: children first) get their mbarriers
        # initialised here, once, before the barrier that publishes the TMEM address.
        sites = self.cp_barriers.get(buffer, [])
        inits = []
        for bar, phase in sites:
            inits += [AllocBuffer(bar), AllocBuffer(phase), store(phase, tirx.const(0, "uint32"), 0)]
        if sites:
            first = self.ctx.threads.index == 0
            addresses = [tvm.tirx.address_of(tvm.tirx.BufferLoad(bar, [tirx.IntImm("int32", 0)])) for bar, _ in sites]
            inits.append(tirx.IfThenElse(first, sequence([mbarrier.init(a) for a in addresses]), None))
        head = [
            AllocBuffer(slot),
            tirx.IfThenElse(first_warp, sequence(issue), None),
            *inits,
            cta_barrier(),
            tirx.Bind(self.taddr(buffer), tvm.tirx.BufferLoad(slot, [tirx.IntImm("int32", 0)])),
        ]
        meet = [cluster.arrive(), cluster.wait()] if group == 2 else [cta_barrier()]
        tail = [*meet, tirx.IfThenElse(first_warp, tcgen05.dealloc(self.taddr(buffer), ncols, cta_group=group), None)]
        return [*head, fence_barriers_between_accesses(sequence(rest)), *tail]
