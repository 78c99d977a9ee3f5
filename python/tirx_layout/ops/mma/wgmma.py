"""``T.tile_mma`` and ``T.tile_mma_wait`` lowered for Hopper's ``wgmma`` (sm_90a): a K loop of ``wgmma.mma_async``
instructions issued by whole warpgroups, and ``wgmma.wait_group``, from the
:class:`~tirx_layout.ops.mma.spec.WgmmaMma` and :class:`~tirx_layout.ops.mma.spec.MmaWait` records.

* D is a register fragment ``(64 w, N)`` in the ISA's accumulator layout: warpgroup ``g`` holds rows
  ``64 g .. 64 g + 63`` and issues its own ``m64nNkK`` instructions on them; A in shared memory (the ``_ss`` form:
  a matrix descriptor, warpgroup ``g`` reading A's rows ``64 g ..``, a fixed offset further per warpgroup) or a
  register fragment in the ISA's A layout (the ``_rs`` form); B in shared memory.

What is emitted (PTX ISA, "Asynchronous Warpgroup Level Matrix Multiply-Accumulate": wgmma.fence orders the
warpgroup's register and shared-memory accesses before the wgmma; wgmma reads shared memory through the async
proxy; commit_group closes a group; wait_group n waits until at most n groups are pending):

* ``scope="cta"``: every thread ``fence.proxy.async.shared::cta`` (its generic shared writes become visible to the
  async proxy), then a CTA barrier that orders every thread's writes before any warpgroup's wgmma.
  ``scope="warpgroup"``: nothing; the shared operands must already be published to the async proxy and ordered
  before the op: a TMA load (an async-proxy write) and an mbarrier wait, or writer threads'
  ``T.mbarrier_arrive`` (which emits the proxy fence) and the wait. A proxy fence here would only cover the
  warpgroup's own writes, yet costs a full memory barrier per group in a pipeline's K loop (the simulator reports
  an operand some thread wrote without its fence as a DataRace);
* a compiler fence on D's (and A's) registers, each shared operand's full descriptor made once
  (``shared_operands.descriptor_value``), ``wgmma.fence``, the K loop (step ``s`` adds its start offset in 16-byte
  units to each descriptor; step 0's scale-d is ``accumulate``, later steps 1), ``wgmma.commit_group``;
* the synchronous form (default) then ``wgmma.wait_group 0`` and a compiler fence on D's registers: D is readable
  after the op. ``wait=False`` stops after the commit; ``T.tile_mma_wait(pending)`` emits ``wgmma.wait_group
  pending`` and the compiler fences on every accumulator an asynchronous tile_mma of the function writes.

Example (64 x 64 x 32 float16 from 64B-swizzled tiles: two K steps of 16 in one group, then the wait):
    >>> import re, tvm, tirx_layout
    >>> from tirx_layout.transform import lower_tile_ops
    >>> func = tvm.script.from_source('''
    ... @T.prim_func
    ... def k():
    ...     T.func_attr({"target": T.target({"kind": "cuda", "arch": "sm_90a"})})
    ...     T.device_entry()
    ...     tx = T.thread_id([128])
    ...     A = T.alloc_shared((64, 32), "float16", layout=mma_shared_layout("float16", "64B", (64, 32)),
    ...                        align=1024)
    ...     B = T.alloc_shared((64, 32), "float16", layout=mma_shared_layout("float16", "64B", (64, 32)),
    ...                        align=1024)
    ...     acc = T.alloc_local((64, 64), "float32", layout=wgmma_accumulator_layout(64))
    ...     T.tile_mma(acc, A, B)
    ... ''', extra_vars={"T": tvm.script.tirx, "mma_shared_layout": mma_shared_layout,
    ...                 "wgmma_accumulator_layout": wgmma_accumulator_layout})
    >>> re.findall(r'func_call\\("tirx_layout_(\\w+)"', lower_tile_ops(func).script())
    ... # doctest: +NORMALIZE_WHITESPACE
    ['sync_fence_proxy_async', 'wgmma_keep_f32_x32', 'wgmma_smem_descriptor', 'wgmma_smem_descriptor', 'wgmma_fence',
     'wgmma_mma_m64n64k16_f32_f16_f16_ss_t00', 'wgmma_mma_m64n64k16_f32_f16_f16_ss_t00', 'wgmma_commit_group',
     'wgmma_wait_group_0', 'wgmma_keep_f32_x32']
"""

from __future__ import annotations

import tvm
from tvm import tirx

from ...hw.threads import WARPGROUP_THREADS
from ...ir.device_calls import cta_barrier
from ...ir.rewrite import sequence
from ..helpers import sync, wgmma
from ..operands import FragmentOperand
from .shared_operands import advanced, as_u32, descriptor_value
from .spec import TILE_MMA, TILE_MMA_WAIT, MmaWait, WgmmaMma


def _register_fence(side: FragmentOperand):
    """A compiler fence on every 32-bit register of fragment ``side``."""
    registers = side.extent * side.element_bytes // 4
    return wgmma.keep(registers, side.dtype == "float32", _registers(side, 0))


def _registers(side: FragmentOperand, slot: int):
    return tvm.tirx.address_of(tvm.tirx.BufferLoad(side.view, [tirx.IntImm("int32", slot)]))


@TILE_MMA.lowering("wgmma")
def lower_wgmma_mma(record: WgmmaMma, ctx):
    call, d, a = record.call, record.d, record.a
    instruction = record.instruction
    in_registers = record.a_in_registers
    # Each shared operand's full descriptor is made once (its address arithmetic, a stage's units added); K step s
    # adds its start offset in 16-byte units (shared_operands.descriptor_value, as for tcgen05).
    b_desc = tirx.Var("b_desc", "uint64")
    descriptors = [tirx.Bind(b_desc, _descriptor(record.b_shared, record.b))]
    if not in_registers:
        rows = 0
        if record.warpgroups > 1:  # the executing warpgroup's 64 rows of A
            rows = tvm.tirx.floordiv(ctx.threads.index, WARPGROUP_THREADS) * record.a_rows_offset
        a_desc = tirx.Var("a_desc", "uint64")
        descriptors.insert(0, tirx.Bind(a_desc, _descriptor(record.a_shared, a, rows)))
    d_regs = _registers(d, 0)
    fences = [_register_fence(d)] + ([_register_fence(a)] if in_registers else [])
    loop = []
    for s in range(record.k // instruction.k):
        scale_d = as_u32(call.accumulate) if s == 0 else tirx.const(1, "uint32")
        b_arg = advanced(b_desc, record.b_shared.steps[s])
        if in_registers:  # step s reads the fragment's slots s * a_elements .. (wgmma_operand_a_layout)
            a_regs = _registers(a, s * instruction.a_elements)
            loop.append(wgmma.mma_rs(instruction, d_regs, a_regs, b_arg, scale_d))
        else:
            a_arg = advanced(a_desc, record.a_shared.steps[s])
            loop.append(wgmma.mma_ss(instruction, d_regs, a_arg, b_arg, scale_d))
    before = [sync.fence_proxy_async(), cta_barrier()] if call.scope == "cta" else []
    after = [wgmma.wait_group(0, d_regs), _register_fence(d)] if call.wait else []
    declarations = [d.declaration(), a.declaration(), record.b.declaration()]
    body = [*before, *fences, *descriptors, wgmma.fence(), *loop, wgmma.commit_group(), *after]
    return sequence([*declarations, *body])


def _descriptor(shared, side, extra_elements=0):
    """The full wgmma descriptor of a shared operand's first K step in ``side``'s flat view (the view the op
    declares), ``extra_elements`` further."""
    bits = shared.descriptor.encode(family="wgmma")
    return descriptor_value(shared, wgmma.smem_descriptor, bits, extra_elements, side.view)


@TILE_MMA_WAIT.lowering("wgmma")
def lower_wgmma_wait(record: MmaWait, ctx):
    """``wgmma.wait_group pending``, then the compiler fences on the accumulators of the function's asynchronous
    tile_mmas (their registers are final once their group retired)."""
    accumulators = record.accumulators
    wait = wgmma.wait_group(record.pending, _registers(accumulators[0], 0))
    return sequence([*(s.declaration() for s in accumulators), wait, *(_register_fence(s) for s in accumulators)])
