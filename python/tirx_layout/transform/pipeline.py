"""The ``"tirx_layout"`` pipeline: LowerTileOps, LowerLayoutAccess, then TVM's standard TIRx lowering.

Registered when ``tirx_layout`` is imported, and at ``import tvm`` through the ``tvm.backends`` entry point the
package declares (``tirx_layout:_tvm_autoload``), so ``tvm.tirx.build(kernel, target, pipeline="tirx_layout")`` works either way.
"""

from __future__ import annotations

import tvm

from .lower_layout_access import LowerLayoutAccess
from .lower_tile_ops import LowerTileOps

PIPELINE_NAME = "tirx_layout"


def tirx_layout_pipeline():
    """The pipeline factory: ``(passes, finalize_host, finalize_device)`` as ``register_tir_pipeline`` expects.

    Example:
        >>> passes, finalize_host, finalize_device = tirx_layout_pipeline()
        >>> passes.info.name
        'tirx_layout'
    """
    base, finalize_host, finalize_device = tvm.tirx.compilation_pipeline.tirx_pipeline()
    passes = tvm.transform.Sequential([LowerTileOps(), LowerLayoutAccess(), base], name=PIPELINE_NAME)
    return passes, finalize_host, finalize_device


def build(kernel, arch: str = "sm_100a"):
    """Build a kernel (``PrimFunc`` or ``IRModule``) for CUDA ``arch`` with the ``"tirx_layout"`` pipeline.

    Example:
        ``build(kernel).imports[0].inspect_source()`` is the CUDA source of ``kernel`` for sm_100a.
    """
    target = tvm.target.Target({"kind": "cuda", "arch": arch})
    return tvm.tirx.build(kernel, target=target, pipeline=PIPELINE_NAME)


def register() -> None:
    """Register the pipeline with TVM (idempotent).

    Example:
        >>> register()
    """
    tvm.tirx.register_tir_pipeline(PIPELINE_NAME, tirx_layout_pipeline)


register()
