"""The tile ops: every tile-level operation of tirx_layout is one spec (``spec.py``: its fields, its rules stated once
as a validated record, its inference relation, its lowering per target family), in a package of its own with its
lowerings:

* ``cluster`` -- ``T.cluster_sync``, peer mbarrier arrivals and distributed shared memory (thread-block clusters);
* ``copy`` -- ``T.tile_copy`` (per-thread copies by a plan: ``copy/plan.py``);
* ``tmem`` -- the tensor-memory side of ``T.tile_copy`` (``tcgen05.ld/st/cp``) and the TMEM allocations;
* ``mma`` -- ``T.tile_mma`` and ``T.tile_mma_wait`` (``tcgen05.mma`` and Hopper's ``wgmma``);
* ``tma`` -- ``T.tile_copy_async`` and ``T.tma_store_wait`` (the Tensor Memory Accelerator);
* ``cp_async`` -- the barrier-less ``T.tile_copy_async`` (``cp.async``) and ``T.tile_copy_async_wait``;
* ``mbarrier`` -- the ``T.mbarrier_*`` ops;
* ``fill`` -- ``T.tile_fill`` (a copy from a constant through the copy plans);
* ``parallel`` -- ``T.tile_parallel`` loops (element-wise code over logical coordinates, partitioned per thread by
  the fragments' layouts);

and what they share: ``context.py`` (the one context every rule and lowering reads), ``operands.py`` (an op's
operands as the lowerings see them), ``helpers/`` (the CUDA device helpers the lowerings emit, by family). The
passes (``tirx_layout.transform``), the pipeline guard, the printer and the TVMScript names iterate
:data:`REGISTRY` and name no op.

Example:
    >>> sorted(REGISTRY)[:3]
    ['cluster_arrive', 'cluster_sync', 'cluster_wait']
    >>> REGISTRY["tile_copy"].families
    ('any',)
"""

from . import cluster, copy, cp_async, fill, mbarrier, mma, parallel, reduce, tma
from .spec import (
    REGISTRY,
    REQUIRED,
    ChoiceField,
    ConditionField,
    CountField,
    Derived,
    Equal,
    Field,
    FlagField,
    MbarrierField,
    OneOf,
    OpCall,
    OpSpec,
    Reach,
    Record,
    RegionField,
    ScopeField,
    Uint32Field,
    find,
)

__all__ = [
    "REGISTRY",
    "REQUIRED",
    "ChoiceField",
    "ConditionField",
    "CountField",
    "Derived",
    "Equal",
    "Field",
    "FlagField",
    "MbarrierField",
    "OneOf",
    "OpCall",
    "OpSpec",
    "Reach",
    "Record",
    "RegionField",
    "ScopeField",
    "Uint32Field",
    "cluster",
    "copy",
    "cp_async",
    "fill",
    "find",
    "mbarrier",
    "mma",
    "parallel",
    "reduce",
    "tma",
]
