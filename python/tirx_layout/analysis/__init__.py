"""Analyses of layouts alone: shared-memory bank conflicts and the swizzle that avoids them, register fragments seen
from their threads, and injectivity. (The memory instructions of a compiled kernel are measured by
``tirx_layout.tools.measurement``.)

Example: a warp reading an 8 x 64 half-precision tile row by row, 16 bytes a lane, finds every row on banks 0-3 of a
row-major tile (eight times the wavefronts it needs); the swizzle search finds the layout that needs the minimum.

    >>> from tirx_layout import S, TileLayout
    >>> from tirx_layout.analysis import bank_conflicts, pick_swizzle, row_vectors
    >>> reads = row_vectors((8, 64), "float16")
    >>> bank_conflicts(TileLayout(S[(8, 64):(64, 1)]), "float16", reads)
    BankReport(wavefronts=32, minimum=4, phases=(8, 8, 8, 8), vectorized=True)
    >>> swizzled = pick_swizzle("float16", (8, 64))
    >>> swizzled
    ComposeLayout(SwizzleLayout(3, 3, 3), TileLayout(S[(8, 64):(64, 1)]))
    >>> bank_conflicts(swizzled, "float16", reads)
    BankReport(wavefronts=4, minimum=4, phases=(1, 1, 1, 1), vectorized=True)
"""

from .bank_conflicts import (
    AccessPattern,
    BankReport,
    bank_conflicts,
    column,
    contiguous,
    fragment_accesses,
    pick_swizzle,
    row_vectors,
    shared_wavefronts,
    swizzle_candidates,
    warp_wavefronts,
)
from .injectivity import injectivity
from .thread_placement import same_placement, slot_holders

__all__ = [
    "AccessPattern",
    "BankReport",
    "bank_conflicts",
    "column",
    "contiguous",
    "fragment_accesses",
    "injectivity",
    "pick_swizzle",
    "row_vectors",
    "same_placement",
    "shared_wavefronts",
    "slot_holders",
    "swizzle_candidates",
    "warp_wavefronts",
]
