"""What a layout says about storage, read off the layout alone: which thread axes distribute it, how many register
slots each thread holds, whether a fragment is padded past its buffer, how much flat storage a memory layout needs
and at which addresses it puts an element."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from .indexing import flatten
from .swizzle import ComposeLayout, SwizzleLayout
from .tile import TileLayout


def _is_array(value) -> bool:
    return isinstance(value, np.ndarray)


def tile_part(layout) -> TileLayout | None:
    """The TileLayout of ``layout``: itself, the tile of a ComposeLayout, ``None`` for a bare SwizzleLayout.

    Example:
        >>> tile_part(ComposeLayout(SwizzleLayout(3, 3, 3), TileLayout(S[(8, 64):(64, 1)])))
        TileLayout(S[(8, 64):(64, 1)])
    """
    if isinstance(layout, ComposeLayout):
        return layout.tile_layout
    return layout if isinstance(layout, TileLayout) else None


def layout_threads(layout) -> list[str]:
    """Names of the thread axes ``layout`` places elements on (shard or replica), in order of appearance.

    Example:
        >>> from tirx_layout import TileLayout, S, R, laneid, warpid
        >>> layout_threads(TileLayout(S[(32, 2):(1@laneid, 1)] + R[4:1@warpid]))
        ['laneid', 'warpid']
    """
    tile = tile_part(layout)
    if tile is None:
        return []
    names = []
    for it in (*tile.shard, *tile.replica):
        if it.axis.is_thread() and it.axis.name not in names:
            names.append(it.axis.name)
    return names


def slot_count(layout) -> int:
    """How many register slots one thread holds of a thread-distributed layout: the span of its ``m`` part.

    Example:
        >>> from tirx_layout import TileLayout, S, laneid, warpid
        >>> slot_count(TileLayout(S[(8, 2, 4, 2):(4@laneid, 1@warpid, 1@laneid, 1)]))
        2
    """
    return int(layout.span("m"))


def tail_padded(layout, shape: Sequence[int]) -> bool:
    """Whether a thread-distributed ``layout`` covers more places than a buffer of ``shape`` has elements: a
    fragment whose size is not a multiple of its threads. Its logical elements are the row-major flat indices; the
    places of indices past the buffer hold nothing, and copies guard them with ``flat < size`` (the tail predicate).

    Example:
        >>> from tirx_layout import TileLayout, S, laneid, warpid
        >>> tail_padded(TileLayout(S[(2, 4, 32):(1, 1@warpid, 1@laneid)]), (229,))
        True
    """
    return bool(layout_threads(layout)) and int(layout.size()) > math.prod(int(e) for e in shape)


def storage_extent(layout) -> int:
    """Elements of flat storage a memory layout needs: its span on ``m``, rounded up to whole swizzle periods
    (a swizzle permutes addresses inside a period, so a partial last period may reach its end).

    Example:
        >>> from tirx_layout import TileLayout, S, ComposeLayout, SwizzleLayout
        >>> storage_extent(TileLayout(S[(8, 8):(1, 8)] + 4))
        68
        >>> storage_extent(ComposeLayout(SwizzleLayout(3, 3, 3), TileLayout(S[(4, 64):(64, 1)])))
        512
    """
    if isinstance(layout, SwizzleLayout):
        return layout.size()
    span = tile_part(layout).span("m")
    if not isinstance(span, int):
        raise ValueError(f"layout {layout} has a symbolic span {span}; a buffer's storage needs a static size")
    if isinstance(layout, ComposeLayout):
        period = layout.swizzle.size()
        span = -(-span // period) * period
    return span


def axes_used(layout) -> set[str]:
    """Names of every axis ``layout`` uses (shard, replica and offset), for checking where it may live.

    Example:
        >>> from tirx_layout import TileLayout, S, TLane, TCol
        >>> sorted(axes_used(TileLayout(S[(128, 4):(1@TLane, 1@TCol)])))
        ['TCol', 'TLane']
    """
    tile = tile_part(layout)
    if tile is None:
        return {"m"}
    return {it.axis.name for it in (*tile.shard, *tile.replica)} | {a.name for a in tile.offset}


def storage_addresses(
    layout, shape: Sequence[int], coords: Sequence, every_replica: bool = False, analyzer=None
) -> list:
    """Flat storage addresses of the element at ``coords`` (ints, numpy arrays or PrimExprs) of a buffer of
    ``shape`` under a memory layout (``None``: row-major; a bare ``SwizzleLayout`` swizzles the row-major index),
    one per replica place when ``every_replica``, replica 0 first. With an ``analyzer`` (what the kernel's indices
    range over), a swizzled PrimExpr address keeps outside the swizzle what it does not change
    (``SwizzleLayout.swizzle_sum``): the code a compiler hoists and folds.

    Example:
        >>> from tirx_layout import TileLayout, S, R
        >>> storage_addresses(TileLayout(S[(4, 8):(1, 4)] + R[2:32]), (4, 8), [1, 2], every_replica=True)
        [9, 41]
    """
    if layout is None:
        return [flatten(coords, shape)]
    if isinstance(layout, SwizzleLayout):
        return [layout.swizzle_address(flatten(coords, shape))]
    if analyzer is not None and isinstance(layout, ComposeLayout) and not any(_is_array(c) for c in coords):
        tile = layout.tile_layout
        places = (
            [tile.apply(*coords, shape=list(shape))]
            if not every_replica
            else tile.apply_all(*coords, shape=list(shape))
        )
        return [layout.swizzle.swizzle_sum(p.get("m", 0), analyzer) for p in places]
    if not every_replica:
        return [layout.apply(*coords, shape=list(shape)).get("m", 0)]
    places = layout.apply_all(*coords, shape=list(shape))
    if isinstance(places, dict):  # numpy coordinates: one leading axis over the replicas
        return list(np.asarray(places["m"])) if "m" in places else [0]
    return [p.get("m", 0) for p in places]
