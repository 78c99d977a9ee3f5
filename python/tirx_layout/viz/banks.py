"""The bank view: which of the 32 shared-memory banks each lane of a warp access touches, phase by phase, with
the wavefront count from ``analysis.bank_conflicts`` (the picture and the number come from one access pattern)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..analysis.bank_conflicts import bank_conflicts, bank_words, column, contiguous, lanes_per_phase_of, row_vectors
from ..hw.memory import dtype_bytes

#: The access patterns the bank view offers, by name: each takes (shape, dtype, vector_bytes).
PATTERNS = {
    "row_vectors": lambda shape, dtype, vec: row_vectors(shape, dtype, vec),
    "contiguous": lambda shape, dtype, vec: contiguous(shape, dtype, vec),
    "column": lambda shape, dtype, vec: column(shape, dtype),
}


def bank_view(layout, shape: Sequence[int], dtype: str, pattern: str = "row_vectors", vector_bytes: int = 16) -> dict:
    """The bank picture of one warp access of ``pattern`` to a ``(rows, cols)`` tile laid out by ``layout`` (onto
    ``m`` only): ``lanes[l]`` are the element indices lane ``l`` reads, ``words[p][b]`` the distinct 4-byte words
    phase ``p`` needs in bank ``b``; ``wavefronts``, ``minimum`` and ``phases`` are ``bank_conflicts``' report.

    Example:
        >>> from tirx_layout import TileLayout, S
        >>> view = bank_view(TileLayout(S[(8, 64):(64, 1)]), (8, 64), "float16", "column")
        >>> view["wavefronts"], view["words"][0][0]
        (8, 8)
    """
    if pattern not in PATTERNS:
        raise ValueError(f"unknown access pattern {pattern!r}; expected one of {sorted(PATTERNS)}")
    if len(shape) != 2:
        raise ValueError(f"the bank view needs a (rows, cols) tile, got shape {tuple(shape)}")
    access = PATTERNS[pattern](shape, dtype, vector_bytes)
    report = bank_conflicts(layout, dtype, access)
    size = dtype_bytes(dtype)
    cols = int(shape[1])
    lanes = [[row * cols + col for row, col in lane] for lane in access.lanes]
    flat = np.array([e for lane in lanes for e in lane], dtype=np.int64)
    addresses = np.asarray(layout.apply(flat)["m"]).reshape(32, -1) * size
    words = bank_words(addresses, np.ones(32, bool), access.vector_bytes, size)[0]
    return {
        "pattern": pattern,
        "vector_bytes": access.vector_bytes,
        "lanes_per_phase": lanes_per_phase_of(access.vector_bytes),
        "lanes": lanes,
        "words": words.tolist(),
        "wavefronts": report.wavefronts,
        "minimum": report.minimum,
        "phases": list(report.phases),
        "vectorized": report.vectorized,
    }
