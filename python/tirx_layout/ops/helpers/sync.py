"""The ``sync`` helpers: synchronisation that is neither a barrier of threads nor tied to one unit, named
``tirx_layout_sync_<what>`` through ``tirx_layout.ir.device_calls``; the simulator (``sim/sync.py``) executes a call
from its name and arguments alone. (The CTA and warp barriers are TVM's own intrinsics:
``ir/device_calls.cta_barrier`` / ``warp_barrier``.)

* ``elect()``: ``elect.sync _|p, 0xffffffff`` -- every lane of the warp executes it; the lowest active lane gets a
  true predicate, returned as ``uint32`` 1 (0 elsewhere). It picks the one thread that issues a TMA copy or an MMA.
* ``fence_proxy_async()``: ``fence.proxy.async.shared::cta`` -- the thread's generic-proxy writes to shared memory
  become visible to the async proxy, through which TMA stores, ``tcgen05.mma``/``cp`` and ``wgmma`` read it (PTX
  ISA, "Memory consistency model": proxies).
"""

from __future__ import annotations

from ...ir.device_calls import helper_call, helper_name, helper_value
from .emit import asm_source

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


__all__ = ["FAMILY", "elect", "fence_proxy_async"]
