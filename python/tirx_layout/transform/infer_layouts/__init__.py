"""InferLayouts: layouts for the buffers a kernel's tile ops relate and its author left open (``infer``), chosen
among ``candidates`` by the ``cost_model`` of the copies' plans; the relations themselves are the ops' own
(``OpSpec.relations`` in ``tirx_layout.ops``).

Example:
    >>> from tirx_layout.transform.infer_layouts import COST_MODELS, DEFAULT_COST_MODEL
    >>> DEFAULT_COST_MODEL, sorted(COST_MODELS)
    ('io-aware', ['io-aware', 'register-count'])
"""

from .candidates import fragment_candidates, shared_candidates
from .cost_model import COST_MODELS, DEFAULT_COST_MODEL, Cost, copy_cost
from .infer import (
    CopyOp,
    Decision,
    InferLayouts,
    LayoutConflict,
    explain_layouts,
    infer,
    infer_layouts,
)

__all__ = [
    "COST_MODELS",
    "DEFAULT_COST_MODEL",
    "CopyOp",
    "Cost",
    "Decision",
    "InferLayouts",
    "LayoutConflict",
    "copy_cost",
    "explain_layouts",
    "fragment_candidates",
    "infer",
    "infer_layouts",
    "shared_candidates",
]
