"""The tirx_layout passes and the ``"tirx_layout"`` compilation pipeline.

Passes (one module or package each; no pass imports another): ``verify_layouts`` (VerifyLayouts, first),
``infer_layouts`` (InferLayouts), ``lower_tile_ops`` (LowerTileOps), ``lower_layout_access`` (LowerLayoutAccess),
``shared_pool`` (PoolSharedMemory); ``pipeline`` chains them. None of them names a tile op: the ops are specs of the
registry in ``tirx_layout.ops`` (their rules, inference relations and lowerings), which the passes iterate.

Example:
    >>> import tvm, tirx_layout
    >>> "tirx_layout" in tvm.tirx.compilation_pipeline.PIPELINE_MAP
    True
"""

from ..layout.placement import storage_extent
from .infer_layouts import (
    COST_MODELS,
    Cost,
    InferLayouts,
    LayoutConflict,
    copy_cost,
    explain_layouts,
    infer_layouts,
)
from .lower_layout_access import LowerLayoutAccess, lower_layout_access
from .lower_tile_ops import LowerTileOps, lower_tile_ops
from .pipeline import PIPELINE_NAME, WrongPipelineError, build, pipeline_name, tirx_layout_pipeline
from .shared_pool import PoolSharedMemory, pool_shared_memory
from .verify_layouts import LayoutVerificationError, VerifyLayouts, verify_layouts

__all__ = [
    "COST_MODELS",
    "PIPELINE_NAME",
    "Cost",
    "InferLayouts",
    "LayoutConflict",
    "LayoutVerificationError",
    "LowerLayoutAccess",
    "LowerTileOps",
    "PoolSharedMemory",
    "VerifyLayouts",
    "WrongPipelineError",
    "build",
    "copy_cost",
    "explain_layouts",
    "infer_layouts",
    "lower_layout_access",
    "lower_tile_ops",
    "pipeline_name",
    "pool_shared_memory",
    "storage_extent",
    "tirx_layout_pipeline",
    "verify_layouts",
]
