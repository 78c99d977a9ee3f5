"""``T.tile_copy``: its spec (``spec.py``), the plan of a copy between two operands that are not tensor memory
(``plan.py``, shared with the inference cost model) and its lowering (``lower.py``).

Example:
    >>> TILE_COPY.name, [f.name for f in TILE_COPY.fields]
    ('tile_copy', ['dst', 'src', 'scope'])
"""

from . import lower
from .spec import COPY_SCOPES, TILE_COPY, CopyRecord, TileCopy

__all__ = ["COPY_SCOPES", "TILE_COPY", "CopyRecord", "TileCopy", "lower"]
