"""A scene laid out as boxes and text at pixel positions: the static picture that SVG and PNG both write.

Left, the logical tile (cell text: the base place, axes in the scene's order); right, the physical space (cell
text: the logical coordinate; a replica's text ends with ``'`` and its border is dashed). A bank view, when given,
adds one strip of 32 banks per phase, each bank showing how many distinct words the access needs there.
"""

from __future__ import annotations

from dataclasses import dataclass, field

CHAR_W = 6  # pixels per character of the 10-pixel monospace text (and of the PNG's 5x7 font)
CELL_H = 16
GAP = 28
MARGIN = 10
MAX_PANEL_W = 1600
MAX_SIDE_BY_SIDE = 1800  # wider than this, the physical panel goes below the logical one


@dataclass(frozen=True)
class Box:
    """A filled rectangle; ``meta`` says what it shows (panel, element, replica, bank...)."""

    x: float
    y: float
    w: float
    h: float
    fill: str
    stroke: str = "#666666"
    dashed: bool = False
    meta: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Label:
    """Text whose left edge (``anchor="start"``) or centre (``"middle"``) is at ``x``; ``y`` is the baseline."""

    x: float
    y: float
    text: str
    anchor: str = "start"
    bold: bool = False


@dataclass
class Picture:
    """Everything to draw, and the canvas size."""

    width: float
    height: float
    boxes: list[Box]
    labels: list[Label]


def _cell_width(texts: list[str], cols: int) -> tuple[float, bool]:
    """A cell wide enough for its longest text, unless the panel would get too wide (then no text)."""
    chars = max((len(t) for t in texts), default=1)
    width = max(14, chars * CHAR_W + 6)
    if width * cols <= MAX_PANEL_W:
        return width, True
    return max(3.0, MAX_PANEL_W / cols), False


def _panel_width(title: str, grid: dict, cell_texts: list[str]) -> float:
    width, _ = _cell_width(cell_texts, grid["cols"])
    label_w = max((len(t) for t in grid["row_labels"]), default=1) * CHAR_W + 8
    return max(label_w + grid["cols"] * width, len(title) * CHAR_W)


def _panel(pic: Picture, x0, y0, title, grid, cell_texts) -> tuple[float, float, float, float, bool]:
    """Title, column and row labels of a grid; returns (grid x, grid y, cell w, right edge, texts shown)."""
    width, show = _cell_width(cell_texts, grid["cols"])
    label_w = max((len(t) for t in grid["row_labels"]), default=1) * CHAR_W + 8
    pic.labels.append(Label(x0, y0 + 12, title, bold=True))
    gx, gy = x0 + label_w, y0 + 34
    if grid.get("col_title"):
        pic.labels.append(Label(gx, y0 + 24, grid["col_title"]))
    step = max(1, int(CHAR_W * 4 // width) + 1) if not show else 1
    for c, text in enumerate(grid["col_labels"]):
        if c % step == 0 and len(text) * CHAR_W <= max(width, CHAR_W * 4) * step:
            pic.labels.append(Label(gx + c * width + width / 2, gy - 3, text, anchor="middle"))
    for r, text in enumerate(grid["row_labels"]):
        pic.labels.append(Label(gx - 4 - len(text) * CHAR_W, gy + r * CELL_H + 12, text))
    return gx, gy, width, x0 + _panel_width(title, grid, cell_texts), show


def layout_picture(scene: dict, banks: dict | None = None) -> Picture:
    """Boxes and text for ``scene`` (from ``build_scene``) and an optional ``bank_view``.

    Example:
        >>> from tirx_layout.viz.scene import build_scene
        >>> pic = layout_picture(build_scene(TileLayout(S[(2, 4):(1 @ laneid, 1)]), (2, 4)))
        >>> [b.meta for b in pic.boxes if b.meta.get("element") == 5]
        [{'panel': 'logical', 'element': 5}, {'panel': 'physical', 'element': 5, 'replica': 0}]
    """
    pic = Picture(0, 0, [], [])
    elements, colours = scene["elements"], scene["palette"]
    pic.labels.append(Label(MARGIN, MARGIN + 12, scene["layout"], bold=True))
    axes = ",".join(scene["axes"])
    pic.labels.append(
        Label(
            MARGIN,
            MARGIN + 28,
            f"shape {tuple(scene['shape'])}  dtype {scene['dtype']}  "
            f"logical cell: {axes}  physical cell: logical coordinate (' = replica)",
        )
    )
    top = MARGIN + 40
    logical = dict(scene["logical"], col_title="")
    logical_texts = [e["place_text"] for e in elements]
    gx, gy, w, right, show = _panel(pic, MARGIN, top, f"logical {tuple(scene['shape'])}", logical, logical_texts)
    cols = logical["cols"]
    for k, e in enumerate(elements):
        x, y = gx + (k % cols) * w, gy + (k // cols) * CELL_H
        pic.boxes.append(Box(x, y, w, CELL_H, colours[e["colour"]], meta={"panel": "logical", "element": k}))
        if show:
            pic.labels.append(Label(x + w / 2, y + 12, e["place_text"], anchor="middle"))
    bottom = gy + logical["rows"] * CELL_H
    physical = scene["physical"]
    title = f"physical: {physical['row_title'] or '-'} x {physical['col_title'] or '-'}"
    physical_texts = [e["coord_text"] + "'" for e in elements]
    if right + GAP + _panel_width(title, physical, physical_texts) <= MAX_SIDE_BY_SIDE:
        corner = (right + GAP, top)
    else:
        corner = (MARGIN, bottom + GAP)
    px, py, pw, pright, pshow = _panel(pic, *corner, title, physical, physical_texts)
    for r, c, k, rep in physical["cells"]:
        x, y = px + c * pw, py + r * CELL_H
        meta = {"panel": "physical", "element": k, "replica": rep}
        pic.boxes.append(Box(x, y, pw, CELL_H, colours[elements[k]["colour"]], dashed=rep > 0, meta=meta))
        if pshow:
            pic.labels.append(Label(x + pw / 2, y + 12, elements[k]["coord_text"] + ("'" if rep else ""), "middle"))
    bottom = max(bottom, py + physical["rows"] * CELL_H)
    if banks is not None:
        bottom = _bank_strips(pic, px, bottom + GAP, banks)
    pic.width = max(right, pright, MARGIN + CHAR_W * len(scene["layout"])) + MARGIN
    pic.height = bottom + MARGIN
    return pic


def _bank_strips(pic: Picture, x0: float, y0: float, banks: dict) -> float:
    summary = (
        f"bank view, {banks['pattern']} ({banks['vector_bytes']} B per lane): {banks['wavefronts']} wavefronts"
        f" (minimum {banks['minimum']}), per phase {banks['phases']}"
    )
    pic.labels.append(Label(x0, y0 + 12, summary, bold=True))
    w, y = 20, y0 + 34
    for b in range(32):
        pic.labels.append(Label(x0 + b * w + w / 2, y - 3, str(b), anchor="middle"))
    for p, counts in enumerate(banks["words"]):
        for b, n in enumerate(counts):
            fill = "#eeeeee" if n == 0 else ("#9be39b" if n == 1 else "#f08080")
            pic.boxes.append(Box(x0 + b * w, y, w, CELL_H, fill, meta={"panel": "banks", "phase": p, "bank": b}))
            if n:
                pic.labels.append(Label(x0 + b * w + w / 2, y + 12, str(n), anchor="middle"))
        y += CELL_H
    return y
