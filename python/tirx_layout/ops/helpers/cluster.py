"""The ``cluster`` helpers: what the CTAs of a thread-block cluster do to each other, named
``tirx_layout_cluster_<what>`` through ``tirx_layout.ir.device_calls``; the simulator (``sim/cluster.py``) executes
a call from its name and arguments alone. PTX ISA: ``barrier.cluster``, ``mapa``, ``mbarrier.arrive`` with
``.shared::cluster``, ``ld``/``st`` with ``.shared::cluster``, the special register ``%cluster_ctarank``.

* ``arrive()`` / ``wait()``: ``barrier.cluster.arrive.release.aligned`` / ``barrier.cluster.wait.acquire.aligned``
  -- every thread of every CTA of the cluster arrives, then waits until all have arrived; the release and acquire
  order each thread's memory accesses before the arrive before every thread's accesses after the wait, across the
  cluster (distributed shared memory included);
* ``rank()``: ``%cluster_ctarank``, the executing CTA's rank in its cluster (``uint32``);
* ``arrive_peer(&bar, rank)``: ``mapa.shared::cluster`` maps the mbarrier's address to the same offset in CTA
  ``rank``'s shared memory, then ``mbarrier.arrive.release.cluster.shared::cluster`` arrives on that CTA's mbarrier;
* ``load_<dtype>(&x, rank)`` / ``store_<dtype>(&x, rank, value)``: an element of CTA ``rank``'s shared memory at the
  offset of ``&x`` in this CTA's (``mapa``), read or written with ``ld``/``st.shared::cluster``.
"""

from __future__ import annotations

from ...ir.device_calls import helper_call, helper_name, helper_value
from .emit import asm_source, u32

FAMILY = "cluster"

#: The element types a distributed-shared-memory access moves: C type, PTX type, asm constraint.
DSMEM_TYPES = {
    "float32": ("float", "f32", "f"),
    "int32": ("int", "s32", "r"),
    "uint32": ("unsigned int", "u32", "r"),
    "float64": ("double", "f64", "d"),
    "int64": ("long long", "s64", "l"),
    "uint64": ("unsigned long long", "u64", "l"),
}

_ARRIVE_SOURCE = asm_source(FAMILY, "arrive", "barrier.cluster.arrive.release.aligned;")
_WAIT_SOURCE = asm_source(FAMILY, "wait", "barrier.cluster.wait.acquire.aligned;")
_RANK_SOURCE = f"""
__device__ __forceinline__ unsigned int {helper_name(FAMILY, "rank")}() {{
  unsigned int rank;  // not volatile: the rank never changes, so the compiler may read it once
  asm("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  return rank;
}}
"""
#: ``mapa``: this CTA's shared address of ``pointer`` -> the shared::cluster address of the same offset in ``rank``.
_MAPA = """  unsigned int local = (unsigned int)__cvta_generic_to_shared(pointer);
  unsigned int remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(local), "r"(rank));
"""
_ARRIVE_PEER_SOURCE = f"""
__device__ __forceinline__ void {helper_name(FAMILY, "arrive_peer")}(void* pointer, unsigned int rank) {{
{_MAPA}  asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" :: "r"(remote) : "memory");
}}
"""


def _dsmem_type(dtype: str):
    if dtype not in DSMEM_TYPES:
        raise ValueError(
            f"a distributed-shared-memory access moves one of {sorted(DSMEM_TYPES)} (ld/st.shared::cluster), got "
            f"{dtype!r}"
        )
    return DSMEM_TYPES[dtype]


def load_source(dtype: str) -> str:
    """The CUDA helper that reads one ``dtype`` element of a peer CTA's shared memory.

    Example:
        >>> "ld.shared::cluster.f32" in load_source("float32")
        True
    """
    c_type, ptx, constraint = _dsmem_type(dtype)
    return f"""
__device__ __forceinline__ {c_type} {helper_name(FAMILY, "load_" + dtype)}(void* pointer, unsigned int rank) {{
{_MAPA}  {c_type} value;
  asm volatile("ld.shared::cluster.{ptx} %0, [%1];" : "={constraint}"(value) : "r"(remote) : "memory");
  return value;
}}
"""


def store_source(dtype: str) -> str:
    """The CUDA helper that writes one ``dtype`` element of a peer CTA's shared memory.

    Example:
        >>> "st.shared::cluster.s32" in store_source("int32")
        True
    """
    c_type, ptx, constraint = _dsmem_type(dtype)
    return f"""
__device__ __forceinline__ void {helper_name(FAMILY, "store_" + dtype)}(void* pointer, unsigned int rank,
    {c_type} value) {{
{_MAPA}  asm volatile("st.shared::cluster.{ptx} [%0], %1;" :: "r"(remote), "{constraint}"(value) : "memory");
}}
"""


def arrive():
    """``barrier.cluster.arrive.release.aligned`` (every thread of the warp executes it).

    Example:
        >>> "tirx_layout_cluster_arrive" in str(arrive())
        True
    """
    return helper_call(FAMILY, "arrive", _ARRIVE_SOURCE)


def wait():
    """``barrier.cluster.wait.acquire.aligned``: until every thread of the cluster has arrived.

    Example:
        >>> "tirx_layout_cluster_wait" in str(wait())
        True
    """
    return helper_call(FAMILY, "wait", _WAIT_SOURCE)


def rank():
    """The executing CTA's rank in its cluster (``%cluster_ctarank``), ``uint32``.

    Example:
        >>> str(rank().ty.dtype)
        'uint32'
    """
    return helper_value(FAMILY, "rank", _RANK_SOURCE, "uint32")


def arrive_peer(bar, peer):
    """One arrival (release, cluster scope) on the mbarrier at ``bar``'s offset in CTA ``peer``'s shared memory.

    Example:
        >>> import tvm
        >>> "tirx_layout_cluster_arrive_peer" in str(arrive_peer(tvm.tirx.const(0), 1))
        True
    """
    return helper_call(FAMILY, "arrive_peer", _ARRIVE_PEER_SOURCE, bar, u32(peer))


def load(dtype: str, pointer, peer):
    """The ``dtype`` element at ``pointer``'s offset (an ``address_of`` of a shared element) in CTA ``peer``'s
    shared memory.

    Example:
        >>> import tvm
        >>> str(load("float32", tvm.tirx.const(0), 1).ty.dtype)
        'float32'
    """
    return helper_value(FAMILY, "load_" + dtype, load_source(dtype), dtype, pointer, u32(peer))


def store(dtype: str, pointer, peer, value):
    """Write ``value`` (``dtype``) at ``pointer``'s offset in CTA ``peer``'s shared memory.

    Example:
        >>> import tvm
        >>> "tirx_layout_cluster_store_float32" in str(store("float32", tvm.tirx.const(0), 1, tvm.tirx.const(1.0)))
        True
    """
    return helper_call(FAMILY, "store_" + dtype, store_source(dtype), pointer, u32(peer), value)


__all__ = [
    "DSMEM_TYPES",
    "FAMILY",
    "arrive",
    "arrive_peer",
    "load",
    "load_source",
    "rank",
    "store",
    "store_source",
    "wait",
]
