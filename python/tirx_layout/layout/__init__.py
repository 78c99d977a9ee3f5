"""The layout model: named axes, the ``S[...] + R[...] + offset`` notation, ``TileLayout`` (a veneer over the C++
core), symbolic application, ``SwizzleLayout``/``ComposeLayout``, the inverse map, the layout-text parser, row-major
index arithmetic and what a layout says about storage. Nothing here knows about hardware, IR or passes."""

from .axis import BUILTIN_AXES, EXEC_LEVELS, Axis, ExecScope, Iter
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
    "ExecScope",
    "Iter",
    "LayoutSpec",
    "LayoutTextError",
    "Offset",
    "OnAxis",
    "R",
    "S",
    "SwizzleLayout",
    "TileLayout",
    "parse_layout",
]
