"""Analyses of layouts alone: shared-memory bank conflicts and the swizzle that avoids them, register fragments seen
from their threads, and injectivity. (The memory instructions of a compiled kernel are measured by
``tirx_layout.tools.measurement``.)"""

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
