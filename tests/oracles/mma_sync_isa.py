"""A test-side transcription of the PTX ISA's fragment tables of ``mma.sync.aligned.m16n8k*`` ("Matrix Fragments for
mma.m16n8k4 / m16n8k8 / m16n8k16 / m16n8k32"), one table per shape and type as the ISA prints it, and of CuTe's
thread-value layouts of the same instructions (``cute/atom/mma_traits_sm80.hpp`` and ``mma_traits_sm89.hpp``), as a
second, independent oracle. It imports nothing of ``tirx_layout``.

Every ISA function returns ``(row, col)`` of element ``i`` of lane ``lane`` in the ISA's own orientation: A is
M x K, B is **K x N**, C/D is M x N.
"""

from __future__ import annotations

#: (kind, k) -> element bytes of A/B; the tables exist for these.
SHAPES = {
    ("f16", 8): 2,
    ("f16", 16): 2,
    ("bf16", 8): 2,
    ("bf16", 16): 2,
    ("tf32", 4): 4,
    ("tf32", 8): 4,
    ("int8", 16): 1,
    ("int8", 32): 1,
    ("fp8", 16): 1,
    ("fp8", 32): 1,
}
#: Elements per thread of A, B, C for each (bytes, k).
COUNTS = {
    (2, 8): (4, 2, 4),
    (2, 16): (8, 4, 4),
    (4, 4): (2, 1, 4),
    (4, 8): (4, 2, 4),
    (1, 16): (8, 4, 4),
    (1, 32): (16, 8, 4),
}


def _ids(lane: int) -> tuple[int, int]:
    return lane >> 2, lane % 4  # groupID, threadID_in_group


def a_place(size: int, k: int, lane: int, i: int) -> tuple[int, int]:
    """(row, col) of ``a_i``."""
    g, t = _ids(lane)
    if (size, k) == (2, 8):  # m16n8k8 .f16/.bf16
        return (g if i < 2 else g + 8), t * 2 + (i & 1)
    if (size, k) == (2, 16):  # m16n8k16 .f16/.bf16
        row = g if (0 <= i < 2 or 4 <= i < 6) else g + 8
        return row, t * 2 + (i & 1) + (8 if i >= 4 else 0)
    if (size, k) == (4, 4):  # m16n8k4 .tf32
        return (g if i == 0 else g + 8), t
    if (size, k) == (4, 8):  # m16n8k8 .tf32
        return (g if i in (0, 2) else g + 8), (t if i in (0, 1) else t + 4)
    if (size, k) == (1, 16):  # m16n8k16 .s8/.u8/.e4m3/.e5m2
        return (g if i < 4 else g + 8), t * 4 + (i & 3)
    if (size, k) == (1, 32):  # m16n8k32 .s8/.u8/.e4m3/.e5m2
        row = g if (0 <= i < 4 or 8 <= i < 12) else g + 8
        return row, t * 4 + (i & 3) + (16 if i >= 8 else 0)
    raise KeyError((size, k))


def b_place(size: int, k: int, lane: int, i: int) -> tuple[int, int]:
    """(row = K, col = N) of ``b_i``."""
    g, t = _ids(lane)
    if (size, k) == (2, 8):
        return t * 2 + i, g
    if (size, k) == (2, 16):
        return t * 2 + (i & 1) + (8 if i >= 2 else 0), g
    if (size, k) == (4, 4):
        return t, g
    if (size, k) == (4, 8):
        return (t if i == 0 else t + 4), g
    if (size, k) == (1, 16):
        return t * 4 + i, g
    if (size, k) == (1, 32):
        return t * 4 + (i & 3) + (16 if i >= 4 else 0), g
    raise KeyError((size, k))


def c_place(lane: int, i: int) -> tuple[int, int]:
    """(row, col) of ``c_i`` (every m16n8 shape, every accumulator type)."""
    g, t = _ids(lane)
    return (g if i < 2 else g + 8), t * 2 + (i & 1)


# ---- CuTe's thread-value layouts (shape, stride) per operand, transcribed from the traits ------------------------
# A maps (thread, value) -> m + 16 k (M x K, column-major), B (thread, value) -> n + 8 k, C -> m + 16 n.

_SM80_16x8_ROW = (((4, 8), (2, 2)), ((32, 1), (16, 8)))
_SM80_8x8_ROW = (((4, 8), 2), ((16, 1), 8))
_SM80_8x16_ROW = (((4, 8), 4), ((32, 1), 8))
_SM80_8x4 = (((4, 8), 1), ((8, 1), 0))

CUTE = {
    (2, 8): {"A": _SM80_16x8_ROW, "B": _SM80_8x8_ROW, "C": _SM80_16x8_ROW},
    (2, 16): {
        "A": (((4, 8), (2, 2, 2)), ((32, 1), (16, 8, 128))),
        "B": (((4, 8), (2, 2)), ((16, 1), (8, 64))),
        "C": _SM80_16x8_ROW,
    },
    (4, 4): {"A": (((4, 8), 2), ((16, 1), 8)), "B": _SM80_8x4, "C": _SM80_16x8_ROW},
    (4, 8): {
        "A": (((4, 8), (2, 2)), ((16, 1), (8, 64))),
        "B": (((4, 8), 2), ((8, 1), 32)),
        "C": _SM80_16x8_ROW,
    },
    (1, 16): {"A": (((4, 8), (4, 2)), ((64, 1), (16, 8))), "B": _SM80_8x16_ROW, "C": _SM80_16x8_ROW},
    (1, 32): {
        "A": (((4, 8), (4, 2, 2)), ((64, 1), (16, 8, 256))),
        "B": (((4, 8), (4, 2)), ((32, 1), (8, 128))),
        "C": _SM80_16x8_ROW,
    },
}
