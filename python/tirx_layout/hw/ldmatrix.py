"""The warp-level matrix loads and stores ``ldmatrix`` / ``stmatrix`` as data, and which register fragments they move
(PTX ISA 9.x, "Warp-level matrix load instruction: ldmatrix" and "Warp-level matrix store instruction: stmatrix",
``.m8n8``, ``.b16``).

One instruction moves ``num`` (1, 2 or 4) 8 x 8 matrices of 16-bit elements between shared memory and one 32-bit
register per matrix in each lane of a warp. Each row of a matrix is 16 contiguous bytes of shared memory, its
address given by one lane: rows 0-7 of matrix ``i`` by lanes ``8i .. 8i + 7`` (for ``.x1`` lanes 0-7, ``.x2`` lanes
0-15; the other lanes' addresses are unused). Register ``i`` of lane ``l`` holds, of matrix ``i``:

* without ``.trans``: row ``l / 4``, columns ``2 (l % 4)`` and ``2 (l % 4) + 1`` (the lower one in the low half);
* with ``.trans``: column ``l / 4`` of rows ``2 (l % 4)`` and ``2 (l % 4) + 1`` (the matrix read transposed).

``ldmatrix`` exists from sm_75, ``stmatrix`` from sm_90. A fragment whose every register (the same on every lane of
every warp) is such a piece of an 8 x 8 block of the tile, each block row 16 contiguous aligned bytes of the shared
tile, is moved by these instructions: :func:`matrix_registers` finds the blocks.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .memory import dtype_bytes
from .mma_sync import fragment_places
from .targets import parse_arch
from .threads import WARP_THREADS

#: The oldest sm_XY with each instruction ("Target ISA notes").
OLDEST_SM = {"ldmatrix": 75, "stmatrix": 90}
#: Matrices one instruction moves.
COUNTS = (1, 2, 4)
#: Rows and columns of one matrix, and its element size.
MATRIX_ROWS, ELEMENT_BYTES = 8, 2


def has(instruction: str, arch: str) -> bool:
    """Whether target ``arch`` has ``instruction`` (``"ldmatrix"`` or ``"stmatrix"``).

    Example:
        >>> has("ldmatrix", "sm_80"), has("stmatrix", "sm_80"), has("stmatrix", "sm_120")
        (True, False, True)
    """
    return parse_arch(arch).sm >= OLDEST_SM[instruction]


@dataclass(frozen=True)
class MatrixGroup:
    """One instruction of a fragment's move: ``count`` matrices into the thread's registers ``first ..
    first + count - 1`` (32-bit registers: element slots ``2 first ..``), transposed or not."""

    first: int
    count: int
    trans: bool

    def name(self, instruction: str) -> str:
        """The PTX operation: ``ldmatrix.sync.aligned.m8n8.x<count>[.trans].shared.b16`` (or ``stmatrix``)."""
        return f"{instruction}.sync.aligned.m8n8.x{self.count}{'.trans' if self.trans else ''}.shared.b16"

    def source_lane(self, lane):
        """For each lane (an int, array or expression), which matrix of the group its address is for and which
        lane and slot (counted from the group's first slot) hold that matrix row's first element:
        ``(matrix, holder lane, slot)``."""
        row = lane % MATRIX_ROWS
        matrix = lane // MATRIX_ROWS % self.count
        if self.trans:  # row i, column 0 of the matrix: lane i / 2, its element i % 2
            return matrix, row // 2, 2 * matrix + row % 2
        return matrix, 4 * row, 2 * matrix  # row i, column 0: lane 4i, its first element


def _kind(rows: np.ndarray, cols: np.ndarray) -> bool | None:
    """Whether one register's elements over a warp's lanes (``rows``/``cols`` ``(32, 2)``) are a matrix piece
    without ``.trans`` (False), with it (True), or neither (None)."""
    lane = np.arange(WARP_THREADS)
    r0, c0 = rows[0, 0], cols[0, 0]
    if c0 % MATRIX_ROWS:
        return None
    plain_rows = r0 + lane // 4
    plain_cols = c0 + 2 * (lane % 4)
    if (rows == plain_rows[:, None]).all() and (cols == plain_cols[:, None] + np.arange(2)).all():
        return False
    trans_rows = r0 + 2 * (lane % 4)
    if (rows == trans_rows[:, None] + np.arange(2)).all() and (cols == (c0 + lane // 4)[:, None]).all():
        return True
    return None


def matrix_registers(layout, shape, dtype) -> tuple[MatrixGroup, ...] | None:
    """The ``ldmatrix``/``stmatrix`` instructions that move a register fragment ``layout`` of a ``(rows, cols)``
    16-bit tile, or ``None`` when some register is no 8 x 8 matrix piece (the same kind in every warp): registers in
    order, consecutive ones of one kind grouped four, then two, then one at a time. Whether each matrix row is 16
    contiguous bytes of the shared side is the caller's to check (its layout is not this one).

    Example:
        >>> from tirx_layout.hw.mma_sync import mma_sync_a_layout, mma_sync_b_layout
        >>> matrix_registers(mma_sync_a_layout((16, 16), "float16"), (16, 16), "float16")
        (MatrixGroup(first=0, count=4, trans=False),)
        >>> from tirx_layout import Iter, TileLayout  # B's fragment on a (K, N) tile: B stored N-major
        >>> b_kn = TileLayout.from_iters([Iter(2, 2, "m"), Iter(4, 1, "laneid"), Iter(2, 1, "m"), Iter(8, 4, "laneid")])
        >>> matrix_registers(b_kn, (16, 8), "bfloat16")
        (MatrixGroup(first=0, count=2, trans=True),)
    """
    if dtype_bytes(dtype) != ELEMENT_BYTES or len(shape) != 2:
        return None
    try:
        thread, slot = fragment_places(layout, tuple(int(s) for s in shape), "the fragment")
    except ValueError:
        return None
    slots = int(slot.max()) + 1
    if slots % 2:
        return None
    rows, cols = np.meshgrid(np.arange(shape[0]), np.arange(shape[1]), indexing="ij")
    threads = int(thread.max()) + 1
    warps = -(-threads // WARP_THREADS)
    table_r = np.full((warps * WARP_THREADS, slots), -1, np.int64)
    table_c = np.full((warps * WARP_THREADS, slots), -1, np.int64)
    for rep in range(thread.shape[0]):
        table_r[thread[rep], slot[rep]] = rows
        table_c[thread[rep], slot[rep]] = cols
    kinds = []
    for register in range(slots // 2):
        kind = set()
        for w in range(warps):
            lanes = slice(WARP_THREADS * w, WARP_THREADS * (w + 1))
            r, c = table_r[lanes, 2 * register : 2 * register + 2], table_c[lanes, 2 * register : 2 * register + 2]
            if (r < 0).all():
                continue  # a warp holding nothing of the fragment
            kind.add(None if (r < 0).any() else _kind(r, c))
        if len(kind) != 1 or None in kind:
            return None
        kinds.append(kind.pop())
    groups, j = [], 0
    while j < len(kinds):
        for count in (4, 2, 1):
            if j + count <= len(kinds) and len(set(kinds[j : j + count])) == 1:
                groups.append(MatrixGroup(j, count, kinds[j]))
                j += count
                break
    return tuple(groups)


__all__ = ["COUNTS", "ELEMENT_BYTES", "MATRIX_ROWS", "OLDEST_SM", "MatrixGroup", "has", "matrix_registers"]
