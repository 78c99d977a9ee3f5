"""The ``tcgen05`` helpers: Blackwell's tensor-memory and tensor-core instructions, one CUDA ``__device__`` function
with inline PTX each, named ``tirx_layout_tcgen05_<what>`` through ``tirx_layout.ir.device_calls``; the simulator
(``sim/tmem.py``, ``sim/tcgen05_mma.py``) executes a call from its name and arguments alone. The shapes and the
descriptor fields come from ``tirx_layout.hw.tcgen05``.

PTX ISA, tcgen05 chapter (section numbers as in PTX ISA 9.2; they shift between releases, so titles are given too):

* ``tcgen05.alloc`` / ``tcgen05.dealloc`` / ``tcgen05.relinquish_alloc_permit`` -- one warp, ``.sync
  .aligned``; ``nCols`` a power of two in [32, 512]; alloc writes the TMEM address into shared memory.
* ``tcgen05.ld`` / ``tcgen05.st`` ``.sync.aligned.<shape>.x<N>.b32`` (shapes: 9.7.16.2.3); ``tcgen05.wait``;
  the thread-sync fences ``tcgen05.fence::before_thread_sync`` / ``after_thread_sync``.
* "Tensor Memory Addressing": bits 31-16 the lane, bits 15-0 the 32-bit column.
* ``tcgen05.cp`` from a shared-memory matrix descriptor, and ``tcgen05.commit`` (an mbarrier arrive once the
  thread's earlier copies and MMAs are complete).
* ``tcgen05.mma``, dense (``mma_<kind>_<ss|ts>``) and block-scaled (``mma_mxf8f6f4_<ss|ts>``), each one instruction
  (one K step); ``smem_descriptor`` fills a shared-memory matrix descriptor's start field.

Registers travel through ``__builtin_memcpy`` so that 16-bit fragments (two elements per 32-bit register) need no
alignment beyond their own; nvcc turns the copies into plain register moves.

The MMA helpers' arguments are the helper ABI the simulator reads (``docs/decisions.md``, issue 20): the
accumulator's TMEM address, A's full 64-bit descriptor (``_ss``) or TMEM address (``_ts``), B's full descriptor,
the 32-bit instruction descriptor, and enable-input-d. A descriptor is made once per operand by
:func:`smem_descriptor` (the descriptor's other fields ORed with ``(shared address & 0x3FFFF) >> 4``, PTX ISA "Shared
memory descriptor", bits 0-13); each K step adds its start offset ``>> 4`` to it. PTX operand order (PTX ISA,
tcgen05.mma, restated in ``docs/notes/tcgen05-mma-facts.md`` §1.2): ``tcgen05.mma.cta_group::1.kind::<kind>
[d-tmem], a-desc|[a-tmem], b-desc, idesc, enable-input-d;`` where enable-input-d is a predicate (false: D = A*B,
true: D = A*B + D), set here with ``setp.ne.b32`` from the 32-bit argument.
"""

from __future__ import annotations

import tvm

from ...hw.smem_descriptor import TCGEN05_DESCRIPTOR
from ...hw.tcgen05 import CP_SHAPES, LD_ST_SHAPES
from ...hw.tcgen05_mma import check_cta_group
from ...ir.device_calls import called_helper, helper_call, helper_name
from . import emit
from .emit import asm_source, u32, u64

FAMILY = "tcgen05"


def _group_suffix(cta_group: int) -> str:
    """The ``what`` suffix of a helper's ``cta_group::2`` form (none for ``cta_group::1``)."""
    return "" if check_cta_group(cta_group) == 1 else "_cg2"


def _alloc_source(cta_group: int) -> str:
    # PTX ISA, tcgen05.alloc: the allocated TMEM address is written to the shared-memory slot. With cta_group::2 one
    # warp of each CTA of the pair executes it, with the same slot offset and nCols; the columns are allocated in
    # both CTAs' tensor memory.
    name = helper_name(FAMILY, "alloc" + _group_suffix(cta_group))
    return f"""
__device__ __forceinline__ void {name}(void* slot, unsigned int ncols) {{
  unsigned int smem = (unsigned int)__cvta_generic_to_shared(slot);
  asm volatile("tcgen05.alloc.cta_group::{cta_group}.sync.aligned.shared::cta.b32 [%0], %1;"
               :: "r"(smem), "r"(ncols) : "memory");
}}
"""


def _relinquish_source(cta_group: int) -> str:
    return f"""
__device__ __forceinline__ void {helper_name(FAMILY, "relinquish_alloc_permit" + _group_suffix(cta_group))}() {{
  asm volatile("tcgen05.relinquish_alloc_permit.cta_group::{cta_group}.sync.aligned;" ::: "memory");
}}
"""


def _dealloc_source(cta_group: int) -> str:
    name = helper_name(FAMILY, "dealloc" + _group_suffix(cta_group))
    return f"""
__device__ __forceinline__ void {name}(unsigned int taddr, unsigned int ncols) {{
  asm volatile("tcgen05.dealloc.cta_group::{cta_group}.sync.aligned.b32 %0, %1;"
               :: "r"(taddr), "r"(ncols) : "memory");
}}
"""


#: The helpers of one instruction without operands: ``what`` -> its PTX.
_SIMPLE = {
    "wait_ld": "tcgen05.wait::ld.sync.aligned;",
    "wait_st": "tcgen05.wait::st.sync.aligned;",
    # Around a CTA barrier between asynchronous tcgen05 accesses of different threads (PTX ISA 9.7.16.6.3).
    "fence_before": "tcgen05.fence::before_thread_sync;",
    "fence_after": "tcgen05.fence::after_thread_sync;",
}


def is_asynchronous(stmt) -> bool:
    """Whether ``stmt`` issues an *asynchronous* tcgen05 instruction (``ld``, ``st``, ``cp`` or ``mma``): the ones
    the tcgen05 thread-sync fences order (PTX ISA 9.7.16.6.1 lists alloc, dealloc, relinquish, fences, waits and
    commit as synchronous).

    Example:
        >>> is_asynchronous(simple("wait_ld")), is_asynchronous(ld_st("ld", "32x32b", 1, 0, 0))
        (False, True)
    """
    called = called_helper(stmt) if isinstance(stmt, tvm.tirx.Evaluate) else None
    return called is not None and called.family == FAMILY and called.what.startswith(("ld_", "st_", "cp_", "mma_"))


def alloc(slot_address, ncols: int, cta_group: int = 1):
    """``tcgen05.alloc.cta_group::<cta_group>`` of ``ncols`` columns, the address written to ``slot_address`` (a
    shared-memory pointer). ``cta_group=2`` (helper ``alloc_cg2``): one warp of each CTA of the pair allocates, the
    same columns in both CTAs' tensor memory (a kernel uses one ``cta_group`` in all its tcgen05 instructions).

    Example:
        >>> "tcgen05_alloc_cg2" in str(alloc(tvm.tirx.const(0, "uint32"), 32, cta_group=2))
        True
    """
    what = "alloc" + _group_suffix(cta_group)
    return helper_call(FAMILY, what, _alloc_source(cta_group), slot_address, tvm.tirx.const(ncols, "uint32"))


def relinquish(cta_group: int = 1):
    """``tcgen05.relinquish_alloc_permit.cta_group::<cta_group>``: this CTA allocates no more TMEM.

    Example:
        >>> "relinquish" in str(relinquish())
        True
    """
    what = "relinquish_alloc_permit" + _group_suffix(cta_group)
    return helper_call(FAMILY, what, _relinquish_source(cta_group))


def dealloc(taddr, ncols: int, cta_group: int = 1):
    """``tcgen05.dealloc.cta_group::<cta_group>`` of the ``ncols`` columns at TMEM address ``taddr``.

    Example:
        >>> "tcgen05.dealloc" in str(dealloc(tvm.tirx.const(0, "uint32"), 32))
        True
    """
    what = "dealloc" + _group_suffix(cta_group)
    return helper_call(FAMILY, what, _dealloc_source(cta_group), taddr, tvm.tirx.const(ncols, "uint32"))


def simple(what: str):
    """One of ``wait_ld``, ``wait_st``, ``fence_before``, ``fence_after`` (no operands).

    Example:
        >>> "wait::ld" in str(simple("wait_ld"))
        True
    """
    if what not in _SIMPLE:
        raise ValueError(f"no tcgen05 helper {what!r} without operands; expected one of {list(_SIMPLE)}")
    return helper_call(FAMILY, what, asm_source(FAMILY, what, _SIMPLE[what]))


# ---- tcgen05.ld / tcgen05.st (PTX ISA: tcgen05.ld, tcgen05.st, 9.7.16.2.3 shapes) ----------------------------

#: The qualifier that moves 16-bit data kept one element per 32-bit TMEM column (the low half, as an MMA writes an
#: f16 accumulator): ``tcgen05.ld ... .pack::16b`` packs the low halves of two adjacent columns into one 32-bit
#: register, ``tcgen05.st ... .unpack::16b`` splits a register over two adjacent columns (PTX ISA, tcgen05.ld/st).
PACK_16B = {"ld": "pack::16b", "st": "unpack::16b"}


def ld_st_name(kind: str, shape: str, num: int, unpacked16: bool = False) -> str:
    """The helper (its ``what``) for ``tcgen05.<kind>.sync.aligned.<shape>.x<num>.b32``; ``unpacked16`` adds the
    ``.pack::16b`` (ld) / ``.unpack::16b`` (st) qualifier.

    Example:
        >>> ld_st_name("ld", "16x256b", 4), ld_st_name("ld", "32x32b", 8, unpacked16=True)
        ('ld_16x256b_x4', 'ld_32x32b_x8_pack16b')
    """
    return f"{kind}_{shape}_x{num}" + ("_pack16b" if unpacked16 else "")


def ld_st_source(kind: str, shape: str, num: int, unpacked16: bool = False) -> str:
    """CUDA source of the helper: ``ld(taddr, registers)`` loads into, ``st(taddr, registers)`` stores from the
    ``registers_per_num * num`` 32-bit registers of the shape at ``registers`` (with ``unpacked16`` each register
    holds the 16-bit low halves of two adjacent TMEM columns).

    Example:
        >>> "tcgen05.st.sync.aligned.32x32b.x2.b32 [%0], {%1, %2};" in ld_st_source("st", "32x32b", 2)
        True
        >>> "tcgen05.ld.sync.aligned.32x32b.x1.pack::16b.b32 {%0}, [%1];" in ld_st_source("ld", "32x32b", 1, True)
        True
    """
    if kind not in ("ld", "st"):
        raise ValueError(f"ld_st_source: kind must be 'ld' or 'st', got {kind!r}")
    count = LD_ST_SHAPES[shape].registers_per_num * num
    name = helper_name(FAMILY, ld_st_name(kind, shape, num, unpacked16))
    qualifier = f".{PACK_16B[kind]}" if unpacked16 else ""
    instruction = f"tcgen05.{kind}.sync.aligned.{shape}.x{num}{qualifier}.b32"
    load = kind == "ld"
    regs = ", ".join(f"%{i + (0 if load else 1)}" for i in range(count))
    registers = ", ".join(f'"{"=r" if load else "r"}"(r[{i}])' for i in range(count))
    copy = f"  __builtin_memcpy({'dst, r' if load else 'r, src'}, {4 * count});\n"
    if load:  # the registers are the asm outputs %0.., taddr follows; they are copied out afterwards
        asm = f'"{instruction} {{{regs}}}, [%{count}];" : {registers} : "r"(taddr)'
        pointer, before, after = "void* dst", "", copy
    else:  # taddr is %0, the registers inputs after it; they are copied in first
        asm = f'"{instruction} [%0], {{{regs}}};" :: "r"(taddr), {registers}'
        pointer, before, after = "const void* src", copy, ""
    return (
        f"\n__device__ __forceinline__ void {name}(unsigned int taddr, {pointer}) {{\n"
        f"  unsigned int r[{count}];\n{before}"
        f'  asm volatile({asm} : "memory");\n{after}}}\n'
    )


def ld_st(kind: str, shape: str, num: int, taddr, registers, unpacked16: bool = False):
    """A ``tcgen05.ld`` (``kind="ld"``) or ``tcgen05.st`` of ``shape``/``.x<num>`` at ``taddr`` with the registers
    starting at ``registers`` (an ``address_of`` expression); ``unpacked16``: 16-bit data one per 32-bit column.

    Example:
        >>> "tcgen05_ld_32x32b_x1" in str(ld_st("ld", "32x32b", 1, tvm.tirx.const(0, "uint32"), tvm.tirx.const(0)))
        True
    """
    name, source = ld_st_name(kind, shape, num, unpacked16), ld_st_source(kind, shape, num, unpacked16)
    return helper_call(FAMILY, name, source, taddr, registers)


# ---- tcgen05.cp and its completion (PTX ISA: tcgen05.cp, tcgen05.commit) ------------------------------------


def cp_name(shape: str) -> str:
    """The helper (its ``what``) of ``tcgen05.cp.cta_group::1.<shape>``.

    Example:
        >>> cp_name("32x128b.warpx4")
        'cp_32x128b_warpx4'
    """
    return "cp_" + shape.replace(".", "_").replace("::", "_")


def cp_source(shape: str) -> str:
    """CUDA source of ``cp(taddr, smem, lbo, sbo, swizzle)``: builds the shared-memory matrix descriptor (PTX ISA
    "Shared Memory Descriptor": bits 0-13 start address >> 4, 16-29 leading byte offset >> 4, 32-45 stride byte
    offset >> 4, 46-48 the fixed 0b001, 49-51 base offset 0, 61-63 swizzle mode) and issues the copy.

    Example:
        >>> "tcgen05.cp.cta_group::1.32x128b.warpx4 [%0], %1;" in cp_source("32x128b.warpx4")
        True
    """
    if shape not in CP_SHAPES:
        raise ValueError(f"cp_source: shape must be one of {list(CP_SHAPES)}, got {shape!r}")
    name = helper_name(FAMILY, cp_name(shape))
    return f"""
__device__ __forceinline__ void {name}(unsigned int taddr, const void* smem, unsigned int lbo,
                                                  unsigned int sbo, unsigned int swizzle) {{
  unsigned long long start = (unsigned long long)__cvta_generic_to_shared(smem);
  unsigned long long desc = ((start & 0x3FFFFull) >> 4) | ((unsigned long long)((lbo >> 4) & 0x3FFF) << 16)
                          | ((unsigned long long)((sbo >> 4) & 0x3FFF) << 32) | (1ull << 46)
                          | ((unsigned long long)(swizzle & 7) << 61);
  asm volatile("tcgen05.cp.cta_group::1.{shape} [%0], %1;" :: "r"(taddr), "l"(desc) : "memory");
}}
"""


def cp(shape: str, taddr, smem_address, lbo: int, sbo: int, swizzle: str):
    """One ``tcgen05.cp`` of ``shape`` from the shared matrix at ``smem_address`` (an ``address_of``) into ``taddr``.

    Example:
        >>> "cp_128x128b" in str(cp("128x128b", tvm.tirx.const(0, "uint32"), tvm.tirx.const(0), 0, 128, "none"))
        True
    """
    operands = [tvm.tirx.const(v, "uint32") for v in (lbo, sbo, TCGEN05_DESCRIPTOR.swizzle_codes[swizzle])]
    return helper_call(FAMILY, cp_name(shape), cp_source(shape), taddr, smem_address, *operands)


_COMMIT_SRC = f"""
__device__ __forceinline__ void {helper_name(FAMILY, "commit")}(void* bar) {{
  // Arrives on the mbarrier once this thread's earlier tcgen05 operations (copies, MMAs) are complete.
  unsigned int addr = (unsigned int)__cvta_generic_to_shared(bar);
  asm volatile("tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%0];" :: "r"(addr) : "memory");
}}
"""


def commit(bar):
    """``tcgen05.commit ... mbarrier::arrive::one`` on ``bar``: it arrives when the thread's copies and MMAs are
    done.

    Example:
        >>> "tirx_layout_tcgen05_commit" in str(commit(tvm.tirx.const(0)))
        True
    """
    return helper_call(FAMILY, "commit", _COMMIT_SRC, bar)


_COMMIT_PAIR_SRC = f"""
__device__ __forceinline__ void {helper_name(FAMILY, "commit_cg2_multicast")}(void* bar, unsigned int cta_mask) {{
  // Arrives, once this thread's earlier cta_group::2 MMAs are complete, on the mbarrier at the same shared offset
  // in every CTA of the cluster whose bit (its rank) is set in cta_mask. The CTA's own shared::cta address is a
  // shared::cluster address of the executing CTA (PTX ISA, state spaces: the shared::cta window lies in the
  // shared::cluster window); the multicast names the other CTAs by the mask.
  unsigned int addr = (unsigned int)__cvta_generic_to_shared(bar);
  asm volatile("tcgen05.commit.cta_group::2.mbarrier::arrive::one.shared::cluster.multicast::cluster.b64 [%0], %1;"
               :: "r"(addr), "h"((unsigned short)cta_mask) : "memory");
}}
"""


def commit_pair(bar, cta_mask):
    """``tcgen05.commit.cta_group::2.mbarrier::arrive::one.shared::cluster.multicast::cluster`` on ``bar`` (an
    ``address_of`` of the CTA's own mbarrier): when the pair MMAs the thread issued are done, one arrive on the
    mbarrier at ``bar``'s offset in each CTA whose cluster rank is a bit of ``cta_mask`` (``uint32``; 16 bits used,
    ``hw.tcgen05_mma.pair_cta_mask``).

    Example:
        >>> "tcgen05_commit_cg2_multicast" in str(commit_pair(tvm.tirx.const(0), tvm.tirx.const(3, "uint32")))
        True
    """
    return helper_call(FAMILY, "commit_cg2_multicast", _COMMIT_PAIR_SRC, bar, u32(cta_mask))


# ---- tcgen05.mma: dense kinds, and its shared-memory descriptors --------------------------------------------

#: The dense kinds with one helper pair each (the block-scaled ``mxf8f6f4`` has its own form).
DENSE_KINDS = ("f16", "tf32", "f8f6f4", "i8")
#: Operand forms: A and B from shared memory, or A from tensor memory and B from shared memory.
FORMS = ("ss", "ts")


def mma_name(kind: str, form: str, cta_group: int = 1) -> str:
    """The helper (its ``what``) of a dense ``tcgen05.mma.cta_group::<cta_group>`` of ``kind`` with A from shared
    (``"ss"``) or tensor (``"ts"``) memory.

    Example:
        >>> mma_name("f16", "ss"), mma_name("i8", "ss", cta_group=2)
        ('mma_f16_ss', 'mma_i8_ss_cg2')
    """
    if kind not in DENSE_KINDS:
        raise ValueError(f"no dense tcgen05.mma helper for kind {kind!r}; expected one of {list(DENSE_KINDS)}")
    _check_form(form)
    return f"mma_{kind}_{form}" + _group_suffix(cta_group)


def _check_form(form: str) -> None:
    if form not in FORMS:
        raise ValueError(f"a tcgen05.mma form is 'ss' (A in shared memory) or 'ts' (A in TMEM), got {form!r}")


def _a_operand(form: str) -> tuple[str, str, str]:
    """A's parameter, PTX operand and constraint: a full 64-bit descriptor (``ss``) or a TMEM address (``ts``)."""
    if form == "ss":
        return "unsigned long long a_desc", "%1", '"l"(a_desc)'
    return "unsigned int a_taddr", "[%1]", '"r"(a_taddr)'


def mma_source(kind: str, form: str, cta_group: int = 1) -> str:
    """CUDA source of the helper :func:`mma_name` names: one ``tcgen05.mma``, its descriptors passed whole. With
    ``cta_group=2`` the pair's MMA: issued by one thread of the pair's even CTA, the descriptors' shared offsets and
    the TMEM address naming the same places in both CTAs.

    Example:
        >>> src = mma_source("f16", "ss")
        >>> "tcgen05.mma.cta_group::1.kind::f16 [%0], %1, %2, %3, p;" in src
        True
        >>> "tcgen05.mma.cta_group::1.kind::i8 [%0], [%1], %2, %3, p;" in mma_source("i8", "ts")
        True
        >>> "tcgen05.mma.cta_group::2.kind::f16 [%0], %1, %2, %3, p;" in mma_source("f16", "ss", cta_group=2)
        True
    """
    name = helper_name(FAMILY, mma_name(kind, form, cta_group))
    a_param, a_operand, a_constraint = _a_operand(form)
    return f"""
__device__ __forceinline__ void {name}(unsigned int d_taddr, {a_param}, unsigned long long b_desc,
    unsigned int idesc, unsigned int enable_input_d) {{
  asm volatile("{{\\n .reg .pred p;\\n setp.ne.b32 p, %4, 0;\\n"
               " tcgen05.mma.cta_group::{cta_group}.kind::{kind} [%0], {a_operand}, %2, %3, p;\\n}}"
               :: "r"(d_taddr), {a_constraint}, "l"(b_desc), "r"(idesc), "r"(enable_input_d) : "memory");
}}
"""


def mma(kind: str, d_taddr, a, b_desc, idesc, enable_input_d, a_in_tmem: bool = False, cta_group: int = 1):
    """One dense ``tcgen05.mma.cta_group::<cta_group>`` of ``kind``: ``a`` is A's full 64-bit descriptor
    (:func:`smem_descriptor`, plus the K step's start), or A's TMEM address when ``a_in_tmem``; ``b_desc`` B's full
    descriptor. ``idesc`` an int or expression, ``enable_input_d`` a ``uint32`` expression.

    Example:
        >>> z = tvm.tirx.const(0, "uint32")
        >>> "mma_f16_ts" in str(mma("f16", z, z, 0, 0x8200490, z, a_in_tmem=True))
        True
    """
    form = "ts" if a_in_tmem else "ss"
    a = a if a_in_tmem else u64(a)
    args = (d_taddr, a, u64(b_desc), u32(idesc), enable_input_d)
    name, source = mma_name(kind, form, cta_group), mma_source(kind, form, cta_group)
    return helper_call(FAMILY, name, source, *args)


def smem_descriptor(pointer, bits_without_start):
    """The full 64-bit shared-memory matrix descriptor of the operand at ``pointer`` (an ``address_of`` of a shared
    buffer element): ``bits_without_start`` (the descriptor with start field 0) ORed with the pointer's shared
    address >> 4 (``emit.smem_descriptor``).

    Example:
        >>> str(smem_descriptor(tvm.tirx.const(0), 1 << 46).ty.dtype)
        'uint64'
    """
    return emit.smem_descriptor(FAMILY, pointer, bits_without_start)


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
    _check_form(form)
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
    name = helper_name(FAMILY, block_scaled_name(form))
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
        >>> z = tvm.tirx.const(0, "uint32")
        >>> "mma_mxf8f6f4_ss" in str(block_scaled_mma(z, 0, 0, 0, z, z, z))
        True
    """
    form = "ts" if a_in_tmem else "ss"
    a = a if a_in_tmem else u64(a)
    args = (d_taddr, a, u64(b_desc), u32(idesc), sfa_taddr, sfb_taddr, enable_input_d)
    return helper_call(FAMILY, block_scaled_name(form), block_scaled_source(form), *args)


__all__ = [
    "BLOCK_SCALED_KIND",
    "DENSE_KINDS",
    "FAMILY",
    "FORMS",
    "PACK_16B",
    "alloc",
    "block_scaled_mma",
    "block_scaled_name",
    "block_scaled_source",
    "commit",
    "commit_pair",
    "cp",
    "cp_name",
    "cp_source",
    "dealloc",
    "is_asynchronous",
    "ld_st",
    "ld_st_name",
    "ld_st_source",
    "mma",
    "mma_name",
    "mma_source",
    "relinquish",
    "simple",
    "smem_descriptor",
]
