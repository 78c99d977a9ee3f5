"""The ``sync`` helpers: synchronisation that is neither a barrier of threads nor tied to one unit, named
``tirx_layout_sync_<what>`` through ``tirx_layout.ir.device_calls``; the simulator (``sim/sync.py``) executes a call
from its name and arguments alone. (The CTA and warp barriers are TVM's own intrinsics:
``ir/device_calls.cta_barrier`` / ``warp_barrier``.)

* ``elect()``: ``elect.sync _|p, 0xffffffff`` -- every lane of the warp executes it; the lowest active lane gets a
  true predicate, returned as ``uint32`` 1 (0 elsewhere). It picks the one thread that issues a TMA copy or an MMA.
* ``fence_proxy_async()``: ``fence.proxy.async.shared::cta`` -- the thread's generic-proxy writes to shared memory
  become visible to the async proxy, through which TMA stores, ``tcgen05.mma``/``cp`` and ``wgmma`` read it (PTX
  ISA, "Memory consistency model": proxies).
* ``named_barrier_sync(barrier, threads)`` / ``named_barrier_arrive(barrier, threads)``: ``bar.sync`` /
  ``bar.arrive`` on CTA barrier ``barrier`` (0..15) expecting ``threads`` arrivals (a multiple of 32; PTX ISA,
  ``bar{.cta}``): ``bar.sync`` counts the executing warp's arrival and waits until ``threads`` have arrived,
  ``bar.arrive`` only counts it. A pair of them orders two warpgroups' issue without either waiting for the other
  to reach the same point (the ping-pong schedule of ``examples/hopper_attention.py``).
"""

from __future__ import annotations

from ...ir.device_calls import helper_call, helper_name, helper_value
from .emit import asm_source, u32

FAMILY = "sync"

_ELECT_SOURCE = f"""
__device__ __forceinline__ unsigned int {helper_name(FAMILY, "elect")}() {{
  // PTX ISA, elect.sync: every lane of the warp (membermask 0xffffffff) executes it; the lowest active lane gets
  // a true predicate. ptxas knows the result is one lane of a converged warp, and issues what it guards directly.
  unsigned int elected = 0;
  asm volatile("{{\\n .reg .pred p;\\n elect.sync _|p, 0xffffffff;\\n selp.u32 %0, 1, 0, p;\\n}}"
               : "=r"(elected));
  return elected;
}}
"""
_FENCE_PROXY_ASYNC_SOURCE = asm_source(FAMILY, "fence_proxy_async", "fence.proxy.async.shared::cta;")


_NAMED_BARRIER_SYNC_SOURCE = f"""
__device__ __forceinline__ void {helper_name(FAMILY, "named_barrier_sync")}(unsigned int barrier,
    unsigned int threads) {{
  // PTX ISA, bar{{.cta}}.sync a, b: the warp arrives on barrier a and waits until b threads have arrived.
  asm volatile("bar.sync %0, %1;" :: "r"(barrier), "r"(threads) : "memory");
}}
"""
_NAMED_BARRIER_ARRIVE_SOURCE = f"""
__device__ __forceinline__ void {helper_name(FAMILY, "named_barrier_arrive")}(unsigned int barrier,
    unsigned int threads) {{
  // PTX ISA, bar{{.cta}}.arrive a, b: the warp arrives on barrier a (b threads complete it) and does not wait.
  asm volatile("bar.arrive %0, %1;" :: "r"(barrier), "r"(threads) : "memory");
}}
"""
#: Hardware barriers per CTA (PTX ISA, ``bar``: "a" is in the range 0..15); 0 is ``__syncthreads()``.
NAMED_BARRIERS = 16


def _barrier_operands(who: str, barrier, threads):
    if isinstance(barrier, int) and not 0 <= barrier < NAMED_BARRIERS:
        raise ValueError(f"{who}: barrier {barrier} is not one of the CTA's named barriers 0..{NAMED_BARRIERS - 1}")
    if not isinstance(threads, int) or threads < 32 or threads % 32:
        raise ValueError(f"{who}: threads must be a positive multiple of 32 (whole warps), got {threads!r}")
    return u32(barrier), u32(threads)


def named_barrier_sync(barrier, threads: int):
    """``bar.sync barrier, threads``: the executing warps arrive on named barrier ``barrier`` and wait until
    ``threads`` threads (theirs and those of ``named_barrier_arrive``) have arrived. A statement (``T.evaluate``).

    Example:
        >>> "bar.sync %0, %1" in str(named_barrier_sync(3, 256))
        True
        >>> named_barrier_sync(16, 256)
        Traceback (most recent call last):
        ...
        ValueError: named_barrier_sync: barrier 16 is not one of the CTA's named barriers 0..15
    """
    return helper_value(
        FAMILY,
        "named_barrier_sync",
        _NAMED_BARRIER_SYNC_SOURCE,
        "void",
        *_barrier_operands("named_barrier_sync", barrier, threads),
    )


def named_barrier_arrive(barrier, threads: int):
    """``bar.arrive barrier, threads``: the executing warps arrive on named barrier ``barrier`` (``threads`` arrivals
    complete it) and go on. A statement (``T.evaluate``).

    Example:
        >>> "bar.arrive %0, %1" in str(named_barrier_arrive(4, 256))
        True
    """
    return helper_value(
        FAMILY,
        "named_barrier_arrive",
        _NAMED_BARRIER_ARRIVE_SOURCE,
        "void",
        *_barrier_operands("named_barrier_arrive", barrier, threads),
    )


def elect():
    """``uint32`` 1 in the one lane ``elect.sync`` elects in the executing warp (its lowest active lane), else 0.
    Every lane of the warp must execute it together.

    Example:
        >>> str(elect().ty.dtype)
        'uint32'
    """
    return helper_value(FAMILY, "elect", _ELECT_SOURCE, "uint32")


def fence_proxy_async():
    """``fence.proxy.async.shared::cta``: this thread's generic writes to shared memory become visible to the async
    proxy (a TMA store, ``tcgen05.cp``/``mma`` or ``wgmma`` reading them after a barrier).

    Example:
        >>> "tirx_layout_sync_fence_proxy_async" in str(fence_proxy_async())
        True
    """
    return helper_call(FAMILY, "fence_proxy_async", _FENCE_PROXY_ASYNC_SOURCE)


__all__ = [
    "FAMILY",
    "NAMED_BARRIERS",
    "elect",
    "fence_proxy_async",
    "named_barrier_arrive",
    "named_barrier_sync",
]
