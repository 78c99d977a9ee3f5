"""The tirx_layout passes and the ``"tirx_layout"`` compilation pipeline.

Example:
    >>> import tvm, tirx_layout
    >>> "tirx_layout" in tvm.tirx.compilation_pipeline.PIPELINE_MAP
    True
"""

from .cost_model import COST_MODELS, Cost, copy_cost
from .infer_layouts import InferLayouts, LayoutConflict, explain_layouts, infer_layouts, register_strict_rule
from .lower_layout_access import LowerLayoutAccess, lower_layout_access, storage_extent
from .lower_tile_ops import LowerTileOps, lower_tile_ops
from .pipeline import PIPELINE_NAME, build, pipeline_name, tirx_layout_pipeline
from .tmem_inference import tcgen05_cp_operand_rule, tcgen05_fragment_rule  # InferLayouts' TMEM strict rules

__all__ = [
    "COST_MODELS",
    "Cost",
    "InferLayouts",
    "LayoutConflict",
    "copy_cost",
    "explain_layouts",
    "infer_layouts",
    "pipeline_name",
    "register_strict_rule",
    "PIPELINE_NAME",
    "LowerLayoutAccess",
    "LowerTileOps",
    "build",
    "lower_layout_access",
    "lower_tile_ops",
    "storage_extent",
    "tcgen05_cp_operand_rule",
    "tcgen05_fragment_rule",
    "tirx_layout_pipeline",
]
