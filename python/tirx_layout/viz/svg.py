"""A layout picture as SVG text: one ``rect`` per cell (with ``data-`` attributes naming what it shows) and text."""

from __future__ import annotations

from xml.sax.saxutils import escape, quoteattr

from .geometry import Picture


def picture_svg(pic: Picture) -> str:
    """SVG markup of a ``Picture``; a cell's ``data-panel``/``data-element``/``data-replica`` say what it shows.

    Example:
        >>> from tirx_layout.viz.geometry import Box, Label, Picture
        >>> print(picture_svg(Picture(40, 20, [Box(0, 0, 10, 10, "#ff0000", meta={"element": 1})], [])))
        ... # doctest: +ELLIPSIS
        <svg ...><rect x="0" y="0" width="10" height="10" fill="#ff0000" stroke="#666666" data-element="1"/></svg>
    """
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_n(pic.width)}" height="{_n(pic.height)}" '
        f'viewBox="0 0 {_n(pic.width)} {_n(pic.height)}" font-family="monospace" font-size="10">'
    ]
    if pic.labels:
        out.append(f'<rect width="{_n(pic.width)}" height="{_n(pic.height)}" fill="#ffffff"/>')
    for b in pic.boxes:
        dash = ' stroke-dasharray="2,2"' if b.dashed else ""
        data = "".join(f" data-{k}={quoteattr(str(v))}" for k, v in b.meta.items())
        out.append(
            f'<rect x="{_n(b.x)}" y="{_n(b.y)}" width="{_n(b.w)}" height="{_n(b.h)}" fill="{b.fill}" '
            f'stroke="{b.stroke}"{dash}{data}/>'
        )
    for t in pic.labels:
        weight = ' font-weight="bold"' if t.bold else ""
        anchor = ' text-anchor="middle"' if t.anchor == "middle" else ""
        out.append(f'<text x="{_n(t.x)}" y="{_n(t.y)}"{anchor}{weight}>{escape(t.text)}</text>')
    out.append("</svg>")
    return "".join(out)


def _n(value: float) -> str:
    return f"{value:.2f}".rstrip("0").rstrip(".")
