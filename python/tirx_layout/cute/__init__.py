"""CuTe layouts over named axes: hierarchical ``(shape : stride)`` layouts, CuTe's algebra, swizzles, probe-then-prove
converters to and from TileLayout, and TileLang-style thread fragments.

Example:
    >>> from tirx_layout.cute import Layout, composition
    >>> print(composition(Layout.parse("(6,2):(8,2)"), Layout.parse("(4,3):(3,1)")))
    ((2,2),3):((24,2),8)
"""

from .algebra import (
    blocked_product,
    coalesce,
    complement,
    composition,
    cosize,
    depth,
    filter,
    is_partial_right_inverse,
    left_inverse,
    logical_divide,
    logical_product,
    raked_product,
    rank,
    restrict,
    right_inverse,
    size,
    tiled_divide,
    tiled_product,
    with_shape,
    zipped_divide,
    zipped_product,
)
from .convert import logical_shape, to_cute, to_cute_composed, to_cute_flat, to_tile_layout
from .fragment import Fragment
from .int_tuple import flatten, inner_product, prefix_product, product, shape_div
from .layout import Layout, compact_strides, make_layout
from .printing import latex_text, layout_text, print_latex, print_layout
from .swizzle import ComposedLayout, Swizzle

__all__ = [
    "ComposedLayout",
    "Fragment",
    "Layout",
    "Swizzle",
    "blocked_product",
    "coalesce",
    "compact_strides",
    "complement",
    "composition",
    "cosize",
    "depth",
    "filter",
    "flatten",
    "inner_product",
    "is_partial_right_inverse",
    "latex_text",
    "layout_text",
    "left_inverse",
    "logical_divide",
    "logical_product",
    "logical_shape",
    "make_layout",
    "prefix_product",
    "print_latex",
    "print_layout",
    "product",
    "raked_product",
    "rank",
    "restrict",
    "right_inverse",
    "shape_div",
    "size",
    "tiled_divide",
    "tiled_product",
    "to_cute",
    "to_cute_composed",
    "to_cute_flat",
    "to_tile_layout",
    "with_shape",
    "zipped_divide",
    "zipped_product",
]
