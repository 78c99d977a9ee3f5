"""``T.tile_copy_async`` and ``T.tma_store_wait``: their spec (``spec.py``) and their lowering to the Tensor Memory
Accelerator (``lower.py``).

Example:
    >>> TILE_COPY_ASYNC.families, TMA_STORE_WAIT.families
    (('tma', 'cpasync'), ('tma',))
"""

from . import lower
from .spec import TILE_COPY_ASYNC, TMA_SCOPES, TMA_STORE_WAIT, TileCopyAsync, TmaCopy, TmaStoreWait

__all__ = ["TILE_COPY_ASYNC", "TMA_SCOPES", "TMA_STORE_WAIT", "TileCopyAsync", "TmaCopy", "TmaStoreWait", "lower"]
