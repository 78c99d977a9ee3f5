"""``T.tile_mma`` lowered to the warp-level ``mma.sync.aligned.m16n8k*`` (every target from sm_80), from the
:class:`~tirx_layout.ops.mma.spec.MmaSyncMma` record: D, A and B are register fragments whose layouts
(``hw/mma_sync.py``) decide the instructions, and the record's :class:`~tirx_layout.hw.mma_sync.WarpProgram` lists
them, the same for every warp holding D.

What is emitted: without ``accumulate`` (or under ``if not accumulate`` when it is an expression) D's registers are
set to zero, then one ``mma`` helper per instruction computes ``D = A * B + D`` in place (the instruction's C is
its D), K steps outermost. Nothing else: the operands are the thread's own registers, and ``mma.sync`` is
synchronous, so no fence or barrier is needed around it.

Example (a 16 x 8 x 32 bfloat16 tile on one warp: two m16n8k16 instructions):
    >>> import re, tvm, tirx_layout
    >>> from tirx_layout import mma_sync_a_layout, mma_sync_b_layout, mma_sync_c_layout
    >>> from tirx_layout.transform import lower_tile_ops
    >>> func = tvm.script.from_source('''
    ... @T.prim_func
    ... def k():
    ...     T.func_attr({"target": T.target({"kind": "cuda", "arch": "sm_80"})})
    ...     T.device_entry()
    ...     tx = T.thread_id([32])
    ...     A = T.alloc_local((16, 32), "bfloat16", layout=mma_sync_a_layout((16, 32), "bfloat16"))
    ...     B = T.alloc_local((8, 32), "bfloat16", layout=mma_sync_b_layout((8, 32), "bfloat16"))
    ...     D = T.alloc_local((16, 8), "float32", layout=mma_sync_c_layout((16, 8)))
    ...     T.tile_mma(D, A, B, True)
    ... ''', extra_vars={"T": tvm.script.tirx, "mma_sync_a_layout": mma_sync_a_layout,
    ...                 "mma_sync_b_layout": mma_sync_b_layout, "mma_sync_c_layout": mma_sync_c_layout})
    >>> re.findall(r'func_call\\("tirx_layout_(\\w+)"', lower_tile_ops(func).script())
    ['mmasync_mma_m16n8k16_f32_bf16_bf16', 'mmasync_mma_m16n8k16_f32_bf16_bf16']
"""

from __future__ import annotations

import tvm
from tvm import tirx

from ...hw.mma_sync import elements_per_register
from ...ir.rewrite import sequence
from ..helpers import mmasync
from ..operands import FragmentOperand
from .spec import TILE_MMA, MmaSyncMma


def _register(side: FragmentOperand, register: int):
    """The address of 32-bit register ``register`` of fragment ``side`` (its element slot ``register * r``)."""
    slot = register * elements_per_register(side.dtype)
    return tvm.tirx.address_of(tvm.tirx.BufferLoad(side.view, [tirx.IntImm("int32", slot)]))


def _zero(side: FragmentOperand):
    """Every slot of D's fragment set to zero (the MMA then adds A * B to it)."""
    zero = tvm.tirx.const(0, side.dtype)
    return [tirx.BufferStore(side.view, zero, [tirx.IntImm("int32", slot)]) for slot in range(side.extent)]


@TILE_MMA.lowering("mmasync")
def lower_mma_sync(record: MmaSyncMma, ctx):
    call, d, a, b, program = record.call, record.d, record.a, record.b, record.program
    accumulate = call.accumulate
    if isinstance(accumulate, bool | int | tirx.IntImm):  # a constant: clear D or not, at build time
        clear = [] if int(accumulate) else [sequence(_zero(d))]
    else:
        clear = [tirx.IfThenElse(tvm.tirx.Not(accumulate), sequence(_zero(d)), None)]
    steps = [
        mmasync.mma(program.instruction, _register(d, dr), _register(a, ar), _register(b, br))
        for dr, ar, br in program.steps
    ]
    return sequence([d.declaration(), a.declaration(), b.declaration(), *clear, *steps])
