"""A layout picture as PNG bytes, drawn with Pillow: the same boxes as the SVG, and the text in Pillow's own
scalable font (``ImageFont.load_default(size=...)``, shipped inside Pillow, so nothing depends on the fonts a
machine has). Each text is fitted to the width the picture reserved for it (``geometry.text_width``): the
monospace layout holds for a proportional font too, and no text runs into its neighbour."""

from __future__ import annotations

import io
from functools import lru_cache

from PIL import Image, ImageDraw, ImageFont

from .geometry import FONT_SIZE, Label, Picture, label_left, text_width

#: Largest canvas written, in pixels (a picture is already capped by the scene; this guards memory).
MAX_PIXELS = 40_000_000
#: Pixels per picture unit by default: twice the SVG's size, so 10-pixel text stays legible in a PNG.
DEFAULT_SCALE = 2
INK = (0, 0, 0)


@lru_cache(maxsize=64)
def _font(size: int) -> ImageFont.FreeTypeFont:
    return ImageFont.load_default(size=size)


def fitted_font(text: str, size: float, width: float) -> ImageFont.FreeTypeFont:
    """Pillow's default font at ``size`` pixels, smaller if needed so ``text`` is at most ``width`` pixels wide.

    Example:
        >>> font = fitted_font("T127V63", 20, 84)
        >>> font.getlength("T127V63") <= 84
        True
    """
    font = _font(max(1, round(size)))
    length = font.getlength(text)
    while length > width and font.size > 4:
        font = _font(max(4, min(font.size - 1, int(font.size * width / length))))
        length = font.getlength(text)
    return font


def _draw_label(draw: ImageDraw.ImageDraw, label: Label, scale: float) -> None:
    width = text_width(label.text) * scale
    font = fitted_font(label.text, FONT_SIZE * scale, width - (scale if label.bold else 0))
    x = label_left(label) * scale
    if label.anchor == "middle":  # centre the fitted text in its reserved span
        x += (width - font.getlength(label.text)) / 2
    y = label.y * scale
    draw.text((x, y), label.text, fill=INK, font=font, anchor="ls")
    if label.bold:
        draw.text((x + max(1, scale // 2), y), label.text, fill=INK, font=font, anchor="ls")


def picture_png(pic: Picture, scale: int = DEFAULT_SCALE) -> bytes:
    """PNG bytes of a ``Picture`` at ``scale`` pixels per unit (``round(width * scale)`` wide): cells filled with
    their colour and bordered (dashed for replicas), every text in Pillow's scalable default font.

    Example:
        >>> from tirx_layout.viz.geometry import Box, Picture
        >>> data = picture_png(Picture(4, 2, [Box(0, 0, 4, 2, "#ff0000")], []), scale=1)
        >>> data[:8], Image.open(io.BytesIO(data)).size
        (b'\\x89PNG\\r\\n\\x1a\\n', (4, 2))
    """
    if not isinstance(scale, int) or scale < 1:
        raise ValueError(f"a PNG scale is a whole number >= 1, got {scale!r}")
    width, height = round(pic.width * scale), round(pic.height * scale)
    if width * height > MAX_PIXELS:
        raise ValueError(f"a {width} x {height} picture is too large for PNG; draw a smaller tile or scale")
    image = Image.new("RGB", (max(width, 1), max(height, 1)), "#ffffff")
    draw = ImageDraw.Draw(image)
    for b in pic.boxes:
        x0, y0 = round(b.x * scale), round(b.y * scale)
        x1, y1 = max(round((b.x + b.w) * scale), x0 + 1), max(round((b.y + b.h) * scale), y0 + 1)
        draw.rectangle((x0, y0, x1, y1), fill=b.fill)
        if b.dashed:
            dash = 2 * scale
            for x in range(x0, x1, 2 * dash):
                draw.line((x, y0, min(x + dash, x1), y0), fill=b.stroke)
                draw.line((x, y1, min(x + dash, x1), y1), fill=b.stroke)
            for y in range(y0, y1, 2 * dash):
                draw.line((x0, y, x0, min(y + dash, y1)), fill=b.stroke)
                draw.line((x1, y, x1, min(y + dash, y1)), fill=b.stroke)
        else:
            draw.rectangle((x0, y0, x1, y1), outline=b.stroke)
    for label in pic.labels:
        _draw_label(draw, label, scale)
    out = io.BytesIO()
    image.save(out, format="PNG", optimize=False)
    return out.getvalue()
