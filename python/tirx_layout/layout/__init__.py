"""The layout model: named axes, the ``S[...] + R[...] + offset`` notation, ``TileLayout`` (a veneer over the C++
core), symbolic application, ``SwizzleLayout``/``ComposeLayout``, the inverse map, the layout-text parser, the
converters to and from upstream layouts, row-major index arithmetic and what a layout says about storage. Nothing here
knows about hardware, IR or passes."""

import abc

from .axis import BUILTIN_AXES, EXEC_LEVELS, Axis, ExecScope, Iter
from .interop import from_upstream, is_upstream_layout, to_upstream
from .spec import LayoutSpec, Offset, OnAxis, R, S
from .swizzle import ComposeLayout, SwizzleLayout
from .text import LayoutTextError, parse_layout
from .tile import TileLayout

#: The layout classes a buffer may carry.
LAYOUT_TYPES = (TileLayout, SwizzleLayout, ComposeLayout)


class Layout(abc.ABC):  # noqa: B024 (no abstract methods: it only names the three classes together)
    """What seed 002's ``Layout`` base class is for: ``isinstance(x, Layout)`` holds for the three layout classes,
    which share its methods (``apply``, ``size``, ``span``, ``canonicalize``, ``tile``, ``slice``, ...). The classes
    are C++ objects registered with TVM's FFI, so they are registered here rather than derived from it.

    Example:
        >>> isinstance(SwizzleLayout(3, 3, 3), Layout), isinstance(TileLayout(S[4]), Layout), isinstance(S[4], Layout)
        (True, True, False)
    """


for _layout_type in LAYOUT_TYPES:
    Layout.register(_layout_type)

__all__ = [
    "BUILTIN_AXES",
    "EXEC_LEVELS",
    "LAYOUT_TYPES",
    "Axis",
    "ComposeLayout",
    "ExecScope",
    "Iter",
    "Layout",
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
