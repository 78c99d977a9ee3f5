"""How big a picture may get, checked from the layout's iters before anything is built.

A picture holds one entry per place (every element times every replica) and one cell per position of the physical
grid, whose rows and columns run over the whole range a memory axis reaches. Both numbers follow from the extents
and strides alone, in exact integer arithmetic, so a layout such as ``S[2:1099511627776]`` (two elements, a grid
of 2^40 cells) or ``R[2**24:0]`` (16 million replicas) is refused in microseconds, before ``apply_all`` or a
label list is made. The scene (server, ``render``, notebook) and the terminal table (``show``) call
``check_drawable`` first; these constants are the one home of the limits.
"""

from __future__ import annotations

import math

from ..layout import ComposeLayout, TileLayout

#: Most logical elements a picture or table shows; bigger tiles should be sliced first.
MAX_ELEMENTS = 16384
#: Most places (elements times replicas) a picture draws.
MAX_PLACES = 1 << 16
#: Most cells of the physical grid (the memory range the places fall in).
MAX_GRID_CELLS = 1 << 18


def memory_ranges(layout) -> dict[str, int]:
    """How many consecutive values each memory axis can reach, at most: ``1 + sum (extent - 1) * |stride|`` over
    the shard and replica iters on it (a swizzle adds one period, since it moves an address within its period).

    Example:
        >>> from tirx_layout import S, R, laneid
        >>> memory_ranges(TileLayout(S[(4, 8):(1 @ laneid, 2)] + R[2:-64]))
        {'m': 79}
    """
    tile = layout.tile_layout if isinstance(layout, ComposeLayout) else layout
    ranges: dict[str, int] = {}
    for it in [*tile.shard, *tile.replica]:
        if not isinstance(it.extent, int) or not isinstance(it.stride, int):
            raise ValueError(f"a picture needs integer extents and strides, got the iter {it!r}")
        if it.axis.is_memory():
            name = it.axis.name
            ranges[name] = ranges.get(name, 1) + (it.extent - 1) * abs(it.stride)
    if isinstance(layout, ComposeLayout):
        ranges["m"] = ranges.get("m", 1) + layout.swizzle.size()
    return ranges


def check_drawable(layout, elements: int | None = None) -> None:
    """``ValueError`` naming the number unless a picture of ``layout`` stays within ``MAX_ELEMENTS`` elements,
    ``MAX_PLACES`` places and ``MAX_GRID_CELLS`` cells of physical grid; ``TypeError`` for a non-layout.
    ``elements`` is how many logical elements the picture shows when it is a summary of a corner (default: all);
    the grid is bounded over the whole layout either way.

    Example:
        >>> from tirx_layout import S, R
        >>> check_drawable(TileLayout(S[(8, 64):(64, 1)]))
        >>> check_drawable(TileLayout(S[2:1099511627776]))
        Traceback (most recent call last):
        ...
        ValueError: the places reach 1099511627777 positions of m; pictures stop at 262144 (slice it first)
        >>> check_drawable(TileLayout(S[1:1] + R[268435456:0]))
        Traceback (most recent call last):
        ...
        ValueError: the layout has 268435456 places (1 elements x 268435456 replicas); pictures stop at 65536
    """
    if not isinstance(layout, TileLayout | ComposeLayout):
        raise TypeError(f"expected a TileLayout or ComposeLayout, got {layout!r}")
    elements = layout.size() if elements is None else elements
    if elements > MAX_ELEMENTS:
        raise ValueError(f"the tile has {elements} elements; pictures stop at {MAX_ELEMENTS} (slice it first)")
    tile = layout.tile_layout if isinstance(layout, ComposeLayout) else layout
    replicas = tile.num_replicas()
    if elements * replicas > MAX_PLACES:
        raise ValueError(
            f"the layout has {elements * replicas} places ({elements} elements x {replicas} replicas); "
            f"pictures stop at {MAX_PLACES}"
        )
    ranges = memory_ranges(layout)
    cells = math.prod(ranges.values())
    if cells > MAX_GRID_CELLS:
        reach = " x ".join(f"{extent} positions of {name}" for name, extent in ranges.items())
        total = f" = {cells} cells" if len(ranges) > 1 else ""
        raise ValueError(f"the places reach {reach}{total}; pictures stop at {MAX_GRID_CELLS} (slice it first)")
