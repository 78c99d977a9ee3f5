"""Tensor memory and the tcgen05 instructions, simulated from the PTX ISA (not from our layout constructors).

One CTA's TMEM is 128 lanes x 512 columns of 32 bits (PTX ISA, "Tensor Memory"). The instructions arrive as calls of
device helpers (named as ``tirx_layout.ir.device_calls`` says); their meaning here is written from the PTX ISA text
only, not from ``tirx_layout.hw.tcgen05`` or the lowering, so that the two are independent checks of each other:

* ``alloc(slot, nCols)``: one whole warp; nCols a power of two in [32, 512]; the columns are the lowest free aligned
  range; the address (lane 0, first column) is written to the shared-memory ``slot``; no alloc after
  ``relinquish_alloc_permit``. ``dealloc(taddr, nCols)`` frees exactly an allocated range. Every allocation must be
  freed before the CTA exits (tcgen05.alloc/dealloc).
* ``ld/st_<shape>_x<N>(taddr, registers)``: every thread of each issuing warp (``.sync.aligned``), one ``taddr``
  per warp (lane in bits 31-16, column in bits 15-0). Lane ``l``'s register ``r`` holds (9.7.16.2.3.1, "Matrix
  fragments"): 32x32b ``(l, r)``; 16x64b ``(l//4 + 8(l%2), (l//2)%2 + 2r)``; 16x128b ``(l//4 + 8(r%2),
  l%4 + 4(r//2))``; 16x256b ``(l//4 + 8((r//2)%2), r%2 + 2(l%4) + 8(r//4))``, as (lane, column) offsets from
  ``taddr``. Warp ``w`` may touch lanes ``32(w%4)..32(w%4)+31`` only (9.7.16.8.1, access restrictions), and
  only allocated columns. ``..._pack16b`` is ``.pack::16b`` (ld: "two 16-bit elements from adjacent columns are
  packed into a single 32-bit element") / ``.unpack::16b`` (st: the reverse): register ``r``'s column ``c`` above
  stands for columns ``2c`` (low 16 bits) and ``2c + 1`` (high 16 bits), each column's low half.
* ``wait_ld`` / ``wait_st`` / ``fence_before`` / ``fence_after`` / ``commit``: the simulator performs every access
  when it is issued, and checks that the kernel orders it as the ISA's tcgen05 memory model asks
  (``tmem_order.TmemOrder``): a TMEM access that nothing orders after a conflicting one is an error.
* ``cp_<shape>``: ``tcgen05.cp`` from a shared-memory matrix descriptor; ``mma_<kind>_ss/_ts``: ``tcgen05.mma``
  (``tcgen05_mma.issue``); ``commit``: ``tcgen05.commit``, an arrive on an mbarrier (``mbarrier.commit``) once the
  thread's earlier copies and MMAs are complete; ``smem_descriptor``: a shared-memory descriptor's start field.

:data:`HELPERS` is the family's executor (``ir/device_calls`` family ``tcgen05``): the exact names, then the
patterns of ``ld``/``st``, ``cp`` and ``mma``. Only the instructions that touch tensor memory or its ordering make
the CTA's :class:`TensorMemory` (:func:`tensor_memory`); ``smem_descriptor`` does not.
"""

from __future__ import annotations

import numpy as np
from tvm.ir import Call

from . import mbarrier, tcgen05_mma, tcgen05_pair
from .addresses import register_address, shared_address, smem_descriptor
from .dispatch import HelperTable
from .memory import AsyncRead, OutOfBounds, SimulationError
from .tmem_order import TmemOrder

LANES, COLUMNS = 128, 512
#: The 16-bit qualifiers of ld/st helpers named ``..._pack16b`` (PTX ISA, tcgen05.ld/st).
_PACK16 = {"ld": "pack::16b", "st": "unpack::16b"}
# tcgen05.cp (PTX ISA, tcgen05.cp shapes and multicast): rows, 128-bit pieces per row, lane(s) of row r relative
# to taddr's lane.
_CP = {
    "128x256b": (128, 2, lambda r: [r]),
    "128x128b": (128, 1, lambda r: [r]),
    "64x128b_warpx2_02_13": (64, 1, lambda r: [r, r + 64]),
    "64x128b_warpx2_01_23": (64, 1, lambda r: [64 * (r // 32) + r % 32, 64 * (r // 32) + r % 32 + 32]),
    "32x128b_warpx4": (32, 1, lambda r: [r, r + 32, r + 64, r + 96]),
    "4x256b": (4, 2, lambda r: [32 * r]),
}


def fragment_offsets(shape: str, num: int) -> tuple[np.ndarray, np.ndarray]:
    """``(lane, column)`` offsets from ``taddr`` of every (warp lane, register) of ``tcgen05.ld/st.<shape>.x<num>``,
    each of shape ``(32, registers)``, by the PTX ISA's matrix-fragment figures.

    Example:
        >>> lanes, cols = fragment_offsets("16x64b", 1)
        >>> int(lanes[5, 0]), int(cols[5, 0])
        (9, 0)
    """
    l = np.arange(32)[:, None]
    if shape == "32x32b":
        r = np.arange(num)[None, :]
        return np.broadcast_to(l, (32, num)).copy(), np.broadcast_to(r, (32, num)).copy()
    if shape == "16x64b":
        r = np.arange(num)[None, :]
        return np.broadcast_to(l // 4 + 8 * (l % 2), (32, num)).copy(), (l // 2) % 2 + 2 * r
    if shape == "16x128b":
        r = np.arange(2 * num)[None, :]
        return l // 4 + 8 * (r % 2), l % 4 + 4 * (r // 2)
    if shape == "16x256b":
        r = np.arange(4 * num)[None, :]
        return l // 4 + 8 * ((r // 2) % 2), r % 2 + 2 * (l % 4) + 8 * (r // 4)
    raise SimulationError(f"unknown tcgen05.ld/st shape {shape}")


class TensorMemory:
    """One CTA's tensor memory: 32-bit cells, the allocated column ranges, whether allocation is closed, and the
    ordering state of its ``warps`` warps' accesses.

    Example:
        >>> tm = TensorMemory()
        >>> tm.alloc(64), tm.alloc(32)
        (0, 64)
        >>> tm.dealloc(64, 32); tm.allocated
        {0: 64}
    """

    def __init__(self, warps: int = 4):
        self.data = np.zeros(LANES * COLUMNS, np.uint32)
        self.order = TmemOrder(warps, LANES * COLUMNS)
        self.allocated: dict[int, int] = {}  # first column -> nCols
        self.relinquished = False
        self.loading: dict = {}  # register buffer var -> (threads, slots): written by a tcgen05.ld not yet waited for

    def check_registers(self, buffer, threads, slots) -> None:
        """A thread reads register ``slots`` of ``buffer``: none may be the destination of its own tcgen05.ld that
        no ``tcgen05.wait::ld`` has completed (PTX ISA, tcgen05.wait)."""
        loading = self.loading.get(buffer)
        if loading is not None and loading[threads, slots].any():
            i = int(np.argmax(loading[threads, slots]))
            raise SimulationError(
                f"thread {int(threads[i])} reads {buffer.name}[{int(slots[i])}], which its "
                "tcgen05.ld has not finished writing: tcgen05.wait::ld first"
            )

    def wait_ld(self, warp: int) -> None:
        """``tcgen05.wait::ld`` by ``warp``: its loads are complete, their registers readable."""
        self.order.complete(warp, "ld")
        for loading in self.loading.values():
            loading[32 * warp : 32 * warp + 32] = False

    @property
    def cells(self) -> np.ndarray:
        """The 128 x 512 cells (a view)."""
        return self.data.reshape(LANES, COLUMNS)

    def read(self, lanes, cols, warp: int, kind: str = "ld", thread: int | None = None) -> np.ndarray:
        """Cells at ``lanes`` x ``cols`` (same shapes) read by ``warp``'s ``kind`` (an ``mma`` names its issuing
        ``thread``), ordering-checked."""
        index = np.asarray(lanes, np.int64) * COLUMNS + np.asarray(cols, np.int64)
        self.order.access(warp, index, write=False, kind=kind, thread=thread)
        return self.data[index]

    def write(self, lanes, cols, warp: int, values, kind: str = "st", thread: int | None = None) -> None:
        """Store ``values`` at ``lanes`` x ``cols`` as ``warp``'s ``kind``, ordering-checked."""
        index = np.asarray(lanes, np.int64) * COLUMNS + np.asarray(cols, np.int64)
        self.order.access(warp, index, write=True, kind=kind, thread=thread)
        self.data[index] = np.asarray(values, np.uint32)

    def alloc(self, ncols: int) -> int:
        if self.relinquished:
            raise SimulationError("tcgen05.alloc after tcgen05.relinquish_alloc_permit")
        if ncols < 32 or ncols > COLUMNS or ncols & (ncols - 1):
            raise SimulationError(f"tcgen05.alloc of {ncols} columns: nCols must be a power of two in [32, 512]")
        used = np.zeros(COLUMNS, bool)
        for start, n in self.allocated.items():
            used[start : start + n] = True
        for start in range(0, COLUMNS, ncols):
            if not used[start : start + ncols].any():
                self.allocated[start] = ncols
                return start
        raise SimulationError(f"tcgen05.alloc of {ncols} columns: TMEM has no free range (allocated {self.allocated})")

    def dealloc(self, column: int, ncols: int) -> None:
        if self.allocated.get(column) != ncols:
            raise SimulationError(
                f"tcgen05.dealloc of {ncols} columns at column {column}: not an allocation (allocated {self.allocated})"
            )
        del self.allocated[column]

    def check_columns(self, cols: np.ndarray, what: str) -> None:
        ok = np.zeros(cols.shape, bool)
        for start, n in self.allocated.items():
            ok |= (cols >= start) & (cols < start + n)
        if not ok.all():
            raise OutOfBounds(f"{what}: TMEM column {int(cols[~ok][0])} is not allocated (allocated {self.allocated})")

    def check(self, warp_in_wg: int, lanes: np.ndarray, cols: np.ndarray, what: str) -> None:
        low = 32 * warp_in_wg
        bad = (lanes < low) | (lanes >= low + 32)
        if bad.any():
            raise SimulationError(
                f"{what}: warp {warp_in_wg} of its warpgroup touches TMEM lane {int(lanes[bad][0])}"
                f"; it may access lanes {low}..{low + 31} only"
            )
        self.check_columns(cols, what)


def tensor_memory(interp) -> TensorMemory:
    """The CTA's :class:`TensorMemory`, made by the first instruction that touches it (or its ordering).

    Example: ``tensor_memory(interp).allocated`` is ``{}`` before the CTA's first ``tcgen05.alloc``.
    """
    if interp.tmem is None:
        interp.tmem = TensorMemory(interp.count // 32)
    return interp.tmem


def _register_target(interp, expr):
    """The register buffer (its var and its array) and per-thread element index an ``address_of(buffer[index])``
    argument points at."""
    return register_address(interp, expr, "tcgen05 registers")


def _warps(interp) -> list[int]:
    """The warps running this call; each must be whole (``.sync.aligned``)."""
    warps = []
    for w in range(interp.count // 32):
        active = interp.mask[32 * w : 32 * w + 32]
        if active.any() and not active.all():
            raise SimulationError(f"a tcgen05 .sync.aligned instruction is reached by only some lanes of warp {w}")
        if active.any():
            warps.append(w)
    return warps


def _warp_uniform(values, w: int, what: str) -> int:
    v = np.broadcast_to(np.asarray(values), (len(values) if np.ndim(values) else 1,))
    part = v[32 * w : 32 * w + 32] if v.shape[0] > 1 else v
    if (part != part[0]).any():
        raise SimulationError(f"{what} differs between the lanes of warp {w}")
    return int(part[0])


def _per_warp(step, whole_warps: bool):
    """The handler running ``step(tensor memory, warp)`` for each warp executing the call: whole warps only for a
    ``.sync.aligned`` instruction (``tcgen05.wait``); the fences are not, and count for the warps they run in."""

    def handler(interp, args) -> None:
        tm = tensor_memory(interp)
        for w in _warps(interp) if whole_warps else np.unique(np.nonzero(interp.mask)[0] // 32).tolist():
            step(tm, w)

    return handler


def _relinquish(interp, args) -> None:
    tm = tensor_memory(interp)
    if _warps(interp):
        tm.relinquished = True


def _alloc(interp, args) -> None:
    tm = tensor_memory(interp)
    warps = _warps(interp)
    if len(warps) != 1:
        raise SimulationError(f"tcgen05.alloc is issued by exactly one warp, here by warps {warps}")
    slot = args[0]
    if not (isinstance(slot, Call) and slot.op.name.endswith("address_of")):
        raise SimulationError(f"tcgen05.alloc needs a shared-memory address, got {slot}")
    load = slot.args[0]
    ncols = int(np.asarray(interp.eval(args[1])).flat[0])
    column = tm.alloc(ncols)
    index = int(np.asarray(interp.element_index(load.source, load.indices)).flat[0])
    memory = interp._memory(load.source)
    if memory.scope != "shared":
        raise SimulationError("tcgen05.alloc writes its address to shared memory")
    thread = interp.launch.block * interp.count + 32 * warps[0]
    memory.store(
        np.array([index]),
        np.array([column], memory.data.dtype),
        np.array([thread]),
        interp.launch.block,
        interp.launch.interval,
    )


def _dealloc(interp, args) -> None:
    tm = tensor_memory(interp)
    for w in _warps(interp):
        taddr = _warp_uniform(interp.eval(args[0]), w, "the tcgen05.dealloc address")
        ncols = _warp_uniform(interp.eval(args[1]), w, "the tcgen05.dealloc column count")
        if taddr >> 16:
            raise SimulationError(f"tcgen05.dealloc address {taddr:#x} has a lane field")
        tm.order.check_dealloc(w)
        tm.dealloc(taddr & 0xFFFF, ncols)


def _commit(interp, args) -> None:
    """``tcgen05.commit``: an arrive on an mbarrier, by the mbarrier model, with the commit's tcgen05 generation."""
    mbarrier.commit(interp, args, tensor_memory(interp).order)


def _mma(interp, args, kind: str, form: str) -> None:
    tensor_memory(interp)
    tcgen05_mma.issue(interp, args, kind, form)


def _pair_mma(interp, args, kind: str) -> None:
    tensor_memory(interp)
    tcgen05_pair.issue(interp, args, kind)


def _pair_commit(interp, args) -> None:
    tensor_memory(interp)
    tcgen05_pair.commit(interp, args)


def _ld_st(interp, args, kind: str, shape: str, num: str, pack16: str | None) -> None:
    """``tcgen05.ld`` / ``tcgen05.st`` of ``shape`` and ``.x<num>``, with ``.pack::16b`` / ``.unpack::16b`` when
    ``pack16``, by whole warps."""
    tm = tensor_memory(interp)
    lane_off, col_off = fragment_offsets(shape, int(num))
    if pack16:  # each register holds the low halves of two adjacent columns: fragment column c is columns 2c, 2c+1
        lane_off = np.repeat(lane_off, 2, axis=1)
        col_off = (2 * col_off[:, :, None] + np.arange(2)[None, None, :]).reshape(32, -1)
    source, regs, index = _register_target(interp, args[1])
    pack = 4 // regs.dtype.itemsize
    count = lane_off.shape[1] // (2 if pack16 else 1)  # 32-bit registers per thread
    taddrs = np.broadcast_to(np.asarray(interp.eval(args[0]), np.int64), (interp.count,))
    for w in _warps(interp):
        taddr = _warp_uniform(taddrs, w, f"the tcgen05.{kind} address")
        lanes, cols = (taddr >> 16) + lane_off, (taddr & 0xFFFF) + col_off
        tm.check(w % 4, lanes, cols, f"tcgen05.{kind}.{shape}.x{num}" + (f".{_PACK16[kind]}" if pack16 else ""))
        threads = np.arange(32 * w, 32 * w + 32)
        start = index[threads]
        if (start < 0).any() or (start + count * pack > regs.shape[1]).any():
            raise OutOfBounds(
                f"tcgen05.{kind} moves {count * pack} register elements from slot {int(start[0])}; "
                f"each thread holds {regs.shape[1]}"
            )
        window = start[:, None] + np.arange(count * pack)[None, :]
        rows = threads[:, None]
        if kind == "ld":
            words = np.ascontiguousarray(tm.read(lanes, cols, w))
            if pack16:  # low half of column 2c in bits 0-15, of column 2c+1 in bits 16-31
                halves = (words & np.uint32(0xFFFF)).reshape(32, count, 2)
                words = np.ascontiguousarray(halves[:, :, 0] | (halves[:, :, 1] << np.uint32(16)))
            regs[rows, window] = words.view(regs.dtype).reshape(32, count * pack)
            tm.loading.setdefault(source, np.zeros(regs.shape, bool))[rows, window] = True
        else:
            values = np.ascontiguousarray(regs[rows, window]).view(np.uint32).reshape(32, count)
            if pack16:  # bits 0-15 to column 2c, bits 16-31 to column 2c+1, each in a cell's low half
                values = np.stack([values & np.uint32(0xFFFF), values >> np.uint32(16)], axis=-1).reshape(32, -1)
            tm.write(lanes, cols, w, values)


def _cp(interp, args, shape: str) -> None:
    """tcgen05.cp, per issuing thread: the descriptor's canonical address walk, then its swizzle (PTX ISA
    "Shared Memory Descriptor"), on the CTA's shared addresses (``addresses.SharedSpace``: the buffer's base at its
    declared alignment), as the hardware swizzles them; the bytes read must stay in the pointed-to buffer.

    The copy reads shared memory through the async proxy and completes asynchronously (PTX ISA, tcgen05.cp and
    tcgen05.commit: a commit tracks the thread's earlier tcgen05 copies too), as an MMA does: each write it reads
    must be proxy-fenced and ordered before it (by a barrier or an mbarrier phase), and it stays an in-flight read
    (``memory.AsyncRead``) until the issuing warp's next commit is seen complete."""
    if shape not in _CP:
        raise SimulationError(f"the simulator does not implement tcgen05.cp.{shape}")
    tm = tensor_memory(interp)
    rows, pieces, lanes_of = _CP[shape]
    memory, start = shared_address(interp, args[1], "tcgen05.cp")
    taddrs = np.broadcast_to(np.asarray(interp.eval(args[0]), np.int64), (interp.count,))
    lbo, sbo, swizzle = (int(np.asarray(interp.eval(a)).flat[0]) for a in args[2:5])
    # descriptor swizzle field -> log2(swizzle width / 16 bytes): none, 128B, 64B, 32B ("Shared Memory Descriptor")
    if swizzle not in _SWIZZLE_FIELD:
        raise SimulationError(f"tcgen05.cp descriptor swizzle field {swizzle} is not modelled")
    bits = _SWIZZLE_FIELD[swizzle]
    if bits and pieces != 1:
        raise SimulationError(f"the simulator models swizzled tcgen05.cp for 128-bit rows only, not {shape}")
    size = memory.data.dtype.itemsize
    origin = interp.launch.shared_space.base(memory)
    for t in np.nonzero(interp.mask)[0]:
        base = origin + int(start[t]) * size
        lane0, col0 = int(taddrs[t]) >> 16, int(taddrs[t]) & 0xFFFF
        gid = interp.launch.block * interp.count + t
        what = f"tcgen05.cp.{shape} issued by thread {gid}"
        read = []
        for r in range(rows):
            for p in range(pieces):
                byte = base + (r // 8) * sbo + (r % 8) * (16 << bits) + p * lbo
                # the swizzle: 16-byte chunk bits [4, 4+s) XOR row bits [7, 7+s) of the (aligned) shared address
                byte ^= ((byte >> 7) & ((1 << bits) - 1)) << 4
                byte -= origin
                if byte % 16:
                    raise SimulationError(f"tcgen05.cp reads shared memory at byte {byte}, not 16-byte aligned")
                index = byte // size + np.arange(16 // size)
                memory.check_async_read(index, gid, interp.launch.block, interp.launch.interval, what, interp.sync)
                read.append(index)
                words = np.ascontiguousarray(memory.data[index]).view(np.uint32)
                cols = col0 + 4 * p + np.arange(4)
                tm.check_columns(cols, f"tcgen05.cp.{shape}")
                for lane in lanes_of(r):
                    if not 0 <= lane0 + lane < LANES:
                        raise OutOfBounds(f"tcgen05.cp.{shape} writes TMEM lane {lane0 + lane}")
                    tm.write(np.full(4, lane0 + lane), cols, t // 32, words, kind="cp")
        # in flight until the warp's next commit (the generation it will have) is seen complete
        pending = AsyncRead(np.concatenate(read), what, t // 32, int(tm.order.commits[t // 32]), interp.count)
        memory.async_reads.append(pending)
        interp.async_reads.append(pending)


_SWIZZLE_FIELD = {0: 0, 2: 3, 4: 2, 6: 1}


def finish(interp) -> None:
    """Check, when a CTA exits, that it freed its TMEM (PTX ISA, tcgen05.alloc/dealloc).

    Example: called by ``tirx_layout.sim.run`` after each CTA; raises ``SimulationError`` on a leak.
    """
    if interp.tmem is not None and interp.tmem.allocated:
        raise SimulationError(f"the CTA exits with TMEM columns still allocated: {interp.tmem.allocated}")


__all__ = ["COLUMNS", "HELPERS", "LANES", "TensorMemory", "finish", "fragment_offsets", "tensor_memory"]


#: The tcgen05 executor: the instructions of one name, then the parameterised ones by pattern.
HELPERS = HelperTable(
    "tcgen05",
    {
        "alloc": _alloc,
        "dealloc": _dealloc,
        "relinquish_alloc_permit": _relinquish,
        "wait_ld": _per_warp(lambda tm, w: tm.wait_ld(w), whole_warps=True),
        "wait_st": _per_warp(lambda tm, w: tm.order.complete(w, "st"), whole_warps=True),
        "fence_before": _per_warp(lambda tm, w: tm.order.fence_before(w), whole_warps=False),
        "fence_after": _per_warp(lambda tm, w: tm.order.fence_after(w), whole_warps=False),
        "commit": _commit,
        "smem_descriptor": smem_descriptor,
        # cta_group::2 (the CTA pair, sim/tcgen05_pair.py): each CTA allocates as with cta_group::1
        "alloc_cg2": _alloc,
        "dealloc_cg2": _dealloc,
        "relinquish_alloc_permit_cg2": _relinquish,
        "commit_cg2_multicast": _pair_commit,
    },
    [
        (r"(?P<kind>ld|st)_(?P<shape>32x32b|16x64b|16x128b|16x256b)_x(?P<num>\d+)(?P<pack16>_pack16b)?", _ld_st),
        (r"cp_(?P<shape>\w+)", _cp),
        (r"mma_(?P<kind>f16|tf32|f8f6f4|i8|mxf8f6f4)_(?P<form>ss|ts)", _mma),
        (r"mma_(?P<kind>f16|tf32|f8f6f4|i8)_ss_cg2", _pair_mma),
    ],
)
