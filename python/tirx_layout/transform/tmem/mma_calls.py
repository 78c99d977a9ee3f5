"""The ``tcgen05.mma`` helpers the MMA lowering emits: one CUDA ``__device__`` function per kind and operand form,
each one instruction (one K step), named ``tirx_layout_tcgen05_mma_<kind>_<ss|ts>`` through
``tirx_layout.ir.device_calls``.

The arguments are the helper ABI the simulator reads (``docs/decisions.md``, issue 20): the accumulator's TMEM
address, A as a shared-memory pointer and its 64-bit descriptor (``_ss``) or as a TMEM address (``_ts``), B as a
pointer and descriptor, the 32-bit instruction descriptor, and enable-input-d. A descriptor is passed with its
start-address field zero; the helper ORs in ``(shared address of the pointer & 0x3FFFF) >> 4`` (PTX ISA, "Shared
memory descriptor": bits 0-13), so the address is the one the kernel's shared window really gives the operand.

PTX operand order (PTX ISA, tcgen05.mma, restated in ``docs/notes/tcgen05-mma-facts.md`` §1.2):
``tcgen05.mma.cta_group::1.kind::<kind> [d-tmem], a-desc|[a-tmem], b-desc, idesc, enable-input-d;`` where
enable-input-d is a predicate (false: D = A*B, true: D = A*B + D), set here with ``setp.ne.b32`` from the 32-bit
argument.
"""

from __future__ import annotations

import tvm

from ...ir.device_calls import helper_call, helper_name

#: The dense kinds with one helper pair each (the block-scaled ``mxf8f6f4`` has its own form).
DENSE_KINDS = ("f16", "tf32", "f8f6f4", "i8")
#: Operand forms: A and B from shared memory, or A from tensor memory and B from shared memory.
FORMS = ("ss", "ts")


def mma_name(kind: str, form: str) -> str:
    """The helper (its ``what``) of a dense ``tcgen05.mma`` of ``kind`` with A from shared (``"ss"``) or tensor
    (``"ts"``) memory.

    Example:
        >>> mma_name("f16", "ss")
        'mma_f16_ss'
    """
    if kind not in DENSE_KINDS:
        raise ValueError(f"no dense tcgen05.mma helper for kind {kind!r}; expected one of {list(DENSE_KINDS)}")
    if form not in FORMS:
        raise ValueError(f"a tcgen05.mma form is 'ss' (A in shared memory) or 'ts' (A in TMEM), got {form!r}")
    return f"mma_{kind}_{form}"


_DESCRIPTOR_WITH_START = """
  unsigned long long {out} = {desc} | ((((unsigned long long)__cvta_generic_to_shared({ptr})) & 0x3FFFFull) >> 4);"""


def mma_source(kind: str, form: str) -> str:
    """CUDA source of the helper :func:`mma_name` names.

    Example:
        >>> src = mma_source("f16", "ss")
        >>> "tcgen05.mma.cta_group::1.kind::f16 [%0], %1, %2, %3, p;" in src
        True
        >>> "tcgen05.mma.cta_group::1.kind::i8 [%0], [%1], %2, %3, p;" in mma_source("i8", "ts")
        True
    """
    name = helper_name(mma_name(kind, form))
    b_desc = _DESCRIPTOR_WITH_START.format(out="b", desc="b_desc", ptr="b_ptr")
    if form == "ss":
        params = "const void* a_ptr, unsigned long long a_desc, "
        prologue = _DESCRIPTOR_WITH_START.format(out="a", desc="a_desc", ptr="a_ptr") + b_desc
        a_operand, a_constraint = "%1", '"l"(a)'
    else:
        params = "unsigned int a_taddr, "
        prologue = b_desc
        a_operand, a_constraint = "[%1]", '"r"(a_taddr)'
    return f"""
__device__ __forceinline__ void {name}(unsigned int d_taddr, {params}const void* b_ptr,
    unsigned long long b_desc, unsigned int idesc, unsigned int enable_input_d) {{{prologue}
  asm volatile("{{\\n .reg .pred p;\\n setp.ne.b32 p, %4, 0;\\n"
               " tcgen05.mma.cta_group::1.kind::{kind} [%0], {a_operand}, %2, %3, p;\\n}}"
               :: "r"(d_taddr), {a_constraint}, "l"(b), "r"(idesc), "r"(enable_input_d) : "memory");
}}
"""


def mma(kind: str, d_taddr, a, a_desc, b_ptr, b_desc, idesc, enable_input_d):
    """One dense ``tcgen05.mma`` of ``kind``: ``a`` is A's shared pointer (an ``address_of``) with ``a_desc`` its
    descriptor (start field zero), or, when ``a_desc`` is ``None``, A's TMEM address. Descriptors and ``idesc``
    are ints or expressions; ``enable_input_d`` a ``uint32`` expression.

    Example:
        >>> u32 = tvm.tirx.const(0, "uint32")
        >>> "mma_f16_ts" in str(mma("f16", u32, u32, None, tvm.tirx.const(0), 0, 0x8200490, u32))
        True
    """
    b_desc = tvm.tirx.const(b_desc, "uint64") if isinstance(b_desc, int) else b_desc
    idesc = tvm.tirx.const(idesc, "uint32") if isinstance(idesc, int) else idesc
    if a_desc is None:
        return helper_call(
            mma_name(kind, "ts"), mma_source(kind, "ts"), d_taddr, a, b_ptr, b_desc, idesc, enable_input_d
        )
    a_desc = tvm.tirx.const(a_desc, "uint64") if isinstance(a_desc, int) else a_desc
    return helper_call(
        mma_name(kind, "ss"), mma_source(kind, "ss"), d_taddr, a, a_desc, b_ptr, b_desc, idesc, enable_input_d
    )


# ---- block scaling: kind::mxf8f6f4 with ue8m0 scale factors in tensor memory ----------------------------------

#: The block-scaled kind these helpers issue, one ue8m0 scale per row of A / column of B per 32 K elements.
BLOCK_SCALED_KIND = "mxf8f6f4"


def block_scaled_name(form: str) -> str:
    """The helper (its ``what``) of a block-scaled ``tcgen05.mma`` (``kind::mxf8f6f4.block_scale.scale_vec::1X``)
    with A from shared (``"ss"``) or tensor (``"ts"``) memory.

    Example:
        >>> block_scaled_name("ss")
        'mma_mxf8f6f4_ss'
    """
    if form not in FORMS:
        raise ValueError(f"a tcgen05.mma form is 'ss' (A in shared memory) or 'ts' (A in TMEM), got {form!r}")
    return f"mma_{BLOCK_SCALED_KIND}_{form}"


def block_scaled_source(form: str) -> str:
    """CUDA source of the helper :func:`block_scaled_name` names. PTX ISA, tcgen05.mma (block-scaled form): no
    disable-output-lane and no scale-input-d; the scale factors' TMEM addresses follow idesc, then enable-input-d.

    Example:
        >>> "kind::mxf8f6f4.block_scale.scale_vec::1X [%0], %1, %2, %3, [%4], [%5], p;" in block_scaled_source("ss")
        True
        >>> "kind::mxf8f6f4.block_scale.scale_vec::1X [%0], [%1], %2, %3, [%4], [%5], p;" in block_scaled_source("ts")
        True
    """
    name = helper_name(block_scaled_name(form))
    b_desc = _DESCRIPTOR_WITH_START.format(out="b", desc="b_desc", ptr="b_ptr")
    if form == "ss":
        params = "const void* a_ptr, unsigned long long a_desc, "
        prologue = _DESCRIPTOR_WITH_START.format(out="a", desc="a_desc", ptr="a_ptr") + b_desc
        a_operand, a_constraint = "%1", '"l"(a)'
    else:
        params = "unsigned int a_taddr, "
        prologue = b_desc
        a_operand, a_constraint = "[%1]", '"r"(a_taddr)'
    block_scale = f"kind::{BLOCK_SCALED_KIND}.block_scale.scale_vec::1X"
    instruction = f"tcgen05.mma.cta_group::1.{block_scale} [%0], {a_operand}, %2, %3, [%4], [%5], p;"
    return f"""
__device__ __forceinline__ void {name}(unsigned int d_taddr, {params}const void* b_ptr,
    unsigned long long b_desc, unsigned int idesc, unsigned int sfa_taddr, unsigned int sfb_taddr,
    unsigned int enable_input_d) {{{prologue}
  asm volatile("{{\\n .reg .pred p;\\n setp.ne.b32 p, %6, 0;\\n"
               " {instruction}\\n}}"
               :: "r"(d_taddr), {a_constraint}, "l"(b), "r"(idesc), "r"(sfa_taddr), "r"(sfb_taddr),
                  "r"(enable_input_d) : "memory");
}}
"""


def block_scaled_mma(d_taddr, a, a_desc, b_ptr, b_desc, idesc, sfa_taddr, sfb_taddr, enable_input_d):
    """One block-scaled ``tcgen05.mma`` (``kind::mxf8f6f4``, one K step of 32): as :func:`mma`, plus the TMEM
    addresses of A's and B's scale factors (lane field 0; the byte is the SF id in ``idesc``).

    Example:
        >>> u32, ptr = tvm.tirx.const(0, "uint32"), tvm.tirx.const(0)
        >>> "mma_mxf8f6f4_ss" in str(block_scaled_mma(u32, ptr, 0, ptr, 0, 0, u32, u32, u32))
        True
    """
    b_desc = tvm.tirx.const(b_desc, "uint64") if isinstance(b_desc, int) else b_desc
    idesc = tvm.tirx.const(idesc, "uint32") if isinstance(idesc, int) else idesc
    scales = (sfa_taddr, sfb_taddr, enable_input_d)
    if a_desc is None:
        form = "ts"
        args = (d_taddr, a, b_ptr, b_desc, idesc, *scales)
    else:
        form = "ss"
        a_desc = tvm.tirx.const(a_desc, "uint64") if isinstance(a_desc, int) else a_desc
        args = (d_taddr, a, a_desc, b_ptr, b_desc, idesc, *scales)
    return helper_call(block_scaled_name(form), block_scaled_source(form), *args)
