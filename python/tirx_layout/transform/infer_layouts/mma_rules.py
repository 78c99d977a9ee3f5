"""The strict inference rule of ``T.tile_mma``, registered with InferLayouts when the pass is imported: a shared
operand (A or B) declared without a layout may take only a layout the MMA's shared-memory matrix descriptor can
read. Its candidates are the canonical K-major layouts (``mma_shared_layout``) in the swizzle modes 128B, 64B, 32B
and none, those that fit the buffer's shape and whose descriptor derives for the operand; InferLayouts then keeps
the one cheapest for the copies that fill the buffer (ties to the wider swizzle).

K-major because it is the one majorness every MMA kind reads (the ISA reads only some types MN-major) and the one a
row-major global tile fills with whole 16-byte vectors along its contiguous K.
"""

from __future__ import annotations

from ...hw.constructors import mma_shared_layout
from ...hw.memory import SWIZZLE_BYTES
from ...hw.smem_descriptor import shared_matrix_descriptor
from ...ir.mma_ops import as_mma
from ...ir.spans import source_location
from .infer import OperandLayouts, register_operand_rule

#: Swizzle modes tried for an open MMA operand, in preference order (the wider swizzle wins a tie).
MMA_OPERAND_MODES = ("128B", "64B", "32B", "none")


_REQUIREMENT = (
    f"a canonical K-major MMA layout ({', '.join(MMA_OPERAND_MODES)}) needs the last two dimensions (rows, K) to be "
    "whole atoms of 8 rows by the swizzle width (16 bytes with no swizzle), K a whole number of instruction K "
    "steps (32 bytes)"
)


def mma_operand_layouts(buffer, dtype: str | None = None) -> tuple:
    """``((mode, layout, alignment), ...)``: the canonical K-major layouts of ``MMA_OPERAND_MODES`` that fit
    ``buffer``'s shape (``(..., rows, K)``: leading stage dimensions stack whole operands) and whose descriptor
    derives, each with the byte alignment its storage needs (:func:`swizzle_repeat_bytes`).

    Example:
        >>> import tvm
        >>> tile = tvm.tirx.decl_buffer((128, 32), "float16", "tile", scope="shared")
        >>> [mode for mode, _, _ in mma_operand_layouts(tile)]  # K = 64 bytes: no whole 128-byte swizzle row
        ['64B', '32B', 'none']
    """
    dtype = str(dtype or buffer.dtype)
    shape = tuple(int(e) for e in buffer.shape)
    found = []
    for mode in MMA_OPERAND_MODES:
        try:
            layout = mma_shared_layout(dtype, mode, shape)
            shared_matrix_descriptor(mma_shared_layout(dtype, mode, shape[-2:]), shape[-2:], dtype)
        except ValueError:
            continue  # this mode cannot hold the shape (or the descriptor cannot read it): not a candidate
        found.append((mode, layout, swizzle_repeat_bytes(mode)))
    return tuple(found)


def swizzle_repeat_bytes(mode: str) -> int:
    """The alignment an operand in swizzle ``mode`` needs: the MMA applies the swizzle to absolute shared addresses,
    so the buffer starts on a repeat of its pattern (8 rows of the swizzle width); none for no swizzle.

    Example:
        >>> swizzle_repeat_bytes("128B"), swizzle_repeat_bytes("32B"), swizzle_repeat_bytes("none")
        (1024, 256, 0)
    """
    return 0 if mode == "none" else 8 * SWIZZLE_BYTES[mode]


def tile_mma_operand_rule(stmt) -> dict:
    """``{buffer: OperandLayouts}`` for the shared A and B of a ``T.tile_mma`` statement; empty for any other.

    Example: for ``T.tile_mma(acc, a_tile, b_tile)`` with ``a_tile`` a ``(128, 64)`` float16 shared buffer, the
    entry of ``a_tile`` lists the 128B, 64B, 32B and "none" K-major layouts of ``mma_shared_layout``.
    """
    mma = as_mma(stmt)
    if mma is None:
        return {}
    legal = {}
    for role, region in (("A", mma.a), ("B", mma.b)):
        buffer = region.source
        if buffer.scope() != "shared" or len(buffer.shape) < 2:
            continue
        why = f"{role} of T.tile_mma{source_location(stmt)}"
        legal[buffer] = OperandLayouts(why, mma_operand_layouts(buffer), _REQUIREMENT)
    return legal


register_operand_rule(tile_mma_operand_rule)

__all__ = ["MMA_OPERAND_MODES", "mma_operand_layouts", "swizzle_repeat_bytes", "tile_mma_operand_rule"]
