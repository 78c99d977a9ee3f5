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
#: Pixels per picture unit by default: twice the SVG's size, so 10-pixel text stays legible in a PNG, unless the
#: picture would pass ``LARGE_PIXELS`` that way (then 1: a 4,096-cell TMEM picture, 27 megapixels at 2x, is
#: written in ~2 s instead of ~4 s).
DEFAULT_SCALE = 2
LARGE_PIXELS = 16_000_000
INK = (0, 0, 0)


@lru_cache(maxsize=64)
def _font(size: int) -> ImageFont.FreeTypeFont:
    return ImageFont.load_default(size=size)


@lru_cache(maxsize=8192)
def _glyph(char: str, size: int) -> tuple[Image.Image, int, int, float]:
    """One character drawn once as a coverage mask: (mask, left and top of the mask from the pen position on the
    baseline, advance). Pictures repeat few characters many times; pasting cached glyphs is ~15x faster than
    laying out every string with ``ImageDraw.text``."""
    font = _font(size)
    left, top, right, bottom = font.getbbox(char, anchor="ls")
    mask = Image.new("L", (max(right - left, 1), max(bottom - top, 1)), 0)
    ImageDraw.Draw(mask).text((-left, -top), char, fill=255, font=font, anchor="ls")
    return mask, left, top, font.getlength(char)


def text_length(text: str, size: int) -> float:
    """Width in pixels of ``text`` set glyph by glyph in Pillow's default font at ``size`` pixels.

    Example:
        >>> text_length("00", 20) == 2 * text_length("0", 20)
        True
    """
    return sum(_glyph(char, size)[3] for char in text)


def fitted_size(text: str, size: float, width: float) -> int:
    """The font size for ``text``: ``size``, smaller if needed so the text is at most ``width`` pixels wide.

    Example:
        >>> size = fitted_size("T127V63", 20, 84)
        >>> size <= 20 and text_length("T127V63", size) <= 84
        True
    """
    size = max(1, round(size))
    length = text_length(text, size)
    while length > width and size > 4:
        size = max(4, min(size - 1, int(size * width / length)))
        length = text_length(text, size)
    return size


def _draw_label(image: Image.Image, label: Label, scale: int) -> None:
    width = text_width(label.text) * scale
    size = fitted_size(label.text, FONT_SIZE * scale, width - (scale if label.bold else 0))
    x = label_left(label) * scale
    if label.anchor == "middle":  # centre the fitted text in its reserved span
        x += (width - text_length(label.text, size)) / 2
    y = label.y * scale
    for char in label.text:
        mask, left, top, advance = _glyph(char, size)
        if char != " ":
            image.paste(INK, (round(x + left), round(y + top)), mask)
            if label.bold:
                image.paste(INK, (round(x + left) + max(1, scale // 2), round(y + top)), mask)
        x += advance


def default_scale(pic: Picture) -> int:
    """``DEFAULT_SCALE``, or 1 when that would make more than ``LARGE_PIXELS`` pixels.

    Example:
        >>> default_scale(Picture(800, 600, [], [])), default_scale(Picture(1600, 4300, [], []))
        (2, 1)
    """
    pixels = pic.width * pic.height * DEFAULT_SCALE * DEFAULT_SCALE
    return DEFAULT_SCALE if pixels <= LARGE_PIXELS else 1


def picture_png(pic: Picture, scale: int | None = None) -> bytes:
    """PNG bytes of a ``Picture`` at ``scale`` pixels per unit (``round(width * scale)`` wide; by default
    ``default_scale``): cells filled with their colour and bordered (dashed for replicas), every text in Pillow's
    scalable default font.

    Example:
        >>> from tirx_layout.viz.geometry import Box, Picture
        >>> data = picture_png(Picture(4, 2, [Box(0, 0, 4, 2, "#ff0000")], []), scale=1)
        >>> data[:8], Image.open(io.BytesIO(data)).size
        (b'\\x89PNG\\r\\n\\x1a\\n', (4, 2))
    """
    if scale is None:
        scale = default_scale(pic)
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
        _draw_label(image, label, scale)
    out = io.BytesIO()
    image.save(out, format="PNG", optimize=False)
    return out.getvalue()
