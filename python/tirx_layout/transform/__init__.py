"""The tirx_layout passes and the ``"tirx_layout"`` compilation pipeline.

Passes (one module or package each; no pass imports another): ``verify_layouts`` (VerifyLayouts, first),
``infer_layouts`` (InferLayouts), ``lower_mma`` (LowerTileMma), ``lower_tma`` (LowerTma), ``lower_tile_ops``
(LowerTileOps), ``lower_layout_access`` (LowerLayoutAccess);
``pipeline`` chains them. What passes share lives in
modules they both import: ``copy_plan`` (the plan of a tile copy) and ``tmem`` (the tensor-memory instructions).

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
    register_operand_rule,
    register_strict_rule,
    tcgen05_cp_operand_rule,
    tcgen05_fragment_rule,
    tile_mma_operand_rule,
)
from .lower_layout_access import LowerLayoutAccess, lower_layout_access
from .lower_mma import LowerTileMma, lower_tile_mma
from .lower_tile_ops import LowerTileOps, lower_tile_ops
from .lower_tma import LowerTma, lower_tma
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
    "LowerTileMma",
    "LowerTileOps",
    "LowerTma",
    "PoolSharedMemory",
    "VerifyLayouts",
    "WrongPipelineError",
    "build",
    "copy_cost",
    "explain_layouts",
    "infer_layouts",
    "lower_layout_access",
    "lower_tile_mma",
    "lower_tile_ops",
    "lower_tma",
    "pipeline_name",
    "pool_shared_memory",
    "register_operand_rule",
    "register_strict_rule",
    "storage_extent",
    "tcgen05_cp_operand_rule",
    "tcgen05_fragment_rule",
    "tile_mma_operand_rule",
    "tirx_layout_pipeline",
    "verify_layouts",
]
