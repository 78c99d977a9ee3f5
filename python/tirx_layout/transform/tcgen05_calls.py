"""The tcgen05 instructions our TMEM lowering emits, as calls of small CUDA helpers with inline PTX.

Each helper is a ``__device__`` function whose source rides in TVM's ``tirx.cuda.func_call`` intrinsic (the code
generator prints every distinct helper once, above the kernel). Helper names are ``tirx_layout_tcgen05_<what>``;
the simulator (``tirx_layout.sim.tmem``) executes a call from its name and arguments alone.

PTX ISA sections (PTX ISA 8.6+, "Tensor Memory" chapter of the tcgen05 instructions):
* 9.7.16.7.1 ``tcgen05.alloc`` / ``tcgen05.dealloc`` / ``tcgen05.relinquish_alloc_permit`` -- one warp, ``.sync
  .aligned``; ``nCols`` a power of two in [32, 512]; alloc writes the TMEM address into shared memory.
* 9.7.16.8.3 / .4 ``tcgen05.ld`` / ``tcgen05.st`` ``.sync.aligned.<shape>.x<N>.b32``; 9.7.16.8.5 ``tcgen05.wait``.
* 9.7.16.6.1 TMEM addresses: bits 31-16 the lane, bits 15-0 the 32-bit column.

Registers travel through ``__builtin_memcpy`` so that 16-bit fragments (two elements per 32-bit register) need no
alignment beyond their own; nvcc turns the copies into plain register moves.
"""

from __future__ import annotations

import tvm
from tvm import tirx

PREFIX = "tirx_layout_tcgen05_"
#: 32-bit registers per thread for one repetition (``.x1``) of each ``tcgen05.ld/st`` shape (PTX ISA 9.7.16.8.3).
REGISTERS_PER_NUM = {"32x32b": 1, "16x64b": 1, "16x128b": 2, "16x256b": 4}

_ALLOC = PREFIX + "alloc"
_ALLOC_SRC = f"""
__device__ __forceinline__ void {_ALLOC}(void* slot, unsigned int ncols) {{
  // PTX ISA 9.7.16.7.1: the allocated TMEM address is written to the shared-memory slot.
  unsigned int smem = (unsigned int)__cvta_generic_to_shared(slot);
  asm volatile("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%0], %1;" :: "r"(smem), "r"(ncols) : "memory");
}}
"""
_RELINQUISH = PREFIX + "relinquish_alloc_permit"
_RELINQUISH_SRC = f"""
__device__ __forceinline__ void {_RELINQUISH}() {{
  asm volatile("tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;" ::: "memory");
}}
"""
_DEALLOC = PREFIX + "dealloc"
_DEALLOC_SRC = f"""
__device__ __forceinline__ void {_DEALLOC}(unsigned int taddr, unsigned int ncols) {{
  asm volatile("tcgen05.dealloc.cta_group::1.sync.aligned.b32 %0, %1;" :: "r"(taddr), "r"(ncols) : "memory");
}}
"""


def _simple(name: str, ptx: str) -> tuple[str, str]:
    full = PREFIX + name
    return full, f'\n__device__ __forceinline__ void {full}() {{\n  asm volatile("{ptx}" ::: "memory");\n}}\n'


_SIMPLE = {
    "wait_ld": _simple("wait_ld", "tcgen05.wait::ld.sync.aligned;"),
    "wait_st": _simple("wait_st", "tcgen05.wait::st.sync.aligned;"),
    # Around a CTA barrier, so that tcgen05 work before it is ordered with tcgen05 work after it (PTX ISA 9.7.16.6.4).
    "fence_before": _simple("fence_before", "tcgen05.fence::before_thread_sync;"),
    "fence_after": _simple("fence_after", "tcgen05.fence::after_thread_sync;"),
}


def _call(name: str, source: str, *args):
    return tirx.Evaluate(tvm.tirx.call_intrin("void", "tirx.cuda.func_call", name, *args, source))


def alloc(slot_address, ncols: int):
    """``tcgen05.alloc`` of ``ncols`` columns, the address written to ``slot_address`` (a shared-memory pointer).

    Example:
        >>> "tcgen05.alloc" in str(alloc(tvm.tirx.const(0, "uint32"), 32))
        True
    """
    return _call(_ALLOC, _ALLOC_SRC, slot_address, tvm.tirx.const(ncols, "uint32"))


def relinquish():
    """``tcgen05.relinquish_alloc_permit``: this CTA allocates no more TMEM.

    Example:
        >>> "relinquish" in str(relinquish())
        True
    """
    return _call(_RELINQUISH, _RELINQUISH_SRC)


def dealloc(taddr, ncols: int):
    """``tcgen05.dealloc`` of the ``ncols`` columns at TMEM address ``taddr``.

    Example:
        >>> "tcgen05.dealloc" in str(dealloc(tvm.tirx.const(0, "uint32"), 32))
        True
    """
    return _call(_DEALLOC, _DEALLOC_SRC, taddr, tvm.tirx.const(ncols, "uint32"))


def simple(what: str):
    """One of ``wait_ld``, ``wait_st``, ``fence_before``, ``fence_after`` (no operands).

    Example:
        >>> "wait::ld" in str(simple("wait_ld"))
        True
    """
    return _call(*_SIMPLE[what])


def ld_st_name(kind: str, shape: str, num: int) -> str:
    """The helper name for ``tcgen05.<kind>.sync.aligned.<shape>.x<num>.b32``.

    Example:
        >>> ld_st_name("ld", "16x256b", 4)
        'tirx_layout_tcgen05_ld_16x256b_x4'
    """
    return f"{PREFIX}{kind}_{shape}_x{num}"


def ld_st_source(kind: str, shape: str, num: int) -> str:
    """CUDA source of the helper: ``ld(taddr, registers)`` loads into, ``st(taddr, registers)`` stores from the
    ``REGISTERS_PER_NUM[shape] * num`` 32-bit registers at ``registers``.

    Example:
        >>> "tcgen05.st.sync.aligned.32x32b.x2.b32 [%0], {%1, %2};" in ld_st_source("st", "32x32b", 2)
        True
    """
    count = REGISTERS_PER_NUM[shape] * num
    name = ld_st_name(kind, shape, num)
    if kind == "ld":
        regs = ", ".join(f"%{i}" for i in range(count))
        outs = ", ".join(f'"=r"(r[{i}])' for i in range(count))
        asm = f'"tcgen05.ld.sync.aligned.{shape}.x{num}.b32 {{{regs}}}, [%{count}];" : {outs} : "r"(taddr)'
        return (f"\n__device__ __forceinline__ void {name}(unsigned int taddr, void* dst) {{\n"
                f"  unsigned int r[{count}];\n  asm volatile({asm} : \"memory\");\n"
                f"  __builtin_memcpy(dst, r, {4 * count});\n}}\n")  # fmt: skip
    if kind != "st":
        raise ValueError(f"ld_st_source: kind must be 'ld' or 'st', got {kind!r}")
    regs = ", ".join(f"%{i + 1}" for i in range(count))
    ins = ", ".join(f'"r"(r[{i}])' for i in range(count))
    asm = f'"tcgen05.st.sync.aligned.{shape}.x{num}.b32 [%0], {{{regs}}};" :: "r"(taddr), {ins}'
    return (f"\n__device__ __forceinline__ void {name}(unsigned int taddr, const void* src) {{\n"
            f"  unsigned int r[{count}];\n  __builtin_memcpy(r, src, {4 * count});\n"
            f"  asm volatile({asm} : \"memory\");\n}}\n")  # fmt: skip


def ld_st(kind: str, shape: str, num: int, taddr, registers):
    """A ``tcgen05.ld`` (``kind="ld"``) or ``tcgen05.st`` of ``shape``/``.x<num>`` at ``taddr`` with the registers
    starting at ``registers`` (an ``address_of`` expression).

    Example:
        >>> "tcgen05_ld_32x32b_x1" in str(ld_st("ld", "32x32b", 1, tvm.tirx.const(0, "uint32"), tvm.tirx.const(0)))
        True
    """
    return _call(ld_st_name(kind, shape, num), ld_st_source(kind, shape, num), taddr, registers)
