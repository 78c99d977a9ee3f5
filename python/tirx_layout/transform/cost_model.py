"""What a tile copy costs under candidate layouts, computed statically: the memory instructions LowerTileOps would
emit, enumerated thread by thread in NumPy (addresses, active lanes, vector widths), and the cost models that turn
those counts into a score for layout inference.

The enumeration follows the lowering's own decisions (its ``Side``, ``vector_width`` and storage-order dealing), so
the counts are those of the kernel as compiled; ``tests/test_infer_cost.py`` checks them against the simulator
(:func:`tirx_layout.analysis.kernel_accesses`), which measures the lowered kernel independently.

Counts (over the whole CTA, one entry per warp execution of a memory instruction, as the simulator counts):

* ``bytes``: bytes moved by the active lanes of every global/shared instruction;
* ``instructions``: warp executions of global/shared instructions (``global_instructions`` of them on global);
* ``wavefronts``: shared-memory wavefronts (bank analysis, ``warp_wavefronts``), ``minimum_wavefronts`` the fewest;
* ``registers``: 32-bit registers per thread of the fragments involved.

Cost models (``COST_MODELS``): ``"io-aware"`` scores ``(global instructions + shared wavefronts, bytes,
registers)`` — each shared instruction costs its wavefronts, each global instruction one issue; bytes then registers
break ties. ``"register-count"`` scores registers only. A statement the model cannot enumerate (a symbolic region,
a direct element access) is charged :func:`worst_case`, never zero.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

import numpy as np
import tvm

from ..fragments import thread_axis_place
from ..script.buffers import slot_count
from ..script.tile import EXEC_SCOPES
from .lower_tile_ops import Side, _CopyLowering, vector_width

WARP = 32


@dataclass
class Cost:
    """Counts of memory work (see the module docstring). ``unknown`` counts statements charged the worst case.

    Example:
        >>> Cost(bytes=4, instructions=1) + Cost(bytes=8, instructions=2)
        Cost(bytes=12, instructions=3, global_instructions=0, wavefronts=0, minimum_wavefronts=0, registers=0, unknown=0)
    """

    bytes: int = 0
    instructions: int = 0
    global_instructions: int = 0
    wavefronts: int = 0
    minimum_wavefronts: int = 0
    registers: int = 0
    unknown: int = 0

    def __add__(self, other: Cost) -> Cost:
        return Cost(*(getattr(self, f.name) + getattr(other, f.name) for f in fields(self)))

    def short(self) -> str:
        """One line: ``bytes / instructions / wavefronts / registers``.

        Example:
            >>> Cost(bytes=64, instructions=2, wavefronts=1, registers=4).short()
            'bytes=64 instr=2 wavefronts=1 regs=4'
        """
        unknown = f" unknown={self.unknown}" if self.unknown else ""
        return (f"bytes={self.bytes} instr={self.instructions} wavefronts={self.wavefronts} "
                f"regs={self.registers}{unknown}")  # fmt: skip


def io_aware(cost: Cost) -> tuple:
    """The default score: issue slots (global instructions + shared wavefronts), then bytes, then registers.

    Example:
        >>> io_aware(Cost(bytes=64, instructions=3, global_instructions=1, wavefronts=4, registers=8))
        (5, 64, 8)
    """
    return (cost.global_instructions + cost.wavefronts, cost.bytes, cost.registers)


def register_count(cost: Cost) -> tuple:
    """The simple alternative: registers per thread only (ties go to the earlier candidate).

    Example:
        >>> register_count(Cost(registers=8))
        (8,)
    """
    return (cost.registers,)


COST_MODELS = {"io-aware": io_aware, "register-count": register_count}
DEFAULT_COST_MODEL = "io-aware"


def cost_model(name: str):
    """The score function of cost model ``name``; ``ValueError`` for an unknown name.

    Example:
        >>> cost_model("register-count") is register_count
        True
    """
    if name not in COST_MODELS:
        raise ValueError(f"unknown layout cost model {name!r}; choose one of {sorted(COST_MODELS)}")
    return COST_MODELS[name]


# ---- per-instruction accounting ------------------------------------------------------------------------------


def _instruction(cost: Cost, scope: str, addresses: np.ndarray, active: np.ndarray, element_bytes: int) -> None:
    """Add one memory instruction executed by every thread: ``addresses[t]`` the element addresses thread ``t``
    touches (a vector), ``active[t]`` whether it runs. Wavefronts follow the bank model of
    ``analysis.bank_conflicts`` (phases of 32 / 16 / 8 lanes by access width; per phase the most distinct words in
    one bank), computed for all warps at once."""
    threads, lanes = addresses.shape
    access_bytes = lanes * element_bytes
    warps = active[: threads - threads % WARP].reshape(-1, WARP).any(axis=1) if threads >= WARP else active.any()[None]
    if threads % WARP and threads > WARP:
        warps = np.append(warps, active[threads - threads % WARP :].any())
    cost.instructions += int(np.sum(warps))
    cost.bytes += int(active.sum()) * access_bytes
    if scope != "shared":
        cost.global_instructions += int(np.sum(warps))
        return
    per_phase = WARP if access_bytes <= 4 else WARP * 4 // access_bytes
    words_per_element = max(element_bytes // 4, 1)
    first = addresses[active] * element_bytes // 4
    words = (first[..., None] + np.arange(words_per_element)).reshape(first.shape[0], -1)
    phase = np.nonzero(active)[0] // per_phase
    keys = np.unique(phase[:, None] * (1 << 40) + words)  # distinct (phase, word)
    phase_of, word = keys >> 40, keys & ((1 << 40) - 1)
    bank_keys, per_bank = np.unique(phase_of * 32 + word % 32, return_counts=True)
    worst = np.zeros(int(phase_of.max()) + 1 if keys.size else 0, np.int64)
    np.maximum.at(worst, bank_keys // 32, per_bank)
    phases, distinct = np.unique(phase_of, return_counts=True)
    cost.wavefronts += int(worst[phases].sum())
    cost.minimum_wavefronts += int(np.sum(-(-distinct // 32)))


def worst_case(elements: int, element_bytes: int, shared_sides: int, sides: int = 2) -> Cost:
    """What a statement the model cannot enumerate is charged: every element of every side its own scalar warp
    instruction, each shared one a full wavefront (as if no two lanes ever shared an instruction).

    Example:
        >>> worst_case(16, 4, shared_sides=1).short()
        'bytes=128 instr=32 wavefronts=16 regs=0 unknown=1'
    """
    return Cost(bytes=elements * element_bytes * sides, instructions=elements * sides,
                global_instructions=elements * (sides - shared_sides), wavefronts=elements * shared_sides,
                minimum_wavefronts=elements * shared_sides, unknown=1)  # fmt: skip


def fragment_registers(layout, dtype_bytes: int) -> int:
    """32-bit registers per thread that a fragment of ``layout`` holds.

    Example:
        >>> from tirx_layout import wg_local_layout
        >>> fragment_registers(wg_local_layout(64), 2)
        32
    """
    return math.ceil(slot_count(layout) * dtype_bytes / 4)


# ---- the copies -----------------------------------------------------------------------------------------------


def _static_begins(side: Side):
    begins = []
    for b in side.begins:
        value = b if isinstance(b, int) else getattr(b, "value", None)
        if value is None:
            return None
        begins.append(int(value))
    return begins


def _memory_addresses(side: Side, flat: np.ndarray, v: int, every_replica: bool) -> list[np.ndarray]:
    """Storage addresses (one array per replica, shape ``flat.shape + (v,)``) of the region elements whose
    row-major index in the region is ``flat`` and of the ``v - 1`` following ones."""
    begins = _static_begins(side)
    coords = np.unravel_index(np.clip(flat, 0, math.prod(side.extents) - 1), side.extents)
    index = tuple(c + b for c, b in zip(coords, begins, strict=True))
    tables = side.address_table()
    tables = tables if every_replica else tables[:1]
    return [t[index][..., None] + np.arange(v) for t in tables]


_TABLES: dict = {}
_HOLDERS: dict = {}


def _cache_tables(side: Side) -> None:
    """Give ``side`` a memoized ``address_table`` (the table depends only on the layout and the shape), so the
    candidates a search revisits are not recomputed."""
    key = (str(side.layout), side.shape)
    compute = side.address_table

    def address_table():
        if key not in _TABLES:
            if len(_TABLES) > 4096:
                _TABLES.clear()
            _TABLES[key] = compute()
        return _TABLES[key]

    side.address_table = address_table


def _storage_flat(side: Side, v: int, units: np.ndarray):
    """The lowering's storage-order dealing (``_CopyLowering._storage_order``), for integer units: vector ``u``
    is the element whose final address is ``u * v`` (the swizzle is its own inverse), or ``None``."""
    if _CopyLowering._storage_order(side, v, 0) is None:
        return None
    table = side.address_table()[0].ravel()
    inverse = np.full(side.extent, -1, np.int64)
    inverse[table] = np.arange(table.size)
    return inverse[np.clip(units * v, 0, side.extent - 1)]


def memory_to_memory(dst: Side, src: Side, v: int, scope: str, threads: int) -> Cost:
    """Counts of a copy between two memory tiles: vectors dealt round-robin to the copy scope's threads.

    Example:
        >>> memory_to_memory.__name__
        'memory_to_memory'
    """
    size = EXEC_SCOPES[scope] or threads
    units = math.prod(src.tile_shape) // v
    tid = np.arange(threads) % size
    cost = Cost()
    unit = np.arange(-(-units // size))[:, None] * size + tid[None, :]  # (round, thread)
    active = unit < units
    flat = next((f for f in (_storage_flat(dst, v, unit), _storage_flat(src, v, unit)) if f is not None), unit * v)
    (load,) = _memory_addresses(src, flat, v, every_replica=False)
    stores = _memory_addresses(dst, flat, v, every_replica=True)
    for r in range(unit.shape[0]):
        _instruction(cost, src.buffer.scope(), load[r], active[r], src.element_bytes)
        for store in stores:
            _instruction(cost, dst.buffer.scope(), store[r], active[r], dst.element_bytes)
    return cost


def fragment_holders(layout, threads: int) -> tuple[np.ndarray, np.ndarray]:
    """For each thread and register slot of a fragment layout: the logical (flat, row-major) element it holds
    (-1 for none) and which replica of it (0 for the base copy).

    Example:
        >>> from tirx_layout import TileLayout, S, laneid
        >>> flat, replica = fragment_holders(TileLayout(S[(32, 2):(1 @ laneid, 1)]), 32)
        >>> flat[3].tolist(), replica[3].tolist()
        ([6, 7], [0, 0])
    """
    size = int(layout.size())
    places = layout.apply_all(np.arange(size), shape=[size])
    some = np.asarray(next(iter(places.values())))
    places.setdefault("m", np.zeros_like(some))  # one slot per thread: no m iter at all
    slots = slot_count(layout)
    holder = np.full((threads, slots), -1, np.int64)
    replica = np.zeros((threads, slots), np.int64)
    tids = np.arange(threads)
    match = np.ones((threads, *np.asarray(places["m"]).shape), bool)
    for axis, table in places.items():
        if axis == "m":
            continue
        place, extent = thread_axis_place(axis, tids, threads)
        match &= np.asarray(place)[:, None, None] == np.asarray(table)[None]
    t, rep, flat = np.nonzero(match)
    m = np.asarray(places["m"])[rep, flat]
    inside = (m >= 0) & (m < slots)
    # Replica 0 last, so it wins a slot that several replicas share (the lowering stores replica 0 only).
    order = np.argsort(-rep[inside], kind="stable")
    holder[t[inside][order], m[inside][order]] = flat[inside][order]
    replica[t[inside][order], m[inside][order]] = rep[inside][order]
    return holder, replica


def fragment_and_memory(dst: Side, src: Side, v: int, threads: int) -> Cost:
    """Counts of a copy between a register fragment and a memory tile: each thread walks its slots ``v`` at a
    time; the fragment's replicas all load, replica 0 stores, padding past the buffer is skipped.

    Example:
        >>> fragment_and_memory.__name__
        'fragment_and_memory'
    """
    fragment, memory = (src, dst) if src.distributed else (dst, src)
    storing = fragment is src
    key = (str(fragment.layout), threads)
    if key not in _HOLDERS:
        _HOLDERS[key] = fragment_holders(fragment.layout, threads)
    holder, replica = _HOLDERS[key]
    elements = math.prod(fragment.shape)
    cost = Cost()
    flat = holder[:, ::v].T  # (vector, thread)
    active = (flat >= 0) & (flat < elements)
    if storing:
        active &= replica[:, ::v].T == 0
    tables = _memory_addresses(memory, flat, v, every_replica=storing)
    for k in range(flat.shape[0]):
        for addresses in tables:
            _instruction(cost, memory.buffer.scope(), addresses[k], active[k], memory.element_bytes)
    return cost


def copy_cost(dst_region, src_region, scope: str, layouts: dict, threads: int) -> Cost:
    """Counts of one ``T.tile_copy(dst, src, scope)`` under ``layouts`` (buffer -> layout; missing = row-major)
    in a CTA of ``threads`` threads; :func:`worst_case` if a region is symbolic.

    Example:
        >>> import tvm
        >>> from tirx_layout import TileLayout, S, laneid
        >>> A = tvm.tirx.decl_buffer((32, 4), "float32", "A")
        >>> F = tvm.tirx.decl_buffer((32, 4), "float32", "F", scope="local")
        >>> copy_cost(F[0:32, 0:4], A[0:32, 0:4], "cta", {F: TileLayout(S[(32, 4):(1 @ laneid, 1)])}, 32).short()
        'bytes=512 instr=1 wavefronts=0 regs=0'
    """
    if "tmem" in (dst_region.source.scope(), src_region.source.scope()):
        # tcgen05.ld/st/cp: not enumerated here. A fragment next to TMEM is fixed by the strict rule anyway; a
        # shared operand of tcgen05.cp is charged the worst case, as every statement the model does not know.
        elements = math.prod(int(r.extent) for r in src_region.region)
        element_bytes = tvm.runtime.DataType(str(src_region.source.dtype)).bits // 8
        return worst_case(elements, element_bytes, int("shared" in (dst_region.source.scope(),
                                                                     src_region.source.scope())))  # fmt: skip
    dst, src = Side(dst_region, layouts, "destination"), Side(src_region, layouts, "source")
    for side in (dst, src):
        _cache_tables(side)
    if _static_begins(dst) is None or _static_begins(src) is None:
        shared = sum(s.buffer.scope() == "shared" for s in (dst, src))
        return worst_case(math.prod(src.tile_shape), src.element_bytes, shared)
    v = vector_width(dst, src)
    if dst.distributed and src.distributed:
        return Cost()  # register moves only
    if dst.distributed or src.distributed:
        return fragment_and_memory(dst, src, v, threads)
    return memory_to_memory(dst, src, v, str(scope), threads)


__all__ = ["COST_MODELS", "DEFAULT_COST_MODEL", "Cost", "copy_cost", "cost_model", "fragment_and_memory",
           "fragment_holders", "fragment_registers", "io_aware", "memory_to_memory", "register_count",
           "worst_case"]  # fmt: skip
