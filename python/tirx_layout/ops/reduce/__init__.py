"""``T.tile_reduce``: its spec (``spec.py``), what a reduction is on a fragment's layout (``derive.py``: the result's
derived layout :func:`reduced_layout`, the plan of shuffles and shared-memory stages) and its lowering
(``lower.py``).

Example:
    >>> TILE_REDUCE.name, [f.name for f in TILE_REDUCE.fields]
    ('tile_reduce', ['dst', 'src', 'op', 'axis', 'accumulate', 'scope'])
"""

from . import lower
from .derive import ReductionPlan, reduced_layout, reduced_shape, reduction_plan
from .spec import REDUCE_OPS, TILE_REDUCE, ReduceRecord, TileReduce

__all__ = [
    "REDUCE_OPS",
    "TILE_REDUCE",
    "ReduceRecord",
    "ReductionPlan",
    "TileReduce",
    "lower",
    "reduced_layout",
    "reduced_shape",
    "reduction_plan",
]
