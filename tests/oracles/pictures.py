"""Helpers for the visualiser tests: decode PNGs, and read the places a picture claims against apply_all."""

from __future__ import annotations

import io

import numpy as np
from PIL import Image


def decode_png(data: bytes) -> np.ndarray:
    """A PNG as a (height, width, 3) RGB array, decoded by Pillow (not by the code that wrote it)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    with Image.open(io.BytesIO(data)) as image:
        assert image.format == "PNG"
        return np.asarray(image.convert("RGB"))


def library_places(layout, shape) -> list[list[dict]]:
    """``apply_all`` of every element of a ``shape`` tile, row-major, one int call per element."""
    return [layout.apply_all(*np.unravel_index(k, shape), shape=list(shape)) for k in range(int(np.prod(shape)))]


def as_int_dicts(places) -> list[dict]:
    return [{k: int(v) for k, v in p.items()} for p in places]
