"""``T.tile_mma`` and ``T.tile_mma_wait``: their spec (``spec.py``), what both MMA families read off a shared operand
(``shared_operands.py``), and the lowerings for ``tcgen05`` (``tcgen05.py``), Hopper's ``wgmma`` (``wgmma.py``)
and the warp-level ``mma.sync`` (``mmasync.py``).

Example:
    >>> TILE_MMA.families, TILE_MMA_WAIT.families
    (('tcgen05', 'wgmma', 'mmasync'), ('wgmma',))
"""

from . import mmasync, tcgen05, wgmma
from .spec import (
    MMA_SCOPES,
    TILE_MMA,
    TILE_MMA_WAIT,
    MmaSyncMma,
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
    "MmaWait",
    "Tcgen05Mma",
    "TileMma",
    "TileMmaWait",
    "WgmmaMma",
    "mmasync",
    "tcgen05",
    "wgmma",
]
