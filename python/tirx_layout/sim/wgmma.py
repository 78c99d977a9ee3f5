"""The simulator's own model of Hopper's warpgroup MMA (``wgmma``), written from the PTX ISA.

Written from the PTX ISA, "Asynchronous Warpgroup Level Matrix Multiply-Accumulate Instructions" (wgmma.mma_async,
"Register Fragments", "Shared Memory Matrix Layout", "Matrix Descriptor Format", wgmma.fence, wgmma.commit_group,
wgmma.wait_group) and "Proxies" / fence.proxy.async -- never from the project's layouts or its lowering, so that
the two can check each other. What it relies on, restated:

* ``wgmma.mma_async.sync.aligned.m64nNkK.dtype.atype.btype d, a, b-desc, scale-d, ...``: the 128 threads of a
  warpgroup (four consecutive warps, the first a multiple of 4) compute ``D (64 x N) = A (64 x K) * B (K x N) +
  (scale-d ? D : 0)``. K is 32 bytes of the input type: 16 for f16/bf16, 8 for tf32, 32 for e4m3/e5m2/s8/u8. N is a
  multiple of 8 in [8, 256] (s8/u8: 8, 16, 24, 32, then multiples of 16 up to 256). D is f32 (or f16 for f16 and
  fp8 inputs), s32 for s8/u8. A comes from shared memory (a descriptor) or registers; B from shared memory.
  imm-trans-a/b (MN-major shared operands) exist for f16/bf16 only; A in registers is K-major.
* Register fragments: warp ``w`` of the warpgroup holds rows ``16w .. 16w + 15``; lane ``l`` has ``g = l // 4`` and
  ``t = l % 4``. Element ``i`` of a thread's fragment (its registers low to high, two 16-bit / four 8-bit elements
  per 32-bit register, the lowest element in the low bits) sits at:

  - D (N/2 elements: N/2 f32/s32 registers, or N/4 f16x2 registers): row ``16w + g + 8*((i//2)%2)``, column
    ``8*(i//4) + 2t + i%2``;
  - A, 16-bit (k16; 8 elements in four f16x2 registers): row ``16w + g + 8*((i//2)%2)``, k ``8*(i//4) + 2t + i%2``;
  - A, tf32 (k8; 4 registers): row ``16w + g + 8*(i%2)``, k ``4*(i//2) + t``;
  - A, 8-bit (k32; 16 elements in four .b32 registers): row ``16w + g + 8*((i//4)%2)``, k ``16*(i//8) + 4t + i%4``.
* Matrix descriptor (64 bits): start address >> 4 at bits 0-13, leading byte offset >> 4 at 16-29, stride byte
  offset >> 4 at 32-45, base offset at 49-51, swizzle at 62-63 (0 none, 1 128B, 2 64B, 3 32B); the other bits are
  reserved (0). LBO and SBO mean what they mean for tcgen05, and the canonical layouts and swizzles are the same
  text: ``matrix_operands`` decodes both. Shared operands start on a 16-byte boundary.
* ``wgmma.fence`` must come before a warpgroup's first ``wgmma.mma_async`` and between any register access and a
  ``wgmma.mma_async`` that uses those registers as D or A, except accumulator accesses by ``wgmma.mma_async``
  instructions of the same shape (those are ordered by default). ``wgmma.commit_group`` puts the warpgroup's
  uncommitted ``wgmma.mma_async`` into a new group (possibly empty); ``wgmma.wait_group N`` returns when at most the
  newest N groups are pending. Touching D (or A's registers) of a ``wgmma.mma_async`` before the wait that covers
  its group is undefined. The instruction reads shared memory through the async proxy: a thread's generic writes
  need ``fence.proxy.async`` and an ordering (a barrier, an mbarrier phase) before it.

How the simulator applies them. The helpers are those ``ir/device_calls`` names in the ``wgmma`` family
(``ops/helpers/wgmma.py``, with issue 34's full descriptors): ``mma_m64n<N>k<K>_<d>_<a>_<b>_ss_t<ta><tb>`` (args D
registers, A descriptor, B descriptor, scale-d), ``..._rs_t<tb>`` (D registers, A registers, B descriptor,
scale-d), ``smem_descriptor`` (a descriptor's start field filled from a pointer, as for tcgen05), ``fence``,
``commit_group``, ``wait_group_<n>`` and the compiler-only ``keep_*`` (no-ops). Every wgmma is ``.sync.aligned``
over whole warpgroups: reached by part of one, it is a :class:`SimulationError` naming the warps. A descriptor's
start field is an address in the CTA's shared space (the shared::cta window the helper takes it in). Each
``wgmma.mma_async`` reads its operands when issued and computes exactly (rounded once to D's type); its result
lands in the registers when a ``wait_group`` retires its group. A :class:`DataRace` is raised for: ordinary code
reading or writing D's (or A's) registers while the instruction is pending; a ``wgmma.mma_async`` whose D or A
registers ordinary code wrote after the warpgroup's last ``wgmma.fence``; a store (thread or TMA) to a shared
operand while a group reading it is pending for the storing thread; an operand read of shared data written without
``fence.proxy.async`` and a barrier.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import mbarrier
from .addresses import register_slots, smem_descriptor
from .dispatch import HelperTable
from .matrix_operands import (
    ACCUMULATOR_TYPES,
    K_BYTES,
    OPERAND_ELEMENTS,
    DescriptorError,
    bit_field,
    mma_reference,
    operand_addresses,
    read_shared_operand,
    unsigned_field,
)
from .memory import AsyncRead, DataRace, SimulationError

__all__ = [
    "HELPERS",
    "MmaHelper",
    "WgmmaUnit",
    "accumulator_fragment",
    "decode_wgmma_descriptor",
    "finish",
    "operand_a_fragment",
    "parse_mma_helper",
]

WARPGROUP_THREADS = 128
_WARP = 32
#: M of every wgmma.mma_async.
M = 64

# --- Matrix descriptor ("Matrix Descriptor Format") ---

#: Swizzle codes of bits 62-63.
_SWIZZLES = {0: "none", 1: "128B", 2: "64B", 3: "32B"}
#: Reserved bits of the wgmma descriptor, which must be zero.
_RESERVED = {"bits 14-15": (14, 2), "bits 30-31": (30, 2), "bits 46-48": (46, 3), "bits 52-61": (52, 10)}


def decode_wgmma_descriptor(value: int) -> dict[str, Any]:
    """The fields of a 64-bit ``wgmma`` matrix descriptor, offsets in bytes.

    Start address bits 0-13, leading byte offset (LBO) 16-29, stride byte offset (SBO) 32-45 (each in 16-byte
    units), base offset 49-51, swizzle mode 62-63 (0 none, 1 128B, 2 64B, 3 32B). A reserved bit set (the tcgen05
    format's fixed 0b001 at 46-48 among them) raises :class:`DescriptorError` naming the bits.

    Example (a 128B-swizzled K-major tile at 0x400, SBO 1024):
        >>> d = decode_wgmma_descriptor(0x4000004000010040)
        >>> d["start_address"], d["lbo"], d["sbo"], d["swizzle"], d["base_offset"]
        (1024, 16, 1024, '128B', 0)
    """
    value = unsigned_field(value, 64, "a wgmma matrix descriptor")
    for name, (low, width) in _RESERVED.items():
        if bit_field(value, low, width):
            raise DescriptorError(f"wgmma matrix descriptor {value:#018x}: reserved {name} must be 0")
    return {
        "start_address": 16 * bit_field(value, 0, 14),
        "lbo": 16 * bit_field(value, 16, 14),
        "sbo": 16 * bit_field(value, 32, 14),
        "base_offset": bit_field(value, 49, 3),
        "swizzle": _SWIZZLES[bit_field(value, 62, 2)],
    }


# --- Register fragments ("Register Fragments", the figures for m64nNk16, m64nNk8 and m64nNk32) ---


def _thread_coordinates() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per thread of a warpgroup (column vectors): the warp's first row ``16w``, ``g = lane // 4``, ``t = lane % 4``."""
    thread = np.arange(WARPGROUP_THREADS)[:, None]
    lane = thread % _WARP
    return 16 * (thread // _WARP), lane // 4, lane % 4


def accumulator_fragment(n: int) -> tuple[np.ndarray, np.ndarray]:
    """``(rows, columns)`` of D's element ``i`` in thread ``t`` of the warpgroup, two ``(128, n // 2)`` arrays.

    Example (thread 37 is lane 5 of warp 1: g = 1, t = 1):
        >>> rows, cols = accumulator_fragment(16)
        >>> [(int(rows[37, i]), int(cols[37, i])) for i in range(8)]
        [(17, 2), (17, 3), (25, 2), (25, 3), (17, 10), (17, 11), (25, 10), (25, 11)]
    """
    if n % 8 or not 8 <= n <= 256:
        raise SimulationError(f"wgmma N is a multiple of 8 in [8, 256], got {n}")
    i = np.arange(n // 2)[None, :]
    base, g, t = _thread_coordinates()
    return base + g + 8 * ((i // 2) % 2), 8 * (i // 4) + 2 * t + i % 2


def operand_a_fragment(element_bytes: int) -> tuple[np.ndarray, np.ndarray]:
    """``(rows, ks)`` of A's element ``i`` in thread ``t`` of the warpgroup when A is in registers, for elements of
    ``element_bytes`` bytes (2: k16, 4: tf32 k8, 1: k32); arrays of shape ``(128, 64 * K / 128)``.

    Example (thread 37: g = 1, t = 1):
        >>> rows, ks = operand_a_fragment(4)
        >>> [(int(rows[37, i]), int(ks[37, i])) for i in range(4)]
        [(17, 1), (25, 1), (17, 5), (25, 5)]
    """
    base, g, t = _thread_coordinates()
    if element_bytes == 2:
        i = np.arange(8)[None, :]
        return base + g + 8 * ((i // 2) % 2), 8 * (i // 4) + 2 * t + i % 2
    if element_bytes == 4:
        i = np.arange(4)[None, :]
        return base + g + 8 * (i % 2), 4 * (i // 2) + t
    if element_bytes == 1:
        i = np.arange(16)[None, :]
        return base + g + 8 * ((i // 4) % 2), 16 * (i // 8) + 4 * t + i % 4
    raise SimulationError(f"wgmma A elements are 1, 2 or 4 bytes, got {element_bytes}")


# --- The helpers' names (the ABI of ops/helpers/wgmma.py) ---

_MMA = re.compile(
    r"mma_m64n(\d+)k(\d+)_(f32|f16|s32)_(f16|bf16|tf32|e4m3|e5m2|s8|u8)_(f16|bf16|tf32|e4m3|e5m2|s8|u8)"
    r"_(?:ss_t([01])([01])|rs_t([01]))$"
)
#: PTX type -> the element type name of ``matrix_operands`` (and its numpy dtype).
_TYPES = {
    "f32": "float32",
    "f16": "float16",
    "s32": "int32",
    "bf16": "bfloat16",
    "tf32": "tf32",
    "e4m3": "e4m3",
    "e5m2": "e5m2",
    "s8": "int8",
    "u8": "uint8",
}
#: The D types each input type allows ("Data types" of wgmma.mma_async), and the input types that pair with it.
_KINDS = {
    "f16": ({"f32", "f16"}, {"f16"}),
    "bf16": ({"f32"}, {"bf16"}),
    "tf32": ({"f32"}, {"tf32"}),
    "e4m3": ({"f32", "f16"}, {"e4m3", "e5m2"}),
    "e5m2": ({"f32", "f16"}, {"e4m3", "e5m2"}),
    "s8": ({"s32"}, {"s8", "u8"}),
    "u8": ({"s32"}, {"s8", "u8"}),
}


@dataclass(frozen=True)
class MmaHelper:
    """What a ``wgmma.mma_async`` helper's name says."""

    n: int
    k: int
    d: str
    a: str
    b: str
    a_in_registers: bool
    a_major: str
    b_major: str

    @property
    def instruction(self) -> str:
        form = "RS" if self.a_in_registers else "SS"
        return f"wgmma.mma_async.m64n{self.n}k{self.k}.{self.d}.{self.a}.{self.b} ({form})"


def parse_mma_helper(what: str) -> MmaHelper | None:
    """The shape, types, form and majorness a ``wgmma.mma_async`` helper name gives; ``None`` for other names; a
    combination the ISA does not have raises :class:`SimulationError` naming it.

    Example:
        >>> h = parse_mma_helper("mma_m64n128k16_f32_bf16_bf16_ss_t01")
        >>> h.n, h.k, h.d, h.a_in_registers, h.a_major, h.b_major
        (128, 16, 'f32', False, 'K', 'MN')
        >>> parse_mma_helper("fence") is None
        True
    """
    match = _MMA.match(what)
    if match is None:
        return None
    n, k, d, a, b, ta, tb, rs_tb = match.groups()
    n, k = int(n), int(k)
    rs = rs_tb is not None
    ta, tb = (0, int(rs_tb)) if rs else (int(ta), int(tb))
    helper = MmaHelper(n, k, d, a, b, rs, "MN" if ta else "K", "MN" if tb else "K")
    name = f"wgmma helper {what}"
    d_types, partners = _KINDS[a]
    if b not in partners:
        raise SimulationError(f"{name}: A {a} does not pair with B {b} (wgmma.mma_async takes {sorted(partners)})")
    if d not in d_types:
        raise SimulationError(f"{name}: {a} inputs accumulate into {sorted(d_types)}, not {d}")
    element = OPERAND_ELEMENTS[_TYPES[a]].itemsize
    if k != K_BYTES // element:
        raise SimulationError(f"{name}: {a} inputs take K = {K_BYTES // element} per instruction, not {k}")
    if a in ("s8", "u8"):
        if not (n in (8, 16, 24, 32) or (n % 16 == 0 and 48 <= n <= 256)):
            raise SimulationError(f"{name}: s8/u8 take N = 8, 16, 24, 32 or 48..256 in steps of 16, not {n}")
    elif n % 8 or not 8 <= n <= 256:
        raise SimulationError(f"{name}: N is a multiple of 8 in [8, 256], not {n}")
    if (ta or tb) and a not in ("f16", "bf16"):
        raise SimulationError(f"{name}: imm-trans (MN-major operands) is for f16/bf16 only; {a} operands are K-major")
    return helper


# --- The warpgroups' state ---


@dataclass
class _Issued:
    """One ``wgmma.mma_async`` of one warpgroup, from issue to the ``wait_group`` that retires its group."""

    what: str
    warpgroup: int
    threads: np.ndarray  # the warpgroup's CTA-local threads
    d_regs: np.ndarray
    d_slots: np.ndarray  # (128, N/2): thread row's D slots
    d_mask: np.ndarray  # d_regs-shaped: the registers D occupies
    a_regs: np.ndarray | None
    a_mask: np.ndarray | None
    result: np.ndarray  # (128, N/2): the values D's registers get at retirement
    reads: list


@dataclass
class _Warpgroup:
    fenced: bool = False  # has executed wgmma.fence at least once
    uncommitted: list = field(default_factory=list)
    groups: list = field(default_factory=list)  # committed groups, oldest first, each a list of _Issued


class WgmmaUnit:
    """The wgmma state of one CTA: each warpgroup's pending instructions and groups, and which registers ordinary
    code wrote since each thread's warpgroup last executed ``wgmma.fence``.

    Example:
        >>> unit = WgmmaUnit()
        >>> unit.pending()
        []
    """

    def __init__(self):
        self.warpgroups: dict[int, _Warpgroup] = {}
        self.unfenced: dict[int, np.ndarray] = {}  # id(register array) -> bool (threads, slots)

    def warpgroup(self, g: int) -> _Warpgroup:
        return self.warpgroups.setdefault(g, _Warpgroup())

    def pending(self) -> list:
        """Every issued, not yet retired ``wgmma.mma_async`` of the CTA, each warpgroup's in issue order."""
        return [
            op
            for wg in self.warpgroups.values()
            for op in [*(op for group in wg.groups for op in group), *wg.uncommitted]
        ]

    def register_access(self, name: str, regs: np.ndarray, rows: np.ndarray, slots: np.ndarray, write: bool) -> None:
        """Ordinary code of threads ``rows`` reads (or writes) slots ``slots`` of the register array ``regs`` (of
        buffer ``name``): none may be D or A of a pending ``wgmma.mma_async``; a write is remembered until the
        thread's warpgroup executes ``wgmma.fence``."""
        for op in self.pending():
            roles = (("its accumulator D", op.d_regs, op.d_mask), ("its A operand", op.a_regs, op.a_mask))
            for role, held, mask in roles:
                if held is not regs:
                    continue
                hit = mask[rows, slots]
                if hit.any():
                    i = int(np.argmax(hit))
                    raise DataRace(
                        f"data race on registers {name}[{int(slots[i])}] of thread {int(rows[i])}: ordinary code "
                        f"{'writes' if write else 'reads'} them while the {op.what} (pending) holds them as {role}; "
                        "wgmma.wait_group (T.tile_mma_wait) must retire its group first"
                    )
        if write:
            marks = self.unfenced.get(id(regs))
            if marks is None:
                marks = self.unfenced[id(regs)] = np.zeros(regs.shape, bool)
            marks[rows, slots] = True

    def fence(self, threads: np.ndarray) -> None:
        """``wgmma.fence`` by the warpgroup of ``threads``: their earlier register accesses are ordered before its
        later ``wgmma.mma_async``."""
        for marks in self.unfenced.values():
            marks[threads] = False


# --- Executing the helpers ---

_NEVER_COMMITTED = np.iinfo(np.int64).max  # no tcgen05.commit ever completes a wgmma's shared reads
_READ_HINT = "wgmma.wait_group (T.tile_mma_wait) must retire the group before its shared operands are overwritten"


def _warpgroups(interp, what: str) -> list[int]:
    """The warpgroups executing ``what``; each must run it with all four warps, every lane (``.sync.aligned``)."""
    active = interp.mask
    warps = np.unique(np.nonzero(active)[0] // _WARP).tolist()
    for w in warps:
        lanes = active[_WARP * w : _WARP * (w + 1)]
        if not lanes.all():
            missing = np.nonzero(~lanes)[0].tolist()
            raise SimulationError(
                f"{what} is .sync.aligned: warp {w} reaches it with only some lanes (lanes {missing} do not)"
            )
    groups = sorted({w // 4 for w in warps})
    for g in groups:
        members = list(range(4 * g, 4 * g + 4))
        present = [w for w in members if w in warps]
        if len(present) != 4 or interp.count < WARPGROUP_THREADS * (g + 1):
            absent = [w for w in members if w not in present]
            raise SimulationError(
                f"{what} is .sync.aligned over a warpgroup: warpgroup {g} reaches it with warps {present} only; "
                f"warps {absent} do not"
            )
    return groups


def _uniform(interp, expr, threads: np.ndarray, what: str) -> int:
    values = np.broadcast_to(np.asarray(interp.eval(expr)), (interp.count,))[threads]
    if (values != values[0]).any():
        raise SimulationError(f"{what} differs between the threads of the warpgroup ({sorted(set(values.tolist()))})")
    return int(values[0])


def _shared_operand(interp, descriptor, rows: int, dtype, major: str, threads, what: str):
    """An operand read through its full descriptor: the start field is its shared-space address >> 4, the other
    fields say how its elements lie ("Matrix Descriptor Format")."""
    bits = _uniform(interp, descriptor, threads, f"{what}'s descriptor") & ((1 << 64) - 1)
    fields = decode_wgmma_descriptor(bits)
    start = fields["start_address"]
    addresses = operand_addresses(fields, rows, dtype.itemsize, major)
    readers = threads[::_WARP]  # one thread per warp: each warp must see the operand's writes ordered
    where = f"{what} (descriptor {bits:#018x}, start {start})"
    return read_shared_operand(interp, start, addresses, dtype, readers, where, what)


def _issue(interp, unit: WgmmaUnit, helper: MmaHelper, args, g: int) -> None:
    """One warpgroup's ``wgmma.mma_async``: read every operand now, compute, and keep the result pending."""
    threads = np.arange(WARPGROUP_THREADS * g, WARPGROUP_THREADS * (g + 1))
    label = f"{helper.instruction} of warpgroup {g}"
    expected = 4
    if len(args) != expected:
        raise SimulationError(f"{label} takes {expected} arguments (the ABI of ops/helpers/wgmma.py), got {len(args)}")
    wg = unit.warpgroup(g)
    if not wg.fenced:
        raise SimulationError(
            f"{label} before any wgmma.fence of its warpgroup; the ISA requires wgmma.fence before the first "
            "wgmma.mma_async"
        )
    d_dtype = ACCUMULATOR_TYPES[_TYPES[helper.d]]
    d_regs, d_slots, d_name = register_slots(interp, args[0], threads, helper.n // 2, d_dtype, f"{label}: D")
    d_mask = np.zeros(d_regs.shape, bool)
    d_mask[threads[:, None], d_slots] = True
    _check_fenced(unit, d_regs, d_mask, d_name, label, "D")
    pending = unit.pending()
    chained = None
    for op in pending:  # in issue order: the last one on these registers is the value this one accumulates onto
        if op.d_regs is d_regs and op.d_mask[d_mask].any():
            if (op.d_mask == d_mask).all() and op.result.shape == (WARPGROUP_THREADS, d_slots.shape[1]):
                chained = op  # same accumulator, same shape: ordered after it by the ISA; the latest one wins
                continue
            raise DataRace(
                f"data race on registers {d_name}: {label} uses as D registers the pending {op.what} holds as its "
                "accumulator with another shape; wgmma.wait_group must retire it first"
            )
        if op.a_regs is d_regs and op.a_mask[d_mask].any():
            raise DataRace(
                f"data race on registers {d_name}: {label} writes D into registers the pending {op.what} reads as "
                "its A operand; wgmma.wait_group must retire it first"
            )
    d_rows, d_cols = accumulator_fragment(helper.n)
    d = np.zeros((M, helper.n), d_dtype)
    d[d_rows, d_cols] = chained.result if chained is not None else d_regs[threads[:, None], d_slots]
    scale_d = _uniform(interp, args[-1], threads, f"{label}: scale-d") != 0
    reads = []
    a_dtype, b_dtype = OPERAND_ELEMENTS[_TYPES[helper.a]], OPERAND_ELEMENTS[_TYPES[helper.b]]
    a_regs = a_mask = None
    if helper.a_in_registers:
        a_rows, a_ks = operand_a_fragment(a_dtype.itemsize)
        a_regs, a_slots, a_name = register_slots(interp, args[1], threads, a_rows.shape[1], a_dtype, f"{label}: A")
        a_mask = np.zeros(a_regs.shape, bool)
        a_mask[threads[:, None], a_slots] = True
        _check_fenced(unit, a_regs, a_mask, a_name, label, "A")
        for op in pending:
            if op.d_regs is a_regs and op.d_mask[a_mask].any():
                raise DataRace(
                    f"data race on registers {a_name}: {label} reads as A registers the pending {op.what} holds as "
                    "its accumulator D; wgmma.wait_group must retire it first"
                )
        a = np.zeros((M, helper.k), a_dtype)
        a[a_rows, a_ks] = a_regs[threads[:, None], a_slots]
    else:
        a, memory, elements = _shared_operand(interp, args[1], M, a_dtype, helper.a_major, threads, f"{label}: A")
        reads.append((memory, elements))
    b, memory, elements = _shared_operand(interp, args[2], helper.n, b_dtype, helper.b_major, threads, f"{label}: B")
    reads.append((memory, elements))
    try:
        result = mma_reference(d, a, b.T, scale_d)
    except DescriptorError as error:
        raise DescriptorError(f"{label}: {error}") from None
    in_flight = []
    for memory, elements in reads:
        read = AsyncRead(elements, label, 4 * g, _NEVER_COMMITTED, interp.count, _READ_HINT)
        memory.async_reads.append(read)
        interp.async_reads.append(read)
        in_flight.append(read)
    op = _Issued(label, g, threads, d_regs, d_slots, d_mask, a_regs, a_mask, result[d_rows, d_cols], in_flight)
    wg.uncommitted.append(op)


def _check_fenced(unit: WgmmaUnit, regs, mask, name: str, label: str, role: str) -> None:
    marks = unit.unfenced.get(id(regs))
    if marks is None:
        return
    stale = marks & mask
    if stale.any():
        thread, slot = (int(v) for v in np.argwhere(stale)[0])
        raise DataRace(
            f"data race on registers {name}[{slot}] of thread {thread}: ordinary code wrote them after the "
            f"warpgroup's last wgmma.fence, and {label} uses them as {role}; wgmma.fence between the write and the "
            "wgmma.mma_async"
        )


def _retire(interp, wg: _Warpgroup, keep: int) -> None:
    """``wgmma.wait_group keep``: every committed group but the newest ``keep`` completes: D's registers take the
    results (oldest first, so a chain ends with its last), the shared operands are free for the warpgroup."""
    cut = max(len(wg.groups) - keep, 0)
    done, wg.groups = wg.groups[:cut], wg.groups[cut:]
    for group in done:
        for op in group:
            op.d_regs[op.threads[:, None], op.d_slots] = op.result
            for read in op.reads:
                read.observed[op.threads] = True
    mbarrier.drop_async_reads(interp, lambda read: read.observed.all())


def _each_warpgroup(interp, instruction: str):
    """``(unit, g, warpgroup g's state)`` for each warpgroup executing ``instruction`` (whole ones, checked), the
    CTA's :class:`WgmmaUnit` made by its first wgmma instruction."""
    if interp.wgmma is None:
        interp.wgmma = WgmmaUnit()
    unit = interp.wgmma
    for g in _warpgroups(interp, instruction):
        yield unit, g, unit.warpgroup(g)


def _fence(interp, args) -> None:
    for unit, g, wg in _each_warpgroup(interp, "wgmma.fence"):
        wg.fenced = True
        unit.fence(np.arange(WARPGROUP_THREADS * g, WARPGROUP_THREADS * (g + 1)))


def _commit_group(interp, args) -> None:
    for _, _, wg in _each_warpgroup(interp, "wgmma.commit_group"):
        wg.groups.append(wg.uncommitted)
        wg.uncommitted = []


def _wait_group(interp, args, pending: str) -> None:
    for _, _, wg in _each_warpgroup(interp, f"wgmma.wait_group {pending}"):
        _retire(interp, wg, int(pending))


def _mma(interp, args, name: str) -> None:
    helper = parse_mma_helper(name)
    if helper is None:
        raise SimulationError(f"the simulator does not implement the wgmma helper {name}")
    for unit, g, _ in _each_warpgroup(interp, helper.instruction):
        _issue(interp, unit, helper, args, g)


def _keep(interp, args) -> None:
    """A compiler-only fence on registers (``keep_<f32|b32>_x<count>``): nothing happens on the hardware."""


def finish(interp) -> None:
    """Check, when a CTA exits, that no ``wgmma.mma_async`` is still pending (its registers would never be written
    and its shared operands are released while it reads them).

    Example: called by ``tirx_layout.sim.simulate`` after each CTA; raises ``SimulationError`` naming one.
    """
    unit = getattr(interp, "wgmma", None)
    if unit is None:
        return
    pending = unit.pending()
    if pending:
        raise SimulationError(
            f"the CTA exits while {len(pending)} wgmma.mma_async are pending (the first: {pending[0].what}); "
            "wgmma.commit_group and wgmma.wait_group 0 before the end"
        )


#: The wgmma executor (ops/helpers/wgmma.py): ``fence`` and ``commit_group`` by name; the register fences, the waits and
#: the MMAs by pattern (an MMA's name is read by :func:`parse_mma_helper`). E.g. ``HELPERS(interp, "commit_group",
#: [])`` closes each executing warpgroup's group.
HELPERS = HelperTable(
    "wgmma",
    {"fence": _fence, "commit_group": _commit_group, "smem_descriptor": smem_descriptor},
    [
        (r"keep_(?:f32|b32)_x\d+", _keep),
        (r"wait_group_(?P<pending>\d+)", _wait_group),
        (r"(?P<name>mma_m64n\d+k\d+_\w+)", _mma),
    ],
)
