"""The simulator's own model of ``ldmatrix`` and ``stmatrix``, written from the PTX ISA.

Written from the PTX ISA, "Warp-level matrix load instruction: ldmatrix" and "Warp-level matrix store instruction:
stmatrix" (``.sync.aligned.m8n8.x1/.x2/.x4{.trans}.shared.b16``) -- never from the project's layouts or lowering.
What it relies on, restated:

* the 32 lanes of a warp execute it together; it moves ``n`` 8 x 8 matrices of 16-bit elements; each matrix row is
  16 contiguous bytes of shared memory, 16-byte aligned, at the address given by one lane: lanes ``8i .. 8i + 7``
  give rows 0-7 of matrix ``i`` (the addresses of lanes past ``8n`` are not used);
* each lane has one 32-bit register per matrix: register ``i`` of lane ``l`` holds elements ``2(l % 4)`` and
  ``2(l % 4) + 1`` of row ``l / 4`` of matrix ``i`` (the lower one in the low half); with ``.trans`` it holds
  elements ``l / 4`` of rows ``2(l % 4)`` and ``2(l % 4) + 1``. ``stmatrix`` writes the same places from the
  registers.

How the simulator applies them. The helpers are the ``ldmatrix`` family's (``ir/device_calls``):
``load_x<n>[_trans](regs, row)`` and ``store_x<n>[_trans](row, regs)``, ``regs`` the address of the thread's first
element slot of its ``n`` registers (``2n`` 16-bit slots), ``row`` the shared address this lane gives. Each matrix
row is read (or written) as an access by the lane that gave its address, checked for races like any other, and
reported to the launch's observer as one 16-byte access per lane, so the bank model sees the instruction's phases.
"""

from __future__ import annotations

import numpy as np

from .addresses import register_slots, shared_address
from .dispatch import HelperTable
from .memory import SimulationError
from .warps import whole_warps

__all__ = ["HELPERS", "matrix_places"]

_WARP = 32
_ROW = 8  # elements of one matrix row


def matrix_places(trans: bool) -> tuple[np.ndarray, np.ndarray]:
    """``(row, column)`` of the matrix element lane ``l`` holds in element ``e`` (0, 1) of its register, arrays
    ``(32, 2)``.

    Example:
        >>> rows, cols = matrix_places(trans=True)
        >>> rows[9].tolist(), cols[9].tolist()  # lane 9: column 2 of rows 2 and 3
        ([2, 3], [2, 2])
    """
    lane = np.arange(_WARP)[:, None]
    e = np.arange(2)[None, :]
    if trans:
        return np.broadcast_arrays(2 * (lane % 4) + e, lane // 4)
    return np.broadcast_arrays(lane // 4 + 0 * e, 2 * (lane % 4) + e)


def _move(interp, args, n: str, trans: str | None, store: bool) -> None:
    count = int(n)
    name = f"{'stmatrix' if store else 'ldmatrix'}.sync.aligned.m8n8.x{count}{'.trans' if trans else ''}.shared.b16"
    if count not in (1, 2, 4) or len(args) != 2:
        raise SimulationError(f"{name}: .x1, .x2 or .x4, two arguments")
    row_arg, regs_arg = (args[0], args[1]) if store else (args[1], args[0])
    memory, index = shared_address(interp, row_arg, name)
    if memory.data.dtype.itemsize != 2:
        raise SimulationError(f"{name} moves 16-bit elements; {memory.name} holds {memory.data.dtype}")
    base = interp.launch.shared_space.base(memory)
    rows, cols = matrix_places(bool(trans))
    block, interval = interp.launch.block, interp.launch.interval
    for w in whole_warps(interp, name):
        threads = np.arange(_WARP * w, _WARP * (w + 1))
        regs, slots, _ = register_slots(interp, regs_arg, threads, 2 * count, memory.data.dtype, name)
        givers = threads[: _ROW * count]
        starts = index[givers]
        misaligned = (base + starts * 2) % 16 != 0
        if misaligned.any():
            lane = int(np.argmax(misaligned))
            raise SimulationError(
                f"{name} of warp {w}: lane {lane} gives {memory.name}[{int(starts[lane])}], not 16-byte aligned"
            )
        elements = starts[:, None] + np.arange(_ROW)[None, :]  # (8 count, 8): the rows, matrix by matrix
        if interp.launch.observer is not None:
            active = np.zeros(interp.count, bool)
            active[givers] = True
            observed = np.zeros((interp.count, _ROW), np.int64)
            observed[givers] = elements
            interp.launch.observer(row_arg, "store" if store else "load", memory, observed, active)
        ids = block * interp.count + givers
        for i in range(count):
            matrix = slice(_ROW * i, _ROW * (i + 1))
            lane_slots = slots[:, 2 * i : 2 * i + 2]  # (32, 2): this matrix's register in each lane
            if store:
                data = np.zeros((_ROW, _ROW), memory.data.dtype)
                data[rows, cols] = regs[threads[:, None], lane_slots]
                writers = np.repeat(ids[matrix], _ROW)
                memory.store(elements[matrix].ravel(), data.ravel(), writers, block, interval, interp.sync)
            else:
                data = memory.load(elements[matrix], ids[matrix, None], block, interval, interp.sync)
                regs[threads[:, None], lane_slots] = data[rows, cols]


def _load(interp, args, n, trans=None):
    _move(interp, args, n, trans, store=False)


def _store(interp, args, n, trans=None):
    _move(interp, args, n, trans, store=True)


#: The ``ldmatrix`` family's helpers.
HELPERS = HelperTable(
    "ldmatrix",
    {},
    [(r"load_x(?P<n>\d)(?P<trans>_trans)?", _load), (r"store_x(?P<n>\d)(?P<trans>_trans)?", _store)],
)
