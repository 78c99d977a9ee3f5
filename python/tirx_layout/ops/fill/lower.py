"""``T.tile_fill`` lowered, on every target: a copy from a constant (:class:`ConstantOperand`) written down by the
plans of ``T.tile_copy`` (``ops/copy/plan.py``), so a fill deals vectors exactly as a copy into the same tile does --
the threads of the scope share a global or shared tile (16-byte vectors where the layout allows, every replica place
written, a tail guarded), each thread fills its own slots of a register fragment or all of a per-thread array
(unrolled: the fragment stays in registers). A TMEM tile is filled through registers: each warpgroup fills a
fragment in the register image of ``tcgen05.st`` (planned by the spec, ``ops/tmem/``) and stores it.

A vector of 8- or 16-bit elements is written as the vector of 32-bit words that holds it, reinterpreted: TVM's CUDA
code generation writes a broadcast vector of several 8- or 16-bit integers (or 8-bit floats) wrongly (``make_int4``
of 16 arguments), while a broadcast word is ``make_uint4`` of 4. A 4-byte vector is one word, which no broadcast
makes (two lanes at least): it is two 16-bit half-words.

Example (a 64 x 64 int8 tile set to -1 by 128 threads: two rounds of 16-byte vectors, each four words 0xFFFFFFFF):
    >>> import tvm
    >>> from tirx_layout.transform import lower_tile_ops
    >>> func = tvm.script.from_source('''
    ... @T.prim_func
    ... def k():
    ...     T.device_entry()
    ...     tx = T.thread_id([128])
    ...     tile = T.alloc_shared((64, 64), "int8")
    ...     T.tile_fill(tile, -1)
    ... ''')
    >>> store = lower_tile_ops(func).script().splitlines()[-1].strip()
    >>> store.split(" = ")
    ['tile_flat[copy_round * 2048 + tx * 16:copy_round * 2048 + tx * 16 + 16]',
     'T.reinterpret("int8x16", T.Broadcast(T.uint32(4294967295), 4))']
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import tvm
from tvm import tirx

from ...hw.memory import dtype_bytes
from ...ir.annotations import LAYOUT_KEY
from ...ir.rewrite import AllocBuffer, sequence
from ..copy.lower import lower_plan
from ..copy.plan import plan_copy
from ..operands import FragmentOperand, TmemOperand
from ..tmem import lower_tmem_copy
from .spec import TILE_FILL, FillRecord


class ConstantOperand:
    """A source that holds ``value`` (a scalar expression of the destination's ``dtype``) at every element of a tile
    of ``extents``: what a fill copies from, through the plans of a copy (its addresses are all 0, any vector width
    suits it, it needs no guard, it reads as ``value`` broadcast to the vector).

    Example:
        >>> import tvm
        >>> fill = ConstantOperand(tvm.tirx.const(1.5, "float32"), (8, 8))
        >>> fill.tile_shape, fill.read(tvm.tirx.Ramp(0, 1, 4))
        ((8, 8), T.Broadcast(T.float32(1.5), 4))
    """

    layout = None

    def __init__(self, value, extents):
        self.value = value
        self.dtype = str(value.ty)
        self.element_bytes = dtype_bytes(self.dtype)
        self.extents = [int(e) for e in extents]
        self.begins = [0] * len(self.extents)

    @property
    def tile_shape(self) -> tuple:
        return tuple(e for e in self.extents if e != 1)

    def vector_ok(self, v: int) -> bool:
        return True

    def storage_order(self):
        return None

    def addresses(self, local_coords, every_replica: bool) -> list:
        return [0]

    def bounds_guards(self, local_coords) -> list:
        return []

    def read(self, index):
        """``value``, broadcast to the lanes of a vector ``index`` (a vector of 8- or 16-bit elements as the 32-bit
        words holding it, reinterpreted: see the module docstring)."""
        lanes = int(index.lanes) if isinstance(index, tvm.tirx.Ramp) else 1
        if lanes == 1:
            return self.value
        if self.element_bytes == 4:
            return tvm.tirx.Broadcast(self.value, lanes)
        # A 4-byte vector is two 16-bit half-words (a broadcast has at least two lanes), a wider one 32-bit words.
        word = "uint16" if lanes * self.element_bytes == 4 else "uint32"
        count = lanes * self.element_bytes * 8 // int(word[4:])
        words = tvm.tirx.Broadcast(word_of(self.value, self.dtype, word), count)
        return tvm.tirx.reinterpret(f"{self.dtype}x{lanes}", words)

    def __str__(self) -> str:
        return f"the value {self.value}"


def _numpy_dtype(dtype: str) -> np.dtype:
    return np.dtype(getattr(ml_dtypes, dtype, dtype))


def word_of(value, dtype: str, word: str = "uint32"):
    """A ``word`` (``uint32`` or ``uint16``) holding ``value`` (a scalar of ``dtype``, 8 or 16 bits, at most the
    word's width) in each of its element places: the constant itself for a constant, else the value's bits times
    0x01010101 (8-bit in 32), 0x00010001 (16-bit in 32) or 0x0101 (8-bit in 16).

    Example:
        >>> word_of(tvm.tirx.const(1.0, "float16"), "float16"), word_of(tvm.tirx.const(-1, "int8"), "int8")
        (T.uint32(1006648320), T.uint32(4294967295))
        >>> word_of(tvm.tirx.const(3, "int8"), "int8", "uint16")
        T.uint16(771)
    """
    word_bytes = int(word[4:]) // 8
    per_word = word_bytes // dtype_bytes(dtype)
    if isinstance(value, tirx.IntImm | tirx.FloatImm):
        element = np.array([value.value]).astype(_numpy_dtype(dtype))
        return tirx.const(int(np.repeat(element, per_word).view(np.dtype(word))[0]), word)
    bits = tirx.Cast(word, tirx.reinterpret(f"uint{8 * dtype_bytes(dtype)}", value))
    spread = sum(1 << (8 * dtype_bytes(dtype) * i) for i in range(per_word))  # one 1 per element place
    return bits * tirx.const(spread, word)


@TILE_FILL.lowering("any")
def lower_tile_fill(record: FillRecord, ctx):
    dst, scope = record.dst, record.call.scope
    if isinstance(dst, TmemOperand):
        return _fill_tmem(record, ctx)
    value = ctx.analyzer.simplify(record.value)
    # a per-thread array (local, no thread axes) is every thread's own: each fills all of it
    per_thread = dst.buffer.scope() == "local" and not isinstance(dst, FragmentOperand)
    plan = plan_copy(dst, ConstantOperand(value, dst.extents), "thread" if per_thread else scope, ctx.threads.count)
    return sequence([dst.declaration(), lower_plan(plan, ctx)])


def _fill_tmem(record: FillRecord, ctx):
    """A register fragment in ``tcgen05.st``'s image of the tile, filled, then stored into TMEM."""
    dst = record.dst
    rows, cols = dst.tile_shape
    fragment = record.fragment  # the fill's own copy of the fragment operand (its own view of the registers)
    filled = FragmentOperand(fragment.region, fragment.layout, "destination")
    value = ConstantOperand(ctx.analyzer.simplify(record.value), (rows, cols))
    fill = lower_plan(plan_copy(filled, value, record.call.scope, ctx.threads.count), ctx)
    store = lower_tmem_copy(dst, fragment, record.call.scope, ctx, record.tmem_plan)  # (declares its own view)
    allocation = AllocBuffer(fragment.buffer, {LAYOUT_KEY: fragment.layout})
    return sequence([allocation, filled.declaration(), fill, store])
