"""Notebook display of layouts: importing this module gives ``TileLayout`` and ``ComposeLayout`` the
``_repr_svg_``/``_repr_html_`` methods notebooks call, so the model knows nothing of pictures and the pictures attach
themselves (``import tirx_layout`` imports ``tirx_layout.viz``, which imports this)."""

from __future__ import annotations

from ..layout import ComposeLayout, TileLayout
from .geometry import layout_picture
from .scene import build_scene
from .svg import picture_svg

#: A composed layout's element type, guessed from the swizzle's 16-byte vector (per_element = log2(16 / bytes)).
_DTYPE_BY_BYTES = {1: "uint8", 2: "float16", 4: "float32", 8: "float64"}


def _dtype(layout) -> str:
    swizzle = getattr(layout, "swizzle", None)
    if swizzle is None or swizzle.per_element > 4:
        return "float32"
    return _DTYPE_BY_BYTES.get(16 >> swizzle.per_element, "float32")


def repr_svg(layout) -> str | None:
    """The picture of ``layout`` over its default logical shape, as SVG; ``None`` (plain repr) when the layout is
    too big to draw.

    Example:
        >>> repr_svg(TileLayout(S[(2, 4):(1 @ laneid, 1)])).startswith("<svg")
        True
        >>> repr_svg(TileLayout(S[(256, 256):(256, 1)])) is None
        True
    """
    try:
        return picture_svg(layout_picture(build_scene(layout, None, _dtype(layout))))
    except ValueError:
        return None


def repr_html(layout) -> str | None:
    """``repr_svg`` in a scrolling box, for notebooks that prefer HTML.

    Example:
        >>> repr_html(TileLayout(S[4:1])).startswith("<div")
        True
    """
    svg = repr_svg(layout)
    return None if svg is None else f'<div style="overflow:auto;max-height:40em">{svg}</div>'


def attach() -> None:
    """Give the layout classes their notebook display (done on import; idempotent).

    Example:
        >>> attach(); TileLayout._repr_svg_ is repr_svg
        True
    """
    for cls in (TileLayout, ComposeLayout):
        cls._repr_svg_, cls._repr_html_ = repr_svg, repr_html


attach()
