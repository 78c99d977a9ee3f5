"""Analyses of layouts and kernels: shared-memory bank conflicts, swizzle choice, and the memory instructions of a
lowered kernel (vector widths and wavefronts, measured in the simulator)."""

from .bank_conflicts import (
    AccessPattern,
    BankReport,
    bank_conflicts,
    column,
    contiguous,
    fragment_accesses,
    pick_swizzle,
    swizzle_candidates,
    row_vectors,
    warp_wavefronts,
)
from .kernel_accesses import AccessReport, AccessSummary, access_table, kernel_accesses, summarize

__all__ = [
    "AccessPattern",
    "AccessReport",
    "AccessSummary",
    "BankReport",
    "access_table",
    "bank_conflicts",
    "column",
    "contiguous",
    "fragment_accesses",
    "kernel_accesses",
    "pick_swizzle",
    "swizzle_candidates",
    "row_vectors",
    "summarize",
    "warp_wavefronts",
]
