"""Tensor memory: the TMEM side of ``T.tile_copy`` (``copy``: ``tcgen05.ld/st`` between TMEM and register fragments
in ``ld_st``, ``tcgen05.cp`` from shared memory in ``cp``), the function's TMEM allocations (``alloc``, a lowering
state) and the thread-sync fences around barriers between asynchronous TMEM accesses (``fences``). Layout inference
reads which layouts these instructions move (``fragment_for``, ``shared_operand_for``): the copy's inference
relations call them.

Example (the register fragment ``tcgen05.ld`` moves for a 128 x 64 fp32 accumulator: one row per thread):
    >>> import tvm
    >>> from tirx_layout import tmem_datapath_layout
    >>> from tirx_layout.ops.operands import operand
    >>> acc = tvm.tirx.decl_buffer((128, 64), "float32", "acc", scope="tmem")
    >>> fragment_for(operand(acc[0:128, 0:64], {acc: tmem_datapath_layout("D", 128, 64)}, "TMEM side"), 128, 64,
    ...              "float32")
    TileLayout(S[(128, 64):(1@tid_in_wg, 1)])
"""

from .alloc import TmemAllocations, allocation_columns, check_total_columns, tmem_allocations
from .copy import lower_tmem_copy, plan_tmem_copy
from .cp import shared_operand_for
from .fences import fence_barriers_between_accesses
from .ld_st import TmemCopy, check_tcgen05_ld_st, chunked_fragment, fragment_for

__all__ = [
    "TmemAllocations",
    "TmemCopy",
    "allocation_columns",
    "check_tcgen05_ld_st",
    "check_total_columns",
    "chunked_fragment",
    "fence_barriers_between_accesses",
    "fragment_for",
    "lower_tmem_copy",
    "plan_tmem_copy",
    "shared_operand_for",
    "tmem_allocations",
]
