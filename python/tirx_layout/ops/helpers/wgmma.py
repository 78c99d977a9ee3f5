"""The ``wgmma`` helpers the Hopper MMA lowering emits (sm_90a): CUDA ``__device__`` functions with inline PTX, named
``tirx_layout_wgmma_<what>`` through ``tirx_layout.ir.device_calls``. Their names and arguments are the ABI the
simulator (``sim/wgmma.py``) executes (``docs/decisions.md``, issue 22):

* ``mma_m64n<N>k<K>_<dD>_<dA>_<dB>_ss_t<ta><tb>(d_regs, a_desc, b_desc, scale_d)`` and
  ``..._rs_t<tb>(d_regs, a_regs, b_desc, scale_d)``: one ``wgmma.mma_async`` (one K step). ``d_regs`` and
  ``a_regs`` point at the thread's fragment registers (register ``i`` of the ISA's fragment is element ``i``: 32-bit
  for f32/s32 D, two packed 16-bit elements per 32-bit register for f16 D and 16-bit A, four 8-bit ones for 8-bit
  A); ``a_desc``/``b_desc`` are full wgmma matrix descriptors, made once per operand by ``smem_descriptor(ptr,
  bits)`` (the other fields ORed with ``(shared address of ptr & 0x3FFFF) >> 4``) and moved by each K step's start
  offset ``>> 4``, as the tcgen05 helpers take them (issue 34: a descriptor built from an address in every helper
  cost the Hopper consumer loop the address arithmetic of every operand of every K step); ``scale_d`` 0 gives
  D = A·B, 1 gives D = A·B + D;
* ``fence()``, ``commit_group()``, ``wait_group_<n>(d_regs)``: ``wgmma.fence``, ``wgmma.commit_group``,
  ``wgmma.wait_group n`` (the argument names the accumulator whose registers the wait releases; the simulator reads
  it, the CUDA ignores it);
* ``keep_<f32|b32>_x<count>(regs)``: no instruction, only a compiler fence (an empty ``asm volatile`` reading and
  writing each register), so that nvcc neither moves nor reads the fragment registers across the asynchronous
  window; the simulator treats every ``keep_*`` helper as a no-op.

PTX ISA, "Asynchronous Warpgroup Level Matrix Multiply-Accumulate" (``wgmma.mma_async``): the operand lists by
kind are ``d, a, b-desc, scale-d, imm-scale-a, imm-scale-b, imm-trans-a, imm-trans-b`` for ``.f16``/``.bf16`` (no
imm-trans-a when A is in registers), ``d, a, b-desc, scale-d, imm-scale-a, imm-scale-b`` for ``.tf32`` and the
8-bit floats, ``d, a, b-desc, scale-d`` for ``.s8``/``.u8``; ``scale-d`` is a predicate, set here with
``setp.ne.b32`` from the ``scale_d`` argument; the immediate scales are 1 (no negation).
"""

from __future__ import annotations

from ...hw.wgmma import A_REGISTERS, WgmmaInstruction, ptx_type
from ...ir.device_calls import helper_call, helper_name
from . import emit
from .emit import asm_source, u64

FAMILY = "wgmma"


def mma_name(instruction: WgmmaInstruction) -> str:
    """The helper (its ``what``) of one ``wgmma.mma_async``: shape, PTX types of D, A, B, the form (``ss``: A in
    shared memory, ``rs``: A in registers) and the imm-trans values (``t<ta><tb>``, ``t<tb>`` for ``rs``; 0 K-major,
    1 MN-major; ``t00``/``t0`` for kinds without transposes).

    Example:
        >>> mma_name(WgmmaInstruction("bfloat16", "bfloat16", "float32", 128, b_major="MN"))
        'mma_m64n128k16_f32_bf16_bf16_ss_t01'
        >>> mma_name(WgmmaInstruction("float32", "float32", "float32", 64, a_in_registers=True))
        'mma_m64n64k8_f32_tf32_tf32_rs_t0'
    """
    i = instruction
    types = f"{ptx_type(i.d_dtype, accumulator=True)}_{ptx_type(i.a_dtype)}_{ptx_type(i.b_dtype)}"
    ta, tb = i.transpose
    form = f"rs_t{tb}" if i.a_in_registers else f"ss_t{ta}{tb}"
    return f"mma_{i.shape}_{types}_{form}"


def _immediates(instruction: WgmmaInstruction) -> str:
    """The operands after scale-d: imm-scale-a/b (1: no negation) for the float kinds, then imm-trans-a (not for A
    in registers) and imm-trans-b for f16/bf16."""
    out = ", 1, 1" if instruction.has_imm_scale else ""
    if instruction.has_imm_trans:
        ta, tb = instruction.transpose
        out += f", {tb}" if instruction.a_in_registers else f", {ta}, {tb}"
    return out


def mma_source(instruction: WgmmaInstruction) -> str:
    """CUDA source of the helper :func:`mma_name` names.

    Example:
        >>> src = mma_source(WgmmaInstruction("bfloat16", "bfloat16", "float32", 8))
        >>> "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%0, %1, %2, %3}, %4, %5, p, 1, 1, 0, 0;" in src
        True
        >>> "m64n8k32.s32.s8.s8 {%0, %1, %2, %3}, {%4, %5, %6, %7}, %8, p;" in mma_source(
        ...     WgmmaInstruction("int8", "int8", "int32", 8, a_in_registers=True))
        True
    """
    name = helper_name(FAMILY, mma_name(instruction))
    count = instruction.d_registers
    d_type, d_constraint = ("float", "+f") if instruction.d_dtype == "float32" else ("unsigned int", "+r")
    d_list = ", ".join(f"%{i}" for i in range(count))
    outputs = ", ".join(f'"{d_constraint}"(d[{i}])' for i in range(count))
    if instruction.a_in_registers:
        a_param = "const void* a_regs, "
        a_operand = "{" + ", ".join(f"%{count + i}" for i in range(A_REGISTERS)) + "}"
        a_inputs = "".join(f'"r"(ar[{i}]), ' for i in range(A_REGISTERS))
        a_setup = "  const unsigned int* ar = (const unsigned int*)a_regs;\n"
        b_index = count + A_REGISTERS
    else:
        a_param = "unsigned long long a_desc, "
        a_operand, a_inputs = f"%{count}", '"l"(a_desc), '
        a_setup = ""
        b_index = count + 1
    ptx = f"{instruction.operation} {{{d_list}}}, {a_operand}, %{b_index}, p{_immediates(instruction)};"
    return f"""
__device__ __forceinline__ void {name}(void* d_regs, {a_param}unsigned long long b_desc,
    unsigned int scale_d) {{
  {d_type}* d = ({d_type}*)d_regs;
{a_setup}  asm volatile("{{\\n .reg .pred p;\\n setp.ne.b32 p, %{b_index + 1}, 0;\\n {ptx}\\n}}"
               : {outputs}
               : {a_inputs}"l"(b_desc), "r"(scale_d) : "memory");
}}
"""


def mma_ss(instruction: WgmmaInstruction, d_regs, a_desc, b_desc, scale_d):
    """One ``wgmma.mma_async`` with A and B in shared memory (the ``_ss`` helper); ``a_desc``/``b_desc`` the full
    descriptors (:func:`smem_descriptor`, plus the K step's start).

    Example:
        >>> import tvm
        >>> z = tvm.tirx.const(0, "uint32")
        >>> "mma_m64n8k16_f32_f16_f16_ss_t00" in str(mma_ss(WgmmaInstruction("float16", "float16", "float32", 8),
        ...                                                 z, 0, 0, z))
        True
    """
    if instruction.a_in_registers:
        raise ValueError("mma_ss issues a wgmma with A in shared memory; this instruction reads A from registers")
    args = (d_regs, u64(a_desc), u64(b_desc), scale_d)
    return helper_call(FAMILY, mma_name(instruction), mma_source(instruction), *args)


def mma_rs(instruction: WgmmaInstruction, d_regs, a_regs, b_desc, scale_d):
    """One ``wgmma.mma_async`` with A in registers (the ``_rs`` helper); ``b_desc`` B's full descriptor.

    Example:
        >>> import tvm
        >>> z = tvm.tirx.const(0, "uint32")
        >>> rs = WgmmaInstruction("bfloat16", "bfloat16", "float32", 8, a_in_registers=True)
        >>> "mma_m64n8k16_f32_bf16_bf16_rs_t0" in str(mma_rs(rs, z, z, 0, z))
        True
    """
    if not instruction.a_in_registers:
        raise ValueError("mma_rs issues a wgmma with A in registers; this instruction reads A from shared memory")
    args = (d_regs, a_regs, u64(b_desc), scale_d)
    return helper_call(FAMILY, mma_name(instruction), mma_source(instruction), *args)


def smem_descriptor(pointer, bits_without_start):
    """The full 64-bit wgmma matrix descriptor of the operand at ``pointer`` (an ``address_of`` of a shared buffer
    element): ``bits_without_start`` ORed with the pointer's shared address >> 4 (``emit.smem_descriptor``).

    Example:
        >>> import tvm
        >>> "tirx_layout_wgmma_smem_descriptor" in str(smem_descriptor(tvm.tirx.const(0), 1 << 62))
        True
    """
    return emit.smem_descriptor(FAMILY, pointer, bits_without_start)


def fence():
    """``wgmma.fence.sync.aligned``: orders the warpgroup's earlier register and shared-memory accesses before the
    next wgmma (required before the first wgmma of a group and whenever its registers were touched).

    Example:
        >>> "tirx_layout_wgmma_fence" in str(fence())
        True
    """
    return helper_call(FAMILY, "fence", asm_source(FAMILY, "fence", "wgmma.fence.sync.aligned;"))


def commit_group():
    """``wgmma.commit_group.sync.aligned``: the wgmmas issued since the last commit become one group.

    Example:
        >>> "commit_group" in str(commit_group())
        True
    """
    source = asm_source(FAMILY, "commit_group", "wgmma.commit_group.sync.aligned;")
    return helper_call(FAMILY, "commit_group", source)


def wait_group(pending: int, d_regs):
    """``wgmma.wait_group.sync.aligned pending``: waits until at most ``pending`` groups of the warpgroup are
    outstanding; ``d_regs`` (the accumulator it releases) is for the simulator.

    Example:
        >>> import tvm
        >>> "wait_group_1" in str(wait_group(1, tvm.tirx.const(0, "uint32")))
        True
    """
    what = f"wait_group_{int(pending)}"
    source = asm_source(FAMILY, what, f"wgmma.wait_group.sync.aligned {int(pending)};", "void* d_regs")
    return helper_call(FAMILY, what, source, d_regs)


def keep(registers: int, floating: bool, regs):
    """A compiler fence on ``registers`` 32-bit registers at ``regs`` (``"+f"`` when ``floating``, else ``"+r"``).

    Example:
        >>> import tvm
        >>> "keep_f32_x64" in str(keep(64, True, tvm.tirx.const(0, "uint32")))
        True
    """
    what = f"keep_{'f32' if floating else 'b32'}_x{registers}"
    c_type, constraint = ("float", "+f") if floating else ("unsigned int", "+r")
    source = (
        f"\n__device__ __forceinline__ void {helper_name(FAMILY, what)}(void* regs) {{\n"
        f"  {c_type}* r = ({c_type}*)regs;\n"
        f"#pragma unroll\n  for (int i = 0; i < {registers}; ++i) {{\n"
        f'    asm volatile("" : "{constraint}"(r[i]) :: "memory");\n  }}\n}}\n'
    )
    return helper_call(FAMILY, what, source, regs)


__all__ = [
    "FAMILY",
    "commit_group",
    "fence",
    "keep",
    "mma_name",
    "mma_rs",
    "mma_source",
    "mma_ss",
    "smem_descriptor",
    "wait_group",
]
