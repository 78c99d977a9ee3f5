"""Tensor memory in LowerTileOps: TMEM allocations (``alloc``), ``tcgen05.ld/st`` between TMEM and register fragments
(``ld_st``), ``tcgen05.cp`` from shared memory (``cp``) and the thread-sync fences around barriers (``fences``); the
CUDA helpers with inline PTX they emit live in ``ops/helpers`` (``tcgen05``, ``mbarrier``, ``sync``). Layout inference
reads which layouts these instructions can move (``fragment_for``, ``shared_operand_for``), so both passes share this
package."""

from .alloc import TmemLowering, allocation_columns, check_total_columns, tmem_allocations
from .cp import shared_operand_for
from .fences import fence_barriers_between_accesses
from .ld_st import TmemCopy, chunked_fragment, fragment_for, lower_tmem_fragment_copy

__all__ = [
    "TmemCopy",
    "TmemLowering",
    "allocation_columns",
    "check_total_columns",
    "chunked_fragment",
    "fence_barriers_between_accesses",
    "fragment_for",
    "lower_tmem_fragment_copy",
    "shared_operand_for",
    "tmem_allocations",
]
