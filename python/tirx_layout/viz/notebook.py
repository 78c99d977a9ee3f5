"""Notebook display of layouts: importing this module gives ``TileLayout``, ``ComposeLayout``, ``cute.Layout``
and ``cute.ComposedLayout`` the ``_repr_svg_``/``_repr_html_`` methods notebooks call, so the models know nothing
of pictures and the pictures attach themselves (``import tirx_layout`` imports ``tirx_layout.viz``, which imports this).

A notebook picture stays under ``MAX_NOTEBOOK_BYTES``: a tile too big for that (a 128 x 128 swizzled tile is
16384 cells) shows a summary, the top-left corner of its logical tile and the physical cells that corner uses,
with a line saying so; its labels stay readable because the summary is small enough to carry them.
"""

from __future__ import annotations

from ..cute.layout import Layout as CuteLayout
from ..cute.printing import layout_grid
from ..cute.swizzle import ComposedLayout as CuteComposedLayout
from ..layout import ComposeLayout, TileLayout
from .geometry import grid_picture, layout_picture
from .limits import MAX_ELEMENTS
from .scene import build_scene, check_shape, crop_scene, palette
from .svg import picture_svg

#: A composed layout's element type, guessed from the swizzle's 16-byte vector (per_element = log2(16 / bytes)).
_DTYPE_BY_BYTES = {1: "uint8", 2: "float16", 4: "float32", 8: "float64"}
#: Largest SVG a notebook cell gets, in bytes; bigger tiles show a summary.
MAX_NOTEBOOK_BYTES = 200_000
#: Logical elements a summary starts from (then halved until the SVG fits).
SUMMARY_ELEMENTS = 512


def _dtype(layout) -> str:
    swizzle = getattr(layout, "swizzle", None)
    if swizzle is None or swizzle.per_element > 4:
        return "float32"
    return _DTYPE_BY_BYTES.get(16 >> swizzle.per_element, "float32")


def notebook_svg(scene: dict, limit: int = MAX_NOTEBOOK_BYTES) -> str:
    """The SVG of ``scene``, or of a summary of it (``crop_scene``: its top-left corner) when the whole picture
    would pass ``limit`` bytes or be too wide for its cell texts; the summary halves until both hold.

    Example:
        >>> from tirx_layout.viz.scene import build_scene
        >>> scene = build_scene(TileLayout(S[(64, 64):(64, 1)]), (64, 64), "float16")
        >>> svg = notebook_svg(scene, 100_000)
        >>> len(svg) <= 100_000, "summary: logical rows 0-" in svg
        (True, True)
    """
    logical = scene["logical"]
    rows, cols = logical["rows"], logical["cols"]
    if rows * cols <= SUMMARY_ELEMENTS:
        picture = layout_picture(scene)
        svg = picture_svg(picture)
        if len(svg) <= limit and picture.complete:
            return svg
    cols = min(cols, 64)
    rows = max(1, min(rows, SUMMARY_ELEMENTS // cols))
    while True:
        picture = layout_picture(crop_scene(scene, rows, cols))
        svg = picture_svg(picture)
        if (len(svg) <= limit and picture.complete) or rows * cols == 1:
            return svg
        rows, cols = (max(1, rows // 2), cols) if rows >= cols else (rows, max(1, cols // 2))


def repr_svg(layout) -> str | None:
    """The picture of ``layout`` over its default logical shape, as SVG (a summary for big tiles, see
    ``notebook_svg``; past ``MAX_ELEMENTS`` only the summary's corner is computed); ``None`` (plain repr) when
    even that cannot be drawn.

    Example:
        >>> repr_svg(TileLayout(S[(2, 4):(1 @ laneid, 1)])).startswith("<svg")
        True
        >>> "summary: logical rows 0-7 of 256" in repr_svg(TileLayout(S[(256, 256):(256, 1)]))
        True
    """
    try:
        shape = check_shape(layout, None)
        window = None
        if layout.size() > MAX_ELEMENTS:  # only the corner a summary shows is computed
            cols = min(shape[-1], 64)
            window = (max(1, SUMMARY_ELEMENTS // cols), cols)
        return notebook_svg(build_scene(layout, shape, _dtype(layout), window))
    except ValueError:
        return None


def cute_svg(layout: CuteLayout | CuteComposedLayout) -> str | None:
    """A ``cute.Layout``'s (or ``cute.ComposedLayout``'s) picture: ``print_layout``'s table as a grid (row ``m``
    down, column ``n`` across, each cell ``L(m, n)``, coloured by value); ``None`` above rank 2 or past
    ``MAX_NOTEBOOK_BYTES``.

    Example:
        >>> from tirx_layout.cute import Layout
        >>> svg = cute_svg(Layout.parse("(2,4):(4,1)"))
        >>> svg.startswith("<svg"), ">7</text>" in svg
        (True, True)
    """
    try:
        rows, cols, texts, values = layout_grid(layout)
    except ValueError:
        return None
    if rows * cols > SUMMARY_ELEMENTS * 4:
        return None
    flat = [t for row in texts for t in row]
    keys = values.reshape(-1).tolist() if values is not None else flat
    order = {key: k for k, key in enumerate(dict.fromkeys(keys))}
    colours = palette(min(len(order), 64))
    fills = [colours[order[key] % len(colours)] for key in keys]
    picture = grid_picture(str(layout), [str(m) for m in range(rows)], [str(n) for n in range(cols)], flat, fills)
    svg = picture_svg(picture)
    return svg if len(svg) <= MAX_NOTEBOOK_BYTES else None


def repr_html(layout) -> str | None:
    """``repr_svg`` in a scrolling box, for notebooks that prefer HTML.

    Example:
        >>> repr_html(TileLayout(S[4:1])).startswith("<div")
        True
    """
    svg = cute_svg(layout) if isinstance(layout, CuteLayout | CuteComposedLayout) else repr_svg(layout)
    return None if svg is None else f'<div style="overflow:auto;max-height:40em">{svg}</div>'


def attach() -> None:
    """Give the layout classes their notebook display (done on import; idempotent).

    Example:
        >>> attach(); TileLayout._repr_svg_ is repr_svg
        True
    """
    for cls in (TileLayout, ComposeLayout):
        cls._repr_svg_, cls._repr_html_ = repr_svg, repr_html
    for cls in (CuteLayout, CuteComposedLayout):
        cls._repr_svg_, cls._repr_html_ = cute_svg, repr_html


attach()
