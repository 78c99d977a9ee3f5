"""The ``cpasync`` helpers the asynchronous global-to-shared copy emits (sm_80 onwards): CUDA ``__device__``
functions with inline PTX, named ``tirx_layout_cpasync_<what>`` through ``tirx_layout.ir.device_calls``. Their names
and arguments are the ABI the simulator (``sim/cp_async.py``) executes:

* ``copy_<n>(dst, src, src_size)``, ``n`` of 4, 8 or 16: one ``cp.async`` of ``n`` bytes from the global address of
  ``src`` to the shared address of ``dst`` (both ``address_of`` an element), of which the first ``src_size`` bytes
  are read and the rest written as zeros (``src_size`` 0 fills the whole vector with zeros: a tile's tail past the
  tensor's edge); ``.cg`` (bypassing L1) for 16 bytes, ``.ca`` otherwise, as the ISA allows ``.cg`` for 16 only;
* ``commit_group()``: ``cp.async.commit_group``: the thread's ``cp.async`` since its last commit become one group;
* ``wait_group_<n>()``: ``cp.async.wait_group n``: the thread waits until at most its ``n`` newest groups are
  pending; the others' data is in shared memory, visible to the thread (other threads see it after a barrier).

PTX ISA, "Data Movement and Conversion Instructions: cp.async" (``cp.async.ca.shared{::cta}.global [dst], [src],
cp-size{, src-size}``, cp-size 4, 8 or 16, ``.cg`` only with 16; dst and src aligned to cp-size),
"cp.async.commit_group" and "cp.async.wait_group".
"""

from __future__ import annotations

from ...ir.device_calls import helper_call, helper_name
from .emit import asm_source, u32

FAMILY = "cpasync"
#: The byte counts one ``cp.async`` moves.
COPY_BYTES = (4, 8, 16)


def copy_source(nbytes: int) -> str:
    """CUDA source of ``copy_<nbytes>``.

    Example:
        >>> "cp.async.cg.shared.global [%0], [%1], 16, %2;" in copy_source(16)
        True
    """
    if nbytes not in COPY_BYTES:
        raise ValueError(f"cp.async moves {', '.join(map(str, COPY_BYTES))} bytes, not {nbytes}")
    cache = "cg" if nbytes == 16 else "ca"
    return f"""
__device__ __forceinline__ void {helper_name(FAMILY, f"copy_{nbytes}")}(void* dst, const void* src,
    unsigned int src_size) {{
  unsigned int d = (unsigned int)__cvta_generic_to_shared(dst);
  asm volatile("cp.async.{cache}.shared.global [%0], [%1], {nbytes}, %2;" :: "r"(d), "l"(src), "r"(src_size)
               : "memory");
}}
"""


def copy(nbytes: int, dst, src, src_size):
    """One ``cp.async`` of ``nbytes`` bytes (the ``copy_<nbytes>`` helper), reading ``src_size`` of them.

    Example:
        >>> import tvm
        >>> z = tvm.tirx.const(0, "uint32")
        >>> "tirx_layout_cpasync_copy_8" in str(copy(8, z, z, 8))
        True
    """
    return helper_call(FAMILY, f"copy_{nbytes}", copy_source(nbytes), dst, src, u32(src_size))


def commit_group():
    """``cp.async.commit_group``.

    Example:
        >>> "tirx_layout_cpasync_commit_group" in str(commit_group())
        True
    """
    return helper_call(FAMILY, "commit_group", asm_source(FAMILY, "commit_group", "cp.async.commit_group;"))


def wait_group(pending: int):
    """``cp.async.wait_group pending``.

    Example:
        >>> "tirx_layout_cpasync_wait_group_2" in str(wait_group(2))
        True
    """
    what = f"wait_group_{int(pending)}"
    return helper_call(FAMILY, what, asm_source(FAMILY, what, f"cp.async.wait_group {int(pending)};"))


__all__ = ["COPY_BYTES", "FAMILY", "commit_group", "copy", "copy_source", "wait_group"]
