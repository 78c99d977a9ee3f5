"""The ``"tirx_layout"`` pipeline: VerifyLayouts, InferLayouts, LowerTileOps (every tile op, by its spec's lowering:
``tirx_layout.ops``), LowerLayoutAccess, PoolSharedMemory (every shared buffer a window of one dynamic shared-memory
pool), then TVM's standard TIRx lowering. (LowerTileOps comes before LowerLayoutAccess, which removes the layouts
the ops' lowerings read, and puts the TMA tensor maps' host encoding before the kernel region, which TVM's lowering
then splits off.)

Layout inference scores candidates with the ``"io-aware"`` cost model; the pipeline ``"tirx_layout.register-count"``
(or ``build(kernel, cost_model="register-count")``) uses the register-count model instead. (TVM's PassContext accepts
only config keys registered in C++, so the choice is a pipeline, not a config option.)

Registered when ``tirx_layout`` is imported, and at ``import tvm`` through the ``tvm.backends`` entry point the
package declares (``tirx_layout:_tvm_autoload``), so ``tvm.tirx.build(kernel, target, pipeline="tirx_layout")``
works either way.

Every *other* TIR pipeline registered with TVM at that moment (``"tirx"``, ``"s_tir"`` — which ``"default"`` and
``pipeline=None`` resolve to — ``"adreno"``, ...) is re-registered, under its own name, with
:class:`RequireLayoutPipeline` in front: a module that carries tirx_layout layouts or tile copies is refused with a
:class:`WrongPipelineError` telling the user to build with ``pipeline="tirx_layout"``, because those pipelines would
drop the layouts silently (``"tirx"``) or fail with an unrelated error (``"s_tir"``). Modules without our layouts
go through them unchanged.
"""

from __future__ import annotations

import tvm
import tvm_ffi

from ..hw.targets import parse_arch
from ..ir.annotations import LAYOUT_KEY
from ..ir.op_calls import read_op_call
from ..ir.rewrite import walk
from ..ops import REGISTRY
from .infer_layouts import COST_MODELS, DEFAULT_COST_MODEL, InferLayouts
from .lower_layout_access import LowerLayoutAccess
from .lower_tile_ops import LowerTileOps
from .shared_pool import PoolSharedMemory
from .verify_layouts import VerifyLayouts

PIPELINE_NAME = "tirx_layout"


@tvm_ffi.register_error("tirx_layout.WrongPipelineError")
class WrongPipelineError(ValueError):
    """A kernel with tirx_layout layouts or tile copies built through a TIR pipeline that would not honour them.

    Example:
        >>> issubclass(WrongPipelineError, ValueError)
        True
    """


def carries_tirx_layout(func) -> str | None:
    """What in ``func`` needs the tirx_layout passes (``"layout of buffer Sm"``, ``"T.tile_copy"``), else ``None``.

    Example:
        >>> import tvm
        >>> A = tvm.tirx.decl_buffer((4,), "float32", "A")
        >>> carries_tirx_layout(tvm.tirx.PrimFunc([A], tvm.tirx.Evaluate(0))) is None
        True
    """
    found = []

    def on_alloc(stmt):
        if LAYOUT_KEY in stmt.annotations:
            found.append(f"the layout of buffer {stmt.buffer.name}")

    def on_attr(stmt):
        if stmt.attr_key == LAYOUT_KEY:
            found.append(f"the layout of buffer {stmt.value.name}")

    def on_evaluate(stmt):
        call = read_op_call(stmt)
        if call is not None and call.name in REGISTRY:
            found.append(REGISTRY[call.name].title)

    def on_for(stmt):
        found.extend(
            spec.title for spec in REGISTRY.values() if spec.form == "loop" and spec.annotation in stmt.annotations
        )

    rules = [(tvm.tirx.AllocBuffer, on_alloc), (tvm.tirx.AttrStmt, on_attr), (tvm.tirx.Evaluate, on_evaluate)]
    walk(func.body, [*rules, (tvm.tirx.For, on_for)])
    return found[0] if found else None


class RequireLayoutPipeline:
    """A module pass for the front of another pipeline: :class:`WrongPipelineError` if a function needs ours.

    Example: ``RequireLayoutPipeline("tirx")(mod)`` is ``mod`` when no function of it carries a tirx_layout layout
    or tile copy.
    """

    def __init__(self, pipeline: str):
        self.pipeline = pipeline

    def __call__(self, mod):
        for gvar, func in mod.functions.items():
            if isinstance(func, tvm.tirx.PrimFunc) and (what := carries_tirx_layout(func)) is not None:
                raise WrongPipelineError(
                    f"{gvar.name_hint} carries {what}, which TIR pipeline {self.pipeline!r} does not lower (it would "
                    f'drop the layout or fail); build with pipeline="{PIPELINE_NAME}" '
                    f'(tvm.tirx.build(mod, target, pipeline="{PIPELINE_NAME}"), or tvm.compile(mod, target, '
                    f'tir_pipeline="{PIPELINE_NAME}"))'
                )
        return mod


def _guarded(name: str, factory):
    """``factory`` (another pipeline's) with :class:`RequireLayoutPipeline` run first."""

    def guarded_factory(*args, **kwargs):
        passes, finalize_host, finalize_device = factory(*args, **kwargs)
        guard = tvm.transform.module_pass(
            lambda mod, ctx: RequireLayoutPipeline(name)(mod), opt_level=0, name="tirx_layout.RequireLayoutPipeline"
        )
        return tvm.transform.Sequential([guard, passes], name=name), finalize_host, finalize_device

    guarded_factory.tirx_layout_guarded = True
    return guarded_factory


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
        [
            VerifyLayouts(),
            InferLayouts(cost_model),
            LowerTileOps(),
            LowerLayoutAccess(),
            PoolSharedMemory(),
            base,
        ],
        name=PIPELINE_NAME,
    )
    return passes, finalize_host, finalize_device


def build(kernel, arch: str = "sm_100a", cost_model: str = DEFAULT_COST_MODEL):
    """Build a kernel (``PrimFunc`` or ``IRModule``) for CUDA ``arch`` with the ``"tirx_layout"`` pipeline (layout
    inference with ``cost_model``).

    Example:
        ``build(kernel).imports[0].inspect_source()`` is the CUDA source of ``kernel`` for sm_100a; an ``arch`` the
        PTX ISA does not define (``"sm_999z"``) is a ``ValueError``.
    """
    parse_arch(arch)
    target = tvm.target.Target({"kind": "cuda", "arch": arch})
    return tvm.tirx.build(kernel, target=target, pipeline=pipeline_name(cost_model))


def register() -> None:
    """Register the pipeline with TVM, and put :class:`RequireLayoutPipeline` in front of every other TIR pipeline
    registered now (idempotent).

    Example:
        >>> register()
        >>> "tirx_layout.register-count" in tvm.tirx.compilation_pipeline.PIPELINE_MAP
        True
        >>> tvm.tirx.compilation_pipeline.PIPELINE_MAP["tirx"].tirx_layout_guarded
        True
    """
    ours = {pipeline_name(model) for model in COST_MODELS}
    for name, factory in list(tvm.tirx.compilation_pipeline.PIPELINE_MAP.items()):
        if name not in ours and not getattr(factory, "tirx_layout_guarded", False):
            tvm.tirx.register_tir_pipeline(name, _guarded(name, factory))
    for model in COST_MODELS:
        tvm.tirx.register_tir_pipeline(pipeline_name(model), lambda model=model: tirx_layout_pipeline(model))


register()
