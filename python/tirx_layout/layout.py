"""TileLayout: the affine layout over named axes (SPEC §2), a thin veneer over the C++ core."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

import numpy as np
import tvm
import tvm_ffi
from tvm_ffi import Object, from_dlpack

from . import _ffi
from ._values import INT64_MAX, static_int
from .axis import Axis, Iter
from .spec import LayoutSpec, Offset, OnAxis, axis_label
from .symbolic import FLAT, SHAPED, SHARD, place_symbolic


def _format_stride(it: Iter) -> str:
    return str(it.stride) if it.axis.name == "m" else f"{it.stride}{axis_label(it.axis)}"


def _format_iters(kind: str, iters: Sequence[Iter]) -> str:
    if len(iters) == 1:
        return f"{kind}[{iters[0].extent}:{_format_stride(iters[0])}]"
    extents = ", ".join(str(it.extent) for it in iters)
    strides = ", ".join(_format_stride(it) for it in iters)
    return f"{kind}[({extents}):({strides})]" if iters else f"{kind}[()]"


def format_spec(shard: Sequence[Iter], replica: Sequence[Iter], offset: Mapping[Axis, object]) -> str:
    """The ``S[...] + R[...] + offset`` text of a layout, in the notation that builds it back.

    Example:
        >>> from tirx_layout import Iter
        >>> format_spec([Iter(8, 4, "laneid"), Iter(2, 1, "m")], [], {})
        'S[(8, 2):(4@laneid, 1)]'
    """
    parts = [_format_iters("S", shard)]
    if replica:
        parts.append(_format_iters("R", replica))
    for axis, value in offset.items():
        parts.append(repr(value) if axis.name == "m" and isinstance(value, int) else repr(OnAxis(value, axis)))
    return " + ".join(parts)


def _coord_kind(values) -> str:
    """``"int"``, ``"array"`` (some numpy array) or ``"expr"`` (some symbolic PrimExpr) for apply's inputs."""
    kind = "int"
    for value in values:
        if type(value) is int:
            continue
        if isinstance(value, np.ndarray):
            kind = "array"
        elif tvm.ir.is_prim_expr(value) and not isinstance(value, tvm.tirx.IntImm):
            return "expr"
    return kind


def _int64_array(value) -> np.ndarray:
    if type(value) is np.ndarray and value.dtype == np.int64:
        return value  # the common case: no conversion, no copy
    array = np.asarray(value)
    if array.dtype == np.bool_ or array.dtype.kind not in "iu":
        raise TypeError(f"coordinate arrays must hold integers, got dtype {array.dtype}")
    if array.dtype == np.uint64 and array.size and array.max() > INT64_MAX:
        raise ValueError(f"coordinate {int(array.max())} does not fit in int64")
    return array.astype(np.int64)


class _Plan(NamedTuple):
    names: tuple[str, ...]  # output axes, in the order the core writes them
    places: int  # rows per element: the replica count for apply_all, else 1
    symbolic: dict[str, object]  # offsets the core cannot add (PrimExpr), by axis name


def _add_symbolic(place: dict, symbolic: dict) -> dict:
    analyzer = tvm.sym.Analyzer()
    return {name: analyzer.simplify(value + symbolic[name]) if name in symbolic else value
            for name, value in place.items()}  # fmt: skip


@tvm_ffi.register_object("tirx_layout.TileLayout")
class TileLayout(Object):
    """An affine layout: shard iters place the logical tile on named axes, replica iters add copies, an offset
    shifts every place.

    Example:
        >>> from tirx_layout import TileLayout, S, R, laneid, warpid
        >>> frag = TileLayout(S[(8, 2, 4, 2):(4 @ laneid, 1 @ warpid, 1 @ laneid, 1)] + R[2:4 @ warpid] + 5 @ warpid)
        >>> frag.apply(1, 3, shape=[8, 16])
        {'laneid': 5, 'warpid': 5, 'm': 1}
        >>> [p["warpid"] for p in frag.apply_all(1, 3, shape=[8, 16])]
        [5, 9]
    """

    # Per-object caches of what apply needs (see _plan); layouts are immutable, so they never go stale.
    __slots__ = ("_plan_all", "_plan_base")

    shard: Sequence[Iter]
    replica: Sequence[Iter]
    offset: Mapping[Axis, object]

    def __init__(self, spec: LayoutSpec) -> None:
        if not isinstance(spec, LayoutSpec):
            raise TypeError(f"TileLayout takes a spec such as S[(8, 4):(4, 1)] + R[...] + offset, got {spec!r}")
        try:
            self.__init_handle_by_constructor__(
                _ffi.TileLayout, list(spec.shard or ()), list(spec.replica), dict(spec.offset.terms)
            )
        except ValueError as err:
            raise ValueError(f"invalid layout {spec!r}: {err}") from None

    @staticmethod
    def from_iters(
        shard: Sequence[Iter] = (), replica: Sequence[Iter] = (), offset: Mapping | Offset | int | None = None
    ) -> TileLayout:
        """Build a layout from iters and an offset (a dict ``{axis or name: value}``, ``value @ axis`` or an int).

        Example:
            >>> TileLayout.from_iters([Iter(4, 1, "laneid")], [], {"warpid": 2})
            TileLayout(S[4:1@laneid] + 2@warpid)
        """
        for group, iters in (("shard", shard), ("replica", replica)):
            for it in iters:
                if not isinstance(it, Iter):
                    raise TypeError(f"{group} entries must be Iter objects, got {it!r}")
        terms = Offset.of(offset).terms if offset is not None else {}
        try:
            return _ffi.TileLayout(list(shard), list(replica), terms)
        except ValueError as err:
            raise ValueError(f"invalid layout {format_spec(shard, replica, terms)}: {err}") from None

    # ---- queries -------------------------------------------------------------------------------------------

    def size(self, axis: Axis | str | None = None) -> int:
        """Product of the shard extents, or of those on ``axis`` (1 if none).

        Example:
            >>> TileLayout(S[(2, 128, 112):(112 @ TCol, 1 @ TLane, 1 @ TCol)]).size("TCol")
            224
        """
        return _ffi.TileLayoutSize(self, None if axis is None else Axis.get(axis).name)

    def span(self, axis: Axis | str | None = None):
        """``1 + sum (extent-1)*stride + sum offset`` over shard and replica iters and offsets on memory axes,
        or on ``axis`` alone. Symbolic offsets give a symbolic span.

        Example:
            >>> TileLayout(S[(2, 128, 112):(112 @ TCol, 1 @ TLane, 1 @ TCol)]).span("TCol")
            224
        """
        name = None if axis is None else Axis.get(axis).name
        span = _ffi.TileLayoutStaticSpan(self, name)
        for a, value in self.offset.items():
            if not isinstance(value, int) and (a.name == name if name else a.is_memory()):
                span = span + value
        return tvm.sym.Analyzer().simplify(span) if not isinstance(span, int) else span

    def num_replicas(self) -> int:
        """How many places each element has: the product of the replica extents.

        Example:
            >>> TileLayout(S[(32, 4):(1 @ TLane, 1 @ TCol)] + R[4:32 @ TLane]).num_replicas()
            4
        """
        return _ffi.TileLayoutNumReplicas(self)

    def get_scope(self) -> tuple[str, str] | None:
        """``(innermost subscope, outermost scope)`` of the thread axes, or ``None`` when no shard iter is on a
        thread axis. ``ValueError`` when the thread axes do not form one chain (see ``verify_well_formed``).

        Example:
            >>> TileLayout(S[(4, 32):(1 @ warpid, 1 @ laneid)]).get_scope()
            ('thread', 'cta')
        """
        has_scope, well_formed, problem, inner, outer = _ffi.TileLayoutScope(self)
        if not well_formed:
            raise ValueError(f"ill-formed layout {self}: {problem}")
        return (inner, outer) if has_scope else None

    def verify_well_formed(self) -> bool:
        """Whether the thread axes form one connected, non-conflicting chain of levels. Never raises.

        Example:
            >>> TileLayout(S[(4, 4):(1 @ laneid, 1 @ tx)]).verify_well_formed()
            False
        """
        return bool(_ffi.TileLayoutScope(self)[1])

    def is_thread_distributed(self) -> bool:
        """Whether some shard iter lies on a thread axis (``TileLayout(S[32:1@laneid])`` is)."""
        return any(it.axis.is_thread() for it in self.shard)

    # ---- forward map -----------------------------------------------------------------------------------------

    def apply(self, *coords, shape: Sequence | None = None):
        """Base place (replica 0) of a logical element, as ``{axis name: value}`` for the shard and offset axes.

        Three forms: ``apply(flat)``, ``apply(*shard_coords)`` (one per shard iter) and
        ``apply(*coords, shape=logical_shape)`` (flattened row-major first). Coordinates may be ints, integer
        numpy arrays (mapped elementwise in C++; each axis gives an array of the broadcast shape) or TVM
        ``PrimExpr`` (each axis gives a simplified expression).

        Example:
            >>> TileLayout(S[(2, 128, 112):(112 @ TCol, 1 @ TLane, 1 @ TCol)]).apply(1, 5, 7)
            {'TCol': 119, 'TLane': 5}
        """
        return self._place(coords, shape, with_replicas=False)

    def apply_all(self, *coords, shape: Sequence | None = None):
        """Every place of a logical element, replica 0 first (replica iters enumerated row-major).

        For ints: a list with one ``{axis name: value}`` per replica combination (replica axes included). For
        arrays: ``{axis name: array}`` with a leading dimension over the replica combinations. For expressions:
        a list of dicts of expressions.

        Example:
            >>> scale = TileLayout(S[(32, 4):(1 @ TLane, 1 @ TCol)] + R[4:32 @ TLane])
            >>> [p["TLane"] for p in scale.apply_all(3, 1, shape=[32, 4])]
            [3, 35, 67, 99]
        """
        return self._place(coords, shape, with_replicas=True)

    def _plan(self, with_replicas: bool) -> _Plan:
        """What every application of this layout shares, computed once per Python object."""
        slot = "_plan_all" if with_replicas else "_plan_base"
        plan = getattr(self, slot, None)
        if plan is None:
            plan = _Plan(
                tuple(_ffi.TileLayoutOutputAxes(self, with_replicas)),
                self.num_replicas() if with_replicas else 1,
                {a.name: v for a, v in self.offset.items() if not isinstance(v, int)},
            )
            setattr(self, slot, plan)
        return plan

    def _place(self, coords, shape, with_replicas: bool):
        if shape is not None:
            shape = list(shape)
            form = SHAPED
        elif len(coords) == 1:
            form = FLAT
        else:
            form = SHARD
        kind = _coord_kind(coords) if shape is None else _coord_kind([*coords, *shape])
        if kind == "expr":
            self._check_arity(form, len(coords), shape)
            return place_symbolic(self, form, list(coords), shape, with_replicas)
        shape_ints = [static_int(s, "a shape extent") for s in shape] if shape is not None else []
        plan = self._plan(with_replicas)
        if kind == "array":
            return self._place_arrays(form, coords, shape_ints, plan, with_replicas)
        ints = [static_int(c, "a coordinate") for c in coords]
        values = _ffi.TileLayoutApplyInt(self, form, with_replicas, len(shape_ints), *shape_ints, *ints)
        width = len(plan.names)
        rows = [dict(zip(plan.names, values[r * width : (r + 1) * width])) for r in range(plan.places)]
        if plan.symbolic:
            rows = [_add_symbolic(row, plan.symbolic) for row in rows]
        return rows if with_replicas else rows[0]

    def _place_arrays(self, form, coords, shape_ints, plan: _Plan, with_replicas: bool):
        if plan.symbolic:
            raise ValueError(f"layout {self} has a symbolic offset; apply it to PrimExpr coordinates, not arrays")
        arrays = [_int64_array(c) for c in coords]
        out_shape = arrays[0].shape
        if any(a.shape != out_shape for a in arrays):
            arrays = np.broadcast_arrays(*arrays)
            out_shape = arrays[0].shape
        # The core reads each coordinate array as contiguous int64 values and writes places x axes x elements.
        columns = [from_dlpack(a if a.flags.c_contiguous else np.ascontiguousarray(a)) for a in arrays]
        out = np.empty((plan.places, len(plan.names), *out_shape), dtype=np.int64)
        _ffi.TileLayoutApplyArray(self, form, with_replicas, from_dlpack(out), len(shape_ints), *shape_ints, *columns)
        per_axis = out.swapaxes(0, 1)
        return dict(zip(plan.names, per_axis if with_replicas else per_axis[:, 0], strict=True))

    def _check_arity(self, form: int, count: int, shape) -> None:
        if form == SHARD and count != len(self.shard):
            raise ValueError(
                f"apply takes one flat index or one coordinate per shard iter ({len(self.shard)}), got {count} "
                "coordinates; pass shape=... to apply a coordinate of another logical shape"
            )
        if form == SHAPED and count != len(shape):
            raise ValueError(f"coordinate has {count} values but shape has {len(shape)} dimensions")

    # ---- identity and printing -----------------------------------------------------------------------------

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TileLayout) and tvm_ffi.structural_equal(self, other)

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return tvm_ffi.structural_hash(self)

    def __str__(self) -> str:
        return format_spec(self.shard, self.replica, self.offset)

    def __repr__(self) -> str:
        return f"TileLayout({self})"

    def __reduce__(self):
        return (TileLayout.from_iters, (list(self.shard), list(self.replica), dict(self.offset)))

