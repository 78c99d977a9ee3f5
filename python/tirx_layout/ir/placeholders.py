"""Placeholders one lowering leaves in TIR for a later step to fill in: ``tirx_layout.tmem_base_address(buffer)``
stands for the TMEM address ``tcgen05.alloc`` returns for a TMEM buffer. The MMA lowering writes it (it knows the
offset of an operand inside the buffer, not where the buffer is allocated); the TMEM allocation
(``ops/tmem/alloc.py``), which allocates, replaces it by the address."""

from __future__ import annotations

import tvm

from .op_calls import register_op

TMEM_BASE_OP = register_op("tmem_base_address", "the TMEM address of a TMEM buffer")


def tmem_base_address(buffer):
    """The TMEM address (``uint32``: lane << 16 | column) of TMEM ``buffer``'s allocation, to be filled in by the
    step that allocates it.

    Example:
        >>> import tvm
        >>> acc = tvm.tirx.decl_buffer((128, 64), "float32", "acc", scope="tmem")
        >>> str(tmem_base_address(acc).ty), tmem_base_buffer(tmem_base_address(acc)).same_as(acc)
        ('uint32', True)
    """
    return tvm.ir.Call(TMEM_BASE_OP, [buffer], ret_ty="uint32")


def tmem_base_buffer(expr):
    """The TMEM buffer whose base address ``expr`` stands for, else ``None``.

    Example:
        >>> tmem_base_buffer(tvm.tirx.const(0, "uint32")) is None
        True
    """
    if isinstance(expr, tvm.ir.Call) and getattr(expr.op, "name", "") == TMEM_BASE_OP.name:
        return expr.args[0]
    return None
