"""Block-scaled ``T.tile_mma`` lowered to the ``mma.sync ... .block_scale`` of sm_120a, from the
:class:`~tirx_layout.ops.mma.spec.MmaSyncScaledMma` record: D, A, B and the scale factors are register fragments
whose layouts (``hw/mma_sync.py``, ``hw/mma_sync_scaled.py``) decide the instructions and, per instruction, the
scale registers and the byte-id/thread-id selectors it names.

What is emitted: without ``accumulate`` (or under ``if not accumulate`` when it is an expression) D's registers are
set to zero, then one helper per instruction computes ``D = (A * SF_A) (B * SF_B) + D`` in place, K steps
outermost, the scale operands the 32-bit registers the fragments' layouts put each instruction's scales in (passed
as whole words, or as the instruction's bytes where a thread's scale storage ends inside the register).

Example (a 16 x 8 x 64 e4m3 tile on one warp: two m16n8k32 instructions, the K chunks in bytes 0 and 1):
    >>> import re, tvm, tirx_layout
    >>> from tirx_layout import mma_sync_a_layout, mma_sync_b_layout, mma_sync_c_layout, mma_sync_scale_layout
    >>> from tirx_layout.transform import lower_tile_ops
    >>> func = tvm.script.from_source('''
    ... @T.prim_func
    ... def k():
    ...     T.func_attr({"target": T.target({"kind": "cuda", "arch": "sm_120a"})})
    ...     T.device_entry()
    ...     tx = T.thread_id([32])
    ...     A = T.alloc_local((16, 64), "float8_e4m3fn", layout=mma_sync_a_layout((16, 64), "float8_e4m3fn"))
    ...     B = T.alloc_local((8, 64), "float8_e4m3fn", layout=mma_sync_b_layout((8, 64), "float8_e4m3fn"))
    ...     SA = T.alloc_local((16, 2), "float8_e8m0fnu", layout=mma_sync_scale_layout("A", (16, 2)))
    ...     SB = T.alloc_local((8, 2), "float8_e8m0fnu", layout=mma_sync_scale_layout("B", (8, 2)))
    ...     D = T.alloc_local((16, 8), "float32", layout=mma_sync_c_layout((16, 8)))
    ...     T.tile_mma(D, A, B, True, scale_a=SA, scale_b=SB)
    ... ''', extra_vars={"T": tvm.script.tirx, "mma_sync_a_layout": mma_sync_a_layout,
    ...                 "mma_sync_b_layout": mma_sync_b_layout, "mma_sync_c_layout": mma_sync_c_layout,
    ...                 "mma_sync_scale_layout": mma_sync_scale_layout})
    >>> names = re.findall(r'func_call\\("tirx_layout_mmasync_(\\w+)"', lower_tile_ops(func).script())
    >>> names[0], names[1][-12:]  # the second K step: the second chunk's byte; two bytes stored: no whole words
    ('mmabs_m16n8k32_mxf8f6f4_x1_f32_e4m3_e4m3_ue8m0_a0_0_b0_0_pp', 'a1_0_b1_0_pp')
"""

from __future__ import annotations

import tvm
from tvm import tirx

from ...hw.mma_sync_scaled import TARGET_FAMILY
from ...ir.rewrite import sequence
from ..helpers import mmasync
from ..operands import FragmentOperand
from .spec import TILE_MMA, MmaSyncScaledMma

#: Scale factors per 32-bit scale register.
SCALES_PER_REGISTER = 4


def _slot(side: FragmentOperand, slot: int):
    """The address of element slot ``slot`` of fragment ``side``."""
    return tvm.tirx.address_of(tvm.tirx.BufferLoad(side.view, [tirx.IntImm("int32", slot)]))


def _zero(side: FragmentOperand):
    """Every slot of D's fragment set to zero (the MMA then adds the scaled A * B to it)."""
    zero = tvm.tirx.const(0, side.dtype)
    return [tirx.BufferStore(side.view, zero, [tirx.IntImm("int32", slot)]) for slot in range(side.extent)]


def _scale_operand(side: FragmentOperand, register: int, byte_id: int):
    """(pointer, whole word): the scale register ``register`` of ``side`` as a whole 32-bit word where the
    fragment's storage holds all of it, else its bytes from ``byte_id`` on (reading the word would run past the
    thread's scale storage)."""
    whole = SCALES_PER_REGISTER * (register + 1) <= side.extent
    first = SCALES_PER_REGISTER * register + (0 if whole else byte_id)
    return _slot(side, first), whole


@TILE_MMA.lowering(TARGET_FAMILY)
def lower_block_scaled_mma_sync(record: MmaSyncScaledMma, ctx):
    call, program, instruction = record.call, record.program, record.instruction
    d, a, b, sfa, sfb = record.d, record.a, record.b, record.sfa, record.sfb
    accumulate = call.accumulate
    if isinstance(accumulate, bool | int | tirx.IntImm):  # a constant: clear D or not, at build time
        clear = [] if int(accumulate) else [sequence(_zero(d))]
    else:
        clear = [tirx.IfThenElse(tvm.tirx.Not(accumulate), sequence(_zero(d)), None)]
    steps = []
    for (dr, ar, br), select in zip(program.steps, record.selects, strict=True):
        scales = [
            _scale_operand(side, register, byte_id)
            for side, register, byte_id in (
                (sfa, select.a_register, select.byte_a),
                (sfb, select.b_register, select.byte_b),
            )
        ]
        steps.append(
            mmasync.block_scaled_mma(
                instruction,
                select,
                _slot(d, dr),  # one float32 element per register
                _slot(a, 4 * ar),  # four 8-bit elements per register
                _slot(b, 4 * br),
                scales[0][0],
                scales[1][0],
                words=(scales[0][1], scales[1][1]),
            )
        )
    declarations = [side.declaration() for side in (d, a, b, sfa, sfb)]
    return sequence([*declarations, *clear, *steps])
