"""The cluster ops (thread-block clusters, ``sm_90`` onwards; facts: ``hw/clusters.py``):

* ``T.cluster_sync()``: every thread of every CTA of the cluster arrives at the cluster barrier and waits for all
  (``barrier.cluster.arrive.release`` then ``wait.acquire``): each thread's accesses before it (its own shared
  memory, a peer's, global memory) are ordered before every thread's after it; ``T.cluster_arrive()`` and
  ``T.cluster_wait()`` are its two halves, for work between them;
* ``T.mbarrier_arrive_peer(bars[i], rank)``: one arrival (release, cluster scope) on the mbarrier at the same offset
  in CTA ``rank``'s shared memory (``mapa`` + ``mbarrier.arrive.release.cluster.shared::cluster``): a consumer tells
  a producer in another CTA that a stage is free;
* ``T.dsmem_store(x[i], rank, value)`` and ``T.dsmem_load(dst[j], x[i], rank)``: one element of CTA ``rank``'s
  shared buffer ``x`` (distributed shared memory), at the offset ``x[i]`` has in this CTA, written or read.

A kernel declares its cluster with ``T.cta_id_in_cluster([X])`` (or ``[X, Y]``, ``[X, Y, Z]``), next to
``T.cta_id([...])`` for the grid in CTAs; the launch carries the shape (TVM's ``clusterCtaIdx`` launch parameter,
``cuLaunchKernelEx`` with the cluster dimension). ``VerifyLayouts`` refuses a cluster the hardware does not allow.

Example:
    >>> import tvm
    >>> xs = tvm.tirx.decl_buffer((4,), "float32", "xs", scope="shared")
    >>> DSMEM_STORE(xs[1], 1, tvm.tirx.const(2.0, "float32"))
    T.dsmem_store(xs[1], T.uint32(1), T.float32(2.0))
    >>> DSMEM_STORE(xs[1], 9, tvm.tirx.const(2.0, "float32"))
    Traceback (most recent call last):
    ...
    ValueError: T.dsmem_store: the peer CTA's rank must be in 0..7 (PTX ISA), got 9
"""

from __future__ import annotations

import math

import tvm

from ...hw.clusters import MAX_PORTABLE_CLUSTER
from ..helpers.cluster import DSMEM_TYPES
from ..spec import Field, MbarrierField, OpCall, OpSpec, Reach, Record, Uint32Field

_SHARED = ("shared", "shared.dyn")


class ElementField(Field):
    """One element ``x[i]`` of a buffer in one of ``scopes``, of a type distributed shared memory moves.

    Example:
        >>> import tvm
        >>> x = tvm.tirx.decl_buffer((4,), "float32", "x", scope="shared")
        >>> ElementField("dst", ("shared",)).convert(x[2], "T.op")
        x[2]
    """

    def __init__(self, name: str, scopes: tuple):
        super().__init__(name)
        self.scopes = scopes

    def convert(self, value, op: str):
        if isinstance(value, tvm.tirx.Buffer) and math.prod(int(e) for e in value.shape) == 1:
            value = value[(0,) * len(value.shape)]  # how TVMScript prints an element of a one-element buffer
        if not isinstance(value, tvm.ir.TensorLoad):
            raise TypeError(f"{op}: {self.name} is one element of a buffer (x[i]), got {value!r}")
        buffer = value.source
        if buffer.scope() not in self.scopes:
            raise ValueError(
                f"{op}: {self.name} {value} must be an element of a buffer in {' or '.join(self.scopes)} memory; "
                f"{buffer.name} is in {buffer.scope()!r}"
            )
        if str(buffer.dtype) not in DSMEM_TYPES:
            raise ValueError(
                f"{op}: {buffer.name} holds {buffer.dtype}; distributed shared memory moves {sorted(DSMEM_TYPES)}"
            )
        return value


def _rank() -> Uint32Field:
    return Uint32Field("rank", 0, MAX_PORTABLE_CLUSTER - 1, "the peer CTA's rank")


def _everyone(title: str) -> Reach:
    return Reach(
        "cta",
        f"{title} is reached by every thread of every CTA of the cluster (barrier.cluster.*.aligned) but it sits "
        "under `if {guard}`; put it where every thread passes",
    )


class _ClusterBarrierOp(OpSpec):
    families = ("cluster",)

    def rules(self, call: OpCall, ctx) -> Record:
        return Record(call, self.family(ctx), reach=_everyone(self.title))


class ClusterSync(_ClusterBarrierOp):
    """``T.cluster_sync()``: the cluster barrier, arrive (release) then wait (acquire), by every thread.

    Example:
        >>> CLUSTER_SYNC()
        T.cluster_sync()
    """

    name = "cluster_sync"
    description = "arrive at the cluster barrier and wait for every thread of the cluster"


class ClusterArrive(_ClusterBarrierOp):
    """``T.cluster_arrive()``: every thread arrives at the cluster barrier (release); ``T.cluster_wait()`` waits.

    Example:
        >>> CLUSTER_ARRIVE()
        T.cluster_arrive()
    """

    name = "cluster_arrive"
    description = "arrive at the cluster barrier"


class ClusterWait(_ClusterBarrierOp):
    """``T.cluster_wait()``: every thread waits until every thread of the cluster has arrived (acquire).

    Example:
        >>> CLUSTER_WAIT()
        T.cluster_wait()
    """

    name = "cluster_wait"
    description = "wait for the cluster barrier's phase"


class MbarrierArrivePeer(OpSpec):
    """``T.mbarrier_arrive_peer(bars[i], rank)``: every thread reaching it arrives once on the mbarrier at the offset
    of ``bars[i]`` in CTA ``rank``'s shared memory, releasing what it did before.

    Example:
        >>> import tvm
        >>> MBARRIER_ARRIVE_PEER(tvm.tirx.decl_buffer((2,), "uint64", "bars", scope="shared")[1], 0)
        T.mbarrier_arrive_peer(bars[1], T.uint32(0))
    """

    name = "mbarrier_arrive_peer"
    description = "arrive on a peer CTA's mbarrier"
    fields = (MbarrierField("bar"), _rank())
    families = ("cluster",)


class DsmemStore(OpSpec):
    """``T.dsmem_store(x[i], rank, value)``: every thread reaching it writes ``value`` into element ``i`` of CTA
    ``rank``'s ``x`` (a shared buffer; this CTA's own when ``rank`` is its rank).

    Example:
        >>> import tvm
        >>> x = tvm.tirx.decl_buffer((4,), "int32", "x", scope="shared")
        >>> DSMEM_STORE(x[0], 1, 5)
        T.dsmem_store(x[0], T.uint32(1), 5)
    """

    name = "dsmem_store"
    description = "write an element of a peer CTA's shared memory"
    fields = (ElementField("dst", _SHARED), _rank(), Field("value"))
    families = ("cluster",)


class DsmemLoad(OpSpec):
    """``T.dsmem_load(dst[j], x[i], rank)``: every thread reaching it reads element ``i`` of CTA ``rank``'s shared
    buffer ``x`` into ``dst[j]`` (a register or shared element of its own, of ``x``'s type).

    Example:
        >>> import tvm
        >>> x = tvm.tirx.decl_buffer((4,), "float32", "x", scope="shared")
        >>> r = tvm.tirx.decl_buffer((2,), "float32", "r", scope="local")
        >>> DSMEM_LOAD(r[1], x[3], 1)
        T.dsmem_load(r[1], x[3], T.uint32(1))
    """

    name = "dsmem_load"
    description = "read an element of a peer CTA's shared memory"
    fields = (ElementField("dst", ("local", *_SHARED)), ElementField("src", _SHARED), _rank())
    families = ("cluster",)

    def check(self, call: OpCall) -> None:
        dst, src = call.dst.source, call.src.source
        if str(dst.dtype) != str(src.dtype):
            raise ValueError(f"T.dsmem_load reads {src.name} ({src.dtype}) into {dst.name} ({dst.dtype}): same type")


CLUSTER_SYNC = ClusterSync()
CLUSTER_ARRIVE = ClusterArrive()
CLUSTER_WAIT = ClusterWait()
MBARRIER_ARRIVE_PEER = MbarrierArrivePeer()
DSMEM_STORE = DsmemStore()
DSMEM_LOAD = DsmemLoad()
