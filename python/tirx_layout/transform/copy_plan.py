"""The plan of one ``T.tile_copy``: its operands, who moves which elements, and with which accesses.

Everything a copy decides is decided here, once: the operand kinds, the vector width, the order vectors are dealt
to threads, the guards. LowerTileOps emits TIR from a plan by calling its formulas with the kernel's thread index
and loop variables; the inference cost model counts a plan's memory instructions by calling the *same* formulas
with numpy arrays of thread ids and loop steps. So the two cannot drift apart.

Operands (:func:`operand`):

* :class:`MemoryOperand` — a region of a global or shared buffer, laid out by its layout (row-major without one),
  reached through a flat view of its storage (``<name>_flat``, which LowerLayoutAccess later points at the flat
  buffer it makes);
* :class:`FragmentOperand` — a whole register fragment (a layout with thread axes), seen as each thread's slots;
* :class:`TmemOperand` — a region of a tensor-memory buffer, reached by ``tcgen05`` instructions only
  (``transform/tmem/``).

Plans: :class:`MemoryCopy` (memory to memory: vectors dealt round-robin to the threads of the copy's scope, in the
storage order of a shared side when it has one, so that consecutive lanes touch consecutive shared addresses),
:class:`FragmentCopy` (between a fragment and memory: each thread walks its own slots, the fragment layout's inverse
says which element a (thread, slot) holds), :class:`RegisterCopy` (fragment to fragment with the same placement:
slot by slot). Vectors are the widest of 16, 8 or 4 bytes contiguous and aligned on both sides (inside one swizzle
chunk for a swizzled layout, checked on the layout's whole address table).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

import numpy as np
import tvm

from ..analysis.thread_placement import fragment_vector_ok, same_placement
from ..hw.memory import VECTOR_BYTES, dtype_bytes
from ..hw.tcgen05 import TMEM_SCOPE
from ..hw.threads import LEVEL_THREADS, cta_thread_axis, level_threads, thread_axis_place
from ..ir.rewrite import DeclBuffer
from ..layout import ComposeLayout, TileLayout
from ..layout.indexing import all_of, unflatten
from ..layout.inverse import PlaceInverse
from ..layout.placement import layout_threads, slot_count, storage_addresses, storage_extent, tail_padded


def _static(expr) -> int | None:
    if isinstance(expr, int):
        return expr
    if isinstance(expr, tvm.tirx.IntImm):
        return int(expr.value)
    return None


def provably_multiple(expr, v: int) -> bool:
    """Whether ``expr`` (an int or a PrimExpr) is a multiple of ``v`` for every value of its variables, by TVM's
    modular-set analysis (``kt * 64`` is a multiple of 8; ``kt * 64 + 4`` and a bare ``M`` are not).

    Example:
        >>> import tvm
        >>> kt = tvm.tirx.Var("kt", "int32")
        >>> provably_multiple(kt * 64, 8), provably_multiple(kt * 64 + 4, 8), provably_multiple(48, 16)
        (True, False, True)
    """
    if isinstance(expr, int | np.integer):
        return int(expr) % v == 0
    known = tvm.sym.Analyzer().modular_set(expr)
    return known.coeff % v == 0 and known.base % v == 0


def representative_start(expr) -> int:
    """One int with the divisibility facts of ``expr``: ``gcd(coeff, base)`` of its modular set (``expr`` is
    ``coeff * k + base``), a multiple of exactly the powers of two ``expr`` provably is, so a plan made with it
    picks the same vector width (``kt * 64`` gives 64, ``kt * 64 + 4`` gives 4, a constant itself).

    Example:
        >>> import tvm
        >>> kt = tvm.tirx.Var("kt", "int32")
        >>> representative_start(kt * 64), representative_start(kt * 64 + 4), representative_start(12)
        (64, 4, 12)
    """
    if isinstance(expr, int | np.integer):
        return int(expr)
    known = tvm.sym.Analyzer().modular_set(expr)
    return math.gcd(int(known.coeff), int(known.base))


@dataclass
class LayoutTables:
    """Address tables of (layout, shape) pairs, kept for the life of one analysis (a pass run, an inference): a
    search revisits the same candidate layouts many times. Keyed by the layout objects (structurally hashed)."""

    tables: dict = field(default_factory=dict)

    def get(self, layout, shape: tuple, compute):
        key = (layout, shape)
        if key not in self.tables:
            self.tables[key] = compute()
        return self.tables[key]


# ---- operands ---------------------------------------------------------------------------------------------------


class Operand:
    """One side of a copy: a region of a buffer and the buffer's layout (``None``: row-major)."""

    #: What is known of the kernel's variables (thread indices, loop ranges) when deciding tail guards; set by the
    #: lowering (``operand(..., analyzer=)``), else nothing is known.
    analyzer = None

    def __init__(self, region, layout, role: str):
        self.region = region
        self.buffer = region.source
        self.role = role
        self.layout = layout
        # Static extents as ints; a global buffer may have symbolic ones (``T.match_buffer(a, (M, 64))``).
        self.shape = tuple(e if (e := _static(d)) is not None else d for d in self.buffer.shape)
        if not all(isinstance(e, int) for e in self.shape) and (layout is not None or self.buffer.scope() != "global"):
            raise ValueError(
                f"the {role} {self.buffer.name} ({self.buffer.scope()}) has the symbolic shape "
                f"{list(self.buffer.shape)}; only a global buffer without a layout may (row-major, with tail guards)"
            )
        # Static begins as Python ints (so numpy evaluation can add them), symbolic ones as expressions.
        self.begins = [b if (b := _static(r.min)) is not None else r.min for r in region.region]
        self.extents = [_static(r.extent) for r in region.region]
        if any(e is None for e in self.extents):
            raise ValueError(f"the {role} region of {self.buffer.name} has a symbolic extent: {region}")
        self.dtype = str(self.buffer.dtype)
        self.element_bytes = dtype_bytes(self.dtype)

    def __str__(self) -> str:
        where = f"layout {self.layout}" if self.layout is not None else "row-major"
        return f"{self.buffer.name} ({self.buffer.scope()}, {where})"

    @property
    def tile_shape(self) -> tuple:
        """The region's extents without its unit dimensions: what must match between the two sides."""
        return tuple(e for e in self.extents if e != 1)

    @property
    def static_begins(self) -> bool:
        return all(isinstance(b, int) for b in self.begins)


class _Viewed(Operand):
    """An operand reached through a flat view of ``extent`` elements of its buffer's storage."""

    extent: int

    def _make_view(self):
        self.view = tvm.tirx.decl_buffer(
            (self.extent,), self.dtype, f"{self.buffer.name}_flat", scope=self.buffer.scope(), layout=None
        )

    def declaration(self):
        """The ``DeclBuffer`` of the flat view, to put before the accesses."""
        return DeclBuffer(self.view, data=self.buffer.data)


class MemoryOperand(_Viewed):
    """A region of a global or shared buffer (see the module docstring)."""

    def __init__(self, region, layout, role: str, tables: LayoutTables | None = None):
        super().__init__(region, layout, role)
        self._tables = tables or LayoutTables()
        self.extent = storage_extent(layout) if layout is not None else math.prod(self.shape)
        self._make_view()

    def addresses(self, local_coords, every_replica: bool) -> list:
        """Flat storage addresses of the region element at ``local_coords`` (ints, numpy arrays or PrimExprs),
        one per replica when asked."""
        coords = [b + c for b, c in zip(self.begins, local_coords, strict=True)]
        return storage_addresses(self.layout, self.shape, coords, every_replica)

    def bounds_guards(self, local_coords) -> list:
        """``begin + c < extent`` on each dimension where the region may reach past the buffer: one of symbolic
        extent (a global buffer's ``M``), or of static extent where the begin is symbolic and ``begin + extent``
        is not provably inside (``analyzer``: what the kernel's thread indices and loops bound), as a persistent
        kernel's tile ``(cta + i * ctas) // tiles_n * 128`` of an M = 200. The tail guard of the element at
        ``local_coords``. With ``v``-element vectors the
        guard on a vector's first element holds for all of it (the row length is then a multiple of ``v``). On
        numpy coordinates (the cost model) none: a copy is counted as if its whole tile were in bounds.

        Example: for ``A[bx * 32 : bx * 32 + 32, 0:64]`` of ``A`` in ``(M, 64)``, ``[bx * 32 + r < M]``.
        """
        if any(isinstance(c, np.ndarray) for c in local_coords):
            return []
        analyzer = self.analyzer or tvm.sym.Analyzer()
        guards = []
        for b, c, e, extent in zip(self.begins, local_coords, self.extents, self.shape, strict=True):
            if isinstance(extent, int) and isinstance(b, int):
                continue
            if analyzer.can_prove(b + e <= extent):
                continue
            guards.append(b + c < extent)
        return guards

    def address_tables(self) -> list[np.ndarray]:
        """Addresses of every element of the whole buffer, one array per replica, in the buffer's shape."""

        def compute():
            grids = np.meshgrid(*[np.arange(e) for e in self.shape], indexing="ij")
            places = storage_addresses(self.layout, self.shape, grids, every_replica=True)
            return [np.broadcast_to(np.asarray(a), self.shape) for a in places]

        return self._tables.get(self.layout, self.shape, compute)

    def vector_ok(self, v: int) -> bool:
        """Whether every aligned run of ``v`` elements along the last dimension is contiguous and aligned in
        storage (for every replica), and the region starts and ends on such runs. A symbolic start (``kt * 64``)
        or row length counts when it is provably a multiple of ``v``."""
        if not provably_multiple(self.shape[-1], v) or self.extents[-1] % v:
            return False
        if not provably_multiple(self.begins[-1], v):
            return False
        if self.layout is None:  # row-major: the runs are consecutive, aligned since the row length is a multiple
            return True
        for table in self.address_tables():
            runs = table.reshape((*self.shape[:-1], self.shape[-1] // v, v))
            if (runs[..., 0] % v).any() or (runs - runs[..., :1] != np.arange(v)).any():
                return False
        return True

    def storage_order(self):
        """For a whole shared buffer whose layout fills its storage exactly: a function from a storage address to
        the logical (row-major) index of the element there (ints, arrays or PrimExprs); else ``None``. Dealing
        vectors in storage order makes consecutive lanes touch consecutive shared addresses, which no swizzle or
        interleaving can make conflict, while the other side still gets whole aligned vectors."""
        layout = self.layout
        if self.buffer.scope() != "shared" or layout is None or tuple(self.extents) != self.shape:
            return None
        swizzle, tile = (layout.swizzle, layout.tile_layout) if isinstance(layout, ComposeLayout) else (None, layout)
        if not isinstance(tile, TileLayout) or tile.replica or tile.size() != self.extent:
            return None
        try:
            inverse = PlaceInverse(tile)
        except ValueError:
            return None
        if set(inverse.axes) - {"m"} or not inverse.covered("m", self.extent).all():
            return None
        if swizzle is None:
            return lambda address: inverse.flat_index({"m": address})
        period = np.arange(swizzle.size())
        if (swizzle.swizzle_address(swizzle.swizzle_address(period)) != period).any():
            return None  # not its own inverse: keep logical order
        return lambda address: inverse.flat_index({"m": swizzle.swizzle_address(address)})


class FragmentOperand(_Viewed):
    """A whole register fragment, seen as each thread's ``slot_count`` slots."""

    def __init__(self, region, layout, role: str):
        super().__init__(region, layout, role)
        if not isinstance(layout, TileLayout):
            raise ValueError(f"register fragment {self.buffer.name} needs a TileLayout, got {layout!r}")
        if any(b != 0 for b in self.begins) or tuple(self.extents) != self.shape:
            raise ValueError(
                f"a register fragment is copied whole: {self.buffer.name} has shape {self.shape}, "
                f"the {role} is {region}"
            )
        self.extent = slot_count(layout)
        self.padded = tail_padded(layout, self.shape)
        self._make_view()

    def vector_ok(self, v: int) -> bool:
        """Whether each aligned run of ``v`` elements sits in ``v`` aligned consecutive slots of one thread."""
        if self.padded:  # a tail layout: runs along the padded flat index, which must not cross rows
            return self.shape[-1] % v == 0 and fragment_vector_ok(self.layout, (int(self.layout.size()),), v)
        return fragment_vector_ok(self.layout, self.shape, v)


class TmemOperand(Operand):
    """A region of a tensor-memory buffer: reached by ``tcgen05`` instructions, never through a view."""


def operand(region, layouts: dict, role: str, tables: LayoutTables | None = None, analyzer=None) -> Operand:
    """The operand a copy region is, given every buffer's layout (``layouts``: buffer -> layout); ``analyzer``
    knows the ranges of the kernel's variables, for the tail guards.

    Example:
        >>> import tvm
        >>> A = tvm.tirx.decl_buffer((8, 8), "float32", "A")
        >>> str(operand(A[0:8, 0:4], {}, "source")), operand(A[0:8, 0:4], {}, "source").tile_shape
        ('A (global, row-major)', (8, 4))
    """
    buffer = region.source
    layout = layouts.get(buffer)
    if buffer.scope() == TMEM_SCOPE:
        return TmemOperand(region, layout, role)
    if layout is not None and layout_threads(layout):
        return FragmentOperand(region, layout, role)
    found = MemoryOperand(region, layout, role, tables)
    found.analyzer = analyzer
    return found


def vector_width(dst: Operand, src: Operand) -> int:
    """Elements per access: the widest of 16/8/4 bytes both sides allow, else 1.

    Example:
        >>> import tvm
        >>> A, B = (tvm.tirx.decl_buffer((8, 8), "float16", n) for n in "AB")
        >>> vector_width(operand(B[0:8, 0:8], {}, "destination"), operand(A[0:8, 0:8], {}, "source"))
        8
    """
    for nbytes in VECTOR_BYTES:
        v = nbytes // dst.element_bytes
        if v > 1 and nbytes % dst.element_bytes == 0 and dst.vector_ok(v) and src.vector_ok(v):
            return v
    return 1


# ---- plans ------------------------------------------------------------------------------------------------------


@dataclass
class Access:
    """One vector access of a plan step: the operand, the storage address of its first element (an int, array or
    PrimExpr) and the vector length."""

    operand: _Viewed
    address: object


@dataclass
class Step:
    """What one thread does in one step of a plan: a load, the stores of the loaded value (one per replica place),
    and the conditions under which it does anything, innermost first (all must hold)."""

    load: Access
    stores: list[Access]
    guards: list = field(default_factory=list)

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
        if self.size > cta_threads:
            raise ValueError(f"a {scope}-scope tile_copy needs {self.size} threads; the kernel has {cta_threads}")
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
        guards = []
        if self.ordered is self.src:
            load = Access(self.src, unit * self.v)
        else:
            local = unflatten(flat, self.src.extents)
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
        return Step(load, stores, guards)


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
        for axis in self.thread_axes:
            extent = thread_axis_place(axis, 0, cta_threads)[1]
            if self.inverse.reach(axis) > extent:
                raise ValueError(
                    f"register fragment {fragment.buffer.name} uses {axis} up to "
                    f"{self.inverse.reach(axis) - 1} but the kernel has {extent} places on it "
                    f"({cta_threads} threads)"
                )
        self.holes = any(
            not self.inverse.covered(
                axis, fragment.extent if axis == "m" else thread_axis_place(axis, 0, cta_threads)[1]
            ).all()
            for axis in self.inverse.axes
        )
        self.unread = uncovered_thread_levels(self.thread_axes, scope, cta_threads)

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
            digits = [*self.inverse.replica_digits(places), *((tid // u) % n for u, n in self.unread)]
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
    """Fragment to fragment: the same placement on both sides (anything else would move data between threads),
    so each thread copies its slots ``v`` at a time."""

    def __init__(self, dst: FragmentOperand, src: FragmentOperand, v: int, cta_threads: int):
        if dst.layout != src.layout and not same_placement(dst.layout, src.layout, dst.shape, cta_threads):
            raise ValueError(
                f"tile_copy between register fragments with different layouts ({src} to {dst}) would "
                "move data between threads; copy through shared memory instead"
            )
        self.dst, self.src, self.v = dst, src, v
        self.slots = dst.extent // v

    def step(self, slot, tid) -> Step:
        """Slot vector ``slot`` of any thread."""
        return Step(Access(self.src, slot * self.v), [Access(self.dst, slot * self.v)])


def check_operands(dst: Operand, src: Operand) -> None:
    """``ValueError`` unless the two sides of a copy have one dtype and one tile shape.

    Example:
        >>> import tvm
        >>> A, B = tvm.tirx.decl_buffer((8,), "float16", "A"), tvm.tirx.decl_buffer((8,), "float32", "B")
        >>> check_operands(operand(B[0:8], {}, "destination"), operand(A[0:8], {}, "source"))
        Traceback (most recent call last):
        ...
        ValueError: tile_copy from A (global, row-major) to B (global, row-major): dtypes differ (float16 vs float32)
    """
    if dst.dtype != src.dtype:
        raise ValueError(f"tile_copy from {src} to {dst}: dtypes differ ({src.dtype} vs {dst.dtype})")
    if dst.tile_shape != src.tile_shape:
        raise ValueError(f"tile_copy from {src} to {dst}: region shapes {src.extents} and {dst.extents} differ")


def plan_copy(dst: Operand, src: Operand, scope: str, cta_threads: int):
    """The plan of a copy between two operands that are not tensor memory (see the module docstring).

    Example:
        >>> import tvm
        >>> A, B = (tvm.tirx.decl_buffer((8, 64), "float16", n) for n in "AB")
        >>> plan = plan_copy(operand(B[0:8, 0:64], {}, "destination"), operand(A[0:8, 0:64], {}, "source"), "cta", 32)
        >>> type(plan).__name__, plan.v, plan.rounds
        ('MemoryCopy', 8, 2)
    """
    check_operands(dst, src)
    v = vector_width(dst, src)
    if isinstance(dst, FragmentOperand) and isinstance(src, FragmentOperand):
        return RegisterCopy(dst, src, v, cta_threads)
    if isinstance(src, FragmentOperand):
        return FragmentCopy(src, dst, True, v, cta_threads, scope)
    if isinstance(dst, FragmentOperand):
        return FragmentCopy(dst, src, False, v, cta_threads, scope)
    return MemoryCopy(dst, src, v, scope, cta_threads)
