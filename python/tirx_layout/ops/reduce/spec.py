"""``T.tile_reduce(dst, src, op, axis=-1, accumulate=False, scope="cta")``: reduce a register fragment along logical
axes with ``"sum"``, ``"max"`` or ``"min"``.

``src`` is a whole register fragment (a local buffer laid out on thread axes); sources in shared or global memory
are refused (copy them into a fragment first). ``dst`` has ``src``'s shape without the reduced axes (``(1,)`` when
every axis is reduced) and its dtype. ``axis`` is one axis or a tuple of them (negative from the end). Each thread
first combines its own slots; the lanes of a warp that hold parts of one output element then meet in a butterfly of
``__shfl_xor_sync`` whose xor masks are read off ``src``'s layout (``derive.reduction_plan``); when they span warps,
the warps meet in a shared-memory scratch the lowering allocates, between two barriers of the scope
(``__syncthreads()`` for ``"cta"``, a named ``bar.sync 1 + warpgroup, 128`` for ``"warpgroup"``; ``"warp"`` and
``"thread"`` scopes take no cross-warp reduction).

* A **register fragment** ``dst``: its layout is DERIVED from ``src``'s (``derive.reduced_layout``: the reduced
  iters removed, the threads that shared an output element its replicas), so an open ``dst`` takes it; a ``dst``
  given a layout must place every element -- every replica -- where the derivation does, else it is refused naming
  both layouts and the first element that differs. ``accumulate`` (a bool or a runtime condition) combines the
  result with ``dst``'s old value: ``dst = op(dst, reduce(src))``.
* A **global or shared** ``dst`` (any layout): the result is stored by replica 0 of each element (as a copy from
  the derived fragment), or with ``accumulate=True`` and ``"sum"`` added with ``atomicAdd`` (``T.cuda.atomic_add``),
  one atomic per element and CTA, issued by different replicas -- the reduction across CTAs: every CTA reduces its
  tile and adds it into the global result, which starts at zero (``T.tile_reduce(colsum, tile, "sum", axis=0,
  accumulate=True)`` over a grid of row blocks). ``max``/``min`` have no float atomic here and are refused with
  ``accumulate``; a runtime condition is refused too (an atomic or a store is chosen when the kernel is built).

Example:
    >>> import tvm
    >>> S = tvm.tirx.decl_buffer((64, 64), "float32", "S", scope="local")
    >>> rowmax = tvm.tirx.decl_buffer((64,), "float32", "rowmax", scope="local")
    >>> TILE_REDUCE(rowmax, S, "max", axis=1)
    T.tile_reduce(rowmax[0:64], S[0:64, 0:64], "max", "axis", 1)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import tvm
from tvm import tirx

from ...hw.threads import CTA_LEVELS, LEVEL_THREADS, level_threads
from ...ir.op_calls import full_region
from ..operands import FragmentOperand, operand
from ..spec import ChoiceField, ConditionField, Derived, Field, OpCall, OpSpec, Reach, Record, RegionField, ScopeField
from .derive import (
    normalized_axes,
    padded_shape,
    placement_mismatch,
    reduced_layout,
    reduced_shape,
    reduction_plan,
)

#: The reductions, by name.
REDUCE_OPS = ("sum", "max", "min")
#: The scopes a reduction may run at.
REDUCE_SCOPES = CTA_LEVELS
#: Where a reduction may write besides a register fragment: stores (or atomicAdd, accumulating) from replica 0.
MEMORY_SCOPES = ("global", "shared", "shared.dyn")


def _constant_false(condition) -> bool:
    return isinstance(condition, tirx.IntImm) and not bool(condition.value)


class AxesField(Field):
    """The reduced axes: an int (kept as an integer constant, printed ``axis=1``) or a tuple of ints (kept as the
    string ``"0, 1"``, which prints back as ``axis="0, 1"`` and reads back as the same axes). Whether they lie
    inside the tile is the op's rule (the field does not know the rank).

    Example:
        >>> field = AxesField("axis", default=-1)
        >>> field.read(field.convert(1, "T.tile_reduce")), field.read(field.convert((0, 1), "T.tile_reduce"))
        ((1,), (0, 1))
    """

    def convert(self, value, op: str):
        if isinstance(value, tirx.IntImm):
            value = int(value.value)
        if isinstance(value, tvm.ir.StringImm | str):
            text = str(value.value) if isinstance(value, tvm.ir.StringImm) else value
            try:
                value = tuple(int(part) for part in text.split(","))
            except ValueError:
                raise ValueError(f"{op}: {self.name} must be an int or a tuple of ints, got {text!r}") from None
        if isinstance(value, int) and not isinstance(value, bool):
            return tirx.IntImm("int32", value)
        if (
            isinstance(value, tuple | list)
            and value
            and all(isinstance(a, int) and not isinstance(a, bool) for a in value)
        ):
            return tvm.ir.StringImm(", ".join(str(a) for a in value))
        raise TypeError(f"{op}: {self.name} must be an int or a non-empty tuple of ints, got {value!r}")

    def read(self, arg) -> tuple[int, ...]:
        if isinstance(arg, tirx.IntImm):
            return (int(arg.value),)
        return tuple(int(part) for part in str(arg.value).split(","))

    def literal(self, arg):
        return int(arg.value) if isinstance(arg, tirx.IntImm) else None


@dataclass(frozen=True)
class ReduceRecord(Record):
    """A ``T.tile_reduce`` checked: the normalized ``axes``; once both layouts are decided (``None`` before), both
    sides as operands and the :class:`~tirx_layout.ops.reduce.derive.ReductionPlan`; for a destination in memory,
    the register ``fragment`` (over a new local buffer, in the derived layout) the reduction goes through."""

    axes: tuple = ()
    dst: object = None
    src: object = None
    plan: object = None
    fragment: object = None


def _shape(region) -> tuple:
    return tuple(int(r.extent) for r in region.region)


class TileReduce(OpSpec):
    """``T.tile_reduce(dst, src, op, axis=-1, accumulate=False, scope="cta")``: ``dst`` = the ``op`` (sum, max,
    min) of the fragment ``src`` along ``axis`` (see the module docstring).

    Example (inside a ``@T.prim_func``): ``T.tile_reduce(rowmax, S, "max", axis=1)`` for the row maxima of a Hopper
    accumulator ``S``, then ``T.tile_reduce(rowsum, P, "sum", axis=1, accumulate=True)``.
    """

    name = "tile_reduce"
    description = "reduce a register fragment along logical axes (sum, max, min)"
    fields = (
        RegionField("dst", writes=True),
        RegionField("src"),
        ChoiceField("op", REDUCE_OPS),
        AxesField("axis", default=-1),
        ConditionField("accumulate", default=False),
        ScopeField(REDUCE_SCOPES),
    )

    def check(self, call: OpCall) -> None:
        dst, src = call.dst.source, call.src.source
        if src.scope() != "local":
            raise ValueError(
                f"T.tile_reduce reduces register fragments; its source {src.name} is in {src.scope()!r} memory: "
                "copy a shared or global tile into a fragment first (T.tile_copy)"
            )
        if dst.scope() not in ("local", *MEMORY_SCOPES):
            raise ValueError(
                f"T.tile_reduce writes a register fragment, or global or shared memory; {dst.name} is {dst.scope()}"
            )
        atomic = dst.scope() in MEMORY_SCOPES and not _constant_false(call.accumulate)
        if atomic and (call.op != "sum" or not isinstance(call.accumulate, tirx.IntImm)):
            shown = bool(call.accumulate.value) if isinstance(call.accumulate, tirx.IntImm) else call.accumulate
            raise ValueError(
                f"T.tile_reduce into {dst.scope()} memory ({dst.name}) accumulates with atomicAdd: a 'sum' with "
                f"accumulate=True; a {call.op!r} with accumulate={shown} has no atomic here (reduce into "
                "a fragment, then combine)"
            )
        if str(dst.dtype) != str(src.dtype):
            raise ValueError(
                f"T.tile_reduce from {src.name} to {dst.name}: dtypes differ ({src.dtype} vs {dst.dtype}); reduce "
                "in the source's dtype, then convert"
            )
        shape = _shape(call.src)
        axes = normalized_axes(call.axis, len(shape))
        expected = reduced_shape(shape, axes)
        given = _shape(call.dst)
        if tuple(e for e in given if e != 1) != tuple(e for e in expected if e != 1):
            raise ValueError(
                f"T.tile_reduce of {src.name} {list(shape)} along axes {list(axes)} gives a {list(expected)} tile; "
                f"the destination {dst.name} is {list(given)}"
            )

    def relations(self, call: OpCall) -> tuple:
        src, dst = call.src.source, call.dst.source
        if dst.scope() != "local":
            return ()
        shape = _shape(call.src)
        axes = normalized_axes(call.axis, len(shape))
        why = f"T.tile_reduce({dst.name}, {src.name}, {call.op!r}, axis={call.axis}){call.where}"

        def derive(layouts: dict):
            return reduced_layout(layouts[src], shape, axes)

        return (Derived(dst, (src,), derive, why),)

    def rules(self, call: OpCall, ctx) -> ReduceRecord:
        family = self.family(ctx)
        reach = Reach.shared_work("T.tile_reduce", call.scope, by_holder=True)
        axes = normalized_axes(call.axis, len(_shape(call.src)))
        dst, src = call.dst.source, call.src.source
        if not ctx.decided(src):
            return ReduceRecord(call, family, axes, reach=reach)
        s = self._fragment(call.src, "source", ctx)
        if s.padded:  # named here, so a refusal of an inferred layout says whose it is
            try:
                padded_shape(s.layout, s.shape)
            except ValueError:
                raise ValueError(
                    f"T.tile_reduce of {src.name}: its layout {s.layout} is tail-padded ({int(s.layout.size())} "
                    f"places for the {math.prod(s.shape)} elements of {list(s.shape)}) by a part of a row, so a place "
                    f"cannot tell padding from data by its row: give {src.name} a layout whose padding is whole "
                    "rows, or whose places are exactly its elements"
                ) from None
        plan = reduction_plan(s.layout, s.shape, axes)
        self._check_scope(call, plan, ctx)
        if not ctx.decided(dst):
            return ReduceRecord(call, family, axes, reach=reach)
        if dst.scope() in MEMORY_SCOPES:
            d = operand(call.dst, ctx.layouts, "destination", ctx.tables, ctx.analyzer)
            registers = tvm.tirx.decl_buffer(plan.dst_shape, dst.dtype, f"{dst.name}_reduced", scope="local")
            fragment = FragmentOperand(full_region(registers), plan.dst_layout, "source")
            return ReduceRecord(call, family, axes, d, s, plan, fragment, reach=reach)
        d = self._fragment(call.dst, "destination", ctx)
        if d.layout != plan.dst_layout:
            mismatch = placement_mismatch(d.layout, plan.dst_layout, d.shape, ctx.threads.count)
            if mismatch is not None:
                raise ValueError(
                    f"T.tile_reduce of {src.name} along axes {list(axes)}: the destination {dst.name} is given the "
                    f"layout {d.layout}, but the reduction leaves its elements in {plan.dst_layout} (the source's "
                    f"placement without the reduced axes); they differ at {mismatch}. Leave {dst.name}'s layout out "
                    "to have it derived"
                )
        return ReduceRecord(call, family, axes, d, s, plan, reach=reach)

    @staticmethod
    def _fragment(region, role: str, ctx) -> FragmentOperand:
        side = operand(region, ctx.layouts, role, ctx.tables, ctx.analyzer)
        if not isinstance(side, FragmentOperand):
            raise ValueError(
                f"T.tile_reduce reduces register fragments; its {role} {side} is a per-thread array, not a "
                "fragment laid out on thread axes (give it a fragment layout, or leave the destination's out)"
            )
        return side

    def _check_scope(self, call: OpCall, plan, ctx) -> None:
        scope, name = call.scope, call.src.source.name
        if scope == "thread" and (plan.lane_masks or plan.warp_count > 1):
            raise ValueError(
                f"a thread-scope T.tile_reduce combines each thread's own slots only, but the reduced axes of {name} "
                f"are spread over threads (lanes {list(plan.lane_masks)} apart, {plan.warp_count} warps): use scope "
                '"warp", "warpgroup" or "cta"'
            )
        if plan.warp_count > 1 and plan.warp_span > level_threads(scope, ctx.threads.count):
            wider = "cta" if plan.warp_span > LEVEL_THREADS["warpgroup"] else "warpgroup or cta"
            raise ValueError(
                f"the reduced axes of {name} span {plan.warp_count} warps ({plan.warp_span} CTA threads), beyond "
                f"one {scope} of the {scope}-scope T.tile_reduce: use a scope that holds them ({wider})"
            )


TILE_REDUCE = TileReduce()
