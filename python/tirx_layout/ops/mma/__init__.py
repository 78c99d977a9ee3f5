"""``T.tile_mma`` and ``T.tile_mma_wait``: their spec (``spec.py``), what both MMA families read off a shared operand
(``shared_operands.py``), and the lowerings for ``tcgen05`` (``tcgen05.py``) and Hopper's ``wgmma``
(``wgmma.py``).

Example:
    >>> TILE_MMA.families, TILE_MMA_WAIT.families
    (('tcgen05', 'wgmma'), ('wgmma',))
"""

from . import tcgen05, wgmma
from .spec import MMA_SCOPES, TILE_MMA, TILE_MMA_WAIT, MmaWait, Tcgen05Mma, TileMma, TileMmaWait, WgmmaMma

__all__ = [
    "MMA_SCOPES",
    "TILE_MMA",
    "TILE_MMA_WAIT",
    "MmaWait",
    "Tcgen05Mma",
    "TileMma",
    "TileMmaWait",
    "WgmmaMma",
    "tcgen05",
    "wgmma",
]
