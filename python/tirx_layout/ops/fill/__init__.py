"""``T.tile_fill``: its spec (``spec.py``) and its lowering (``lower.py``), a copy from a constant through the copy
plans.

Example:
    >>> TILE_FILL.name, [f.name for f in TILE_FILL.fields]
    ('tile_fill', ['dst', 'value', 'scope'])
"""

from . import lower
from .spec import FILL_SCOPES, TILE_FILL, FillRecord, TileFill

__all__ = ["FILL_SCOPES", "TILE_FILL", "FillRecord", "TileFill", "lower"]
