"""The device helpers the lowerings emit, one module per family (``ir/device_calls.HELPER_FAMILIES``): each holds
its family's CUDA ``__device__`` sources with inline PTX and the functions that emit their calls.

* ``mbarrier`` -- ``mbarrier.init`` / ``arrive`` / ``expect_tx`` / ``arrive.expect_tx`` / ``try_wait.parity``;
* ``tma`` -- tiled ``cp.async.bulk.tensor`` loads and stores of rank 1-5, and the store's ``wait_group``;
* ``sync`` -- ``elect.sync`` and ``fence.proxy.async.shared::cta``;
* ``tcgen05`` -- tensor memory (alloc, dealloc, ld/st, waits, thread-sync fences, cp, commit), ``tcgen05.mma``
  (dense and block-scaled) and its shared-memory descriptor;
* ``wgmma`` -- Hopper's ``wgmma.mma_async``, fence, commit_group, wait_group and the register fences;
* ``math`` -- values: ``ex2.approx.ftz.f32``, the packed ``add/mul/fma.rn.f32x2`` (sm_100) on ``float32x2``, and
  the packing conversions ``cvt.rn.{bf16x2,f16x2}.f32`` / ``cvt.rn.satfinite.{e4m3x2,e5m2x2}.f32``;
* ``mmasync`` -- the warp-level ``mma.sync.aligned.m16n8k*`` of sm_80 onwards;
* ``cpasync`` -- ``cp.async`` global-to-shared copies (4, 8, 16 bytes, zero-fill), commit_group, wait_group;
* ``ldmatrix`` -- ``ldmatrix`` / ``stmatrix`` (8 x 8 matrices of 16-bit elements, ``.x1/.x2/.x4``, ``.trans``);
* ``emit`` -- what they share: constant operands and the source of a helper that is one ``asm`` statement.

The names come from ``tirx_layout.ir.device_calls`` (``tirx_layout_<family>_<what>``), the instruction facts from
``tirx_layout.hw``; nothing here imports a layer above ``ir``.

Example (each call names its family, which is all the simulator needs to find its executor):
    >>> from tirx_layout.ir.device_calls import called_helper
    >>> from tirx_layout.ops.helpers import mbarrier, sync, tcgen05
    >>> import tvm
    >>> bar = tvm.tirx.const(0)
    >>> [called_helper(call)[:2] for call in (mbarrier.wait(bar, 1), sync.fence_proxy_async(), tcgen05.commit(bar))]
    [('mbarrier', 'wait'), ('sync', 'fence_proxy_async'), ('tcgen05', 'commit')]
"""
