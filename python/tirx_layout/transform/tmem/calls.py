"""The tcgen05 instructions our TMEM lowering emits, as calls of small CUDA helpers with inline PTX.

Each helper is a ``__device__`` function called through ``tirx_layout.ir.device_calls`` (which owns the naming:
``tirx_layout_tcgen05_<what>``); the simulator (``tirx_layout.sim.tmem``) executes a call from its name and
arguments alone. The shapes and the descriptor fields come from ``tirx_layout.hw.tcgen05``.

PTX ISA, tcgen05 chapter (section numbers as in PTX ISA 9.2; they shift between releases, so titles are given too):
* ``tcgen05.alloc`` / ``tcgen05.dealloc`` / ``tcgen05.relinquish_alloc_permit`` -- one warp, ``.sync
  .aligned``; ``nCols`` a power of two in [32, 512]; alloc writes the TMEM address into shared memory.
* ``tcgen05.ld`` / ``tcgen05.st`` ``.sync.aligned.<shape>.x<N>.b32`` (shapes: 9.7.16.2.3); ``tcgen05.wait``.
* "Tensor Memory Addressing": bits 31-16 the lane, bits 15-0 the 32-bit column.

Registers travel through ``__builtin_memcpy`` so that 16-bit fragments (two elements per 32-bit register) need no
alignment beyond their own; nvcc turns the copies into plain register moves.
"""

from __future__ import annotations

import tvm

from ...hw.smem_descriptor import TCGEN05_DESCRIPTOR
from ...hw.tcgen05 import CP_SHAPES, LD_ST_SHAPES
from ...ir.device_calls import called_helper, helper_call, helper_name

_ALLOC = helper_name("alloc")
_ALLOC_SRC = f"""
__device__ __forceinline__ void {_ALLOC}(void* slot, unsigned int ncols) {{
  // PTX ISA, tcgen05.alloc: the allocated TMEM address is written to the shared-memory slot.
  unsigned int smem = (unsigned int)__cvta_generic_to_shared(slot);
  asm volatile("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%0], %1;" :: "r"(smem), "r"(ncols) : "memory");
}}
"""
_RELINQUISH = helper_name("relinquish_alloc_permit")
_RELINQUISH_SRC = f"""
__device__ __forceinline__ void {_RELINQUISH}() {{
  asm volatile("tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;" ::: "memory");
}}
"""
_DEALLOC = helper_name("dealloc")
_DEALLOC_SRC = f"""
__device__ __forceinline__ void {_DEALLOC}(unsigned int taddr, unsigned int ncols) {{
  asm volatile("tcgen05.dealloc.cta_group::1.sync.aligned.b32 %0, %1;" :: "r"(taddr), "r"(ncols) : "memory");
}}
"""


def _simple(name: str, ptx: str) -> tuple[str, str]:
    full = helper_name(name)
    return name, f'\n__device__ __forceinline__ void {full}() {{\n  asm volatile("{ptx}" ::: "memory");\n}}\n'


_SIMPLE = {
    "wait_ld": _simple("wait_ld", "tcgen05.wait::ld.sync.aligned;"),
    "wait_st": _simple("wait_st", "tcgen05.wait::st.sync.aligned;"),
    # Around a CTA barrier between asynchronous tcgen05 accesses of different threads (PTX ISA 9.7.16.6.3).
    "fence_before": _simple("fence_before", "tcgen05.fence::before_thread_sync;"),
    "fence_after": _simple("fence_after", "tcgen05.fence::after_thread_sync;"),
    # Generic-proxy writes to shared memory made visible to tcgen05.cp, which reads through the async proxy.
    "fence_proxy_async": _simple("fence_proxy_async", "fence.proxy.async.shared::cta;"),
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
    return called is not None and called[0].startswith(("ld_", "st_", "cp_", "mma_"))


def alloc(slot_address, ncols: int):
    """``tcgen05.alloc`` of ``ncols`` columns, the address written to ``slot_address`` (a shared-memory pointer).

    Example:
        >>> "tcgen05.alloc" in str(alloc(tvm.tirx.const(0, "uint32"), 32))
        True
    """
    return helper_call("alloc", _ALLOC_SRC, slot_address, tvm.tirx.const(ncols, "uint32"))


def relinquish():
    """``tcgen05.relinquish_alloc_permit``: this CTA allocates no more TMEM.

    Example:
        >>> "relinquish" in str(relinquish())
        True
    """
    return helper_call("relinquish_alloc_permit", _RELINQUISH_SRC)


def dealloc(taddr, ncols: int):
    """``tcgen05.dealloc`` of the ``ncols`` columns at TMEM address ``taddr``.

    Example:
        >>> "tcgen05.dealloc" in str(dealloc(tvm.tirx.const(0, "uint32"), 32))
        True
    """
    return helper_call("dealloc", _DEALLOC_SRC, taddr, tvm.tirx.const(ncols, "uint32"))


def simple(what: str):
    """One of ``wait_ld``, ``wait_st``, ``fence_before``, ``fence_after``, ``fence_proxy_async`` (no operands).

    Example:
        >>> "wait::ld" in str(simple("wait_ld"))
        True
    """
    return helper_call(*_SIMPLE[what])


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
    count = LD_ST_SHAPES[shape].registers_per_num * num
    name = helper_name(ld_st_name(kind, shape, num, unpacked16))
    qualifier = f".{PACK_16B[kind]}" if unpacked16 and kind in PACK_16B else ""
    if kind == "ld":
        regs = ", ".join(f"%{i}" for i in range(count))
        outs = ", ".join(f'"=r"(r[{i}])' for i in range(count))
        asm = f'"tcgen05.ld.sync.aligned.{shape}.x{num}{qualifier}.b32 {{{regs}}}, [%{count}];" : {outs} : "r"(taddr)'
        return (
            f"\n__device__ __forceinline__ void {name}(unsigned int taddr, void* dst) {{\n"
            f'  unsigned int r[{count}];\n  asm volatile({asm} : "memory");\n'
            f"  __builtin_memcpy(dst, r, {4 * count});\n}}\n"
        )
    if kind != "st":
        raise ValueError(f"ld_st_source: kind must be 'ld' or 'st', got {kind!r}")
    regs = ", ".join(f"%{i + 1}" for i in range(count))
    ins = ", ".join(f'"r"(r[{i}])' for i in range(count))
    asm = f'"tcgen05.st.sync.aligned.{shape}.x{num}{qualifier}.b32 [%0], {{{regs}}};" :: "r"(taddr), {ins}'
    return (
        f"\n__device__ __forceinline__ void {name}(unsigned int taddr, const void* src) {{\n"
        f"  unsigned int r[{count}];\n  __builtin_memcpy(r, src, {4 * count});\n"
        f'  asm volatile({asm} : "memory");\n}}\n'
    )


def ld_st(kind: str, shape: str, num: int, taddr, registers, unpacked16: bool = False):
    """A ``tcgen05.ld`` (``kind="ld"``) or ``tcgen05.st`` of ``shape``/``.x<num>`` at ``taddr`` with the registers
    starting at ``registers`` (an ``address_of`` expression); ``unpacked16``: 16-bit data one per 32-bit column.

    Example:
        >>> "tcgen05_ld_32x32b_x1" in str(ld_st("ld", "32x32b", 1, tvm.tirx.const(0, "uint32"), tvm.tirx.const(0)))
        True
    """
    name, source = ld_st_name(kind, shape, num, unpacked16), ld_st_source(kind, shape, num, unpacked16)
    return helper_call(name, source, taddr, registers)


# ---- tcgen05.cp and its completion (PTX ISA: tcgen05.cp, tcgen05.commit, mbarrier) ---


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
    return f"""
__device__ __forceinline__ void {helper_name(cp_name(shape))}(unsigned int taddr, const void* smem, unsigned int lbo,
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
    u32 = [tvm.tirx.const(v, "uint32") for v in (lbo, sbo, TCGEN05_DESCRIPTOR.swizzle_codes[swizzle])]
    return helper_call(cp_name(shape), cp_source(shape), taddr, smem_address, *u32)


_MBAR_INIT = helper_name("mbarrier_init")
_MBAR_INIT_SRC = f"""
__device__ __forceinline__ void {_MBAR_INIT}(void* bar, unsigned int count) {{
  unsigned int addr = (unsigned int)__cvta_generic_to_shared(bar);
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(addr), "r"(count) : "memory");
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}}
"""
_COMMIT = helper_name("commit")
_COMMIT_SRC = f"""
__device__ __forceinline__ void {_COMMIT}(void* bar) {{
  // Arrives on the mbarrier once this thread's earlier tcgen05 operations (copies, MMAs) are complete.
  unsigned int addr = (unsigned int)__cvta_generic_to_shared(bar);
  asm volatile("tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%0];" :: "r"(addr) : "memory");
}}
"""
_MBAR_WAIT = helper_name("mbarrier_wait")
_MBAR_WAIT_SRC = f"""
__device__ __forceinline__ void {_MBAR_WAIT}(void* bar, unsigned int parity) {{
  unsigned int addr = (unsigned int)__cvta_generic_to_shared(bar);
  unsigned int done = 0;
  while (!done) {{
    asm volatile("{{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }}"
                 : "=r"(done) : "r"(addr), "r"(parity) : "memory");
  }}
}}
"""


def mbarrier_init(bar, count=1):
    """``mbarrier.init`` of the shared mbarrier at ``bar`` (an ``address_of``) for ``count`` arrivals (an int or a
    ``uint32`` expression).

    Example:
        >>> "mbarrier_init" in str(mbarrier_init(tvm.tirx.const(0)))
        True
    """
    return helper_call("mbarrier_init", _MBAR_INIT_SRC, bar, _u32(count))


def commit(bar):
    """``tcgen05.commit ... mbarrier::arrive::one`` on ``bar``: it arrives when the thread's copies are done.

    Example:
        >>> "commit" in str(commit(tvm.tirx.const(0)))
        True
    """
    return helper_call("commit", _COMMIT_SRC, bar)


def mbarrier_wait(bar, parity=0):
    """Wait until the phase of ``bar`` with ``parity`` (an int or a ``uint32`` expression) has completed.

    Example:
        >>> "mbarrier_wait" in str(mbarrier_wait(tvm.tirx.const(0)))
        True
    """
    return helper_call("mbarrier_wait", _MBAR_WAIT_SRC, bar, _u32(parity))


def _u32(value):
    return tvm.tirx.const(value, "uint32") if isinstance(value, int) else value


_MBAR_ARRIVE = helper_name("mbarrier_arrive")
_MBAR_ARRIVE_SRC = f"""
__device__ __forceinline__ void {_MBAR_ARRIVE}(void* bar) {{
  unsigned int addr = (unsigned int)__cvta_generic_to_shared(bar);
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(addr) : "memory");
}}
"""
_MBAR_EXPECT_TX = helper_name("mbarrier_expect_tx")
_MBAR_EXPECT_TX_SRC = f"""
__device__ __forceinline__ void {_MBAR_EXPECT_TX}(void* bar, unsigned int tx_bytes) {{
  unsigned int addr = (unsigned int)__cvta_generic_to_shared(bar);
  asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;" :: "r"(addr), "r"(tx_bytes) : "memory");
}}
"""
_MBAR_ARRIVE_EXPECT_TX = helper_name("mbarrier_arrive_expect_tx")
_MBAR_ARRIVE_EXPECT_TX_SRC = f"""
__device__ __forceinline__ void {_MBAR_ARRIVE_EXPECT_TX}(void* bar, unsigned int tx_bytes) {{
  unsigned int addr = (unsigned int)__cvta_generic_to_shared(bar);
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(addr), "r"(tx_bytes) : "memory");
}}
"""


def mbarrier_arrive(bar):
    """``mbarrier.arrive`` of this thread on the shared mbarrier at ``bar`` (an ``address_of``).

    Example:
        >>> "mbarrier_arrive" in str(mbarrier_arrive(tvm.tirx.const(0)))
        True
    """
    return helper_call("mbarrier_arrive", _MBAR_ARRIVE_SRC, bar)


def mbarrier_expect_tx(bar, tx_bytes):
    """``mbarrier.expect_tx``: add ``tx_bytes`` to the transaction count of the current phase of ``bar``, without
    arriving.

    Example:
        >>> "mbarrier_expect_tx" in str(mbarrier_expect_tx(tvm.tirx.const(0), 1024))
        True
    """
    return helper_call("mbarrier_expect_tx", _MBAR_EXPECT_TX_SRC, bar, _u32(tx_bytes))


def mbarrier_arrive_expect_tx(bar, tx_bytes):
    """``mbarrier.arrive.expect_tx``: add ``tx_bytes`` to the transaction count of ``bar``, then arrive.

    Example:
        >>> "mbarrier_arrive_expect_tx" in str(mbarrier_arrive_expect_tx(tvm.tirx.const(0), 1024))
        True
    """
    return helper_call("mbarrier_arrive_expect_tx", _MBAR_ARRIVE_EXPECT_TX_SRC, bar, _u32(tx_bytes))
