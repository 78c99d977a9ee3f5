"""``cp.async``: the barrier-less form of ``T.tile_copy_async`` (global to shared, sm_80 onwards) and
``T.tile_copy_async_wait``: their rules (``spec.py``) and lowerings (``lower.py``).

Example:
    >>> TILE_COPY_ASYNC_WAIT.families
    ('cpasync',)
"""

from . import lower
from .spec import TILE_COPY_ASYNC_WAIT, CpAsyncCopy, CpAsyncWait, TileCopyAsyncWait, cp_async_rules

__all__ = ["TILE_COPY_ASYNC_WAIT", "CpAsyncCopy", "CpAsyncWait", "TileCopyAsyncWait", "cp_async_rules", "lower"]
