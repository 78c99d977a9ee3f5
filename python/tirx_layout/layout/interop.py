"""Converters between this library's layouts and upstream ``tvm.tirx.layout`` objects, in both directions.

Conversion only: an upstream object is read field by field (or built from our fields) and never asked to compute
anything for us. Both libraries share the built-in axes by name; upstream spells a bare swizzle as a
``ComposeLayout`` over the identity tile of one period, so a ``SwizzleLayout`` goes there as that.

Importing this module (the package does) attaches ``to_upstream()`` to ``TileLayout``, ``SwizzleLayout``,
``ComposeLayout``, ``Axis`` and ``Iter``, the way ``viz`` attaches the notebook display.
"""

from __future__ import annotations

import tvm

from ..core.values import static_int
from .axis import BUILTIN_AXES, Axis, Iter
from .spec import S
from .swizzle import ComposeLayout, SwizzleLayout
from .tile import TileLayout


def _upstream():
    from tvm.tirx import layout  # imported on use: only a conversion needs upstream's layout module

    return layout


def _offset_value(value):
    """An upstream offset term as ours: an int when static, else the ``PrimExpr`` itself (a symbolic offset)."""
    if isinstance(value, tvm.tirx.IntImm):
        return int(value.value)
    return value


def _axis_to_upstream(axis: Axis):
    if axis.name not in BUILTIN_AXES:
        raise ValueError(
            f"axis {axis.name!r} has no upstream counterpart: upstream tvm.tirx.layout knows only the built-in axes "
            f"{', '.join(BUILTIN_AXES)}"
        )
    return _upstream().Axis.get(axis.name)


def _iter_to_upstream(it: Iter):
    return _upstream().Iter(it.extent, it.stride, _axis_to_upstream(it.axis))


def _tile_to_upstream(layout: TileLayout):
    up = _upstream()
    return up.TileLayout.from_iters(
        [_iter_to_upstream(it) for it in layout.shard],
        [_iter_to_upstream(it) for it in layout.replica],
        {_axis_to_upstream(axis): value for axis, value in layout.offset.items()},
    )


def _compose_to_upstream(swizzle: SwizzleLayout, tile: TileLayout):
    return _upstream().ComposeLayout(
        swizzle.per_element, swizzle.swizzle_len, swizzle.atom_len, _tile_to_upstream(tile), swizzle.swizzle_inner
    )


def to_upstream(obj):
    """The upstream ``tvm.tirx.layout`` object equal to ``obj`` (a TileLayout, SwizzleLayout, ComposeLayout, Axis or
    Iter of this library). A SwizzleLayout becomes upstream's bare swizzle, a ComposeLayout over the identity tile
    ``S[period]``. ``ValueError`` for an axis upstream does not know (a user-registered one).

    Example:
        >>> from tirx_layout import TileLayout, S, laneid
        >>> to_upstream(TileLayout(S[(8, 4) : (1 @ laneid, 1)]))
        T.TileLayout(T.S[(8, 4):(1 @ Axis.laneid, 1)])
        >>> to_upstream(SwizzleLayout(3, 3, 3))
        T.ComposeLayout(3, 3, 3, T.TileLayout(T.S[512:1]))
    """
    if isinstance(obj, TileLayout):
        return _tile_to_upstream(obj)
    if isinstance(obj, ComposeLayout):
        return _compose_to_upstream(obj.swizzle, obj.tile_layout)
    if isinstance(obj, SwizzleLayout):
        return _compose_to_upstream(obj, TileLayout(S[obj.size()]))
    if isinstance(obj, Axis):
        return _axis_to_upstream(obj)
    if isinstance(obj, Iter):
        return _iter_to_upstream(obj)
    raise TypeError(
        f"to_upstream takes a tirx_layout TileLayout, SwizzleLayout, ComposeLayout, Axis or Iter, got {obj!r}"
    )


def is_upstream_layout(obj) -> bool:
    """Whether ``obj`` is an upstream ``tvm.tirx.layout`` layout (what :func:`from_upstream` converts).

    Example:
        >>> from tvm.tirx import layout as upstream
        >>> is_upstream_layout(upstream.TileLayout(upstream.S[8])), is_upstream_layout(TileLayout(S[8]))
        (True, False)
    """
    return isinstance(obj, _upstream().Layout)


def _axis_from_upstream(axis) -> Axis:
    return Axis.get(str(axis.name))


def _iter_from_upstream(it) -> Iter:
    return Iter(
        static_int(it.extent, "an upstream iter extent"),
        static_int(it.stride, "an upstream iter stride"),
        _axis_from_upstream(it.axis),
    )


def _tile_from_upstream(layout) -> TileLayout:
    return TileLayout.from_iters(
        [_iter_from_upstream(it) for it in layout.shard],
        [_iter_from_upstream(it) for it in layout.replica],
        {_axis_from_upstream(axis).name: _offset_value(value) for axis, value in layout.offset.items()},
    )


def from_upstream(obj):
    """This library's object equal to the upstream ``tvm.tirx.layout`` ``obj``: a TileLayout, a ComposeLayout (its
    swizzle as a SwizzleLayout), an Axis or an Iter. Upstream's static values arrive as ints, symbolic offsets stay
    ``PrimExpr``; a symbolic extent or stride is a ``TypeError``, an axis this library does not know a ``KeyError``.

    Example:
        >>> from tvm.tirx import layout as upstream
        >>> from_upstream(upstream.TileLayout(upstream.S[(8, 4) : (1 @ upstream.Axis.laneid, 1)]))
        TileLayout(S[(8, 4):(1@laneid, 1)])
        >>> from_upstream(upstream.ComposeLayout(3, 3, 3, upstream.TileLayout(upstream.S[(8, 64) : (64, 1)])))
        ComposeLayout(SwizzleLayout(3, 3, 3), TileLayout(S[(8, 64):(64, 1)]))
    """
    up = _upstream()
    if isinstance(obj, up.TileLayout):
        return _tile_from_upstream(obj)
    if isinstance(obj, up.ComposeLayout):
        swizzle = SwizzleLayout(
            static_int(obj.per_element, "per_element"),
            static_int(obj.swizzle_len, "swizzle_len"),
            static_int(obj.atom_len, "atom_len"),
            bool(obj.swizzle_inner),
        )
        return ComposeLayout(swizzle, _tile_from_upstream(obj.tile_layout))
    if isinstance(obj, up.Axis):
        return _axis_from_upstream(obj)
    if isinstance(obj, up.Iter):
        return _iter_from_upstream(obj)
    raise TypeError(
        f"from_upstream takes an upstream tvm.tirx.layout TileLayout, ComposeLayout, Axis or Iter, got {obj!r}"
    )


for _cls in (TileLayout, SwizzleLayout, ComposeLayout, Axis, Iter):
    _cls.to_upstream = to_upstream
