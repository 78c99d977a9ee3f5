"""``T.tile_mma`` and ``T.tile_mma_wait``: their spec (``spec.py``), what both MMA families read off a shared operand
(``shared_operands.py``), and the lowerings for ``tcgen05`` (``tcgen05.py``), Hopper's ``wgmma`` (``wgmma.py``)
the warp-level ``mma.sync`` (``mmasync.py``) and its block-scaled form on sm_120a (``mmasync_scaled.py``).

Example:
    >>> TILE_MMA.families, TILE_MMA_WAIT.families
    (('tcgen05', 'wgmma', 'mmasync', 'mmasync_block_scale'), ('wgmma',))
"""

from . import mmasync, mmasync_scaled, tcgen05, wgmma
from .spec import (
    MMA_SCOPES,
    TILE_MMA,
    TILE_MMA_WAIT,
    MmaSyncMma,
    MmaSyncScaledMma,
    MmaWait,
    Tcgen05Mma,
    TileMma,
    TileMmaWait,
    WgmmaMma,
)

__all__ = [
    "MMA_SCOPES",
    "TILE_MMA",
    "TILE_MMA_WAIT",
    "MmaSyncMma",
    "MmaSyncScaledMma",
    "MmaWait",
    "Tcgen05Mma",
    "TileMma",
    "TileMmaWait",
    "WgmmaMma",
    "mmasync",
    "mmasync_scaled",
    "tcgen05",
    "wgmma",
]
