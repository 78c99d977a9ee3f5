"""The layout model: named axes, the ``S[...] + R[...] + offset`` notation, ``TileLayout`` (a veneer over the C++
core), symbolic application, ``SwizzleLayout``/``ComposeLayout``, the inverse map, the layout-text parser, the
converters to and from upstream layouts, row-major index arithmetic and what a layout says about storage. Nothing here
knows about hardware, IR or passes."""

from .axis import BUILTIN_AXES, EXEC_LEVELS, Axis, Iter
from .interop import from_upstream, is_upstream_layout, to_upstream
from .spec import LayoutSpec, Offset, OnAxis, R, S
from .swizzle import ComposeLayout, SwizzleLayout
from .text import LayoutTextError, parse_layout
from .tile import TileLayout

#: The layout classes a buffer may carry.
LAYOUT_TYPES = (TileLayout, SwizzleLayout, ComposeLayout)

__all__ = [
    "BUILTIN_AXES",
    "EXEC_LEVELS",
    "LAYOUT_TYPES",
    "Axis",
    "ComposeLayout",
    "Iter",
    "LayoutSpec",
    "LayoutTextError",
    "Offset",
    "OnAxis",
    "R",
    "S",
    "SwizzleLayout",
    "TileLayout",
    "from_upstream",
    "is_upstream_layout",
    "parse_layout",
    "to_upstream",
]
