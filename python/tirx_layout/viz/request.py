"""User input to a picture: layout text, a logical shape, a dtype and a swizzle, read the same way by the command
line and the web page. Every bad value is a ``ValueError`` whose message names it."""

from __future__ import annotations

import re

from ..hw.memory import SWIZZLE_MODES, swizzle_for_mode
from ..layout import ComposeLayout, SwizzleLayout, parse_layout


def parse_shape(text: str | None) -> tuple[int, ...] | None:
    """A logical shape from ``"8,16"``, ``"(8, 16)"`` or ``"8x16"``; ``None`` for empty text.

    Example:
        >>> parse_shape("(8, 16)"), parse_shape("128x32"), parse_shape("")
        ((8, 16), (128, 32), None)
    """
    if text is None or not str(text).strip():
        return None
    body = str(text).strip().strip("()[]")
    parts = [p.strip() for p in re.split(r"[,x×]", body) if p.strip()]
    if not parts or not all(p.isdigit() for p in parts):
        raise ValueError(f"shape {text!r} is not a list of positive integers such as 8,16")
    shape = tuple(int(p) for p in parts)
    if any(s < 1 for s in shape):
        raise ValueError(f"shape {text!r} has an extent below 1")
    return shape


def parse_swizzle(text: str | None, dtype: str) -> SwizzleLayout | None:
    """A swizzle from a mode (``"none"``, ``"32B"``, ``"64B"``, ``"128B"``: 16-byte vectors of ``dtype`` kept
    whole, atom length 3) or explicit ``"per_element,swizzle_len,atom_len"``.

    Example:
        >>> parse_swizzle("128B", "float16"), parse_swizzle("2,3,3", "float32")
        (SwizzleLayout(3, 3, 3), SwizzleLayout(2, 3, 3))
    """
    if text is None or str(text).strip() in ("", "none"):
        return None
    text = str(text).strip()
    if text in SWIZZLE_MODES:
        return swizzle_for_mode(text, dtype)
    parts = [p.strip() for p in text.split(",")]
    if len(parts) != 3 or not all(p.isdigit() for p in parts):
        raise ValueError(f"swizzle {text!r} is none, 32B, 64B, 128B or per_element,swizzle_len,atom_len (e.g. 3,3,3)")
    return SwizzleLayout(*(int(p) for p in parts))


def layout_from(text: str, swizzle: str | None = None, dtype: str = "float32"):
    """The layout of ``text`` (see ``parse_layout``), composed with ``swizzle`` when one is given.

    Example:
        >>> layout_from("S[(8, 64):(64, 1)]", "3,3,3", "float16")
        ComposeLayout(SwizzleLayout(3, 3, 3), TileLayout(S[(8, 64):(64, 1)]))
    """
    layout = parse_layout(text)
    sw = parse_swizzle(swizzle, dtype)
    if sw is None:
        return layout
    if isinstance(layout, ComposeLayout):
        raise ValueError("the layout text is already a ComposeLayout; drop the extra swizzle")
    return ComposeLayout(sw, layout)
