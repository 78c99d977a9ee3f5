"""``T.tile_parallel``: element-wise loop nests over a tile's logical coordinates (``spec.py``), lowered per thread
through the layouts of the fragments they touch (``lower.py``).

Example:
    >>> TILE_PARALLEL.form, TILE_PARALLEL.annotation
    ('loop', 'tirx_layout.tile_parallel')
"""

from . import lower as _lower  # noqa: F401  (registers the lowering)
from .spec import NESTED, PARALLEL_SCOPES, TILE_PARALLEL, ParallelRecord, TileParallel

__all__ = ["NESTED", "PARALLEL_SCOPES", "TILE_PARALLEL", "ParallelRecord", "TileParallel"]
