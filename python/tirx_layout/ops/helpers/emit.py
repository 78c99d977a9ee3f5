"""What every family's helpers share when they are emitted: constant operands of the helper ABI's integer types, the
CUDA source of a helper that is one ``asm volatile`` statement, and the shared-memory matrix descriptor's start field
(the same bits for ``tcgen05`` and ``wgmma``)."""

from __future__ import annotations

import tvm

from ...ir.device_calls import helper_name, helper_value


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


#: The PTX ISA section of each family's matrix descriptor, which a helper's comment cites.
_DESCRIPTOR_SECTION = {"tcgen05": "Shared memory descriptor", "wgmma": "Matrix Descriptor Format"}


def smem_descriptor(family: str, pointer, bits_without_start):
    """``family``'s ``smem_descriptor`` helper called on ``pointer`` (an ``address_of`` of a shared buffer element):
    the full 64-bit matrix descriptor, ``bits_without_start`` (the descriptor with start field 0) ORed with the
    pointer's shared address >> 4. Both families put ``(address & 0x3FFFF) >> 4`` at bits 0-13 (PTX ISA, tcgen05
    "Shared memory descriptor"; warpgroup MMA "Matrix Descriptor Format"); each family's helper is its own, so that
    a kernel calls only its own family's helpers.

    Example:
        >>> str(smem_descriptor("wgmma", tvm.tirx.const(0), 1 << 62).ty.dtype)
        'uint64'
    """
    name = helper_name(family, "smem_descriptor")
    source = f"""
__device__ __forceinline__ unsigned long long {name}(const void* ptr,
    unsigned long long bits) {{
  // PTX ISA, "{_DESCRIPTOR_SECTION[family]}": bits 0-13 hold (address & 0x3FFFF) >> 4; the address of ptr is taken in
  // the shared::cta window, whose bits above 17 are not part of the field.
  return bits | ((((unsigned long long)__cvta_generic_to_shared(ptr)) & 0x3FFFFull) >> 4);
}}
"""
    return helper_value(family, "smem_descriptor", source, "uint64", pointer, u64(bits_without_start))


__all__ = ["asm_source", "smem_descriptor", "u32", "u64"]
