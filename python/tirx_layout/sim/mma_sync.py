"""The simulator's own model of the warp-level ``mma.sync.aligned.m16n8k*``, written from the PTX ISA.

Written from the PTX ISA, "Warp Level Matrix Multiply-Accumulate Instructions" (``mma``, "Matrix Fragments for
mma.m16n8k4 / m16n8k8 / m16n8k16 / m16n8k32") -- never from the project's layouts or its lowering, so that the two
can check each other. What it relies on, restated:

* ``mma.sync.aligned.m16n8k<K>.row.col.<d>.<a>.<b>.<c> d, a, b, c``: the 32 lanes of a warp, all of them together,
  compute ``D (16 x 8) = A (16 x K) * B (K x 8) + C``. K is 8 or 16 for f16/bf16, 4 or 8 for tf32, 16 or 32 for
  s8/u8/e4m3/e5m2. D and C are f32 (or f16 for f16 and 8-bit float inputs), s32 for s8/u8.
* Fragments: lane ``l`` has ``g = l >> 2`` (groupID) and ``t = l % 4`` (threadID_in_group); its element ``i`` of
  each operand (registers low to high, two 16-bit or four 8-bit elements per 32-bit register, the lowest element
  in the low bits) sits at, by the table of each shape:

  - C/D, every shape: row ``g`` for ``c0, c1``, ``g + 8`` for ``c2, c3``; column ``2t + (i & 1)``;
  - A, 16-bit, m16n8k8: row ``g`` for ``a0, a1``, ``g + 8`` for ``a2, a3``; column ``2t + (i & 1)``;
    m16n8k16: row ``g`` for ``a0, a1, a4, a5``, ``g + 8`` otherwise; column ``2t + (i & 1)``, ``+ 8`` for
    ``i >= 4``;
  - A, tf32, m16n8k4: row ``g`` for ``a0``, ``g + 8`` for ``a1``; column ``t``; m16n8k8: row ``g`` for ``a0, a2``,
    ``g + 8`` for ``a1, a3``; column ``t`` for ``a0, a1``, ``t + 4`` for ``a2, a3``;
  - A, 8-bit, m16n8k16: row ``g`` for ``a0..a3``, ``g + 8`` for ``a4..a7``; column ``4t + (i & 3)``; m16n8k32: row
    ``g`` for ``a0..a3, a8..a11``, ``g + 8`` otherwise; column ``4t + (i & 3)``, ``+ 16`` for ``i >= 8``;
  - B (row = K, column = N ``g`` always), 16-bit: k8 row ``2t + i``; k16 row ``2t + (i & 1)``, ``+ 8`` for
    ``i >= 2``; tf32: k4 row ``t``; k8 row ``t`` for ``b0``, ``t + 4`` for ``b1``; 8-bit: k16 row ``4t + i``; k32
    row ``4t + (i & 3)``, ``+ 16`` for ``i >= 4``.

How the simulator applies them. The helpers are the ``mmasync`` family's (``ir/device_calls``):
``mma_m16n8k<K>_<d>_<a>_<b>(d_regs, a_regs, b_regs)``, each argument ``address_of(fragment[slot])`` of the
thread's first element of that operand, its further elements in the following slots, C being D. The warp's lanes
must all execute it (``.sync.aligned``; otherwise a :class:`SimulationError` names the missing lanes). It reads
every lane's fragments, multiplies exactly (tf32 operands with their low 13 mantissa bits dropped, integer sums
wrapping modulo 2^32), rounds once to D's type, and writes D's elements back to each lane's registers.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from .addresses import register_slots
from .dispatch import HelperTable
from .matrix_operands import mma_reference
from .memory import SimulationError
from .warps import whole_warps

__all__ = ["HELPERS", "fragment_places"]

_WARP = 32
#: The element types of each PTX type suffix.
_TYPES = {
    "f16": np.dtype(np.float16),
    "bf16": np.dtype(ml_dtypes.bfloat16),
    "tf32": np.dtype(np.float32),
    "f32": np.dtype(np.float32),
    "s8": np.dtype(np.int8),
    "u8": np.dtype(np.uint8),
    "e4m3": np.dtype(ml_dtypes.float8_e4m3fn),
    "e5m2": np.dtype(ml_dtypes.float8_e5m2),
    "s32": np.dtype(np.int32),
}
#: (element bytes of A/B, K) -> (elements of A, of B) per lane: the shapes the ISA has for m16n8.
_COUNTS = {(2, 8): (4, 2), (2, 16): (8, 4), (4, 4): (2, 1), (4, 8): (4, 2), (1, 16): (8, 4), (1, 32): (16, 8)}


def fragment_places(operand: str, element_bytes: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """``(rows, columns)``, each ``(32, count)``: where lane ``l``'s element ``i`` of ``operand`` (``"A"``,
    ``"B"`` as K x N, or ``"C"``) of an ``m16n8k<k>`` with ``element_bytes``-byte A and B sits, by the ISA's tables.

    Example:
        >>> rows, cols = fragment_places("A", 2, 16)
        >>> [(int(r), int(c)) for r, c in zip(rows[5], cols[5])]  # lane 5: g = 1, t = 1
        [(1, 2), (1, 3), (9, 2), (9, 3), (1, 10), (1, 11), (9, 10), (9, 11)]
    """
    if (element_bytes, k) not in _COUNTS:
        raise SimulationError(f"mma.sync has no m16n8k{k} for {element_bytes}-byte operands")
    lane = np.arange(_WARP)[:, None]
    g, t = lane >> 2, lane % 4
    if operand == "C":
        i = np.arange(4)[None, :]
        return np.broadcast_arrays(g + 8 * (i >= 2), 2 * t + (i & 1))
    count = _COUNTS[(element_bytes, k)][0 if operand == "A" else 1]
    i = np.arange(count)[None, :]
    if operand == "A":
        row, col = {
            (2, 8): (g + 8 * (i >= 2), 2 * t + (i & 1)),
            (2, 16): (g + 8 * ((i >> 1) & 1), 2 * t + (i & 1) + 8 * (i >= 4)),
            (4, 4): (g + 8 * i, t + 0 * i),
            (4, 8): (g + 8 * (i & 1), t + 4 * (i >= 2)),
            (1, 16): (g + 8 * (i >= 4), 4 * t + (i & 3)),
            (1, 32): (g + 8 * ((i >> 2) & 1), 4 * t + (i & 3) + 16 * (i >= 8)),
        }[(element_bytes, k)]
        return np.broadcast_arrays(row, col)
    if operand != "B":
        raise SimulationError(f"an mma.sync operand is A, B or C, got {operand!r}")
    row = {
        (2, 8): 2 * t + i,
        (2, 16): 2 * t + (i & 1) + 8 * (i >= 2),
        (4, 4): t + 0 * i,
        (4, 8): t + 4 * i,
        (1, 16): 4 * t + i,
        (1, 32): 4 * t + (i & 3) + 16 * (i >= 4),
    }[(element_bytes, k)]
    return np.broadcast_arrays(row, g + 0 * i)


def _mma(interp, args, k: str, d: str, a: str, b: str) -> None:
    k = int(k)
    label = f"mma.sync.aligned.m16n8k{k}.row.col.{d}.{a}.{b}.{d}"
    if len(args) != 3:
        raise SimulationError(f"{label} takes three register pointers (D, A, B), got {len(args)} arguments")
    types = {name: _TYPES.get(suffix) for name, suffix in (("D", d), ("A", a), ("B", b))}
    if None in types.values() or types["A"].itemsize != types["B"].itemsize:
        raise SimulationError(f"{label}: no mma.sync has these types")
    size = types["A"].itemsize
    count_a, count_b = _COUNTS.get((size, k), (None, None))
    if count_a is None:
        raise SimulationError(f"{label}: mma.sync has no m16n8k{k} for {size}-byte operands")
    a_rows, a_cols = fragment_places("A", size, k)
    b_rows, b_cols = fragment_places("B", size, k)
    c_rows, c_cols = fragment_places("C", size, k)
    for w in whole_warps(interp, label):
        threads = np.arange(_WARP * w, _WARP * (w + 1))
        where = f"{label} of warp {w}"
        d_regs, d_slots, _ = register_slots(interp, args[0], threads, 4, types["D"], f"{where}: D")
        a_regs, a_slots, _ = register_slots(interp, args[1], threads, count_a, types["A"], f"{where}: A")
        b_regs, b_slots, _ = register_slots(interp, args[2], threads, count_b, types["B"], f"{where}: B")
        lanes = threads[:, None]
        a_tile = np.zeros((16, k), types["A"])
        a_tile[a_rows, a_cols] = a_regs[np.broadcast_to(lanes, a_slots.shape), a_slots]
        b_tile = np.zeros((k, 8), types["B"])
        b_tile[b_rows, b_cols] = b_regs[np.broadcast_to(lanes, b_slots.shape), b_slots]
        c_tile = np.zeros((16, 8), types["D"])
        c_lanes = np.broadcast_to(lanes, d_slots.shape)
        c_tile[c_rows, c_cols] = d_regs[c_lanes, d_slots]
        result = mma_reference(c_tile, a_tile, b_tile, scale_d=True)
        d_regs[c_lanes, d_slots] = result[c_rows, c_cols]


#: The ``mmasync`` family's helpers.
HELPERS = HelperTable(
    "mmasync", {}, [(r"mma_m16n8k(?P<k>\d+)_(?P<d>f32|f16|s32)_(?P<a>[a-z0-9]+)_(?P<b>[a-z0-9]+)", _mma)]
)
