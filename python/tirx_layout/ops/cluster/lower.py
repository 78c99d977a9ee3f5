"""The cluster ops lowered (helpers: ``ops/helpers/cluster.py``), on every target with clusters:

* ``T.cluster_sync()``: ``barrier.cluster.arrive.release.aligned`` then ``barrier.cluster.wait.acquire.aligned``;
  ``T.cluster_arrive()`` / ``T.cluster_wait()`` one each;
* ``T.mbarrier_arrive_peer``: the release fences of an arrive (``fence.proxy.async.shared::cta``, and on a target
  with tensor memory ``tcgen05.fence::before_thread_sync``), then ``mapa`` + the remote arrive; right after another
  arrive the fences are that arrive's (a run lowering);
* ``T.dsmem_store`` / ``T.dsmem_load``: ``mapa`` + ``st``/``ld.shared::cluster`` of one element.

Example:
    >>> import re, tvm
    >>> from tirx_layout.transform import lower_tile_ops
    >>> func = tvm.script.from_source('''
    ... @T.prim_func
    ... def k():
    ...     T.func_attr({"target": T.target({"kind": "cuda", "arch": "sm_90a"})})
    ...     T.device_entry()
    ...     bx = T.cta_id([2])
    ...     cx = T.cta_id_in_cluster([2])
    ...     tx = T.thread_id([32])
    ...     xs = T.alloc_shared((32,), "float32")
    ...     T.dsmem_store(xs[tx], 1 - cx, T.float32(1))
    ...     T.cluster_sync()
    ... ''')
    >>> re.findall(r'tirx_layout_(\\w+)"', lower_tile_ops(func).script())
    ['cluster_store_float32', 'cluster_arrive', 'cluster_wait']
"""

from __future__ import annotations

import tvm
from tvm import tirx

from ...ir.rewrite import sequence
from ..helpers import cluster, sync, tcgen05
from ..spec import find
from .spec import CLUSTER_ARRIVE, CLUSTER_SYNC, CLUSTER_WAIT, DSMEM_LOAD, DSMEM_STORE, MBARRIER_ARRIVE_PEER


@CLUSTER_SYNC.lowering("cluster")
def lower_sync(record, ctx):
    return sequence([cluster.arrive(), cluster.wait()])


@CLUSTER_ARRIVE.lowering("cluster")
def lower_arrive(record, ctx):
    return cluster.arrive()


@CLUSTER_WAIT.lowering("cluster")
def lower_wait(record, ctx):
    return cluster.wait()


@MBARRIER_ARRIVE_PEER.lowering("cluster")
def lower_arrive_peer(record, ctx):
    fences = [sync.fence_proxy_async()] + ([tcgen05.simple("fence_before")] if ctx.arch.has("tcgen05") else [])
    return sequence([*fences, cluster.arrive_peer(tvm.tirx.address_of(record.call.bar), record.call.rank)])


#: The arrives whose release fences a peer arrive right after them shares.
_FENCED_ARRIVES = ("mbarrier_arrive", "mbarrier_arrive_expect_tx", "mbarrier_arrive_peer")


@MBARRIER_ARRIVE_PEER.run_lowering("cluster")
def lower_arrive_peer_runs(seq, ctx):
    """``seq`` with each ``T.mbarrier_arrive_peer`` that directly follows another arrive of the same thread (a
    consumer releasing a stage on its own barrier, then on its peer's) lowered without the release fences: the
    arrive before it fenced, and nothing came between."""
    out, changed, previous = [], False, None
    for part in seq.seq:
        call = find(part) if isinstance(part, tirx.Evaluate) else None
        if call is not None and call.spec is MBARRIER_ARRIVE_PEER and previous in _FENCED_ARRIVES:
            out.append(cluster.arrive_peer(tvm.tirx.address_of(call.bar), call.rank))
            changed = True
        else:
            out.append(part)
        previous = None if call is None else call.spec.name
    return sequence(out) if changed else seq


@DSMEM_STORE.lowering("cluster")
def lower_store(record, ctx):
    dst = record.call.dst
    dtype = str(dst.source.dtype)
    value = record.call.value
    value = tirx.const(value, dtype) if isinstance(value, int | float) else value
    if str(value.ty) != dtype:
        value = tirx.Cast(dtype, value)
    return cluster.store(dtype, tvm.tirx.address_of(dst), record.call.rank, value)


@DSMEM_LOAD.lowering("cluster")
def lower_load(record, ctx):
    dst, src = record.call.dst, record.call.src
    value = cluster.load(str(src.source.dtype), tvm.tirx.address_of(src), record.call.rank)
    return tirx.BufferStore(dst.source, value, dst.indices)
