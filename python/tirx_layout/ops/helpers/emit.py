"""What every family's helpers share when they are emitted: constant operands of the helper ABI's integer types, and
the CUDA source of a helper that is one ``asm volatile`` statement."""

from __future__ import annotations

import tvm

from ...ir.device_calls import helper_name


def u32(value):
    """``value`` as a ``uint32`` operand: an int becomes a constant, an expression stays as it is.

    Example:
        >>> u32(5)
        T.uint32(5)
    """
    return tvm.tirx.const(value, "uint32") if isinstance(value, int) else value


def u64(value):
    """``value`` as a ``uint64`` operand: an int becomes a constant, an expression stays as it is.

    Example:
        >>> str(u64(1 << 46).ty.dtype)
        'uint64'
    """
    return tvm.tirx.const(value, "uint64") if isinstance(value, int) else value


def asm_source(family: str, what: str, ptx: str, params: str = "") -> str:
    """CUDA source of helper ``what`` of ``family``: a ``void`` function of ``params`` (C parameter text, none by
    default) whose body is the one instruction ``ptx`` with no operands, clobbering memory.

    Example:
        >>> print(asm_source("tcgen05", "wait_ld", "tcgen05.wait::ld.sync.aligned;").strip())
        __device__ __forceinline__ void tirx_layout_tcgen05_wait_ld() {
          asm volatile("tcgen05.wait::ld.sync.aligned;" ::: "memory");
        }
    """
    return (
        f"\n__device__ __forceinline__ void {helper_name(family, what)}({params}) {{\n"
        f'  asm volatile("{ptx}" ::: "memory");\n}}\n'
    )


__all__ = ["asm_source", "u32", "u64"]
