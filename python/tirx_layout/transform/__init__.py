"""The tirx_layout passes and the ``"tirx_layout"`` compilation pipeline.

Example:
    >>> import tvm, tirx_layout
    >>> "tirx_layout" in tvm.tirx.compilation_pipeline.PIPELINE_MAP
    True
"""

from .lower_layout_access import LowerLayoutAccess, lower_layout_access, storage_extent
from .lower_tile_ops import LowerTileOps, lower_tile_ops
from .pipeline import PIPELINE_NAME, build, tirx_layout_pipeline

__all__ = [
    "PIPELINE_NAME",
    "LowerLayoutAccess",
    "LowerTileOps",
    "build",
    "lower_layout_access",
    "lower_tile_ops",
    "storage_extent",
    "tirx_layout_pipeline",
]
