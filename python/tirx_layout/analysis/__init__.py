"""Analyses of layouts: shared-memory bank conflicts and swizzle choice."""

from .bank_conflicts import (
    AccessPattern,
    BankReport,
    bank_conflicts,
    column,
    contiguous,
    pick_swizzle,
    row_vectors,
)

__all__ = ["AccessPattern", "BankReport", "bank_conflicts", "column", "contiguous", "pick_swizzle", "row_vectors"]
