"""The ``mbarrier`` helpers: one CUDA ``__device__`` function per mbarrier instruction on a shared-memory barrier,
named ``tirx_layout_mbarrier_<what>`` through ``tirx_layout.ir.device_calls``; the simulator (``sim/mbarrier.py``)
executes a call from its name and arguments alone.

PTX ISA, "mbarrier": ``mbarrier.init`` (then ``fence.mbarrier_init`` so that the initialisation is visible to the
asynchronous proxy and the cluster), ``mbarrier.arrive``, ``mbarrier.expect_tx`` (adds to the current phase's
tx-count without arriving), ``mbarrier.arrive.expect_tx`` (both, the expect first) and ``mbarrier.try_wait.parity``
in a loop until the phase of the given parity has completed. Every helper takes the barrier as a generic pointer
(``address_of`` a ``uint64`` shared element) and converts it to its shared-window address.
"""

from __future__ import annotations

from ...ir.device_calls import helper_call, helper_name
from .emit import u32

FAMILY = "mbarrier"

_INIT_SRC = f"""
__device__ __forceinline__ void {helper_name(FAMILY, "init")}(void* bar, unsigned int count) {{
  unsigned int addr = (unsigned int)__cvta_generic_to_shared(bar);
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(addr), "r"(count) : "memory");
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}}
"""
_WAIT_SRC = f"""
__device__ __forceinline__ void {helper_name(FAMILY, "wait")}(void* bar, unsigned int parity) {{
  unsigned int addr = (unsigned int)__cvta_generic_to_shared(bar);
  unsigned int done = 0;
  while (!done) {{
    asm volatile("{{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }}"
                 : "=r"(done) : "r"(addr), "r"(parity) : "memory");
  }}
}}
"""
_ARRIVE_SRC = f"""
__device__ __forceinline__ void {helper_name(FAMILY, "arrive")}(void* bar) {{
  unsigned int addr = (unsigned int)__cvta_generic_to_shared(bar);
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(addr) : "memory");
}}
"""
_EXPECT_TX_SRC = f"""
__device__ __forceinline__ void {helper_name(FAMILY, "expect_tx")}(void* bar, unsigned int tx_bytes) {{
  unsigned int addr = (unsigned int)__cvta_generic_to_shared(bar);
  asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;" :: "r"(addr), "r"(tx_bytes) : "memory");
}}
"""
_ARRIVE_EXPECT_TX_SRC = f"""
__device__ __forceinline__ void {helper_name(FAMILY, "arrive_expect_tx")}(void* bar, unsigned int tx_bytes) {{
  unsigned int addr = (unsigned int)__cvta_generic_to_shared(bar);
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(addr), "r"(tx_bytes) : "memory");
}}
"""


def init(bar, count=1):
    """``mbarrier.init`` of the shared mbarrier at ``bar`` (an ``address_of``) for ``count`` arrivals (an int or a
    ``uint32`` expression).

    Example:
        >>> import tvm
        >>> "tirx_layout_mbarrier_init" in str(init(tvm.tirx.const(0)))
        True
    """
    return helper_call(FAMILY, "init", _INIT_SRC, bar, u32(count))


def wait(bar, parity=0):
    """Wait until the phase of ``bar`` with ``parity`` (an int or a ``uint32`` expression) has completed.

    Example:
        >>> import tvm
        >>> "tirx_layout_mbarrier_wait" in str(wait(tvm.tirx.const(0)))
        True
    """
    return helper_call(FAMILY, "wait", _WAIT_SRC, bar, u32(parity))


def arrive(bar):
    """``mbarrier.arrive`` of this thread on the shared mbarrier at ``bar`` (an ``address_of``).

    Example:
        >>> import tvm
        >>> "tirx_layout_mbarrier_arrive" in str(arrive(tvm.tirx.const(0)))
        True
    """
    return helper_call(FAMILY, "arrive", _ARRIVE_SRC, bar)


def expect_tx(bar, tx_bytes):
    """``mbarrier.expect_tx``: add ``tx_bytes`` to the transaction count of the current phase of ``bar``, without
    arriving.

    Example:
        >>> import tvm
        >>> "tirx_layout_mbarrier_expect_tx" in str(expect_tx(tvm.tirx.const(0), 1024))
        True
    """
    return helper_call(FAMILY, "expect_tx", _EXPECT_TX_SRC, bar, u32(tx_bytes))


def arrive_expect_tx(bar, tx_bytes):
    """``mbarrier.arrive.expect_tx``: add ``tx_bytes`` to the transaction count of ``bar``, then arrive.

    Example:
        >>> import tvm
        >>> "tirx_layout_mbarrier_arrive_expect_tx" in str(arrive_expect_tx(tvm.tirx.const(0), 1024))
        True
    """
    return helper_call(FAMILY, "arrive_expect_tx", _ARRIVE_EXPECT_TX_SRC, bar, u32(tx_bytes))


__all__ = ["FAMILY", "arrive", "arrive_expect_tx", "expect_tx", "init", "wait"]
