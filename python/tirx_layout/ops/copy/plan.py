"""The plan of one ``T.tile_copy`` between two operands (``ops/operands.py``) that are not tensor memory: who moves
which elements, and with which accesses.

Everything a copy decides is decided here, once: the vector width, the order vectors are dealt to threads, the
guards. The copy's lowering (``ops/copy/lower.py``) emits TIR from a plan by calling its formulas with the kernel's
thread index and loop variables; the inference cost model counts a plan's memory instructions by calling the *same*
formulas with numpy arrays of thread ids and loop steps. So the two cannot drift apart.

Plans: :class:`MemoryCopy` (memory to memory: vectors dealt round-robin to the threads of the copy's scope, in the
storage order of a shared side when it has one, so that consecutive lanes touch consecutive shared addresses),
:class:`FragmentCopy` (between a fragment and memory: each thread walks its own slots, the fragment layout's inverse
says which element a (thread, slot) holds), :class:`RegisterCopy` (fragment to fragment with the same placement:
slot by slot; other placements are exchanges, ``exchange.py``). A casting copy's plan is the same: the lowering
converts each loaded vector (``cast.py``). Vectors are the widest of 16, 8 or 4 bytes (of the narrower side's
elements) contiguous and aligned on both sides (inside one swizzle chunk for a swizzled layout, checked on the
layout's whole address table).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

from ...hw.memory import VECTOR_BYTES
from ...hw.threads import LEVEL_THREADS, cta_thread_axis, level_threads, thread_axis_place, thread_unit
from ...layout.indexing import all_of, unflatten
from ...layout.inverse import PlaceInverse
from ..operands import FragmentOperand, MemoryOperand, Operand
from .cast import WIDEST_VECTOR_BYTES, cast_lanes


def vector_width(dst: Operand, src: Operand) -> int:
    """Elements per access: the widest of 16/8/4 bytes of the *narrower* side's elements that both sides allow, else
    1. A casting copy (two dtypes) moves the same elements on both sides, so its wider side takes a multiple of those
    bytes -- at most ``WIDEST_VECTOR_BYTES`` (a 16-byte store of 8 bfloat16 from 8 float32: two 16-byte loads) --
    and no more lanes than one vector conversion has (``cast_lanes``).

    Example:
        >>> import tvm
        >>> from tirx_layout.ops.operands import operand
        >>> A, B = (tvm.tirx.decl_buffer((8, 8), "float16", n) for n in "AB")
        >>> vector_width(operand(B[0:8, 0:8], {}, "destination"), operand(A[0:8, 0:8], {}, "source"))
        8
        >>> C = tvm.tirx.decl_buffer((8, 8), "float32", "C")
        >>> vector_width(operand(B[0:8, 0:8], {}, "destination"), operand(C[0:8, 0:8], {}, "source"))
        8
    """
    narrow, wide = sorted((dst.element_bytes, src.element_bytes))
    for nbytes in VECTOR_BYTES:
        v = nbytes // narrow
        if v <= 1 or nbytes % narrow or v * wide > WIDEST_VECTOR_BYTES:
            continue
        if cast_lanes(src.dtype, dst.dtype, v) == v and dst.vector_ok(v) and src.vector_ok(v):
            return v
    return 1


# ---- plans ------------------------------------------------------------------------------------------------------


@dataclass
class Access:
    """One vector access of a plan step: the operand, the storage address of its first element (an int, array or
    PrimExpr) and the vector length."""

    operand: Operand
    address: object


@dataclass
class Step:
    """What one thread does in one step of a plan: a load, the stores of the loaded value (one per replica place),
    and the conditions under which it does anything, innermost first (all must hold). ``source_local``: the
    source coordinates of the step's first element, inside the source region, where the plan computes them (a
    ``cp.async`` zero-fills what lies past the source tensor instead of skipping it)."""

    load: Access
    stores: list[Access]
    guards: list = field(default_factory=list)
    source_local: tuple | None = None

    def active(self):
        """Whether the step happens: the conjunction of its guards (``True`` without any)."""
        return all_of(self.guards)


class MemoryCopy:
    """Memory to memory: the tile cut into ``v``-element vectors, dealt round-robin to the ``size`` threads of the
    copy's scope (``rounds`` rounds, the last one guarded when they do not divide)."""

    def __init__(self, dst: MemoryOperand, src: MemoryOperand, v: int, scope: str, cta_threads: int):
        self.dst, self.src, self.v = dst, src, v
        self.cta_threads = cta_threads
        self.size = cta_threads if scope == "cta" else LEVEL_THREADS[scope]
        self.units = math.prod(src.tile_shape) // v
        self.rounds = -(-self.units // self.size)
        # The side dealt in storage order is addressed by the storage index itself, not through its layout.
        self.ordered, self._order = None, None
        for side in (dst, src):
            order = side.storage_order()
            if order is not None:
                self.ordered, self._order = side, order
                break

    def thread_in_scope(self, tid):
        return tid if self.size == self.cta_threads else tid % self.size

    def step(self, round_, tid) -> Step:
        """Round ``round_`` of CTA thread ``tid``."""
        unit = round_ * self.size + self.thread_in_scope(tid)
        flat = unit * self.v if self._order is None else self._order(unit * self.v)
        guards, source_local = [], None
        if self.ordered is self.src:
            load = Access(self.src, unit * self.v)
        else:
            local = source_local = unflatten(flat, self.src.extents)
            load = Access(self.src, self.src.addresses(local, every_replica=False)[0])
            guards += self.src.bounds_guards(local)
        if self.ordered is self.dst:
            stores = [Access(self.dst, unit * self.v)]
        else:
            local = unflatten(flat, self.dst.extents)
            stores = [Access(self.dst, a) for a in self.dst.addresses(local, every_replica=True)]
            guards += self.dst.bounds_guards(local)
        if self.units % self.size:
            guards.insert(0, unit < self.units)
        return Step(load, stores, guards, tuple(source_local) if source_local is not None else None)


def uncovered_thread_levels(axes, scope: str, cta_threads: int) -> list[tuple[int, int]]:
    """The parts of a thread's index inside a ``scope`` unit that no thread axis in ``axes`` reads, as
    ``(unit, count)``: the threads ``t`` and ``t + k * unit`` (``k < count``) hold the same places of a fragment
    on ``axes``, so they are replicas of one another. The parts are the lane in its warp (1, 32), the warp in its
    warpgroup (32, 4) and the warpgroup in the CTA (128, ...), cut to the scope.

    Example (a fragment on ``laneid`` copied by a 256-thread CTA: the warp and the warpgroup are unread):
        >>> uncovered_thread_levels(["laneid"], "cta", 256), uncovered_thread_levels(["laneid"], "warp", 256)
        ([(32, 4), (128, 2)], [])
    """
    size = level_threads(scope, cta_threads)
    bounds = sorted({1, size} | {u for u in LEVEL_THREADS.values() if u < size})
    read = []
    for name in axes:
        axis = cta_thread_axis(name)
        read.append((LEVEL_THREADS[axis.get_subscope()], level_threads(axis.get_scope(), cta_threads)))
    return [
        (low, -(-high // low))
        for low, high in itertools.pairwise(bounds)
        if not any(first <= low and high <= last for first, last in read)
    ]


class FragmentCopy:
    """Between a register fragment and memory: each thread walks its slots ``v`` at a time; the fragment layout's
    inverse says which element a (thread, slot) holds. Replicas over threads all load and only replica 0 stores;
    slots past the buffer's end (a tail layout) and places no element reaches (holes) do nothing. Threads of the
    copy's scope that the fragment's thread axes do not tell apart (a fragment on ``laneid`` copied by a whole CTA)
    hold replicas: on a store, only the first of them writes."""

    def __init__(
        self,
        fragment: FragmentOperand,
        memory: MemoryOperand,
        storing: bool,
        v: int,
        cta_threads: int,
        scope: str = "cta",
    ):
        self.fragment, self.memory, self.storing, self.v = fragment, memory, storing, v
        self.cta_threads = cta_threads
        self.slots = fragment.extent // v
        self.inverse = PlaceInverse(fragment.layout)
        self.thread_axes = [axis for axis in self.inverse.axes if axis != "m"]
        self.holes = any(
            not self.inverse.covered(
                axis, fragment.extent if axis == "m" else thread_axis_place(axis, 0, cta_threads)[1]
            ).all()
            for axis in self.inverse.axes
        )
        self.unread = uncovered_thread_levels(self.thread_axes, scope, cta_threads)
        # Replicas a step of which crosses units of the scope (R[4:1@warpid] at scope "warp") are other units' own
        # copies: each unit stores its copy, so only the replicas inside one unit are told apart on a store. Whether
        # a step crosses is the threads it moves, not the axis's level: R[16:1@tid_in_wg] stays in one warp.
        # (replica index, its digit's values inside one unit, its extent): a unit's replica 0 has digit % inside 0.
        unit = level_threads(scope, cta_threads)
        step = lambda axis, d: d.stride * (1 if axis == "m" else thread_unit(axis))  # noqa: E731 -- threads per step
        self.own_replicas = sorted(
            (d.index, d.extent if axis == "m" else min(d.extent, unit // step(axis, d)), d.extent)
            for axis, digits in self.inverse.axes.items()
            for d in digits
            if d.replica and (axis == "m" or step(axis, d) < unit)
        )

    def places(self, slot, tid) -> dict:
        """The fragment places of slot vector ``slot`` of CTA thread ``tid``: ``{"m": slot * v, axis: ...}``."""
        places = {"m": slot * self.v}
        for axis in self.thread_axes:
            places[axis] = thread_axis_place(axis, tid, self.cta_threads)[0]
        return places

    def step(self, slot, tid) -> Step:
        """Slot vector ``slot`` of CTA thread ``tid``."""
        places = self.places(slot, tid)
        flat = self.inverse.flat_index(places)
        local = unflatten(flat, self.memory.extents)
        register = Access(self.fragment, places["m"])
        tail = self.memory.bounds_guards(local)
        if self.storing:
            stores = [Access(self.memory, a) for a in self.memory.addresses(local, every_replica=True)]
            step = Step(register, stores)
            # A value held by several threads (or slots) is stored by replica 0 only.
            # So is a value held by threads the layout does not tell apart (see uncovered_thread_levels).
            replicas = self.inverse.replica_digits(places)
            digits = [
                replicas[i] if inside == extent else replicas[i] % inside for i, inside, extent in self.own_replicas
            ]
            digits += [(tid // u) % n for u, n in self.unread]
            replica_zero = all_of(d == 0 for d in digits)
            if replica_zero is not True:
                step.guards.append(replica_zero)
        else:
            step = Step(Access(self.memory, self.memory.addresses(local, every_replica=False)[0]), [register])
        if self.fragment.padded:  # tail predicate: places past the buffer's last element hold nothing
            step.guards.append(flat < math.prod(self.fragment.shape))
        if self.holes:
            step.guards.append(self.inverse.holds(places))
        step.guards += tail
        return step


class RegisterCopy:
    """Fragment to fragment with the same placement on both sides, so each thread copies (and in a casting copy
    converts) its slots ``v`` at a time; different placements move data between threads (``exchange.py``)."""

    def __init__(self, dst: FragmentOperand, src: FragmentOperand, v: int, cta_threads: int):
        self.dst, self.src, self.v = dst, src, v
        self.slots = dst.extent // v

    def step(self, slot, tid) -> Step:
        """Slot vector ``slot`` of any thread."""
        return Step(Access(self.src, slot * self.v), [Access(self.dst, slot * self.v)])


def plan_copy(dst: Operand, src: Operand, scope: str, cta_threads: int):
    """The plan of a copy between two operands that are not tensor memory, of one tile shape (see the module
    docstring); their dtypes may differ (a casting copy: the lowering converts each loaded vector, ``cast.py``).

    Example:
        >>> import tvm
        >>> from tirx_layout.ops.operands import operand
        >>> A, B = (tvm.tirx.decl_buffer((8, 64), "float16", n) for n in "AB")
        >>> plan = plan_copy(operand(B[0:8, 0:64], {}, "destination"), operand(A[0:8, 0:64], {}, "source"), "cta", 32)
        >>> type(plan).__name__, plan.v, plan.rounds
        ('MemoryCopy', 8, 2)
    """
    v = vector_width(dst, src)
    if isinstance(dst, FragmentOperand) and isinstance(src, FragmentOperand):
        return RegisterCopy(dst, src, v, cta_threads)
    if isinstance(src, FragmentOperand):
        return FragmentCopy(src, dst, True, v, cta_threads, scope)
    if isinstance(dst, FragmentOperand):
        return FragmentCopy(dst, src, False, v, cta_threads, scope)
    return MemoryCopy(dst, src, v, scope, cta_threads)
