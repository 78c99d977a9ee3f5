"""What a tile copy costs under candidate layouts, computed statically, and the cost models that turn those counts
into a score for layout inference.

A copy's counts come from its plan (:mod:`tirx_layout.ops.copy.plan`), the one LowerTileOps writes down as
TIR: the plan's step formulas are evaluated on numpy arrays of thread ids and steps instead of TIR variables, giving
every thread's addresses and guards, and each access is counted as one memory instruction per warp. So the counts
are those of the kernel as compiled; ``tests/transform/test_cost_model.py`` checks them against the simulator
(:func:`tirx_layout.tools.measurement.kernel_accesses`), which measures the lowered kernel independently.

Counts (over the whole CTA, one entry per warp execution of a memory instruction, as the simulator counts):

* ``bytes``: bytes moved by the active lanes of every global/shared instruction;
* ``instructions``: warp executions of global/shared instructions (``global_instructions`` of them on global);
* ``wavefronts``: shared-memory wavefronts (the bank model, ``analysis.bank_conflicts.shared_wavefronts``),
  ``minimum_wavefronts`` the fewest;
* ``registers``: 32-bit registers per thread of the fragments involved.

Cost models (``COST_MODELS``): ``"io-aware"`` scores ``(global instructions + shared wavefronts, bytes,
registers)`` — each shared instruction costs its wavefronts, each global instruction one issue; bytes then registers
break ties. ``"register-count"`` scores registers only. A statement the model cannot enumerate (a symbolic start on
shared memory other than a ring's stage, a direct element access) is charged :func:`worst_case`, never zero; a
row-major global region whose start moves with a loop is counted at one start with the same divisibility (the same
vectors), a stage of a shared ring at stage 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

import numpy as np

from ...analysis.bank_conflicts import shared_wavefronts
from ...hw.memory import VECTOR_BYTES, dtype_bytes
from ...hw.tcgen05 import TMEM_SCOPE
from ...hw.threads import running_warps
from ...layout.placement import slot_count
from ...ops.copy.plan import MemoryCopy, plan_copy
from ...ops.operands import FragmentOperand, LayoutTables, MemoryOperand, Operand, operand, representative_start


@dataclass
class Cost:
    """Counts of memory work (see the module docstring). ``unknown`` counts statements charged the worst case.

    Example:
        >>> total = Cost(bytes=4, instructions=1) + Cost(bytes=8, instructions=2)
        >>> total.bytes, total.instructions, total.wavefronts
        (12, 3, 0)
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
        return (
            f"bytes={self.bytes} instr={self.instructions} wavefronts={self.wavefronts} regs={self.registers}{unknown}"
        )


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


def score_function(name: str):
    """The score function of cost model ``name``; ``ValueError`` for an unknown name.

    Example:
        >>> score_function("register-count") is register_count
        True
    """
    if name not in COST_MODELS:
        raise ValueError(f"unknown layout cost model {name!r}; choose one of {sorted(COST_MODELS)}")
    return COST_MODELS[name]


def worst_case(elements: int, element_bytes: int, shared_sides: int, sides: int = 2) -> Cost:
    """What a statement the model cannot enumerate is charged: every element of every side its own scalar warp
    instruction, each shared one a full wavefront (as if no two lanes ever shared an instruction).

    Example:
        >>> worst_case(16, 4, shared_sides=1).short()
        'bytes=128 instr=32 wavefronts=16 regs=0 unknown=1'
    """
    return Cost(
        bytes=elements * element_bytes * sides,
        instructions=elements * sides,
        global_instructions=elements * (sides - shared_sides),
        wavefronts=elements * shared_sides,
        minimum_wavefronts=elements * shared_sides,
        unknown=1,
    )


def fragment_registers(layout, element_bytes: int) -> int:
    """32-bit registers per thread that a fragment of ``layout`` holds.

    Example:
        >>> from tirx_layout import wg_local_layout
        >>> fragment_registers(wg_local_layout(64), 2)
        32
    """
    return math.ceil(slot_count(layout) * element_bytes / 4)


def _count(cost: Cost, side: Operand, addresses: np.ndarray, active: np.ndarray, v: int) -> None:
    """Add one memory instruction that every thread of the CTA executes: ``addresses[t]`` the first element address
    thread ``t`` touches (a ``v``-element vector from there), ``active[t]`` whether it runs."""
    executions = int(running_warps(active).sum())
    access_bytes = v * side.element_bytes
    # The wider side of a casting copy moves more than 16 bytes per step: one 16-byte instruction per piece.
    pieces = -(-access_bytes // VECTOR_BYTES[0])
    cost.instructions += executions * pieces
    cost.bytes += int(active.sum()) * access_bytes
    if side.buffer.scope() != "shared":
        cost.global_instructions += executions * pieces
        return
    per_piece = v // pieces
    for piece in range(pieces):
        first = addresses[:, None] + piece * per_piece + np.arange(per_piece)[None, :]
        waves, minimum = shared_wavefronts(
            first * side.element_bytes, active, access_bytes // pieces, side.element_bytes
        )
        cost.wavefronts += int(waves.sum())
        cost.minimum_wavefronts += int(minimum.sum())


def plan_cost(plan, threads: int) -> Cost:
    """The memory instructions of a copy plan in a CTA of ``threads`` threads: its step formulas evaluated for
    every (step, thread) at once, each load and store on global or shared memory counted per warp.

    Example:
        >>> import tvm
        >>> A, B = (tvm.tirx.decl_buffer((8, 64), "float16", n) for n in "AB")
        >>> dst, src = operand(B[0:8, 0:64], {}, "destination"), operand(A[0:8, 0:64], {}, "source")
        >>> plan_cost(plan_copy(dst, src, "cta", 32), 32).short()
        'bytes=2048 instr=4 wavefronts=0 regs=0'
    """
    cost = Cost()
    steps = plan.rounds if isinstance(plan, MemoryCopy) else plan.slots
    step = plan.step(np.arange(steps)[:, None], np.arange(threads)[None, :])
    active = np.broadcast_to(np.asarray(step.active(), bool), (steps, threads))
    for access in (step.load, *step.stores):
        if isinstance(access.operand, FragmentOperand):
            continue  # registers: no memory instruction
        addresses = np.broadcast_to(np.asarray(access.address, np.int64), (steps, threads))
        for k in range(steps):
            _count(cost, access.operand, addresses[k], active[k], plan.v)
    return cost


def _representative_begins(side: Operand) -> list | None:
    """One instance of a region that moves with a loop, standing for all (see :func:`copy_cost`), or ``None``:
    a row-major global region at a start with the same divisibility; a shared region with its stage index (a
    symbolic begin where it takes one index) at 0 and any other symbolic begin at a start with the same
    divisibility inside the buffer (``kk * 16``: 16)."""
    if side.static_begins:
        return side.begins
    if side.buffer.scope() == "global":
        return [representative_start(b) for b in side.begins] if side.layout is None else None
    if not isinstance(side, MemoryOperand):
        return None
    begins = []
    for b, e, size in zip(side.begins, side.extents, side.shape, strict=True):
        if isinstance(b, int):
            begins.append(b)
        elif e == 1:
            begins.append(0)
        else:
            r = representative_start(b)
            begins.append(r if isinstance(size, int) and r + e <= size else 0)
    return begins


def copy_cost(
    dst_region, src_region, scope: str, layouts: dict, threads: int, tables: LayoutTables | None = None
) -> Cost:
    """Counts of one ``T.tile_copy(dst, src, scope)`` under ``layouts`` (buffer -> layout; missing = row-major)
    in a CTA of ``threads`` threads; :func:`worst_case` if a shared region starts at a symbolic place. ``tables``
    keeps address tables across calls (an inference passes its own).

    Example:
        >>> import tvm
        >>> from tirx_layout import TileLayout, S, laneid
        >>> A = tvm.tirx.decl_buffer((32, 4), "float32", "A")
        >>> F = tvm.tirx.decl_buffer((32, 4), "float32", "F", scope="local")
        >>> copy_cost(F[0:32, 0:4], A[0:32, 0:4], "cta", {F: TileLayout(S[(32, 4):(1 @ laneid, 1)])}, 32).short()
        'bytes=512 instr=1 wavefronts=0 regs=0'
    """
    scopes = (dst_region.source.scope(), src_region.source.scope())
    if TMEM_SCOPE in scopes:
        # tcgen05.ld/st/cp: not enumerated here. A fragment next to TMEM is fixed by the strict rule anyway; a
        # shared operand of tcgen05.cp is charged the worst case, as every statement the model does not know.
        elements = math.prod(int(r.extent) for r in src_region.region)
        return worst_case(elements, dtype_bytes(src_region.source.dtype), int("shared" in scopes))
    dst = operand(dst_region, layouts, "destination", tables)
    src = operand(src_region, layouts, "source", tables)
    if not (dst.static_begins and src.static_begins):
        # A row-major global region whose start moves with a loop (``A[0:128, kt * 64 : kt * 64 + 64]``): every
        # instance costs the same, so one is counted, at a start with the same divisibility (the same vectors).
        # A stage of a shared ring (``As[kt % 3]``) is counted at stage 0: every stage is the same region moved by a
        # fixed offset, which moves every lane's address alike (the same banks, permuted).
        begins = [_representative_begins(side) for side in (dst, src)]
        if any(b is None for b in begins):
            shared = sum(s.buffer.scope() == "shared" for s in (dst, src))
            return worst_case(math.prod(src.tile_shape), src.element_bytes, shared)
        dst.begins, src.begins = begins
    if isinstance(dst, FragmentOperand) and isinstance(src, FragmentOperand):
        return Cost()  # register moves only (whether the placements agree is the solver's question)
    return plan_cost(plan_copy(dst, src, str(scope), threads), threads)


__all__ = [
    "COST_MODELS",
    "DEFAULT_COST_MODEL",
    "Cost",
    "copy_cost",
    "fragment_registers",
    "io_aware",
    "plan_cost",
    "register_count",
    "score_function",
    "worst_case",
]
