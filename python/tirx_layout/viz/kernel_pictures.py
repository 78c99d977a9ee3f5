"""What layout inference chose, as pictures: for a kernel, one SVG per buffer that carries a layout after
``infer_layouts`` (the buffers the user annotated and the ones inference filled in), named after the buffer.
``tirx-layout compile --show-layouts DIR`` writes them; TileLang's layout-visualisation pass config is the model.

Example: the author gave the shared tile its layout and left the fragment's open; inference chose one, and each is
drawn into its own file.

    >>> import tempfile, tvm
    >>> kernel = tvm.script.from_source('''
    ... @T.prim_func
    ... def k(A: T.Buffer((32, 8), "float16"), B: T.Buffer((32, 8), "float16")):
    ...     T.device_entry()
    ...     tx = T.thread_id([32])
    ...     Sm = T.alloc_shared((32, 8), "float16", layout=T.layout("S[(32, 8):(8, 1)]"))
    ...     frag = T.alloc_local((32, 8), "float16")
    ...     T.tile_copy(Sm, A)
    ...     T.tile_copy(frag, Sm)
    ...     T.tile_copy(B, frag)
    ... ''')
    >>> inferred_layouts(kernel)
    {'Sm': TileLayout(S[(32, 8):(8, 1)]), 'frag': TileLayout(S[(32, 8):(1@tid_in_wg, 1)])}
    >>> with tempfile.TemporaryDirectory() as directory:
    ...     [path.name for path in write_layout_pictures(kernel, directory, prefix="k.")]
    ['k.Sm.svg', 'k.frag.svg']
"""

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

    Example: the module's example.
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

    Example: the module's example.
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
