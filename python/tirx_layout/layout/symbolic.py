"""Symbolic application of a TileLayout: TVM ``PrimExpr`` coordinates to simplified per-axis expressions.

The C++ core has no TVM IR, so expression building happens here, following the same forward map as the integer
path (flatten row-major, split mixed-radix with the first component unreduced, scale by strides, add offsets).
"""

from __future__ import annotations

import tvm
from tvm.tirx import IntImm, floordiv, floormod

from ..core import ffi
from ..core.values import expr_dtype
from .axis import Axis
from .indexing import flatten

FLAT, SHARD, SHAPED = 0, 1, 2

_INT32_MAX = 2**31 - 1


def _reach(layout, shape) -> int:
    """The largest magnitude a symbolic apply of ``layout`` forms for a coordinate inside its domain: the flat
    index, and on every axis the sum of the shard and replica steps and the static offset."""
    size = 1
    for it in layout.shard:
        size *= it.extent
    reach = size - 1
    if shape:
        flat = 1
        for s in shape:
            flat *= abs(s) if isinstance(s, int) else 1
        reach = max(reach, flat - 1)
    per_axis: dict[str, int] = {}
    for it in (*layout.shard, *layout.replica):
        per_axis[it.axis.name] = per_axis.get(it.axis.name, 0) + (it.extent - 1) * abs(it.stride)
    for axis, value in layout.offset.items():
        if isinstance(value, int):
            per_axis[axis.name] = per_axis.get(axis.name, 0) + abs(value)
    return max([reach, *per_axis.values()])


def _dtype_for(values, layout, shape=None) -> str:
    """int64 when any input or symbolic offset is int64, or when a place, flat index or constant of the layout over
    its domain would not fit int32; else the inputs' dtype. The dtype must hold every place the layout produces,
    not only the constants it is written with."""
    dtypes = {expr_dtype(v) for v in values if tvm.ir.is_prim_expr(v)}
    offsets = {expr_dtype(v) for v in layout.offset.values() if not isinstance(v, int)}
    if "int64" in dtypes | offsets:
        return "int64"
    constants = [abs(it.stride) for it in (*layout.shard, *layout.replica)] + [it.extent for it in layout.shard]
    constants += [abs(v) for v in values if isinstance(v, int)]
    if _reach(layout, shape) > _INT32_MAX or any(c > _INT32_MAX for c in constants):
        return "int64"
    return dtypes.pop() if len(dtypes) == 1 else "int32"


def _expr(value, dtype: str):
    if tvm.ir.is_prim_expr(value):
        return value if expr_dtype(value) == dtype else tvm.tirx.Cast(dtype, value)
    return IntImm(dtype, value)


def split_flat(flat, extents: list[int], dtype: str) -> list:
    """Mixed-radix split of ``flat`` over ``extents``, last fastest; the first component keeps the quotient.

    Example:
        >>> x = tvm.tirx.Var("x", "int32")
        >>> [str(c) for c in split_flat(x, [4, 8], "int32")]
        ['x // 8', 'x % 8']
    """
    parts = [None] * len(extents)
    for k in range(len(extents) - 1, 0, -1):
        parts[k] = floormod(flat, IntImm(dtype, extents[k]))
        flat = floordiv(flat, IntImm(dtype, extents[k]))
    if extents:
        parts[0] = flat
    return parts


def place_symbolic(layout, form: int, coords, shape, with_replicas: bool):
    """Per-axis expressions of the place(s) of ``coords`` (see ``TileLayout.apply``).

    Returns a dict ``{axis name: PrimExpr}``, or with ``with_replicas`` a list of such dicts, replica 0 first.

    Example:
        >>> from tirx_layout import TileLayout, S
        >>> x = tvm.tirx.Var("x", "int32")
        >>> place_symbolic(TileLayout(S[8:4]), FLAT, [x], None, False)
        {'m': x * 4}
    """
    dtype = _dtype_for([*coords, *(shape or [])], layout, shape)
    values = [_expr(c, dtype) for c in coords]
    if form == SHAPED:
        values, form = [flatten(values, [_expr(s, dtype) for s in shape])], FLAT
    if form == FLAT:
        values = split_flat(values[0], [it.extent for it in layout.shard], dtype)

    names = list(ffi.TileLayoutOutputAxes(layout, with_replicas))
    sums = {name: IntImm(dtype, 0) for name in names}
    for c, it in zip(values, layout.shard, strict=True):
        sums[it.axis.name] = sums[it.axis.name] + c * IntImm(dtype, it.stride)
    for axis, value in layout.offset.items():
        sums[axis.name] = sums[axis.name] + _expr(value, dtype)

    analyzer = tvm.sym.Analyzer()
    base = {name: analyzer.simplify(expr) for name, expr in sums.items()}
    if not with_replicas:
        return base
    # Replica displacements are integers: the core's places of the all-zero shard coordinate, minus place 0.
    zero = [0] * len(layout.shard)
    flat_rows = ffi.TileLayoutApplyInt(layout, SHARD, True, 0, *zero)
    width = len(names)
    rows = [flat_rows[r * width : (r + 1) * width] for r in range(layout.num_replicas())]
    return [
        {name: analyzer.simplify(base[name] + IntImm(dtype, row[a] - rows[0][a])) for a, name in enumerate(names)}
        for row in rows
    ]


def shard_coordinates(layout, coord: list, input_shape: list[int]) -> list:
    """The coordinate of each shard iter of ``layout`` for logical ``coord`` of a buffer of ``input_shape``.

    Integers flatten row-major and split over the shard extents. Expressions are split per dimension over the
    layout grouped by ``input_shape`` when that grouping exists, so each expression involves one dimension's
    coordinate only; an iter that grouping split in pieces gets its pieces recombined.

    Example:
        >>> from tirx_layout import TileLayout, S
        >>> i, j = tvm.tirx.Var("i", "int32"), tvm.tirx.Var("j", "int32")
        >>> [str(c) for c in shard_coordinates(TileLayout(S[(8, 8):(8, 1)]), [i, j], [8, 8])]
        ['i', 'j']
    """
    if len(coord) != len(input_shape):
        raise ValueError(f"coordinate {coord!r} has {len(coord)} values but shape {input_shape} has {len(input_shape)}")
    extents = [it.extent for it in layout.shard]
    if not any(tvm.ir.is_prim_expr(c) and not isinstance(c, IntImm) for c in coord):
        flat = flatten([int(c) for c in coord], input_shape)
        parts = []
        for e in reversed(extents[1:]):
            parts.append(flat % e)
            flat //= e
        return [flat, *reversed(parts)] if extents else []

    dtype = _dtype_for([*coord, *input_shape], layout, input_shape)
    values = [_expr(c, dtype) for c in coord]
    analyzer = tvm.sym.Analyzer()
    pieces = _pieces_by_dimension(layout, values, input_shape, dtype)
    if pieces is None:
        flat = flatten(values, [IntImm(dtype, s) for s in input_shape])
        return [analyzer.simplify(c) for c in split_flat(flat, extents, dtype)]
    return [analyzer.simplify(c) for c in pieces]


def _pieces_by_dimension(layout, values, input_shape, dtype):
    """Per-iter coordinates through ``layout.group(input_shape)``, or ``None`` when that grouping does not exist."""
    try:
        grouped, seps = layout.group(input_shape)
    except ValueError:
        return None
    piece_coords, piece_extents = [], []
    for d, value in enumerate(values):
        group_extents = [it.extent for it in grouped.shard[seps[d] : seps[d + 1]]]
        piece_coords += split_flat(value, group_extents, dtype)
        piece_extents += group_extents
    # Grouping only splits iters (and adds unit iters for size-1 dimensions): walk the pieces back onto the iters.
    out, k = [], 0
    for it in layout.shard:
        coord, size = IntImm(dtype, 0), 1
        while k < len(piece_extents) and (size < it.extent or (it.extent == 1 and size == 1 and piece_extents[k] == 1)):
            coord = coord * IntImm(dtype, piece_extents[k]) + piece_coords[k]
            size *= piece_extents[k]
            k += 1
            if it.extent == 1:
                break
        if size != it.extent:
            return None
        out.append(coord)
    return out if all(e == 1 for e in piece_extents[k:]) else None


def add_symbolic(place: dict, symbolic: dict) -> dict:
    """``place`` with the symbolic offsets (by axis name) added to their axes, simplified.

    Example:
        >>> stage = tvm.tirx.Var("stage", "int32")
        >>> add_symbolic({"m": 3, "laneid": 1}, {"m": stage * 64})
        {'m': stage * 64 + 3, 'laneid': 1}
    """
    analyzer = tvm.sym.Analyzer()
    return {
        name: analyzer.simplify(value + symbolic[name]) if name in symbolic else value for name, value in place.items()
    }


def split_symbolic_offsets(layout) -> tuple[object, dict[str, object]]:
    """The layout without its symbolic offsets, and those offsets by axis name (the core takes integers only).

    Example:
        >>> from tirx_layout import TileLayout, S, warpid
        >>> split_symbolic_offsets(TileLayout(S[64:1] + tvm.tirx.Var("k", "int32") * 64 + 3 @ warpid))
        (TileLayout(S[64:1] + 3@warpid), {'m': k * 64})
    """
    if not ffi.TileLayoutHasSymbolicOffset(layout):
        return layout, {}  # the common case, answered without walking the offsets in Python
    symbolic = {a.name: v for a, v in layout.offset.items() if not isinstance(v, int)}
    static = {a: v for a, v in layout.offset.items() if isinstance(v, int)}
    return ffi.TileLayout(list(layout.shard), list(layout.replica), static), symbolic


def with_symbolic_offsets(layout, symbolic: dict[str, object]):
    """``layout`` with symbolic offset terms added back (simplified; a term that simplifies to 0 disappears).

    Example:
        >>> from tirx_layout import TileLayout, S
        >>> k = tvm.tirx.Var("k", "int32")
        >>> with_symbolic_offsets(TileLayout(S[64:1]), {"m": k - k})
        TileLayout(S[64:1])
    """
    if not symbolic or layout is None:
        return layout
    analyzer = tvm.sym.Analyzer()
    terms = {a.name: v for a, v in layout.offset.items()}
    for axis, value in symbolic.items():
        value = analyzer.simplify(terms[axis] + value if axis in terms else value)
        if isinstance(value, tvm.tirx.IntImm):
            value = int(value.value)
        terms[axis] = value
    kept = {Axis.get(a): v for a, v in terms.items() if not (isinstance(v, int) and v == 0)}
    return ffi.TileLayout(list(layout.shard), list(layout.replica), kept)
