"""InferLayouts: layouts for the buffers a kernel's tile copies use and its author left open (``infer``), chosen
among ``candidates`` by the ``cost_model`` of the copies' plans; the tensor-memory strict rules (``tmem_rules``) and
the MMA operand rule (``mma_rules``) register themselves here."""

from . import mma_rules, tmem_rules
from .candidates import fragment_candidates, shared_candidates
from .cost_model import COST_MODELS, DEFAULT_COST_MODEL, Cost, copy_cost
from .infer import (
    OPERAND_RULES,
    STRICT_RULES,
    CopyOp,
    Decision,
    InferLayouts,
    LayoutConflict,
    OperandLayouts,
    explain_layouts,
    infer,
    infer_layouts,
    register_operand_rule,
    register_strict_rule,
)
from .mma_rules import mma_operand_layouts, tile_mma_operand_rule
from .tmem_rules import tcgen05_cp_operand_rule, tcgen05_fragment_rule

__all__ = [
    "COST_MODELS",
    "DEFAULT_COST_MODEL",
    "OPERAND_RULES",
    "STRICT_RULES",
    "CopyOp",
    "Cost",
    "Decision",
    "InferLayouts",
    "LayoutConflict",
    "OperandLayouts",
    "copy_cost",
    "explain_layouts",
    "fragment_candidates",
    "infer",
    "infer_layouts",
    "mma_operand_layouts",
    "mma_rules",
    "register_operand_rule",
    "register_strict_rule",
    "shared_candidates",
    "tcgen05_cp_operand_rule",
    "tcgen05_fragment_rule",
    "tile_mma_operand_rule",
    "tmem_rules",
]
