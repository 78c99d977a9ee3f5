"""LowerTileOps: ``T.tile_copy(dst, src)`` becomes per-thread loads and stores.

How a copy is split between threads depends on its sides:

* **memory to memory** (global/shared, any layouts): the tile is cut into vectors, dealt round-robin to the
  threads of the copy's scope (CTA, warpgroup or warp), with a guard on the last round when they do not divide;
* **register fragment to or from memory**: each thread walks its own register slots; the fragment layout's inverse
  (:class:`~tirx_layout.inverse.PlaceInverse`) says which logical element a (thread, slot) holds, and the memory
  layout says where that element lives;
* **fragment to fragment** with the same layout: slot by slot.

Vectors are the widest of 16, 8 or 4 bytes for which the tile is contiguous and aligned on both sides (inside one
swizzle chunk for a swizzled layout, checked on the layout's whole address table); otherwise scalar accesses.

Replica guards: a fragment replicated over threads stores from replica 0 only; a memory destination with replicas
(``R[...]`` on ``m``) is written at every replica place; a fragment destination replicated over threads is loaded
by every replica. Accesses go through flat views of each buffer's physical storage (``<name>_flat``), which
LowerLayoutAccess later points at the flat buffers it makes.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np
import tvm
from tvm import tirx
from tvm.ir import Call

from ..fragments import fragment_vector_ok, thread_axis_place
from ..inverse import PlaceInverse, unflatten
from ..layout import TileLayout
from ..script.buffers import buffer_layouts, layout_threads, slot_count, tail_padded
from ..script.tile import COPY_OP_NAME, EXEC_SCOPES
from ..swizzle import ComposeLayout
from ._rewrite import DeclBuffer, map_function, sequence, walk
from .lower_layout_access import storage_extent
from .tmem import TmemLowering

VECTOR_BYTES = (16, 8, 4)


# ---- the CTA's threads ----------------------------------------------------------------------------------------


@dataclass
class Threads:
    """The CTA-wide thread index (an expression over the kernel's thread id variables) and the thread count."""

    index: object
    count: int
    bounds: dict  # var -> extent, for simplification


_SCOPE_PAIR = re.compile(r'"(\w+)", "(\w+)"\)$')
_LEVELS = ("cta", "warpgroup", "warp", "thread")  # coarse to fine
_LEVEL_SIZE = {"thread": 1, "warp": 32, "warpgroup": 128}


def cta_threads(func) -> Threads:
    """The CTA-wide thread index and thread count of a kernel, from its ``T.thread_id`` or ``T.warpgroup_id`` /
    ``T.warp_id`` / ``T.lane_id`` definitions (``warp * 32 + lane``, for instance).

    Example:
        >>> import tvm, tirx_layout
        >>> func = tvm.script.from_source('''
        ... @T.prim_func
        ... def k(A: T.Buffer((64,), "float32")):
        ...     T.device_entry()
        ...     warp = T.warp_id([2])
        ...     lane = T.lane_id([32])
        ...     A[warp * 32 + lane] = T.float32(0)
        ... ''')
        >>> threads = cta_threads(func)
        >>> threads.index, threads.count
        (warp * 32 + lane, 64)
    """
    defined, bounds = {}, {}

    def on_def(stmt):
        definition = getattr(stmt, "def")
        match = _SCOPE_PAIR.search(str(definition))
        if match is None or match.group(1) not in _LEVELS or match.group(2) not in _LEVELS:
            return
        index, extent = 0, 1
        for var, e in zip(definition.def_ids, definition.extents, strict=True):
            bounds[var] = int(e)
            index = index * int(e) + var
            extent *= int(e)
        defined[match.groups()] = (index, extent)

    walk(func.body, [(tirx.ScopeIdDefStmt, on_def)])
    level, index, count = "cta", None, None
    while level != "thread":
        finer = [child for child in _LEVELS[_LEVELS.index(level) + 1 :] if (level, child) in defined]
        if not finer:
            raise ValueError(f"the kernel does not define its threads below the {level} level "
                             "(write T.thread_id([n]), or T.warp_id([w]) with T.lane_id([32]))")  # fmt: skip
        child = finer[-1] if (level, "thread") in defined else finer[0]
        var_index, extent = defined[(level, child)]
        term = var_index * _LEVEL_SIZE[child] if _LEVEL_SIZE[child] > 1 else var_index
        index = term if index is None else index + term
        if count is None:
            count = extent * _LEVEL_SIZE[child]
        level = child
    return Threads(index, count, bounds)


# ---- the two sides of a copy ----------------------------------------------------------------------------------


def _static(expr) -> int | None:
    if isinstance(expr, int):
        return expr
    if isinstance(expr, tirx.IntImm):
        return int(expr.value)
    return None


class Side:
    """One operand of a copy: a region of a buffer, its layout, and its flat view."""

    def __init__(self, region, layouts: dict, role: str):
        self.buffer = region.source
        self.role = role
        self.layout = layouts.get(self.buffer)
        self.shape = tuple(int(e) for e in self.buffer.shape)
        self.begins = [r.min for r in region.region]
        self.extents = [_static(r.extent) for r in region.region]
        if any(e is None for e in self.extents):
            raise ValueError(f"the {role} region of {self.buffer.name} has a symbolic extent: {region}")
        self.dtype = str(self.buffer.dtype)
        self.element_bytes = tvm.runtime.DataType(self.dtype).bits // 8
        self.distributed = self.layout is not None and bool(layout_threads(self.layout))
        if self.buffer.scope() == "tmem":  # reached by tcgen05 instructions only (transform/tmem.py), never a view
            self.extent = 0
            return
        if self.distributed:
            if not isinstance(self.layout, TileLayout):
                raise ValueError(f"register fragment {self.buffer.name} needs a TileLayout, got {self.layout!r}")
            if any(_static(b) != 0 for b in self.begins) or tuple(self.extents) != self.shape:
                raise ValueError(f"a register fragment is copied whole: {self.buffer.name} has shape {self.shape}, "
                                 f"the {role} is {region}")  # fmt: skip
            self.extent = slot_count(self.layout)
            self.padded = tail_padded(self.layout, self.shape)
        else:
            self.extent = storage_extent(self.layout) if self.layout is not None else math.prod(self.shape)
        self.view = tvm.tirx.decl_buffer((self.extent,), self.dtype, f"{self.buffer.name}_flat",
                                         scope=self.buffer.scope(), layout=None)  # fmt: skip

    def __str__(self) -> str:
        where = f"layout {self.layout}" if self.layout is not None else "row-major"
        return f"{self.buffer.name} ({self.buffer.scope()}, {where})"

    @property
    def tile_shape(self) -> tuple:
        return tuple(e for e in self.extents if e != 1)

    def declaration(self):
        return DeclBuffer(self.view, data=self.buffer.data)

    # -- memory sides ---------------------------------------------------------------------------------------------

    def places(self, local_coords, every_replica: bool) -> list:
        """Flat storage addresses of the region element at ``local_coords`` (one per replica if asked)."""
        coords = [b + c for b, c in zip(self.begins, local_coords, strict=True)]
        if self.layout is None:
            flat = 0
            for c, e in zip(coords, self.shape, strict=True):
                flat = flat * e + c
            return [flat]
        if every_replica:
            return [p.get("m", 0) for p in self.layout.apply_all(*coords, shape=self.shape)]
        return [self.layout.apply(*coords, shape=self.shape).get("m", 0)]

    def address_table(self) -> list[np.ndarray]:
        """Addresses of every element of the whole buffer, one array per replica, in the buffer's shape."""
        if self.layout is None:
            return [np.arange(math.prod(self.shape)).reshape(self.shape)]
        grids = np.meshgrid(*[np.arange(e) for e in self.shape], indexing="ij")
        places = self.layout.apply_all(*grids, shape=self.shape)
        return [np.asarray(m) for m in np.asarray(places["m"]).reshape((-1, *self.shape))]

    def memory_vector_ok(self, v: int) -> bool:
        """Whether every aligned run of ``v`` elements along the last dimension is contiguous and aligned in
        storage (for every replica), and the region starts and ends on such runs."""
        if self.shape[-1] % v or self.extents[-1] % v:
            return False
        begin = _static(self.begins[-1])
        if begin is None or begin % v:
            return False
        for table in self.address_table():
            runs = table.reshape((*self.shape[:-1], self.shape[-1] // v, v))
            if (runs[..., 0] % v).any() or (runs - runs[..., :1] != np.arange(v)).any():
                return False
        return True

    # -- fragment sides -------------------------------------------------------------------------------------------

    def vector_ok(self, v: int) -> bool:
        if not self.distributed:
            return self.memory_vector_ok(v)
        if self.padded:  # a tail layout: runs along the padded flat index, which must not cross rows
            return self.shape[-1] % v == 0 and fragment_vector_ok(self.layout, (int(self.layout.size()),), v)
        return fragment_vector_ok(self.layout, self.shape, v)


def vector_width(dst: Side, src: Side) -> int:
    """Elements per access: the widest of 16/8/4 bytes both sides allow, else 1.

    Example:
        >>> vector_width.__name__
        'vector_width'
    """
    for nbytes in VECTOR_BYTES:
        v = nbytes // dst.element_bytes
        if v >= 1 and nbytes % dst.element_bytes == 0 and v > 1 and dst.vector_ok(v) and src.vector_ok(v):
            return v
    return 1


def _lanes(index, v: int):
    return index if v == 1 else tirx.Ramp(index, 1, v)


def _load(side: Side, index, v: int):
    return tvm.tirx.BufferLoad(side.view, [_lanes(index, v)])


def _store(side: Side, index, value, v: int):
    return tirx.BufferStore(side.view, value, [_lanes(index, v)])


# ---- the lowering ---------------------------------------------------------------------------------------------


class _CopyLowering:
    def __init__(self, func):
        self.layouts = buffer_layouts(func)
        self.func = func
        self._threads = None
        self.analyzer = tvm.sym.Analyzer()
        self.tmem = TmemLowering(func, lambda: self.threads)

    @property
    def threads(self) -> Threads:
        if self._threads is None:
            self._threads = cta_threads(self.func)
            for var, extent in self._threads.bounds.items():
                self.analyzer.bind(var, tvm.ir.Range(0, extent))
        return self._threads

    def loop_var(self, name: str, extent: int):
        """A loop variable over ``range(extent)``, known to the simplifier; the constant 0 for a one-trip loop."""
        if extent == 1:
            return 0
        var = tirx.Var(name, "int32")
        self.analyzer.bind(var, tvm.ir.Range(0, extent))
        return var

    @staticmethod
    def loop(var, extent: int, kind, body):
        return body if extent == 1 else tirx.For(var, 0, extent, kind, body)

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

    def lower(self, call: Call):
        dst_region, src_region, scope = call.args
        dst, src = Side(dst_region, self.layouts, "destination"), Side(src_region, self.layouts, "source")
        if dst.dtype != src.dtype:
            raise ValueError(f"tile_copy from {src} to {dst}: dtypes differ ({src.dtype} vs {dst.dtype})")
        if dst.tile_shape != src.tile_shape:
            raise ValueError(f"tile_copy from {src} to {dst}: region shapes {src.extents} and {dst.extents} differ")
        tmem = self.tmem.copy(dst, src, str(scope.value))
        if tmem is not None:
            return tmem
        v = vector_width(dst, src)
        if dst.distributed and src.distributed:
            body = self.fragment_to_fragment(dst, src, v)
        elif dst.distributed or src.distributed:
            body = self.fragment_and_memory(dst, src, v)
        else:
            body = self.memory_to_memory(dst, src, v, str(scope.value))
        return sequence([dst.declaration(), src.declaration(), body])

    # -- memory <-> memory ----------------------------------------------------------------------------------------

    def memory_to_memory(self, dst: Side, src: Side, v: int, scope: str):
        threads = self.threads
        size = EXEC_SCOPES[scope] or threads.count
        if size > threads.count:
            raise ValueError(f"a {scope}-scope tile_copy needs {size} threads; the kernel has {threads.count}")
        tid = threads.index if size == threads.count else tirx.floormod(threads.index, size)
        units = math.prod(src.tile_shape) // v
        rounds = -(-units // size)
        step = self.loop_var("copy_round", rounds)
        unit = step * size + tid
        flat, ordered = unit * v, None
        for side in (dst, src):
            logical = self._storage_order(side, v, unit)
            if logical is not None:
                flat, ordered = logical, side
                break
        local, dst_local = unflatten(flat, src.extents), unflatten(flat, dst.extents)
        # The side dealt in storage order is addressed by the storage index itself, not through its layout.
        src_places = [unit * v] if ordered is src else src.places(local, every_replica=False)
        dst_places = [unit * v] if ordered is dst else dst.places(dst_local, every_replica=True)
        value = _load(src, self.aligned(src_places[0], v), v)
        stores = [_store(dst, self.aligned(p, v), value, v) for p in dst_places]
        body = sequence(stores)
        if units % size:
            body = tirx.IfThenElse(unit < units, body, None)
        return self.loop(step, rounds, tirx.ForKind.SERIAL, body)

    @staticmethod
    def _storage_order(side: Side, v: int, unit):
        """The logical index of vector ``unit`` when vectors are dealt in the storage order of ``side``, a whole
        shared buffer whose layout fills its storage exactly, or ``None``. Consecutive lanes then touch consecutive
        shared addresses, which no swizzle or interleaving can make conflict, while the other side still gets whole
        aligned vectors."""
        layout = side.layout
        if side.buffer.scope() != "shared" or layout is None or tuple(side.extents) != side.shape:
            return None
        swizzle, tile = (layout.swizzle, layout.tile_layout) if isinstance(layout, ComposeLayout) else (None, layout)
        if not isinstance(tile, TileLayout) or tile.replica or tile.size() != side.extent:
            return None
        try:
            inverse = PlaceInverse(tile)
        except ValueError:
            return None
        if set(inverse.axes) - {"m"} or not inverse.covered("m", side.extent).all():
            return None
        address = unit * v
        if swizzle is not None:
            period = np.arange(swizzle.size())
            if (swizzle.apply(swizzle.apply(period)) != period).any():
                return None  # not its own inverse: keep logical order
            address = swizzle.apply(address)
        return inverse.flat_index({"m": address})

    # -- fragment <-> memory --------------------------------------------------------------------------------------

    def _fragment_places(self, fragment: Side, slot):
        inverse = PlaceInverse(fragment.layout)
        places = {"m": slot}
        for axis in inverse.axes:
            if axis == "m":
                continue
            place, extent = thread_axis_place(axis, self.threads.index, self.threads.count)
            if inverse.reach(axis) > extent:
                raise ValueError(f"register fragment {fragment.buffer.name} uses {axis} up to {inverse.reach(axis) - 1}"
                                 f" but the kernel has {extent} places on it ({self.threads.count} threads)")  # fmt: skip
            places[axis] = place
        return inverse, places

    def _holes(self, fragment: Side, inverse: PlaceInverse) -> bool:
        for axis in inverse.axes:
            extent = fragment.extent if axis == "m" else thread_axis_place(axis, 0, self.threads.count)[1]
            if not inverse.covered(axis, extent).all():
                return True
        return False

    def fragment_and_memory(self, dst: Side, src: Side, v: int):
        fragment, memory = (src, dst) if src.distributed else (dst, src)
        storing = fragment is src
        slot = self.loop_var("slot", fragment.extent // v)
        start = slot * v
        inverse, places = self._fragment_places(fragment, start)
        flat = inverse.flat_index(places)
        local = unflatten(flat, memory.extents)
        if storing:
            value = _load(fragment, start, v)
            body = sequence([_store(memory, self.aligned(p, v), value, v) for p in memory.places(local, True)])
            replicas = [d for d in inverse.replica_digits(places) if not isinstance(d, int)]
            if replicas:  # a value held by several threads (or slots) is stored by replica 0 only
                body = tirx.IfThenElse(self.simplify(_conjunction([d == 0 for d in replicas])), body, None)
        else:
            index = self.aligned(memory.places(local, every_replica=False)[0], v)
            body = _store(fragment, start, _load(memory, index, v), v)
        if fragment.padded:  # tail predicate: places past the buffer's last element hold nothing
            body = tirx.IfThenElse(self.simplify(flat < math.prod(fragment.shape)), body, None)
        if self._holes(fragment, inverse):
            body = tirx.IfThenElse(self.simplify(inverse.holds(places)), body, None)
        return self.loop(slot, fragment.extent // v, tirx.ForKind.UNROLLED, body)

    def fragment_to_fragment(self, dst: Side, src: Side, v: int):
        from .infer_layouts import same_placement  # layout inference: equal placements, any spelling

        if dst.layout != src.layout and not same_placement(dst.layout, src.layout, dst.shape, self.threads.count):
            raise ValueError(f"tile_copy between register fragments with different layouts ({src} to {dst}) would "
                             "move data between threads; copy through shared memory instead")  # fmt: skip
        slot = self.loop_var("slot", dst.extent // v)
        body = _store(dst, slot * v, _load(src, slot * v, v), v)
        return self.loop(slot, dst.extent // v, tirx.ForKind.UNROLLED, body)


def _conjunction(conditions):
    out = conditions[0]
    for c in conditions[1:]:
        out = tirx.And(out, c)
    return out


def lower_tile_ops(func):
    """``func`` with every ``T.tile_copy`` lowered to per-thread accesses (see the module docstring).

    Example:
        >>> lower_tile_ops.__name__
        'lower_tile_ops'
    """
    lowering = _CopyLowering(func)

    def on_evaluate(stmt):
        value = stmt.value
        if not (isinstance(value, Call) and getattr(value.op, "name", "") == COPY_OP_NAME):
            return stmt
        return lowering.lower(value)

    rules = [(tirx.Evaluate, on_evaluate)]
    if lowering.tmem.allocs:  # TMEM allocations become tcgen05.alloc ... tcgen05.dealloc around their scope
        rules.append((tirx.SeqStmt, lowering.tmem.expand))
    return map_function(func, rules)


@tvm.tirx.transform.prim_func_pass(opt_level=0, name="tirx_layout.LowerTileOps")
class LowerTileOps:
    """The registered pass: :func:`lower_tile_ops` on every PrimFunc of a module.

    Example:
        >>> import tvm
        >>> isinstance(LowerTileOps(), tvm.transform.Pass)
        True
    """

    def transform_function(self, func, mod, ctx):
        return lower_tile_ops(func)
