"""The ``tcgen05.mma`` helpers the MMA lowering emits: one CUDA ``__device__`` function per kind and operand form,
each one instruction (one K step), named ``tirx_layout_tcgen05_mma_<kind>_<ss|ts>`` through
``tirx_layout.ir.device_calls``.

The arguments are the helper ABI the simulator reads (``docs/decisions.md``, issue 20): the accumulator's TMEM
address, A's full 64-bit descriptor (``_ss``) or TMEM address (``_ts``), B's full descriptor, the 32-bit instruction
descriptor, and enable-input-d. A descriptor is made once per operand by :func:`smem_descriptor` (the descriptor's
other fields ORed with ``(shared address & 0x3FFFF) >> 4``, PTX ISA "Shared memory descriptor", bits 0-13); each K
step adds its start offset ``>> 4`` to it. :func:`elect_sync` elects the issuing lane of a warp.

PTX operand order (PTX ISA, tcgen05.mma, restated in ``docs/notes/tcgen05-mma-facts.md`` §1.2):
``tcgen05.mma.cta_group::1.kind::<kind> [d-tmem], a-desc|[a-tmem], b-desc, idesc, enable-input-d;`` where
enable-input-d is a predicate (false: D = A*B, true: D = A*B + D), set here with ``setp.ne.b32`` from the 32-bit
argument.
"""

from __future__ import annotations

import tvm

from ...ir.device_calls import helper_call, helper_name, helper_value

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


def _a_operand(form: str) -> tuple[str, str, str]:
    """A's parameter, PTX operand and constraint: a full 64-bit descriptor (``ss``) or a TMEM address (``ts``)."""
    if form == "ss":
        return "unsigned long long a_desc", "%1", '"l"(a_desc)'
    return "unsigned int a_taddr", "[%1]", '"r"(a_taddr)'


def mma_source(kind: str, form: str) -> str:
    """CUDA source of the helper :func:`mma_name` names: one ``tcgen05.mma``, its descriptors passed whole.

    Example:
        >>> src = mma_source("f16", "ss")
        >>> "tcgen05.mma.cta_group::1.kind::f16 [%0], %1, %2, %3, p;" in src
        True
        >>> "tcgen05.mma.cta_group::1.kind::i8 [%0], [%1], %2, %3, p;" in mma_source("i8", "ts")
        True
    """
    name = helper_name(mma_name(kind, form))
    a_param, a_operand, a_constraint = _a_operand(form)
    return f"""
__device__ __forceinline__ void {name}(unsigned int d_taddr, {a_param}, unsigned long long b_desc,
    unsigned int idesc, unsigned int enable_input_d) {{
  asm volatile("{{\\n .reg .pred p;\\n setp.ne.b32 p, %4, 0;\\n"
               " tcgen05.mma.cta_group::1.kind::{kind} [%0], {a_operand}, %2, %3, p;\\n}}"
               :: "r"(d_taddr), {a_constraint}, "l"(b_desc), "r"(idesc), "r"(enable_input_d) : "memory");
}}
"""


def _u64(value):
    return tvm.tirx.const(value, "uint64") if isinstance(value, int) else value


def mma(kind: str, d_taddr, a, b_desc, idesc, enable_input_d, a_in_tmem: bool = False):
    """One dense ``tcgen05.mma`` of ``kind``: ``a`` is A's full 64-bit descriptor (:func:`smem_descriptor`, plus
    the K step's start), or A's TMEM address when ``a_in_tmem``; ``b_desc`` B's full descriptor. ``idesc`` an int
    or expression, ``enable_input_d`` a ``uint32`` expression.

    Example:
        >>> u32 = tvm.tirx.const(0, "uint32")
        >>> "mma_f16_ts" in str(mma("f16", u32, u32, 0, 0x8200490, u32, a_in_tmem=True))
        True
    """
    idesc = tvm.tirx.const(idesc, "uint32") if isinstance(idesc, int) else idesc
    form = "ts" if a_in_tmem else "ss"
    a = a if a_in_tmem else _u64(a)
    return helper_call(mma_name(kind, form), mma_source(kind, form), d_taddr, a, _u64(b_desc), idesc, enable_input_d)


# ---- issuing: the elected lane, and descriptors with their start address ------------------------------------

_ELECT_SOURCE = f"""
__device__ __forceinline__ unsigned int {helper_name("elect_sync")}() {{
  // PTX ISA, elect.sync: every lane of the warp (membermask 0xffffffff) executes it; the lowest active lane gets
  // a true predicate. ptxas knows the result is one lane of a converged warp, and issues tcgen05 under it directly.
  unsigned int elected = 0;
  asm volatile("{{\\n .reg .pred p;\\n elect.sync _|p, 0xffffffff;\\n selp.u32 %0, 1, 0, p;\\n}}"
               : "=r"(elected));
  return elected;
}}
"""


def elect_sync():
    """``uint32`` 1 in the one lane ``elect.sync`` elects in the executing warp (its lowest active lane), else 0.
    Every lane of the warp must execute it together.

    Example:
        >>> str(elect_sync().ty.dtype)
        'uint32'
    """
    return helper_value("elect_sync", _ELECT_SOURCE, "uint32")


_SMEM_DESCRIPTOR_SOURCE = f"""
__device__ __forceinline__ unsigned long long {helper_name("smem_descriptor")}(const void* ptr,
    unsigned long long bits) {{
  // PTX ISA, "Shared memory descriptor": bits 0-13 hold (address & 0x3FFFF) >> 4; the address of ptr is taken in
  // the shared::cta window, whose bits above 17 are not part of the field.
  return bits | ((((unsigned long long)__cvta_generic_to_shared(ptr)) & 0x3FFFFull) >> 4);
}}
"""


def smem_descriptor(pointer, bits_without_start):
    """The full 64-bit shared-memory matrix descriptor of the operand at ``pointer`` (an ``address_of`` of a shared
    buffer element): ``bits_without_start`` (the descriptor with start field 0) ORed with the pointer's shared
    address >> 4.

    Example:
        >>> str(smem_descriptor(tvm.tirx.const(0), 1 << 46).ty.dtype)
        'uint64'
    """
    return helper_value("smem_descriptor", _SMEM_DESCRIPTOR_SOURCE, "uint64", pointer, _u64(bits_without_start))


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
    a_param, a_operand, a_constraint = _a_operand(form)
    block_scale = f"kind::{BLOCK_SCALED_KIND}.block_scale.scale_vec::1X"
    instruction = f"tcgen05.mma.cta_group::1.{block_scale} [%0], {a_operand}, %2, %3, [%4], [%5], p;"
    return f"""
__device__ __forceinline__ void {name}(unsigned int d_taddr, {a_param}, unsigned long long b_desc,
    unsigned int idesc, unsigned int sfa_taddr, unsigned int sfb_taddr, unsigned int enable_input_d) {{
  asm volatile("{{\\n .reg .pred p;\\n setp.ne.b32 p, %6, 0;\\n"
               " {instruction}\\n}}"
               :: "r"(d_taddr), {a_constraint}, "l"(b_desc), "r"(idesc), "r"(sfa_taddr), "r"(sfb_taddr),
                  "r"(enable_input_d) : "memory");
}}
"""


def block_scaled_mma(d_taddr, a, b_desc, idesc, sfa_taddr, sfb_taddr, enable_input_d, a_in_tmem: bool = False):
    """One block-scaled ``tcgen05.mma`` (``kind::mxf8f6f4``, one K step of 32): as :func:`mma`, plus the TMEM
    addresses of A's and B's scale factors (lane field 0; the byte is the SF id in ``idesc``).

    Example:
        >>> u32 = tvm.tirx.const(0, "uint32")
        >>> "mma_mxf8f6f4_ss" in str(block_scaled_mma(u32, 0, 0, 0, u32, u32, u32))
        True
    """
    idesc = tvm.tirx.const(idesc, "uint32") if isinstance(idesc, int) else idesc
    form = "ts" if a_in_tmem else "ss"
    a = a if a_in_tmem else _u64(a)
    args = (d_taddr, a, _u64(b_desc), idesc, sfa_taddr, sfb_taddr, enable_input_d)
    return helper_call(block_scaled_name(form), block_scaled_source(form), *args)
