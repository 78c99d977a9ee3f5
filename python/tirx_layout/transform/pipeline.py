"""The ``"tirx_layout"`` pipeline: InferLayouts, LowerTileOps, LowerLayoutAccess, then TVM's standard TIRx lowering.

Layout inference scores candidates with the ``"io-aware"`` cost model; the pipeline ``"tirx_layout.register-count"``
(or ``build(kernel, cost_model="register-count")``) uses the register-count model instead. (TVM's PassContext accepts
only config keys registered in C++, so the choice is a pipeline, not a config option.)

Registered when ``tirx_layout`` is imported, and at ``import tvm`` through the ``tvm.backends`` entry point the
package declares (``tirx_layout:_tvm_autoload``), so ``tvm.tirx.build(kernel, target, pipeline="tirx_layout")``
works either way.
"""

from __future__ import annotations

import tvm

from .infer_layouts import COST_MODELS, DEFAULT_COST_MODEL, InferLayouts
from .lower_layout_access import LowerLayoutAccess
from .lower_tile_ops import LowerTileOps

PIPELINE_NAME = "tirx_layout"


def pipeline_name(cost_model: str = DEFAULT_COST_MODEL) -> str:
    """The registered pipeline that infers layouts with ``cost_model``.

    Example:
        >>> pipeline_name(), pipeline_name("register-count")
        ('tirx_layout', 'tirx_layout.register-count')
    """
    if cost_model not in COST_MODELS:
        raise ValueError(f"unknown layout cost model {cost_model!r}; choose one of {sorted(COST_MODELS)}")
    return PIPELINE_NAME if cost_model == DEFAULT_COST_MODEL else f"{PIPELINE_NAME}.{cost_model}"


def tirx_layout_pipeline(cost_model: str = DEFAULT_COST_MODEL):
    """The pipeline factory: ``(passes, finalize_host, finalize_device)`` as ``register_tir_pipeline`` expects.

    Example:
        >>> passes, finalize_host, finalize_device = tirx_layout_pipeline()
        >>> passes.info.name
        'tirx_layout'
    """
    base, finalize_host, finalize_device = tvm.tirx.compilation_pipeline.tirx_pipeline()
    passes = tvm.transform.Sequential(
        [InferLayouts(cost_model), LowerTileOps(), LowerLayoutAccess(), base], name=PIPELINE_NAME
    )
    return passes, finalize_host, finalize_device


def build(kernel, arch: str = "sm_100a", cost_model: str = DEFAULT_COST_MODEL):
    """Build a kernel (``PrimFunc`` or ``IRModule``) for CUDA ``arch`` with the ``"tirx_layout"`` pipeline (layout
    inference with ``cost_model``).

    Example:
        ``build(kernel).imports[0].inspect_source()`` is the CUDA source of ``kernel`` for sm_100a.
    """
    target = tvm.target.Target({"kind": "cuda", "arch": arch})
    return tvm.tirx.build(kernel, target=target, pipeline=pipeline_name(cost_model))


def register() -> None:
    """Register the pipeline with TVM (idempotent).

    Example:
        >>> register()
        >>> "tirx_layout.register-count" in tvm.tirx.compilation_pipeline.PIPELINE_MAP
        True
    """
    for model in COST_MODELS:
        tvm.tirx.register_tir_pipeline(pipeline_name(model), lambda model=model: tirx_layout_pipeline(model))


register()
