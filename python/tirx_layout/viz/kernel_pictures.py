"""What layout inference chose, as pictures: for a kernel, one SVG per buffer that carries a layout after
``infer_layouts`` (the buffers the user annotated and the ones inference filled in), named after the buffer.
``tirx-layout compile --show-layouts DIR`` writes them; TileLang's layout-visualisation pass config is the model."""

from __future__ import annotations

import math
import re
from pathlib import Path

from ..ir.annotations import buffer_layouts
from ..transform.infer_layouts import infer_layouts
from .notebook import notebook_svg
from .scene import build_scene


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name) or "_"


def inferred_layouts(kernel) -> dict:
    """``{buffer name: layout}`` of every buffer of ``kernel`` (a ``PrimFunc``) that carries a layout once
    inference has run.

    Example: for ``infer_layouts``' example kernel, ``inferred_layouts(func)`` is
    ``{"frag": TileLayout(S[(32, 4):(1@tid_in_wg, 1)])}``.
    """
    return {buffer.name: layout for buffer, layout in buffer_layouts(infer_layouts(kernel)).items()}


def _shape_of(buffer_shape, layout) -> tuple[int, ...] | None:
    try:
        shape = tuple(int(s) for s in buffer_shape)
    except TypeError:  # a symbolic extent: the picture falls back on the layout's default shape
        return None
    return shape if shape and math.prod(shape) == layout.size() else None


def write_layout_pictures(kernel, directory, prefix: str = "") -> list[Path]:
    """Write ``<prefix><buffer>.svg`` into ``directory`` (created if needed) for every buffer of ``kernel`` with a
    layout after inference: the picture over the buffer's shape and dtype (a summary for big tiles). Returns the
    files written; a layout too big to draw gets a ``.txt`` saying so instead of a picture.

    Example: ``write_layout_pictures(func, "pictures", "k.")`` for ``infer_layouts``' example kernel writes
    ``pictures/k.frag.svg``.
    """
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for buffer, layout in buffer_layouts(infer_layouts(kernel)).items():
        stem = f"{prefix}{_safe(buffer.name)}"
        dtype = str(buffer.dtype)
        try:
            scene = build_scene(layout, _shape_of(buffer.shape, layout), dtype)
        except ValueError as err:
            path = out / f"{stem}.txt"
            path.write_text(f"{buffer.name}: {layout!r}\nno picture: {err}\n", encoding="utf-8")
        else:
            path = out / f"{stem}.svg"
            path.write_text(notebook_svg(scene, limit=4 * 200_000), encoding="utf-8")
        written.append(path)
    return written
