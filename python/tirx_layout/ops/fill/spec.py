"""``T.tile_fill(dst, value, scope="cta")``: set every element of a tile to one value.

``dst`` is a region of a global or shared buffer (the threads of ``scope`` share the work, as a copy deals its
vectors), a register fragment (each thread sets its own slots), a per-thread local array (each thread sets all of
it) or a TMEM buffer (each warpgroup fills the register image of ``tcgen05.st`` and stores it: whole warpgroups, as
any TMEM copy). ``value`` is a number or a scalar expression (a loop variable, a parameter); it is converted to
``dst``'s dtype, and a constant ``dst``'s dtype cannot hold (``300`` for ``int8``, ``1e6`` for ``float16``, ``0.5``
for ``int32``) is refused. The threads of ``scope`` must all reach the op: every one of them owns part of the tile.

Inference: none. A fill writes every element whatever the layout, so it neither opens a buffer for inference nor
constrains a layout the other ops choose.

Example:
    >>> import tvm
    >>> S = tvm.tirx.decl_buffer((64, 64), "float16", "S", scope="shared")
    >>> TILE_FILL(S, 0.0), TILE_FILL(S[0:8, 0:64], 1.5, "warp")
    (T.tile_fill(S[0:64, 0:64], T.float32(0.0)), T.tile_fill(S[0:8, 0:64], T.float32(1.5), "scope", "warp"))
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import tvm
from tvm import tirx

from ...hw.memory import holds
from ...hw.tcgen05 import TMEM_SCOPE
from ...hw.threads import CTA_LEVELS
from ...ir.op_calls import full_region
from ..operands import FragmentOperand, TmemOperand, operand
from ..spec import Field, OpCall, OpSpec, Reach, Record, RegionField, ScopeField
from ..tmem import fragment_for, plan_tmem_copy

#: Where a fill may write.
FILL_SCOPES = CTA_LEVELS
_FILLED_SCOPES = ("global", "shared", "shared.dyn", "local", TMEM_SCOPE)


class ValueField(Field):
    """A scalar: a Python number (an ``int`` as ``int32`` or ``int64``, a ``float`` as ``float32`` when that holds
    it exactly, else ``float64``, a ``bool``) or a scalar TIR expression.

    Example:
        >>> ValueField("value").convert(0.1, "T.tile_fill"), ValueField("value").convert(2, "T.tile_fill")
        (T.float64(0.10000000000000001), 2)
    """

    def convert(self, value, op: str):
        if isinstance(value, bool):
            return tirx.const(value, "bool")
        if isinstance(value, int):
            return tirx.const(value, "int32" if -(2**31) <= value < 2**31 else "int64")
        if isinstance(value, float):
            return tirx.const(value, "float32" if float(np.float32(value)) == value or value != value else "float64")
        scalar = isinstance(value, tvm.ir.Expr) and not isinstance(value, tvm.ir.TensorRegion)
        if scalar and tvm.runtime.DataType(str(value.ty)).lanes == 1:
            return value
        raise TypeError(f"{op}: {self.name} must be a number or a scalar expression, got {value!r}")


@dataclass(frozen=True)
class FillRecord(Record):
    """A ``T.tile_fill`` checked: the destination as an operand once its layout is decided (``None`` before) and the
    value in its dtype; for a TMEM destination the register fragment (an operand over a new local buffer, in the
    register image ``tcgen05.st`` moves) and the store's plan."""

    dst: object = None
    value: object = None
    fragment: object = None
    tmem_plan: object = None


class TileFill(OpSpec):
    """``T.tile_fill(dst, value, scope="cta")``: every element of ``dst`` set to ``value`` (see the module docstring).

    Example (inside a ``@T.prim_func``): ``T.tile_fill(acc_frag, 0.0)`` before a K loop, or ``T.tile_fill(tile,
    -1e30)`` for a running maximum.
    """

    name = "tile_fill"
    description = "set every element of a tile to a value"
    fields = (RegionField("dst", writes=True), ValueField("value"), ScopeField(FILL_SCOPES))

    def rules(self, call: OpCall, ctx) -> FillRecord:
        family = self.family(ctx)
        buffer = call.dst.source
        dtype = str(buffer.dtype)
        if buffer.scope() not in _FILLED_SCOPES:
            raise ValueError(
                f"T.tile_fill writes global, shared, local or TMEM buffers; {buffer.name} is {buffer.scope()}"
            )
        value = call.value
        if isinstance(value, tirx.IntImm | tirx.FloatImm) and not holds(dtype, value.value):
            raise ValueError(f"T.tile_fill: {buffer.name} is {dtype}, which cannot hold the value {value.value}")
        kind = str(value.ty)
        if dtype == "bool" or not (kind.startswith(("int", "uint", "float", "bfloat")) or kind == "bool"):
            raise ValueError(f"T.tile_fill: cannot fill the {dtype} {buffer.name} with {value} of type {kind}")
        if (
            kind.startswith("float")
            and not dtype.startswith(("float", "bfloat"))
            and not isinstance(value, tirx.FloatImm)
        ):
            raise ValueError(
                f"T.tile_fill: {buffer.name} is {dtype}; a {kind} value would be truncated (convert it explicitly)"
            )
        reach = Reach.shared_work("T.tile_fill", call.scope)
        typed = value if kind == dtype else tirx.Cast(dtype, value)
        if not ctx.decided(buffer):
            return FillRecord(call, family, value=typed, reach=reach)
        dst = operand(call.dst, ctx.layouts, "destination", ctx.tables, ctx.analyzer)
        if not isinstance(dst, TmemOperand):
            return FillRecord(call, family, dst, typed, reach=reach)
        if len(dst.tile_shape) != 2:
            raise ValueError(f"T.tile_fill fills a (rows, cols) tile of TMEM; {dst.region} is {dst.tile_shape}")
        rows, cols = dst.tile_shape
        registers = tvm.tirx.decl_buffer((rows, cols), dtype, f"{buffer.name}_fill", scope="local")
        fragment = FragmentOperand(full_region(registers), fragment_for(dst, rows, cols, dtype), "source")
        plan = plan_tmem_copy(dst, fragment, call.scope, ctx.threads.count)
        return FillRecord(call, family, dst, typed, fragment, plan, reach=reach)


TILE_FILL = TileFill()
