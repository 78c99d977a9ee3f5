"""TileLayout: the affine layout over named axes (SPEC §2), a thin veneer over the C++ core."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

import numpy as np
import tvm
import tvm_ffi
from tvm_ffi import Object, from_dlpack

from ..core import ffi
from ..core.values import (
    INT64_DTYPE,
    INT64_MAX,
    INT64_MIN,
    int64_array,
    int_list,
    offset_value,
    per_dimension_shape,
    range_bounds,
    static_int,
)
from .axis import Axis, ExecScope, Iter
from .spec import LayoutSpec, Offset, S, format_spec
from .symbolic import (
    FLAT,
    SHAPED,
    SHARD,
    add_symbolic,
    place_symbolic,
    shard_coordinates,
    split_symbolic_offsets,
    with_symbolic_offsets,
)


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


class _Plan(NamedTuple):
    names: tuple[str, ...]  # output axes, in the order the core writes them
    places: int  # rows per element: the replica count for apply_all, else 1
    symbolic: dict[str, object]  # offsets the core cannot add (PrimExpr), by axis name
    base: tuple[int, ...]  # the static offset on each output axis
    terms: tuple[tuple[int, int, int], ...]  # (extent, stride, output position) of each shard iter


def _place_ints(plan: _Plan, form: int, ints: list, shape: list) -> list | None:
    """The base place of Python-int coordinates, the walk of the core's ``Placer`` (SPEC §2 "Forward map") done here for
    single elements, where one FFI round trip costs more than the walk. ``None`` for anything the core should answer
    (a wrong arity, a bad shape, an int64 overflow): it raises the error."""
    # Anything but an int64 Python int (an array, an expression, a numpy int) takes the general path.
    terms = plan.terms
    values = list(plan.base)
    if form == SHARD:
        if len(ints) != len(terms):
            return None
        for (_, stride, axis), c in zip(terms, ints, strict=True):
            if type(c) is not int or not INT64_MIN <= c <= INT64_MAX:
                return None
            values[axis] += c * stride
    else:
        for c in ints:
            if type(c) is not int or not INT64_MIN <= c <= INT64_MAX:
                return None
        if form == FLAT:
            if len(ints) != 1:
                return None
            flat = ints[0]
        else:
            if len(ints) != len(shape) or min(shape, default=1) < 1:
                return None
            flat = 0
            for c, extent in zip(ints, shape, strict=True):
                flat = flat * extent + c
            if not INT64_MIN <= flat <= INT64_MAX:
                return None
        # Last iter fastest (floor division, negatives too); the first takes what is left, so out-of-range spills there.
        for k in range(len(terms) - 1, 0, -1):
            extent, stride, axis = terms[k]
            flat, c = divmod(flat, extent)
            values[axis] += c * stride
        if terms:
            values[terms[0][2]] += flat * terms[0][1]
    for value in values:
        if not INT64_MIN <= value <= INT64_MAX:
            return None
    return values


def _cuda_target_active() -> bool:
    target = tvm.target.Target.current(allow_none=True)
    return target is not None and target.kind.name == "cuda"


def _swizzled(layout) -> bool:
    """Whether ``layout`` is a SwizzleLayout or ComposeLayout (defined above this module, so recognised by shape)."""
    return not isinstance(layout, TileLayout) and hasattr(layout, "swizzle_len")


def _expect_tile(layout, role: str) -> TileLayout:
    if not isinstance(layout, TileLayout):
        raise TypeError(f"the {role} layout must be a TileLayout, got {layout!r}")
    return layout


def _combine(entry, second: TileLayout, first: TileLayout, first_shape, second_shape) -> TileLayout:
    """tile / direct_sum: the core interleaves the static parts; symbolic offsets of both add."""
    first_static, first_symbolic = split_symbolic_offsets(first)
    second_static, second_symbolic = split_symbolic_offsets(second)
    combined = entry(
        second_static, first_static, int_list(first_shape, "a shape extent"), int_list(second_shape, "a shape extent")
    )
    symbolic = dict(first_symbolic)
    for axis, value in second_symbolic.items():
        symbolic[axis] = symbolic[axis] + value if axis in symbolic else value
    return with_symbolic_offsets(combined, symbolic)


def _recognise(
    entry, known: TileLayout, combined: TileLayout, combined_shape, known_shape, *flags: bool
) -> TileLayout | None:
    """Recognisers: the core answers on the static parts; the other factor's symbolic offset is the difference."""
    known_static, known_symbolic = split_symbolic_offsets(_expect_tile(known, "known"))
    combined_static, combined_symbolic = split_symbolic_offsets(_expect_tile(combined, "combined"))
    other = entry(
        known_static,
        combined_static,
        int_list(combined_shape, "a shape extent"),
        int_list(known_shape, "a shape extent"),
        *flags,
    )
    if other is None:
        return None
    symbolic = dict(combined_symbolic)
    for axis, value in known_symbolic.items():
        symbolic[axis] = symbolic[axis] - value if axis in symbolic else -value
    return with_symbolic_offsets(other, symbolic)


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
                ffi.TileLayout, list(spec.shard or ()), list(spec.replica), dict(spec.offset.terms)
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
            if isinstance(iters, str) or not isinstance(iters, Sequence | tvm_ffi.Array):
                raise TypeError(f"from_iters: {group} must be a list of Iter objects, got {iters!r}")
            for it in iters:
                if not isinstance(it, Iter):
                    raise TypeError(f"{group} entries must be Iter objects, got {it!r}")
        terms = Offset.of(offset).terms if offset is not None else {}
        try:
            return ffi.TileLayout(list(shard), list(replica), terms)
        except ValueError as err:
            raise ValueError(f"invalid layout {format_spec(shard, replica, terms)}: {err}") from None

    # ---- queries -------------------------------------------------------------------------------------------

    def size(self, axis_name: Axis | str | None = None) -> int:
        """Product of the shard extents, or of those on ``axis_name`` (1 if none).

        Example:
            >>> TileLayout(S[(2, 128, 112):(112 @ TCol, 1 @ TLane, 1 @ TCol)]).size("TCol")
            224
        """
        return ffi.TileLayoutSize(self, None if axis_name is None else Axis.get(axis_name).name)

    def span(self, axis_name: Axis | str | None = None):
        """``1 + sum (extent-1)*stride + sum offset`` over shard and replica iters and offsets on memory axes,
        or on ``axis_name`` alone. Symbolic offsets give a symbolic span.

        Example:
            >>> TileLayout(S[(2, 128, 112):(112 @ TCol, 1 @ TLane, 1 @ TCol)]).span("TCol")
            224
        """
        name = None if axis_name is None else Axis.get(axis_name).name
        span = ffi.TileLayoutStaticSpan(self, name)
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
        return ffi.TileLayoutNumReplicas(self)

    def get_scope(self) -> tuple[ExecScope, ExecScope] | None:
        """``(innermost subscope, outermost scope)`` of the thread axes, or ``None`` when no shard iter is on a
        thread axis. ``ValueError`` when the thread axes do not form one chain (see ``verify_well_formed``).

        Example:
            >>> TileLayout(S[(4, 32):(1 @ warpid, 1 @ laneid)]).get_scope()
            (ExecScope('thread'), ExecScope('cta'))
        """
        has_scope, well_formed, problem, inner, outer = ffi.TileLayoutScope(self)
        if not well_formed:
            raise ValueError(f"ill-formed layout {self}: {problem}")
        return (ExecScope(inner), ExecScope(outer)) if has_scope else None

    def verify_well_formed(self) -> bool:
        """Whether the thread axes form one connected, non-conflicting chain of levels. Never raises.

        Example:
            >>> TileLayout(S[(4, 4):(1 @ laneid, 1 @ tx)]).verify_well_formed()
            False
        """
        return bool(ffi.TileLayoutScope(self)[1])

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
        plan = self._plan(False)
        if not plan.symbolic:  # the per-element case first: plain ints straight to the walk (see _place_ints)
            if shape is None:
                values = _place_ints(plan, FLAT if len(coords) == 1 else SHARD, coords, ())
            elif type(shape) in (list, tuple) and all(type(s) is int for s in shape):
                values = _place_ints(plan, SHAPED, coords, shape)
            else:
                values = None
            if values is not None:
                return dict(zip(plan.names, values, strict=True))
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
            names = tuple(ffi.TileLayoutOutputAxes(self, with_replicas))
            position = {name: k for k, name in enumerate(names)}
            static = {a.name: v for a, v in self.offset.items() if isinstance(v, int)}
            plan = _Plan(
                names,
                self.num_replicas() if with_replicas else 1,
                {a.name: v for a, v in self.offset.items() if not isinstance(v, int)},
                tuple(static.get(name, 0) for name in names),
                tuple((it.extent, it.stride, position[it.axis.name]) for it in self.shard),
            )
            setattr(self, slot, plan)
        return plan

    def _place(self, coords, shape, with_replicas: bool):
        if shape is not None and (
            isinstance(shape, str) or not isinstance(shape, Sequence | np.ndarray | tvm_ffi.Array)
        ):
            raise TypeError(f"apply: shape must be a sequence of extents, got {shape!r}")
        if shape is not None:
            form = SHAPED
            kind = _coord_kind((*coords, *shape))
        else:
            form = FLAT if len(coords) == 1 else SHARD
            kind = _coord_kind(coords)
        if kind == "expr":
            # Symbolic apply builds TVM expressions: anything but an int or an integer expression is named here.
            coords = [offset_value(c, "a coordinate") for c in coords]
            shape = None if shape is None else [offset_value(s, "a shape extent") for s in shape]
            self._check_arity(form, len(coords), shape)
            return place_symbolic(self, form, list(coords), None if shape is None else list(shape), with_replicas)
        shape_ints = [static_int(s, "a shape extent") for s in shape] if shape is not None else []
        plan = self._plan(with_replicas)
        if kind == "array":
            return self._place_arrays(form, coords, shape_ints, plan, with_replicas)
        ints = [static_int(c, "a coordinate") for c in coords]
        values = None if with_replicas else _place_ints(plan, form, ints, shape_ints)
        if values is None:
            values = ffi.TileLayoutApplyInt(self, form, with_replicas, len(shape_ints), *shape_ints, *ints)
        width = len(plan.names)
        rows = [dict(zip(plan.names, values[r * width : (r + 1) * width], strict=False)) for r in range(plan.places)]
        if plan.symbolic:
            rows = [add_symbolic(row, plan.symbolic) for row in rows]
        return rows if with_replicas else rows[0]

    def _place_arrays(self, form, coords, shape_ints, plan: _Plan, with_replicas: bool):
        if plan.symbolic:
            raise ValueError(f"layout {self} has a symbolic offset; apply it to PrimExpr coordinates, not arrays")
        out_shape = coords[0].shape if type(coords[0]) is np.ndarray else None
        ready = True
        for c in coords:
            if type(c) is not np.ndarray or c.dtype != INT64_DTYPE or c.shape != out_shape or not c.flags.c_contiguous:
                ready = False
                break
        if not ready:
            # Anything but equally shaped contiguous int64 arrays is converted and broadcast first.
            arrays = np.broadcast_arrays(*[int64_array(c) for c in coords])
            coords = [np.ascontiguousarray(a) for a in arrays]
            out_shape = arrays[0].shape
        # The core reads each coordinate array as contiguous int64 values and writes places x axes x elements.
        out = np.empty((plan.places, len(plan.names), *out_shape), dtype=np.int64)
        ffi.TileLayoutApplyArray(
            self, form, with_replicas, from_dlpack(out), len(shape_ints), *shape_ints, *map(from_dlpack, coords)
        )
        return dict(zip(plan.names, out.swapaxes(0, 1) if with_replicas else out[0], strict=True))

    def _check_arity(self, form: int, count: int, shape) -> None:
        if form == SHARD and count != len(self.shard):
            raise ValueError(
                f"apply takes one flat index or one coordinate per shard iter ({len(self.shard)}), got {count} "
                "coordinates; pass shape=... to apply a coordinate of another logical shape"
            )
        if form == SHAPED and count != len(shape):
            raise ValueError(f"coordinate has {count} values but shape has {len(shape)} dimensions")

    # ---- algebra (C++ core; symbolic offsets are taken out around each call and put back) -------------------

    def canonicalize(self) -> TileLayout:
        """The normal form with the same meaning (SPEC §2): unit shard iters and zero offsets dropped, adjacent
        iters on one axis fused, replicas sorted. Under an active CUDA target (``with tvm.target.Target("cuda")``)
        the thread axes are first rewritten onto the one axis spanning the layout's scope (``laneid`` +
        ``warpid`` -> ``tx``), when there is such an axis.

        Example:
            >>> TileLayout(S[(8, 8, 8, 4, 2):(512, 64, 8, 2, 1)]).canonicalize()
            TileLayout(S[4096:1])
        """
        static, symbolic = split_symbolic_offsets(self)
        # A symbolic offset on a thread axis cannot be rescaled by the core, so such layouts keep their axes.
        fuse = _cuda_target_active() and not any(Axis.get(a).is_thread() for a in symbolic)
        return with_symbolic_offsets(ffi.TileLayoutCanonicalize(static, fuse), symbolic)

    def group(self, shape: Sequence[int]) -> tuple[TileLayout, list[int]]:
        """Split (never merge or reorder) shard iters so that runs of them multiply to each ``shape`` entry.
        Returns the layout and ``len(shape) + 1`` separators: dimension ``d`` owns ``shard[seps[d]:seps[d+1]]``.

        Example:
            >>> TileLayout(S[64:1]).group([4, 16])
            (TileLayout(S[(4, 16):(16, 1)]), [0, 1, 2])
        """
        static, symbolic = split_symbolic_offsets(self)
        shape = int_list(shape, "a group shape extent")
        grouped = ffi.TileLayoutGroup(static, shape)
        return with_symbolic_offsets(grouped, symbolic), list(ffi.TileLayoutSeparators(grouped, shape))

    def group_many(self, *shapes: Sequence[int]) -> tuple[TileLayout, list[list[int]]]:
        """Group by the common refinement of several shapes (equal sizes); one separator list per shape.
        Accepts the shapes as arguments or as one list of shapes.

        Example:
            >>> TileLayout(S[30:1]).group_many([6, 5], [2, 15])
            (TileLayout(S[(2, 3, 5):(15, 5, 1)]), [[0, 2, 3], [0, 1, 3]])
        """
        if len(shapes) == 1 and shapes[0] and all(isinstance(s, Sequence) for s in shapes[0]):
            shapes = tuple(shapes[0])
        static, symbolic = split_symbolic_offsets(self)
        grouped, seps = ffi.TileLayoutGroupMany(static, [int_list(s, "a group shape extent") for s in shapes])
        return with_symbolic_offsets(grouped, symbolic), [list(s) for s in seps]

    def apply_to_shape(self, coord: Sequence, input_shape: Sequence[int]) -> list:
        """The coordinate of every shard iter for the logical coordinate ``coord`` of a buffer of ``input_shape``
        (ints or ``PrimExpr``; grouped per dimension when possible, so expressions stay local to one dimension).

        Example:
            >>> TileLayout(S[(8, 8):(8, 1)]).apply_to_shape([29], [64])
            [3, 5]
        """
        if isinstance(coord, str) or not isinstance(coord, Sequence | tvm_ffi.Array):
            raise TypeError(f"apply_to_shape: coord must be a sequence of ints or expressions, got {coord!r}")
        coord = [c if tvm.ir.is_prim_expr(c) else static_int(c, "a coordinate") for c in coord]
        return shard_coordinates(self, coord, int_list(input_shape, "a shape extent"))

    def tile(self, outer: TileLayout, outer_shape: Sequence[int], inner_shape: Sequence[int]) -> TileLayout:
        """This layout (the inner tile) repeated by ``outer``: per dimension, outer iters then inner iters, the
        outer strides on axes the inner uses scaled by ``self.span(axis)``; replicas concatenate, offsets add.

        Example:
            >>> TileLayout(S[(2, 4):(1, 2)]).tile(TileLayout(S[(8, 8):(8, 1)]), [8, 8], [2, 4])
            TileLayout(S[(8, 2, 32):(64, 1, 2)])
        """
        return _combine(ffi.TileLayoutTile, self, _expect_tile(outer, "outer"), outer_shape, inner_shape)

    def tile_to(self, to_shape: Sequence[int], current_shape: Sequence[int]) -> TileLayout:
        """Tile this layout of ``current_shape`` row-major up to ``to_shape`` (each a multiple of the current one).

        Example:
            >>> TileLayout(S[(2, 2):(2, 1)]).tile_to([4, 4], [2, 2])
            TileLayout(S[(2, 2, 2, 2):(8, 2, 4, 1)])
        """
        to_shape, current_shape = int_list(to_shape, "a shape extent"), int_list(current_shape, "a shape extent")
        if len(to_shape) != len(current_shape) or any(t % c for t, c in zip(to_shape, current_shape, strict=False)):
            raise ValueError(f"tile_to: {to_shape} is not a whole multiple of {current_shape} in every dimension")
        repeats = [t // c for t, c in zip(to_shape, current_shape, strict=True)]
        return self.tile(TileLayout(S[tuple(repeats)]), repeats, current_shape)

    def is_tile_inner(self, tile_layout, tiled_shape: Sequence[int], inner_shape: Sequence[int]) -> TileLayout | None:
        """If ``tile_layout`` (the tiled layout) is this layout tiled by some outer layout, that outer layout, else
        ``None``. Exact: ``self.tile(outer, ...)`` gives back ``tile_layout`` canonically. ``tiled_shape`` is outer x
        inner per dimension. Under an active CUDA target ``tile_layout`` may be in the fused form ``canonicalize``
        gives there (``tx`` for ``warpid`` x ``laneid``). A swizzled one (ComposeLayout) is never a TileLayout tiled:
        ``None``.

        Example:
            >>> tiled = TileLayout(S[(8, 2, 32):(64, 1, 2)])
            >>> TileLayout(S[(2, 4):(1, 2)]).is_tile_inner(tiled, [16, 32], [2, 4])
            TileLayout(S[(8, 8):(8, 1)])
            >>> with tvm.target.Target("cuda"):
            ...     TileLayout(S[32 : 1 @ laneid]).is_tile_inner(TileLayout(S[64 : 1 @ tx]), [64], [32])
            TileLayout(S[2:1@warpid])
        """
        if _swizzled(tile_layout):
            return None
        return _recognise(ffi.TileLayoutIsTileInner, self, tile_layout, tiled_shape, inner_shape, _cuda_target_active())

    def is_tile_outer(self, tile_layout, tiled_shape: Sequence[int], outer_shape: Sequence[int]):
        """If ``tile_layout`` (the tiled layout) is some inner layout tiled by this one, that inner layout, else
        ``None`` (exact; the CUDA fused form as for ``is_tile_inner``). For a swizzled ``tile_layout`` (ComposeLayout,
        or a bare SwizzleLayout) the inner keeps the swizzle: a ComposeLayout whose ``tile`` by this layout gives
        ``tile_layout`` back.

        Example:
            >>> tiled = TileLayout(S[(8, 2, 32):(64, 1, 2)])
            >>> TileLayout(S[(8, 8):(8, 1)]).is_tile_outer(tiled, [16, 32], [8, 8])
            TileLayout(S[(2, 4):(1, 2)])
            >>> with tvm.target.Target("cuda"):
            ...     TileLayout(S[2 : 1 @ warpid]).is_tile_outer(TileLayout(S[64 : 1 @ tx]), [64], [2])
            TileLayout(S[32:1@laneid])
        """
        if _swizzled(tile_layout):
            composed = tile_layout.as_compose() if hasattr(tile_layout, "as_compose") else tile_layout
            inner = self.is_tile_outer(composed.tile_layout, tiled_shape, outer_shape)
            return None if inner is None else type(composed)(composed.swizzle, inner)
        return _recognise(ffi.TileLayoutIsTileOuter, self, tile_layout, tiled_shape, outer_shape, _cuda_target_active())

    def direct_sum(self, left: TileLayout, left_shape: Sequence[int], right_shape: Sequence[int]) -> TileLayout:
        """``left + self`` on the interleaved domain: ``(p, q, i, j) -> left(p, i) + self(q, j)``, no scaling.

        Example:
            >>> TileLayout(S[4 : 1 @ laneid]).direct_sum(TileLayout(S[2 : 4 @ laneid]), [2], [4])
            TileLayout(S[8:1@laneid])
        """
        return _combine(ffi.TileLayoutDirectSum, self, _expect_tile(left, "left"), left_shape, right_shape)

    def is_direct_sum_right(
        self, sum_layout: TileLayout, interleaved_shape: Sequence[int], right_shape: Sequence[int]
    ) -> TileLayout | None:
        """If ``sum_layout`` is ``left.direct_sum``-ed with this layout as the right addend, the left addend, else
        ``None``. ``interleaved_shape`` is ``(A0, B0, A1, B1, ...)``, or left x right per dimension.

        Example:
            >>> TileLayout(S[4 : 1 @ laneid]).is_direct_sum_right(TileLayout(S[8 : 1 @ laneid]), [8], [4])
            TileLayout(S[2:4@laneid])
        """
        interleaved_shape = per_dimension_shape(interleaved_shape, right_shape)
        return _recognise(ffi.TileLayoutIsDirectSumRight, self, sum_layout, interleaved_shape, right_shape)

    def is_direct_sum_left(
        self, sum_layout: TileLayout, interleaved_shape: Sequence[int], left_shape: Sequence[int]
    ) -> TileLayout | None:
        """If ``sum_layout`` has this layout as its left addend, the right addend, else ``None``. ``interleaved_shape``
        as for ``is_direct_sum_right``.

        Example:
            >>> TileLayout(S[2 : 4 @ laneid]).is_direct_sum_left(TileLayout(S[8 : 1 @ laneid]), [8], [2])
            TileLayout(S[4:1@laneid])
        """
        interleaved_shape = per_dimension_shape(interleaved_shape, left_shape)
        return _recognise(ffi.TileLayoutIsDirectSumLeft, self, sum_layout, interleaved_shape, left_shape)

    def slice(self, shape: Sequence[int], region: Sequence) -> TileLayout | None:
        """The layout of the sub-box ``region`` (``(begin, end)`` pairs or ``tvm.ir.Range``) of a buffer of
        ``shape``: ``sliced.apply(c, shape=extents) == self.apply(begin + c, shape=shape)``. Begins may be
        ``PrimExpr`` where a dimension is one iter. ``None`` when the sub-box is not affine in this model.

        Example:
            >>> TileLayout(S[(8, 8):(8, 1)]).slice([64], [(5, 8)])
            TileLayout(S[3:1] + 5)
        """
        shape = int_list(shape, "a shape extent")
        if isinstance(region, str) or not isinstance(region, Sequence | tvm_ffi.Array):
            raise TypeError(f"slice: region must be a list of (begin, end) pairs or Ranges, got {region!r}")
        if len(region) != len(shape):
            raise ValueError(
                f"slice: region {region!r} has {len(region)} dimensions but shape {shape} has {len(shape)}"
            )
        begins, extents = zip(*(range_bounds(r) for r in region), strict=True) if region else ((), ())
        static, symbolic = split_symbolic_offsets(self)
        if all(type(b) is int for b in begins):
            return with_symbolic_offsets(ffi.TileLayoutSlice(static, shape, begins, extents), symbolic)
        static_begins = [b if isinstance(b, int) else None for b in begins]
        answer = ffi.TileLayoutSliceSymbolic(static, shape, static_begins, list(extents))
        if answer is None:
            return None
        sliced, terms = answer
        for dim, axis, stride in terms:
            term = begins[dim] * stride
            symbolic[axis] = symbolic[axis] + term if axis in symbolic else term
        return with_symbolic_offsets(sliced, symbolic)

    def is_swizzle(self) -> bool:
        """``False``: seed 002's ``Layout.is_swizzle`` is true of a bare SwizzleLayout only."""
        return False

    def is_trivial(self) -> bool:
        """Whether the canonical form is at most one stride-1 memory iter, with no replica and no offset.

        Example:
            >>> TileLayout(S[(4, 8):(8, 1)]).is_trivial(), TileLayout(S[8 : 1 @ laneid]).is_trivial()
            (True, False)
        """
        static, symbolic = split_symbolic_offsets(self)
        return not symbolic and ffi.TileLayoutIsTrivial(static)

    def storage(self) -> TileLayout:
        """The memory part: iters and offsets on thread axes dropped.

        Example:
            >>> TileLayout(S[(32, 4):(1 @ laneid, 1)] + 2 @ warpid + 8).storage()
            TileLayout(S[4:1] + 8)
        """
        static, symbolic = split_symbolic_offsets(self)
        kept = {a: v for a, v in symbolic.items() if not Axis.get(a).is_thread()}
        return with_symbolic_offsets(ffi.TileLayoutStorage(static), kept)

    def unpack(self, num: int) -> TileLayout:
        """Each element becomes ``num`` contiguous ones: memory-axis strides and offsets times ``num``, then an
        innermost ``num:1`` iter on ``m``; thread-axis strides stay.

        Example:
            >>> TileLayout(S[(32, 4):(1 @ laneid, 1)]).unpack(2)
            TileLayout(S[(32, 4, 2):(1@laneid, 2, 1)])
        """
        num = static_int(num, "the unpack count")
        static, symbolic = split_symbolic_offsets(self)
        scaled = {a: v * num if Axis.get(a).is_memory() else v for a, v in symbolic.items()}
        return with_symbolic_offsets(ffi.TileLayoutUnpack(static, num), scaled)

    def pack(self, num: int) -> TileLayout:
        """The exact inverse of ``unpack(num)``: ``num`` contiguous elements become one. ``ValueError`` unless the
        innermost iter is a stride-1 memory iter with extent divisible by ``num`` and every other memory stride and
        offset is a multiple of ``num``.

        Example:
            >>> TileLayout(S[(32, 8):(1 @ laneid, 1)]).pack(2)
            TileLayout(S[(32, 4):(1@laneid, 1)])
        """
        num = static_int(num, "the pack count")
        static, symbolic = split_symbolic_offsets(self)
        analyzer, divided = tvm.sym.Analyzer(), {}
        for axis, value in symbolic.items():
            if Axis.get(axis).is_memory():
                if not analyzer.can_prove(tvm.tirx.floormod(value, num) == 0):
                    raise ValueError(
                        f"pack({num}): the offset {value} on axis {axis} is not provably a multiple of {num}"
                    )
                value = analyzer.simplify(tvm.tirx.floordiv(value, num))
            divided[axis] = value
        return with_symbolic_offsets(ffi.TileLayoutPack(static, num), divided)

    def broadcast(self, num: int, position: int = -1, axis: Axis | str = "m") -> TileLayout:
        """Insert a stride-0 iter of extent ``num`` at ``position`` (``-1``: after the last iter).

        Example:
            >>> TileLayout(S[(4, 8):(8, 1)]).broadcast(2, 1)
            TileLayout(S[(4, 2, 8):(8, 0, 1)])
        """
        static, symbolic = split_symbolic_offsets(self)
        layout = ffi.TileLayoutBroadcast(
            static, static_int(num, "the broadcast extent"), static_int(position, "the position"), Axis.get(axis)
        )
        return with_symbolic_offsets(layout, symbolic)

    def permute_dims(self, perm: Sequence[int]) -> TileLayout:
        """The shard iters reordered: iter ``i`` of the result is iter ``perm[i]`` of this layout.

        Example:
            >>> TileLayout(S[(4, 8):(8, 1)]).permute_dims([1, 0])
            TileLayout(S[(8, 4):(1, 8)])
        """
        static, symbolic = split_symbolic_offsets(self)
        return with_symbolic_offsets(ffi.TileLayoutPermuteDims(static, int_list(perm, "a permutation entry")), symbolic)

    def permute_by_groups(self, seps: Sequence[int], perm: Sequence[int]) -> TileLayout:
        """Reorder groups of shard iters (``seps`` as returned by ``group``): group ``i`` of the result is group
        ``perm[i]``.

        Example:
            >>> TileLayout(S[(2, 4, 8):(32, 8, 1)]).permute_by_groups([0, 2, 3], [1, 0])
            TileLayout(S[(8, 2, 4):(1, 32, 8)])
        """
        static, symbolic = split_symbolic_offsets(self)
        layout = ffi.TileLayoutPermuteByGroups(
            static, int_list(seps, "a separator"), int_list(perm, "a permutation entry")
        )
        return with_symbolic_offsets(layout, symbolic)

    @classmethod
    def trainium(cls, annotation: str, shape: Sequence[int], is_psum: bool = False) -> TileLayout:
        """A Trainium tile: dimensions annotated ``P`` (partitions, at most 128 in all; one wider ``P`` dimension
        splits, its high part going to the free axis) and ``F`` (free), each row-major on its own axis.

        Example:
            >>> TileLayout.trainium("PF", (128, 512))
            TileLayout(S[(128, 512):(1@P, 1@F)])
        """
        if not isinstance(annotation, str):
            raise TypeError(f"trainium: the annotation must be a str of 'P' and 'F', got {annotation!r}")
        layout = ffi.TileLayoutTrainium(annotation, int_list(shape, "a shape extent"))
        return layout.to_psum() if is_psum else layout

    def to_psum(self) -> TileLayout:
        """The PSUM form: the free axis ``F`` split into banks of 512 elements (axis ``Bank``, 8 banks).

        Example:
            >>> TileLayout(S[(128, 1024):(1 @ P, 1 @ F)]).to_psum()
            TileLayout(S[(128, 2, 512):(1@P, 1@Bank, 1@F)])
        """
        static, symbolic = split_symbolic_offsets(self)
        return with_symbolic_offsets(ffi.TileLayoutToPsum(static), symbolic)

    # ---- identity and printing -----------------------------------------------------------------------------

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TileLayout) and tvm_ffi.structural_equal(self, other)

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return tvm_ffi.structural_hash(self)

    @ffi.shown_when_unconstructed
    def __str__(self) -> str:
        return format_spec(self.shard, self.replica, self.offset)

    @ffi.shown_when_unconstructed
    def __repr__(self) -> str:
        return f"TileLayout({self})"

    def __reduce__(self):
        # A symbolic offset is a TVM expression whose variables are identities, not values: TVM's serialiser does
        # not round-trip them (and crashes on some), so such a layout is refused here rather than half-pickled.
        symbolic = {a.name: v for a, v in self.offset.items() if not isinstance(v, int)}
        if symbolic:
            raise TypeError(
                f"cannot pickle layout {self}: its offset {symbolic} is symbolic (a TVM expression); pickle the "
                "static layout and rebuild the symbolic offset after loading"
            )
        return (TileLayout.from_iters, (list(self.shard), list(self.replica), dict(self.offset)))


# Seed 002's PSUM geometry as class attributes (``TileLayout.kPSUMMaxElemPerBank == 512``, ``kPSUMBankNum == 8``),
# read from the C++ core, where ``to_psum`` uses them.
TileLayout.kPSUMMaxElemPerBank, TileLayout.kPSUMBankNum = (int(v) for v in ffi.TrainiumPsumGeometry())
