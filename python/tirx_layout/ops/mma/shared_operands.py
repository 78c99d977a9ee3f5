"""What both MMA families (``tcgen05.mma``, ``wgmma``) read off a shared-memory operand of ``T.tile_mma``: its matrix
descriptor (through the one derivation, ``hw.smem_descriptor.shared_matrix_descriptor``), where its first K step
starts (an expression where the region starts at a symbolic stage), where each later K step starts, and -- for
wgmma, whose warpgroups each read their own 64 rows of A -- how far apart the warpgroups' rows start."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import tvm
from tvm import tirx

from ...hw.memory import swizzle_repeat_bytes
from ...hw.smem_descriptor import SharedDescriptor, shared_matrix_descriptor
from ...hw.wgmma import WGMMA_M
from ...layout import ComposeLayout
from ..operands import MemoryOperand, operand


@dataclass(frozen=True)
class SharedOperand:
    """A shared-memory operand of an MMA as the instruction reads it: its ``descriptor`` (start field zero), the
    element offset ``start`` of its first K step's first element with every symbolic (stage) index 0, how far the
    symbolic indices move it in 16-byte units (``stage_units``: ``None`` when the region is static, else an
    ``int32`` expression), and each K step's start in 16-byte units past the first (``steps``)."""

    side: MemoryOperand
    descriptor: SharedDescriptor
    start: object
    stage_units: object
    steps: tuple[int, ...]

    @property
    def element_start(self):
        """The first K step's element offset with the stage folded in (an int, or an expression of the stage
        indices): where a wgmma helper, which builds its descriptor from an address, starts."""
        if self.stage_units is None:
            return self.start
        # whole swizzle repeats: whole 16-byte units, whole elements
        return tvm.sym.Analyzer().simplify(self.start + self.stage_units * (16 // self.side.element_bytes))


def shared_operand(side: MemoryOperand, rows: int, k: int, name: str, family: str = "tcgen05") -> SharedOperand:
    """The :class:`SharedOperand` a ``(rows, k)`` shared operand region is to an MMA of ``family`` (``"tcgen05"``
    or ``"wgmma"``: the derivation applies its limits); ``ValueError`` naming ``name`` ("A", "B") when the
    instruction cannot read it.

    The stage moves the descriptor instead of its address, so the descriptor of stage 0 does not depend on the
    loop that picks the stage: nvcc computes it once, out of the loop, and each MMA adds the stage's units.

    The region is the buffer's layout sliced to it (leading dimensions taking one index, K sliced by whole
    instruction steps); a symbolic start must move the region by whole swizzle repeats, so that every stage is
    swizzled alike and one descriptor serves them all.

    Example (a 128B-swizzled K-major float16 B: SBO 8 rows x 128 bytes, K steps of 16 elements 32 bytes apart):
        >>> import tvm
        >>> from tirx_layout import mma_shared_layout
        >>> B = tvm.tirx.decl_buffer((64, 64), "float16", "B", scope="shared", data_alignment=1024)
        >>> side = operand(B[0:64, 0:64], {B: mma_shared_layout("float16", "128B", (64, 64))}, "B")
        >>> b = shared_operand(side, 64, 64, "B")
        >>> b.descriptor.swizzle, b.descriptor.sbo, b.start, b.stage_units, b.steps
        ('128B', 1024, 0, None, (0, 2, 4, 6))
    """
    if side.buffer.scope() not in ("shared", "shared.dyn"):
        raise ValueError(f"T.tile_mma's {name} must be in shared memory, {side.buffer.name} is {side.buffer.scope()}")
    shape = list(side.shape)
    layout = side.laid_out
    static, sliced = side.stage_slice(name)
    descriptor = shared_matrix_descriptor(sliced, (rows, k), side.dtype, 0, operand=name, family=family)
    repeat = swizzle_repeat_bytes(descriptor.swizzle) or 16
    if descriptor.swizzle != "none" and int(side.buffer.data_alignment) < repeat:
        raise ValueError(
            f"{name} ({side.buffer.name}) is {descriptor.swizzle}-swizzled, which the hardware applies to absolute "
            f"shared addresses; declare it with align={repeat} (it has {int(side.buffer.data_alignment)})"
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
    return SharedOperand(
        side, dataclasses.replace(descriptor, start=0, k_offsets=(0,)), start, stage_units, tuple(step_units)
    )


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


def warpgroup_rows(a: MemoryOperand, warpgroups: int, k: int, layouts: dict) -> tuple[SharedOperand, int]:
    """A of a wgmma over ``warpgroups`` warpgroups, each reading its own 64 rows ``64 g .. 64 g + 63`` of A's
    region: the first warpgroup's :class:`SharedOperand` and how many elements further each next warpgroup's rows
    start (one descriptor serves them all, moved by a fixed offset; ``ValueError`` when the layout does not repeat
    every 64 rows).

    Example (128 rows of a 128B-swizzled bf16 A: the second warpgroup's rows start 64 rows of 64 elements later):
        >>> import tvm
        >>> from tirx_layout import mma_shared_layout
        >>> A = tvm.tirx.decl_buffer((128, 64), "bfloat16", "A", scope="shared", data_alignment=1024)
        >>> layouts = {A: mma_shared_layout("bfloat16", "128B", (128, 64))}
        >>> first, offset = warpgroup_rows(operand(A[0:128, 0:64], layouts, "A"), 2, 64, layouts)
        >>> first.start, offset
        (0, 4096)
    """
    if warpgroups == 1:
        return shared_operand(a, WGMMA_M, k, "A", family="wgmma"), 0
    row_dim = next(d for d, e in enumerate(a.extents) if e != 1)
    found = []
    for g in range(warpgroups):
        narrowed = [
            slice(r.min, r.min + r.extent) if d != row_dim else slice(r.min + 64 * g, r.min + 64 * g + 64)
            for d, r in enumerate(a.region.region)
        ]
        rows = operand(a.buffer[tuple(narrowed)], layouts, "A")
        found.append(shared_operand(rows, WGMMA_M, k, "A", family="wgmma"))
    first = found[0]
    delta = _difference(found[1].element_start, first.element_start)
    for g, piece in enumerate(found):
        moved = _difference(piece.element_start, first.element_start)
        if piece.descriptor != first.descriptor or piece.steps != first.steps or moved != g * delta:
            raise ValueError(
                f"T.tile_mma's A ({a.buffer.name}): the 64-row slices the warpgroups read are not one descriptor "
                f"moved by a fixed offset (warpgroup {g}); lay A out so that every 64 rows repeat the same pattern"
            )
    return first, delta


def _difference(a, b) -> int:
    """``a - b`` of two element offsets (ints or expressions of the same stage variables) as an int."""
    diff = tvm.sym.Analyzer().simplify(a - b) if not (isinstance(a, int) and isinstance(b, int)) else a - b
    if isinstance(diff, tirx.IntImm):
        diff = int(diff.value)
    if not isinstance(diff, int):
        raise ValueError(f"T.tile_mma's A: its warpgroup slices start at {a} and {b}, which differ by {diff}")
    return diff


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


__all__ = [
    "SharedOperand",
    "advanced",
    "as_u32",
    "descriptor_value",
    "operand_pointer",
    "shared_operand",
    "warpgroup_rows",
]


def descriptor_value(shared: SharedOperand, make, bits: int, extra_elements=0, view=None):
    """The full descriptor of ``shared``'s first K step, as the issuing thread computes it: ``make(pointer, bits)``
    (the family's ``smem_descriptor`` helper; ``bits`` its descriptor encoded in the family's bits, start field 0)
    on the address of its first element in ``view`` (default: the operand's own flat view; a wgmma A passes the
    whole A's, of which ``shared`` is the first warpgroup's rows) and ``extra_elements`` further (an
    expression, the executing warpgroup's rows of a wgmma A), moved on by the stage's 16-byte units when the region
    starts at a symbolic stage. Stage 0's part does not depend on the loop that picks the stage, so nvcc computes it
    once. The add cannot carry out of the 14-bit start field: the field holds a shared address >> 4 inside the CTA's
    shared memory (below 2^18 bytes), for stage 0 and for the stage the units reach alike.

    Example (a static 128B K-major bf16 operand: one helper call on its first element):
        >>> import tvm
        >>> from tirx_layout import mma_shared_layout
        >>> from tirx_layout.ops.helpers import tcgen05
        >>> A = tvm.tirx.decl_buffer((128, 64), "bfloat16", "A", scope="shared", data_alignment=1024)
        >>> a = shared_operand(operand(A[0:128, 0:64], {A: mma_shared_layout("bfloat16", "128B", (128, 64))}, "A"),
        ...                    128, 64, "A")
        >>> str(descriptor_value(a, tcgen05.smem_descriptor, a.descriptor.encode())).startswith(
        ...     'T.cuda.func_call("tirx_layout_tcgen05_smem_descriptor", T.address_of(A_flat[0])')
        True
    """
    view = shared.side.view if view is None else view
    descriptor = make(operand_pointer(view, shared.start + extra_elements), bits)
    return descriptor if shared.stage_units is None else descriptor + tirx.Cast("uint64", shared.stage_units)


def advanced(descriptor, units: int):
    """``descriptor`` (a ``uint64`` variable) with ``units`` added to its start field: K step ``s`` of an operand
    whose steps start ``units`` 16-byte units past the first; step 0 is the variable itself.

    Example:
        >>> import tvm
        >>> d = tvm.tirx.Var("a_desc", "uint64")
        >>> advanced(d, 0) is d, str(advanced(d, 2))
        (True, 'a_desc + T.uint64(2)')
    """
    return descriptor if units == 0 else descriptor + tirx.const(units, "uint64")
