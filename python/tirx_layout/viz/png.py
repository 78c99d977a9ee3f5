"""A layout picture as PNG bytes, rasterised in pure Python (zlib + struct): no browser or imaging library needed,
and the bytes depend only on the picture."""

from __future__ import annotations

import struct
import zlib

from .font import glyph
from .geometry import CHAR_W, Picture

#: Largest canvas written, in pixels (a picture is already capped by the scene; this guards memory).
MAX_PIXELS = 40_000_000


def _rgb(colour: str) -> bytes:
    return bytes.fromhex(colour.lstrip("#"))


class _Canvas:
    def __init__(self, width: int, height: int):
        if width * height > MAX_PIXELS:
            raise ValueError(f"a {width} x {height} picture is too large for PNG; draw a smaller tile")
        self.width, self.height = width, height
        self.pixels = bytearray(b"\xff" * (width * height * 3))

    def fill(self, x0: int, y0: int, x1: int, y1: int, rgb: bytes) -> None:
        x0, x1 = max(x0, 0), min(x1, self.width)
        if x1 <= x0:
            return
        run = rgb * (x1 - x0)
        for y in range(max(y0, 0), min(y1, self.height)):
            start = (y * self.width + x0) * 3
            self.pixels[start : start + len(run)] = run

    def dot(self, x: int, y: int, rgb: bytes) -> None:
        if 0 <= x < self.width and 0 <= y < self.height:
            start = (y * self.width + x) * 3
            self.pixels[start : start + 3] = rgb

    def png(self) -> bytes:
        rows = b"".join(
            b"\x00" + bytes(self.pixels[y * self.width * 3 : (y + 1) * self.width * 3]) for y in range(self.height)
        )

        def chunk(kind: bytes, data: bytes) -> bytes:
            return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

        header = struct.pack(">IIBBBBB", self.width, self.height, 8, 2, 0, 0, 0)  # 8-bit RGB
        return (
            b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows, 6)) + chunk(b"IEND", b"")
        )


def picture_png(pic: Picture) -> bytes:
    """PNG bytes of a ``Picture``: cells filled with their colour and bordered (dashed for replicas), text in a
    5x7 pixel font.

    Example:
        >>> from tirx_layout.viz.geometry import Box, Picture
        >>> picture_png(Picture(4, 2, [Box(0, 0, 4, 2, "#ff0000")], []))[:8]
        b'\\x89PNG\\r\\n\\x1a\\n'
    """
    canvas = _Canvas(round(pic.width), round(pic.height))
    for b in pic.boxes:
        x0, y0 = round(b.x), round(b.y)
        x1, y1 = max(round(b.x + b.w), x0 + 1), max(round(b.y + b.h), y0 + 1)
        canvas.fill(x0, y0, x1, y1, _rgb(b.fill))
        edge = _rgb(b.stroke)
        for x in range(x0, x1 + 1):
            if not b.dashed or (x // 2) % 2 == 0:
                canvas.dot(x, y0, edge)
                canvas.dot(x, y1, edge)
        for y in range(y0, y1 + 1):
            if not b.dashed or (y // 2) % 2 == 0:
                canvas.dot(x0, y, edge)
                canvas.dot(x1, y, edge)
    ink = b"\x00\x00\x00"
    for t in pic.labels:
        x = t.x - (len(t.text) * CHAR_W / 2 if t.anchor == "middle" else 0)
        x0, top = round(x), round(t.y) - 7
        for i, char in enumerate(t.text):
            for c, r in glyph(char):
                canvas.dot(x0 + i * CHAR_W + c, top + r, ink)
                if t.bold:
                    canvas.dot(x0 + i * CHAR_W + c + 1, top + r, ink)
    return canvas.png()
