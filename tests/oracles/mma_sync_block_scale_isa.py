"""A test-side transcription of the PTX ISA's block scaling for ``mma.sync`` ("Block Scaling for mma.sync": the
tables of scale shapes, kinds and selector values, the ``thread-id``/``byte-id`` listing with Figures 43-45, and the
m16n8k64 ``.e2m1`` fragment table), and of CuTe's SM120 block-scaled atoms (``cute/atom/mma_traits_sm120.hpp``) as
a second, independent oracle. It imports nothing of ``tirx_layout``."""

from __future__ import annotations

#: Table "Valid combinations of .scale_vec_size and .kind qualifier": (kind, A/B types, stype, scale_vec sizes).
COMBINATIONS = [
    ("mxf8f6f4", ("e4m3", "e5m2", "e3m2", "e2m3", "e2m1"), "ue8m0", (1,)),
    ("mxf4", ("e2m1",), "ue8m0", (2,)),
    ("mxf4nvf4", ("e2m1",), "ue8m0", (2, 4)),
    ("mxf4nvf4", ("e2m1",), "ue4m3", (4,)),
]
#: The shape of each kind (its syntax lines): K.
K_OF_KIND = {"mxf8f6f4": 32, "mxf4": 64, "mxf4nvf4": 64}
#: Table "Valid values for various selector components".
SELECTORS = {
    1: {"byte-id-a": (0, 1, 2, 3), "thread-id-a": (0, 1), "byte-id-b": (0, 1, 2, 3), "thread-id-b": (0, 1, 2, 3)},
    2: {"byte-id-a": (0, 2), "thread-id-a": (0, 1), "byte-id-b": (0, 2), "thread-id-b": (0, 1, 2, 3)},
    4: {"byte-id-a": (0,), "thread-id-a": (0, 1), "byte-id-b": (0,), "thread-id-b": (0, 1, 2, 3)},
}


def sf_a_supplier(lane: int, thread_id_a: int) -> int | None:
    """The row of scale_A lane ``lane`` supplies, or None: "thread-id-a set to 0, thread-pair satisfying %laneid % 4
    == 0 or 1 provides the SF_A ... 1: %laneid % 4 == 2 or 3"; within the pair, Figure 43: the lower lane of
    quad ``g`` holds row ``g``, the upper row ``g + 8``."""
    if lane % 4 not in (2 * thread_id_a, 2 * thread_id_a + 1):
        return None
    return lane // 4 + (8 if lane % 2 else 0)


def sf_b_supplier(lane: int, thread_id_b: int) -> int | None:
    """The column of scale_B lane ``lane`` supplies: "each thread satisfying %laneid % 4 == thread-id-b provides
    the SF_B", quad ``g`` column ``g`` (Figure 44)."""
    return lane // 4 if lane % 4 == thread_id_b else None


def sf_bytes(scale_vec: int, byte_id: int) -> list[int]:
    """The bytes of the metadata register holding chunks 0.. of a row: 1X one byte ``byte-id``; 2X "value of 0
    selects lower two bytes whereas value of 2 selects upper two bytes"; 4X "all four bytes"."""
    return {1: [byte_id], 2: [byte_id, byte_id + 1], 4: [0, 1, 2, 3]}[scale_vec]


def fp4_a_place(lane: int, i: int) -> tuple[int, int]:
    """m16n8k64 ``.e2m1`` A: row groupID for a0..a7 and a16..a23, groupID + 8 otherwise; column threadID_in_group * 8
    + (i & 7), plus 32 for i >= 16."""
    g, t = lane >> 2, lane % 4
    row = g if (i < 8 or 16 <= i < 24) else g + 8
    return row, t * 8 + (i & 7) + (32 if i >= 16 else 0)


def fp4_b_place(lane: int, i: int) -> tuple[int, int]:
    """m16n8k64 ``.e2m1`` B (K x N): row threadID_in_group * 8 + (i & 7), plus 32 for i >= 8; column groupID."""
    g, t = lane >> 2, lane % 4
    return t * 8 + (i & 7) + (32 if i >= 8 else 0), g


# ---- CuTe's SM120 block-scaled traits (shape, stride): (thread, value) -> column-major (M|N, K) -------------------

CUTE_K64 = {
    "A": (((4, 8), (8, 2, 2)), ((128, 1), (16, 8, 512))),  # (M16, K64)
    "B": (((4, 8), (8, 2)), ((64, 1), (8, 256))),  # (N8, K64)
}
#: SFALayout / SFBLayout of the k32 atom, (T32, V32) -> (M16|N8, K32); the stride-0 modes are the lanes the
#: thread-id selector chooses among.
CUTE_SFA_K32 = (((2, 2, 8), 32), ((8, 0, 1), 16))
CUTE_SFB_K32 = (((4, 8), 32), ((0, 1), 8))
