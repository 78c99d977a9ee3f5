"""A tile copy with a tensor-memory side: ``tcgen05.ld``/``tcgen05.st`` between TMEM and a register fragment
(``ld_st``), ``tcgen05.cp`` from shared memory into TMEM (``cp``). :func:`plan_tmem_copy` plans and checks it (the
copy's rules call it, so VerifyLayouts reports what the lowering would refuse); :func:`lower_tmem_copy` emits the
plan at the TMEM address the function's allocations give (``alloc.TmemAllocations``).

Example (a 128 x 64 fp32 accumulator loaded into its one-row-per-thread image: one ``32x32b.x64``):
    >>> import tvm
    >>> from tirx_layout import tcgen05_atom_layout, tmem_datapath_layout
    >>> from tirx_layout.ops.operands import operand
    >>> acc = tvm.tirx.decl_buffer((128, 64), "float32", "acc", scope="tmem")
    >>> frag = tvm.tirx.decl_buffer((128, 64), "float32", "frag", scope="local")
    >>> layouts = {acc: tmem_datapath_layout("D", 128, 64), frag: tcgen05_atom_layout("32x32b", (128, 64), "float32")}
    >>> plan = plan_tmem_copy(operand(frag[0:128, 0:64], layouts, "dst"), operand(acc[0:128, 0:64], layouts, "src"),
    ...                       "cta", 128)
    >>> plan.loading, plan.copy.shape, list(plan.copy.instructions())  # (.xN, lane half, first slot, column)
    (True, '32x32b', [(64, 0, 0, 0)])
"""

from __future__ import annotations

import dataclasses

import tvm

from ...ir.op_calls import full_region
from ..operands import FragmentOperand, MemoryOperand, TmemOperand
from .alloc import TmemAllocations
from .cp import CpPlan, lower_shared_to_tmem, plan_shared_to_tmem
from .ld_st import FragmentCopyPlan, lower_tmem_fragment_copy, plan_tmem_fragment_copy


def plan_tmem_copy(dst, src, scope: str, threads: int) -> CpPlan | FragmentCopyPlan:
    """The plan of a copy from ``src`` to ``dst`` (operands, one of them a ``TmemOperand``) at ``scope`` in a CTA of
    ``threads`` threads: a :class:`~tirx_layout.ops.tmem.cp.CpPlan` from shared memory, else a
    :class:`~tirx_layout.ops.tmem.ld_st.FragmentCopyPlan`; ``ValueError`` when no instruction moves it.

    Example: ``plan_tmem_copy(frag, acc, "cta", 128)`` for ``T.tile_copy(frag, acc)`` with ``acc`` in
    ``tmem_datapath_layout("D", 128, 64)`` and ``frag`` in its ``32x32b`` image is one ``.x64`` load.
    """
    tmem, other = (src, dst) if isinstance(src, TmemOperand) else (dst, src)
    if tmem is dst and isinstance(other, MemoryOperand) and other.buffer.scope() == "shared":
        return plan_shared_to_tmem(tmem, other, scope)
    if not isinstance(other, FragmentOperand):
        raise ValueError(
            f"T.tile_copy between {tmem} and {other}: TMEM is reached from register fragments "
            "(tcgen05.ld/st) or, from shared memory, by tcgen05.cp"
        )
    if other.dtype == tmem.dtype:
        return plan_tmem_fragment_copy(tmem, other, tmem is src, scope, threads)
    # A casting copy: tcgen05.ld/st move TMEM's dtype, into or out of registers placed as the copy's fragment.
    name = f"{other.buffer.name}_{tmem.dtype}"
    registers = tvm.tirx.decl_buffer(other.shape, tmem.dtype, name, scope="local")
    staging = FragmentOperand(full_region(registers), other.layout, other.role)
    plan = plan_tmem_fragment_copy(tmem, staging, tmem is src, scope, threads)
    return dataclasses.replace(plan, staging=staging)


def lower_tmem_copy(dst, src, scope: str, ctx, plan=None):
    """The ``tcgen05`` instructions of a copy from ``src`` to ``dst`` (``plan``: its :func:`plan_tmem_copy`, made
    here when not given), in the lowering context ``ctx``. A casting copy's plan moves its ``staging`` fragment: the
    caller converts between it and the copy's fragment (``ops/copy/lower.py``).

    Example: ``lower_tmem_copy(frag, acc, "cta", ctx)`` is the ``tcgen05.ld`` of :func:`plan_tmem_copy`'s example
    and its wait.
    """
    plan = plan if plan is not None else plan_tmem_copy(dst, src, scope, ctx.threads.count)
    allocations = ctx.state(TmemAllocations)
    tmem, other = (src, dst) if isinstance(src, TmemOperand) else (dst, src)
    taddr = allocations.taddr(tmem.buffer)
    if isinstance(plan, CpPlan):
        return lower_shared_to_tmem(plan, other, ctx.threads, taddr, scope, lambda: allocations.cp_barrier(tmem))
    return lower_tmem_fragment_copy(plan, plan.staging or other, ctx.threads, taddr)
