"""What both MMA lowerings (``tcgen05.mma`` in ``lower_mma``, ``wgmma`` in ``lower_wgmma``) read off a shared-memory
operand: its matrix descriptor (through the one derivation, ``hw.smem_descriptor.shared_matrix_descriptor``), where
its first K step starts (an expression where the region starts at a symbolic stage) and where each later K step
starts, and the pointer the device helpers take."""

from __future__ import annotations

import dataclasses

import numpy as np
import tvm
from tvm import tirx

from ..hw.memory import SWIZZLE_128B_BASE32B, SWIZZLE_BYTES
from ..hw.smem_descriptor import shared_matrix_descriptor
from ..layout import ComposeLayout, S, TileLayout
from .copy_plan import MemoryOperand

#: Bytes a swizzled MMA operand buffer is aligned to: the largest swizzle repeat (8 rows of 128 bytes), since the
#: hardware applies the swizzle to absolute shared addresses.
OPERAND_ALIGNMENT = 8 * max(SWIZZLE_BYTES.values())
#: Where each descriptor swizzle mode's XOR pattern repeats (8 rows of the swizzle width; 4 rows of 128 bytes for
#: the 128B-with-32B-atom mode): a stage of an operand buffer must move by whole repeats.
_REPEAT_BYTES = {mode: 8 * width for mode, width in SWIZZLE_BYTES.items() if mode != "none"}
_REPEAT_BYTES[SWIZZLE_128B_BASE32B] = 4 * 128


def shared_operand(side: MemoryOperand, rows: int, k: int, name: str, family: str = "tcgen05"):
    """The matrix descriptor of a shared operand region (start field zero), the element offset from the buffer's
    start of the first K step's first element where every symbolic (stage) index is 0, how far the symbolic
    indices move the region in 16-byte units (``None`` when the region is static; else an ``int32`` expression
    the descriptor's start field adds), and each K step's start in 16-byte units past the first step's.

    The stage moves the descriptor instead of its address, so the descriptor of stage 0 does not depend on the
    loop that picks the stage: nvcc computes it once, out of the loop, and each MMA adds the stage's units.

    The region is the buffer's layout sliced to it (leading dimensions taking one index, K sliced by whole
    instruction steps); a symbolic start must move the region by whole swizzle repeats, so that every stage is
    swizzled alike and one descriptor serves them all. ``family`` is the instruction reading the descriptor
    (``"tcgen05"`` or ``"wgmma"``: the derivation applies its limits).

    Example (a 128B-swizzled K-major float16 B: SBO 8 rows x 128 bytes, K steps of 16 elements 32 bytes apart):
        >>> import tvm
        >>> from tirx_layout import mma_shared_layout
        >>> from tirx_layout.transform.copy_plan import operand
        >>> B = tvm.tirx.decl_buffer((64, 64), "float16", "B", scope="shared", data_alignment=1024)
        >>> side = operand(B[0:64, 0:64], {B: mma_shared_layout("float16", "128B", (64, 64))}, "B")
        >>> desc, start, stage_units, steps = shared_operand(side, 64, 64, "B")
        >>> desc.swizzle, desc.sbo, start, stage_units, steps
        ('128B', 1024, 0, None, [0, 2, 4, 6])
    """
    if side.buffer.scope() not in ("shared", "shared.dyn"):
        raise ValueError(f"{name} of tile_mma must be in shared memory, {side.buffer.name} is {side.buffer.scope()}")
    shape = list(side.shape)
    layout = side.layout if side.layout is not None else TileLayout(S[tuple(shape)])
    for d, (begin, extent) in enumerate(zip(side.begins, side.extents, strict=True)):
        if not isinstance(begin, int) and extent != 1:
            raise ValueError(
                f"{name}'s region {side.region} starts at {begin} on dimension {d}, which it takes {extent} indices "
                "of; only a dimension the region takes one index of (a stage) may start at a symbolic index"
            )
    static = [b if isinstance(b, int) else 0 for b in side.begins]
    sliced = layout.slice(shape, [(b, b + e) for b, e in zip(static, side.extents, strict=True)])
    if sliced is None:
        raise ValueError(f"{name}'s region {side.region} is not an affine sub-box of its layout {layout}")
    descriptor = shared_matrix_descriptor(sliced, (rows, k), side.dtype, 0, operand=name, family=family)
    repeat = _REPEAT_BYTES.get(descriptor.swizzle, 16)
    if descriptor.swizzle != "none" and int(side.buffer.data_alignment) < OPERAND_ALIGNMENT:
        raise ValueError(
            f"{name} ({side.buffer.name}) is {descriptor.swizzle}-swizzled, which the hardware applies to absolute "
            f"shared addresses; declare it with align={OPERAND_ALIGNMENT} (it has {int(side.buffer.data_alignment)})"
        )
    stage_units = None
    for d, begin in enumerate(side.begins):
        if not isinstance(begin, int):
            step = _stage_step(layout, shape, static, side.extents, d, name)
            if step * side.element_bytes % repeat:
                raise ValueError(
                    f"{name}'s region {side.region}: dimension {d} moves it by {step * side.element_bytes} bytes, "
                    f"not whole {repeat}-byte {descriptor.swizzle} swizzle repeats; index it with a constant"
                )
            # whole repeats are whole 16-byte units (every repeat is a multiple of 16 bytes)
            units = begin * (step * side.element_bytes // 16)
            stage_units = units if stage_units is None else stage_units + units
    first = descriptor.k_offsets[0]
    if any((offset - first) % 16 for offset in descriptor.k_offsets):  # the start field counts 16-byte units
        raise ValueError(f"{name}: K steps start at byte offsets {descriptor.k_offsets}, not 16-byte aligned")
    start = (descriptor.start + first) // side.element_bytes
    step_units = [(offset - first) >> 4 for offset in descriptor.k_offsets]
    return dataclasses.replace(descriptor, start=0, k_offsets=(0,)), start, stage_units, step_units


def _stage_step(layout, shape, begins, extents, dim: int, name: str) -> int:
    """Elements (before the swizzle) between the region at index v and v + 1 of dimension ``dim``, the same for
    every index and element."""
    tile = layout.tile_layout if isinstance(layout, ComposeLayout) else layout
    grids = np.meshgrid(*[np.arange(e) for e in shape], indexing="ij")
    table = np.asarray(tile.apply(*grids, shape=shape)["m"], np.int64)

    def region(v):
        index = tuple(v if d == dim else slice(b, b + e) for d, (b, e) in enumerate(zip(begins, extents, strict=True)))
        return table[index]

    step = int(region(1)[(0,) * (len(shape) - 1)] - region(0)[(0,) * (len(shape) - 1)]) if shape[dim] > 1 else 0
    for v in range(shape[dim]):
        if (region(v) - region(0) != v * step).any():
            raise ValueError(
                f"{name}: index {v} of dimension {dim} does not move the whole region by one fixed offset; "
                "index that dimension with a constant"
            )
    return step


def operand_pointer(view, start):
    """``&view[start]``: the shared address of an operand's first K step.

    Example:
        >>> operand_pointer(tvm.tirx.decl_buffer((64,), "float16", "B_flat", scope="shared"), 16)
        T.address_of(B_flat[16])
    """
    index = tirx.IntImm("int32", start) if isinstance(start, int) else start
    return tvm.tirx.address_of(tvm.tirx.BufferLoad(view, [index]))


def as_u32(flag):
    """A boolean expression as the ``uint32`` the helpers take (0 or 1); a constant stays a constant.

    Example:
        >>> as_u32(tirx.const(True, "bool"))
        T.uint32(1)
    """
    if isinstance(flag, tirx.IntImm):
        return tirx.const(int(bool(flag.value)), "uint32")
    return tirx.Cast("uint32", flag)


__all__ = ["OPERAND_ALIGNMENT", "as_u32", "operand_pointer", "shared_operand"]
