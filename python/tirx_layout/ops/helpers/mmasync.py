"""The ``mmasync`` helpers the warp-level MMA lowering emits (sm_80 onwards): CUDA ``__device__`` functions with
inline PTX, named ``tirx_layout_mmasync_<what>`` through ``tirx_layout.ir.device_calls``. Their names and arguments
are the ABI the simulator (``sim/mma_sync.py``) executes:

* ``mma_m16n8k<K>_<dD>_<dA>_<dB>(d_regs, a_regs, b_regs)``: one ``mma.sync.aligned.m16n8k<K>.row.col`` of the
  executing warp computing ``D = A * B + D`` in place (the instruction's C is its D). Each argument points at the
  thread's first register of that operand in its fragment, the operand's further registers following it (register
  ``i`` of the ISA's fragment is 32-bit word ``i`` from the pointer: two 16-bit or four 8-bit elements per word,
  the lowest element in the low bits; one f32/s32 element per word of D, two f16 ones for an f16 D).
* ``mmabs_m16n8k<K>_<kind>_x<X>_f32_<dA>_<dB>_<stype>_a<byte-id-a>_<thread-id-a>_b<byte-id-b>_<thread-id-b>_<pa><pb>
  (d_regs, a_regs, b_regs, sfa_regs, sfb_regs)``: one block-scaled ``mma.sync`` (sm_120a), the same in place on D,
  A and B; the selectors are immediates of the instruction (so part of the name); scale operand ``sfa``/``sfb`` is
  the 32-bit word at its pointer (``<p>`` = ``w``: four 8-bit scales, lowest byte first) or, where the fragment's
  storage ends inside that word, the ``X`` bytes at its pointer placed at bytes ``byte-id ..`` (``p``).

PTX ISA, "Warp Level Matrix Multiply-Accumulate Instructions" (``mma``): ``mma.sync.aligned.<shape>.row.col.<dtype>
.<atype>.<btype>.<ctype> d, a, b, c`` with d and c vectors of 4 ``.f32``/``.s32`` (2 ``.f16x2``) registers, a of
``2 * K / (4r)`` and b of ``K / (4r)`` ``.b32`` registers (``r`` elements per register); ``.sync.aligned``: every
lane of the warp executes it together.
"""

from __future__ import annotations

from ...hw.mma_sync import MmaSyncInstruction, ptx_type
from ...hw.mma_sync_scaled import PTX_OPERAND, BlockScaledMmaSync, ScaleSelect
from ...ir.device_calls import helper_call, helper_name

FAMILY = "mmasync"


def mma_name(instruction: MmaSyncInstruction) -> str:
    """The helper (its ``what``) of one ``mma.sync``: shape and the PTX types of D, A, B.

    Example:
        >>> mma_name(MmaSyncInstruction("bfloat16", "bfloat16", "float32", 16))
        'mma_m16n8k16_f32_bf16_bf16'
    """
    i = instruction
    return f"mma_{i.shape}_{ptx_type(i.d_dtype, accumulator=True)}_{ptx_type(i.a_dtype)}_{ptx_type(i.b_dtype)}"


def mma_source(instruction: MmaSyncInstruction) -> str:
    """CUDA source of the helper :func:`mma_name` names.

    Example:
        >>> src = mma_source(MmaSyncInstruction("float16", "float16", "float32", 16))
        >>> "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, " in src
        True
    """
    registers = instruction.registers
    d_count, a_count, b_count = registers["C"], registers["A"], registers["B"]
    d_type, d_constraint = ("float", "+f") if instruction.d_dtype == "float32" else ("unsigned int", "+r")
    numbered = iter(range(d_count + a_count + b_count))
    d_list, a_list, b_list = (
        ", ".join(f"%{next(numbered)}" for _ in range(count)) for count in (d_count, a_count, b_count)
    )
    outputs = ", ".join(f'"{d_constraint}"(d[{i}])' for i in range(d_count))
    inputs = ", ".join([*(f'"r"(a[{i}])' for i in range(a_count)), *(f'"r"(b[{i}])' for i in range(b_count))])
    ptx = f"{instruction.operation} {{{d_list}}}, {{{a_list}}}, {{{b_list}}}, {{{d_list}}};"
    return f"""
__device__ __forceinline__ void {helper_name(FAMILY, mma_name(instruction))}(void* d_regs, const void* a_regs,
    const void* b_regs) {{
  {d_type}* d = ({d_type}*)d_regs;
  const unsigned int* a = (const unsigned int*)a_regs;
  const unsigned int* b = (const unsigned int*)b_regs;
  asm volatile("{ptx}" : {outputs} : {inputs});
}}
"""


def mma(instruction: MmaSyncInstruction, d_regs, a_regs, b_regs):
    """One ``mma.sync`` (the :func:`mma_name` helper) on the registers at ``d_regs``, ``a_regs``, ``b_regs``.

    Example:
        >>> import tvm
        >>> z = tvm.tirx.const(0, "uint32")
        >>> "tirx_layout_mmasync_mma_m16n8k32_s32_s8_u8" in str(mma(MmaSyncInstruction("int8", "uint8", "int32", 32),
        ...                                                        z, z, z))
        True
    """
    return helper_call(FAMILY, mma_name(instruction), mma_source(instruction), d_regs, a_regs, b_regs)


# ---- the block-scaled forms (sm_120a) ----------------------------------------------------------------------------


def block_scaled_mma_name(instruction: BlockScaledMmaSync, select: ScaleSelect, words=(True, True)) -> str:
    """The helper (its ``what``) of one block-scaled ``mma.sync``: shape, kind, scale vector, the PTX types of D, A,
    B and the scales, the four selectors (immediates of the instruction), and how each scale operand is passed
    (``words``: ``w``, the whole 32-bit register; ``p``, only the instruction's bytes, where the fragment's storage
    ends before the register does).

    Example:
        >>> from tirx_layout.hw.mma_sync_scaled import ScaleSelect
        >>> i = BlockScaledMmaSync("float8_e4m3fn", "float8_e4m3fn")
        >>> block_scaled_mma_name(i, ScaleSelect(0, 2, 1, 0, 3, 2), (True, False))
        'mmabs_m16n8k32_mxf8f6f4_x1_f32_e4m3_e4m3_ue8m0_a2_1_b3_2_wp'
    """
    i, s = instruction, select
    a, b = PTX_OPERAND[i.a_dtype], PTX_OPERAND[i.b_dtype]
    passing = "".join("w" if whole else "p" for whole in words)
    return (
        f"mmabs_{i.shape}_{i.kind}_x{i.scale_vec}_f32_{a}_{b}_{i.stype}_a{s.byte_a}_{s.thread_a}_b{s.byte_b}_"
        f"{s.thread_b}_{passing}"
    )


def _scale_word(name: str, whole: bool, byte_id: int, count: int) -> str:
    """The C expression of a scale register: the word at the pointer, or the ``count`` bytes at the pointer moved to
    bytes ``byte_id ..`` (the bytes the instruction reads; the others zero)."""
    if whole:
        return f"*(const unsigned int*){name}"
    parts = [f"((unsigned int)((const unsigned char*){name})[{j}] << {8 * (byte_id + j)})" for j in range(count)]
    return " | ".join(parts)


def block_scaled_mma_source(instruction: BlockScaledMmaSync, select: ScaleSelect, words=(True, True)) -> str:
    """CUDA source of the helper :func:`block_scaled_mma_name` names: ``D = (A * SF_A) (B * SF_B) + D`` in place,
    each scale register the 32-bit word at its pointer (``w``) or built from the ``scale_vec`` bytes there (``p``).

    Example:
        >>> from tirx_layout.hw.mma_sync_scaled import ScaleSelect
        >>> i = BlockScaledMmaSync("float8_e4m3fn", "float8_e5m2")
        >>> src = block_scaled_mma_source(i, ScaleSelect(0, 1, 0, 0, 0, 3), (True, False))
        >>> "{%0, %1, %2, %3}, %10, {1, 0}, %11, {0, 3};" in src, "((const unsigned char*)sfb_regs)[0] << 0" in src
        (True, True)
    """
    instruction.check_selectors(select.byte_a, select.thread_a, select.byte_b, select.thread_b)
    s = select
    ptx = (
        f"{instruction.operation} {{%0, %1, %2, %3}}, {{%4, %5, %6, %7}}, {{%8, %9}}, {{%0, %1, %2, %3}}, "
        f"%10, {{{s.byte_a}, {s.thread_a}}}, %11, {{{s.byte_b}, {s.thread_b}}};"
    )
    name = helper_name(FAMILY, block_scaled_mma_name(instruction, select, words))
    sfa = _scale_word("sfa_regs", words[0], s.byte_a, instruction.scale_vec)
    sfb = _scale_word("sfb_regs", words[1], s.byte_b, instruction.scale_vec)
    return f"""
__device__ __forceinline__ void {name}(void* d_regs, const void* a_regs, const void* b_regs, const void* sfa_regs,
    const void* sfb_regs) {{
  float* d = (float*)d_regs;
  const unsigned int* a = (const unsigned int*)a_regs;
  const unsigned int* b = (const unsigned int*)b_regs;
  unsigned int sfa = {sfa};
  unsigned int sfb = {sfb};
  asm volatile("{ptx}" : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]),
      "r"(b[0]), "r"(b[1]), "r"(sfa), "r"(sfb));
}}
"""


def block_scaled_mma(
    instruction: BlockScaledMmaSync, select: ScaleSelect, d_regs, a_regs, b_regs, sfa_regs, sfb_regs, words=(True, True)
):
    """One block-scaled ``mma.sync`` (the :func:`block_scaled_mma_name` helper) on the registers at the pointers
    (a ``p`` scale's pointer at its first selected byte).

    Example:
        >>> import tvm
        >>> from tirx_layout.hw.mma_sync_scaled import ScaleSelect
        >>> z = tvm.tirx.const(0, "uint32")
        >>> call = block_scaled_mma(BlockScaledMmaSync("float8_e4m3fn", "float8_e4m3fn"), ScaleSelect(0, 0, 0, 0, 0, 0),
        ...                         z, z, z, z, z)
        >>> "tirx_layout_mmasync_mmabs_m16n8k32_mxf8f6f4_x1_f32_e4m3_e4m3_ue8m0_a0_0_b0_0_ww" in str(call)
        True
    """
    what = block_scaled_mma_name(instruction, select, words)
    source = block_scaled_mma_source(instruction, select, words)
    return helper_call(FAMILY, what, source, d_regs, a_regs, b_regs, sfa_regs, sfb_regs)


__all__ = [
    "FAMILY",
    "block_scaled_mma",
    "block_scaled_mma_name",
    "block_scaled_mma_source",
    "mma",
    "mma_name",
    "mma_source",
]
