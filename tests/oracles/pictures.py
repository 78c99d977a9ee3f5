"""Helpers for the visualiser tests: decode our PNGs, and read the places a picture claims against apply_all."""

from __future__ import annotations

import struct
import zlib

import numpy as np


def decode_png(data: bytes) -> np.ndarray:
    """An 8-bit RGB, unfiltered PNG (what viz.png writes) as a (height, width, 3) array."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, chunks = 8, {}
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + length]
        assert struct.unpack(">I", data[pos + 8 + length : pos + 12 + length])[0] == zlib.crc32(kind + body)
        chunks[kind] = chunks.get(kind, b"") + body
        pos += 12 + length
    width, height, depth, colour, _, _, _ = struct.unpack(">IIBBBBB", chunks[b"IHDR"])
    assert (depth, colour) == (8, 2)
    raw = np.frombuffer(zlib.decompress(chunks[b"IDAT"]), dtype=np.uint8).reshape(height, 1 + 3 * width)
    assert not raw[:, 0].any()  # filter type 0 on every row
    return raw[:, 1:].reshape(height, width, 3)


def library_places(layout, shape) -> list[list[dict]]:
    """``apply_all`` of every element of a ``shape`` tile, row-major, one int call per element."""
    return [layout.apply_all(*np.unravel_index(k, shape), shape=list(shape)) for k in range(int(np.prod(shape)))]


def as_int_dicts(places) -> list[dict]:
    return [{k: int(v) for k, v in p.items()} for p in places]
