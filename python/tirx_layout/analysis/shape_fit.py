"""Whether a layout was written for the shape of the buffer that carries it.

A layout is applied to a buffer's row-major flat index, so any layout with the buffer's element count "fits" by
flattening. It was *written for* the buffer's shape when every buffer dimension is either a run of whole layout
dimensions (``S[(2, 128, 112):...]`` on a ``(256, 112)`` buffer: the first two merge) or lies inside one layout
dimension (``S[64:1]`` on a ``(4, 16)`` buffer: one dimension splits). A buffer dimension that takes the end of one
layout dimension and part of another (``S[(32, 128):...]`` on a ``(64, 64)`` buffer: rows 0..63 are 32 layout rows
times the high half of the layout's columns) means the layout describes another shape, and the buffer reinterprets
it. That is allowed, but said (``explain_layouts``), and refused where an instruction reads the operand's image
(``tcgen05.cp``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ..layout import ComposeLayout


def layout_dims(layout) -> tuple[int, ...] | None:
    """The extents of ``layout``'s shard dimensions (of its tile for a swizzled layout), or ``None`` when one is
    not a constant.

    Example:
        >>> from tirx_layout import TileLayout, S
        >>> layout_dims(TileLayout(S[(32, 128):(128, 1)]))
        (32, 128)
    """
    tile = layout.tile_layout if isinstance(layout, ComposeLayout) else layout
    extents = []
    for it in getattr(tile, "shard", ()):
        try:
            extents.append(int(it.extent))
        except TypeError:
            return None
    return tuple(extents)


def _boundaries(extents: Sequence[int]) -> set[int]:
    """The flat strides at which dimensions of ``extents`` (row-major) start: suffix products, 1 included."""
    found, product = {1}, 1
    for extent in reversed(extents):
        product *= extent
        found.add(product)
    return found


def reinterprets(layout, shape: Sequence[int]) -> bool:
    """Whether a buffer of ``shape`` reinterprets ``layout`` (written for another shape, see the module docstring).
    ``False`` when a size or extent is not a constant, or when the element counts differ (another check's business).

    Example:
        >>> from tirx_layout import TileLayout, S
        >>> reinterprets(TileLayout(S[(32, 128):(128, 1)]), (64, 64)), reinterprets(TileLayout(S[64:1]), (4, 16))
        (True, False)
    """
    dims = layout_dims(layout)
    try:
        shape = [int(e) for e in shape]
    except TypeError:
        return False
    if dims is None or math.prod(dims) != math.prod(shape):
        return False
    layout_starts = _boundaries([d for d in dims if d != 1])
    low = 1
    for extent in reversed([e for e in shape if e != 1]):
        high = low * extent
        inside = any(low < b < high for b in layout_starts)
        if inside and not (low in layout_starts and high in layout_starts):
            return True
        low = high
    return False
