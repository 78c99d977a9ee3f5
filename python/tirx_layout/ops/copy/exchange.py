"""Fragment-to-fragment copies whose two layouts place elements on different threads: the data moves between
threads, through warp shuffles when every element stays inside its warp, else through a shared-memory scratch.

* :class:`WarpShuffle` -- for each destination slot ``s``, thread ``t`` needs the element its layout puts there;
  the source layout says which thread (``source_thread``) and slot (``source_slot``) hold it. When that thread is in
  ``t``'s warp for every ``(s, t)``, slot ``s`` is one ``shfl.sync.idx`` per source slot that some lane reads for it
  (a register index must be the same in every lane of one shuffle): a slot whose source slot is the same in every
  lane is one shuffle; one whose source slot varies by lane is one shuffle per distinct source slot and a select by
  the lane's own. The source lane is computed from the layouts (``source_thread % 32``), not tabulated.
* :class:`SharedExchange` -- anything else: the source fragment stored into a row-major shared scratch tile the
  lowering allocates, a CTA barrier, the destination fragment loaded from it (the plans of ``plan.py``), with a CTA
  barrier before the stores too (the scratch of a copy inside a loop is still being read by the previous turn).
  The scratch holds the narrower of the two dtypes (a casting copy converts on the side that shrinks it).

Both convert in a casting copy (``cast.py``). The source's replica 0 holds each element; the thread levels its layout
does not read (``uncovered_thread_levels``) are taken from the destination thread, so a fragment that every warp
holds is read from the destination's own warp.

Example (the Hopper accumulator into wgmma's A operand as e4m3: lanes of a quad trade columns; as bf16 it is the same
placement, a register copy):
    >>> from tirx_layout import wgmma_accumulator_layout, wgmma_operand_a_layout
    >>> import tvm
    >>> from tirx_layout.ops.operands import operand
    >>> acc = tvm.tirx.decl_buffer((64, 64), "float32", "acc", scope="local")
    >>> a = tvm.tirx.decl_buffer((64, 64), "float8_e4m3fn", "a", scope="local")
    >>> layouts = {acc: wgmma_accumulator_layout(64), a: wgmma_operand_a_layout(64, "float8_e4m3fn")}
    >>> dst, src = operand(a[0:64, 0:64], layouts, "dst"), operand(acc[0:64, 0:64], layouts, "src")
    >>> plan = plan_exchange(dst, src, "cta", 128)
    >>> type(plan).__name__, plan.shuffles()
    ('WarpShuffle', 64)
"""

from __future__ import annotations

import math

import numpy as np
import tvm
from tvm import tirx

from ...hw.memory import dtype_bytes
from ...hw.threads import WARP_THREADS, thread_axis_place, thread_unit
from ...ir.op_calls import full_region
from ...layout.indexing import unflatten
from ...layout.inverse import PlaceInverse
from ..operands import FragmentOperand, MemoryOperand
from .plan import uncovered_thread_levels

FULL_MASK = 0xFFFFFFFF
#: Shuffles per destination slot above which a CTA-scope exchange goes through shared memory even inside warps (a
#: transpose inside a warp reads each slot from as many source slots as lanes: 32 shuffles and 31 selects an
#: element, against one shared store and load).
MAX_SHUFFLES_PER_SLOT = 2


class _Exchange:
    """What both exchanges know: for destination slot ``s`` of CTA thread ``t``, the source thread and slot holding
    the element there (ints, numpy arrays or PrimExprs, by the same formulas)."""

    def __init__(self, dst: FragmentOperand, src: FragmentOperand, scope: str, cta_threads: int):
        self.dst, self.src, self.scope, self.cta_threads = dst, src, scope, cta_threads
        self.dst_inverse = PlaceInverse(dst.layout)
        self.dst_axes = [a for a in self.dst_inverse.axes if a != "m"]
        src_inverse = PlaceInverse(src.layout)
        self.src_axes = [a for a in src_inverse.axes if a != "m"]
        self.unread = uncovered_thread_levels(self.src_axes, "cta", cta_threads)

    def dst_places(self, slot, tid) -> dict:
        places = {"m": slot}
        for axis in self.dst_axes:
            places[axis] = thread_axis_place(axis, tid, self.cta_threads)[0]
        return places

    def source(self, slot, tid):
        """``(source thread, source slot, whether destination (slot, tid) holds an element)``."""
        places = self.dst_places(slot, tid)
        flat = self.dst_inverse.flat_index(places)
        coords = unflatten(flat, list(self.dst.shape))
        held = self.src.layout.apply(*coords, shape=list(self.src.shape))
        thread = 0
        for axis in self.src_axes:
            thread = thread + held[axis] * thread_unit(axis)
        for unit, count in self.unread:  # levels the source does not read: the destination thread's own
            thread = thread + (tid // unit) % count * unit
        holds = self.dst_inverse.holds(places)
        if self.dst.padded:  # a tail layout's places past the last element hold nothing
            holds = holds & (flat < math.prod(self.dst.shape))
        return thread, held.get("m", 0), holds

    def tables(self):
        """The source thread and slot, and the holds mask, for every (slot, thread), as numpy arrays."""
        slots = np.arange(self.dst.extent)[:, None]
        tids = np.arange(self.cta_threads)[None, :]
        thread, slot, holds = self.source(slots, tids)
        shape = (self.dst.extent, self.cta_threads)
        return (
            np.broadcast_to(np.asarray(thread, np.int64), shape),
            np.broadcast_to(np.asarray(slot, np.int64), shape),
            np.broadcast_to(np.asarray(holds, bool), shape),
        )


class WarpShuffle(_Exchange):
    """Every element moves inside its warp: shuffles (see the module docstring)."""

    def source_slots(self) -> list[list[int]]:
        """For each destination slot, the distinct source slots its lanes read (one shuffle each)."""
        _, slot, holds = self.tables()
        return [sorted({int(k) for k in slot[s][holds[s]]}) or [0] for s in range(self.dst.extent)]

    def shuffles(self) -> int:
        """Shuffle instructions per thread.

        Example: 64 for the module docstring's accumulator -> e4m3 operand (one per element).
        """
        return sum(len(k) for k in self.source_slots())


class SharedExchange(_Exchange):
    """Elements move between warps: through a shared scratch tile (see the module docstring)."""

    def scratch(self) -> MemoryOperand:
        """The row-major shared tile, of the narrower dtype, that the exchange goes through."""
        dtype = min((self.dst.dtype, self.src.dtype), key=dtype_bytes)
        name = f"{self.dst.buffer.name}_exchange"
        buffer = tvm.tirx.decl_buffer(self.dst.shape, dtype, name, scope="shared")
        return MemoryOperand(full_region(buffer), None, "exchange scratch")


def plan_exchange(dst: FragmentOperand, src: FragmentOperand, scope: str, cta_threads: int):
    """The plan of a fragment-to-fragment copy between different placements: a :class:`WarpShuffle` when every
    element's source thread is in its destination thread's warp (and at scope "cta" it takes at most
    ``MAX_SHUFFLES_PER_SLOT`` shuffles a slot), else a :class:`SharedExchange` (at scope "cta" only: it needs the
    CTA barrier; ``ValueError`` naming both layouts and the first element that crosses warps otherwise). See the
    module docstring's example.
    """
    if cta_threads % WARP_THREADS:
        raise ValueError(
            f"T.tile_copy from {src} to {dst} moves data between threads, through warp shuffles that whole warps "
            f"run; the kernel has {cta_threads} threads"
        )
    shuffle = WarpShuffle(dst, src, scope, cta_threads)
    thread, slot, holds = shuffle.tables()
    tids = np.broadcast_to(np.arange(cta_threads)[None, :], thread.shape)
    crossing = holds & (thread // WARP_THREADS != tids // WARP_THREADS)
    if not crossing.any() and (scope != "cta" or shuffle.shuffles() <= MAX_SHUFFLES_PER_SLOT * dst.extent):
        return shuffle
    if scope != "cta":
        s, t = np.argwhere(crossing)[0]
        raise ValueError(
            f"T.tile_copy from {src} to {dst} at scope {scope!r}: thread {t} slot {s} of the destination holds the "
            f"element that thread {thread[s, t]} slot {slot[s, t]} of the source holds, in another warp; a "
            "conversion across warps goes through shared memory with a CTA barrier, so write it at scope 'cta'"
        )
    return SharedExchange(dst, src, scope, cta_threads)


def shuffled(value, dtype: str, lane):
    """``value`` (a scalar of ``dtype``) read from lane ``lane`` of the warp (``shfl.sync.idx``, every lane taking
    part); 8- and 16-bit values travel in the low bits of a 32-bit word (CUDA's ``__shfl_sync`` has no 8-bit form).

    Example:
        >>> x = tvm.tirx.Var("x", "float32")
        >>> shuffled(x, "float32", 3)
        T.tvm_warp_shuffle(T.uint32(4294967295), x, 3, 32, 32)
    """
    mask = tirx.const(FULL_MASK, "uint32")
    if dtype_bytes(dtype) == 4:
        return tirx.op.tvm_warp_shuffle(mask, value, lane, WARP_THREADS, WARP_THREADS)
    bits = f"uint{8 * dtype_bytes(dtype)}"
    word = tirx.Cast("uint32", tirx.reinterpret(bits, value))
    moved = tirx.op.tvm_warp_shuffle(mask, word, lane, WARP_THREADS, WARP_THREADS)
    return tirx.reinterpret(dtype, tirx.Cast(bits, moved))


def lower_warp_shuffle(plan: WarpShuffle, ctx, convert):
    """The shuffles of ``plan``, slot by slot (unrolled: every register index a constant): each source slot some lane
    reads is shuffled into a variable by every lane, then the lane keeps the one its own source slot names and
    ``convert`` (value -> destination dtype) converts it."""
    tid = ctx.threads.index
    stmts = []
    for s, candidates in enumerate(plan.source_slots()):
        thread, slot, _ = plan.source(s, tid)
        lane = ctx.analyzer.simplify(thread % WARP_THREADS)
        which = ctx.analyzer.simplify(slot) if not isinstance(slot, int) else slot
        moved = [tirx.Var(f"{plan.dst.buffer.name}_{s}_from_{k}", plan.src.dtype) for k in candidates]
        value = moved[-1]
        for k, var in zip(reversed(candidates[:-1]), reversed(moved[:-1]), strict=True):
            value = tirx.Select(which == k, var, value)
        for k, var in zip(candidates, moved, strict=True):
            read = tirx.BufferLoad(plan.src.view, [tirx.IntImm("int32", k)])
            stmts.append(tirx.LetStmt(var, shuffled(read, plan.src.dtype, lane)))  # a binding for the rest
        stmts.append(tirx.BufferStore(plan.dst.view, convert(value), [tirx.IntImm("int32", s)]))
    return stmts


__all__ = ["SharedExchange", "WarpShuffle", "lower_warp_shuffle", "plan_exchange", "shuffled"]
