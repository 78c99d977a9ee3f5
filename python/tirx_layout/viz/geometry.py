"""A scene laid out as boxes and text at pixel positions: the static picture that SVG and PNG both write.

Left, the logical tile (cell text: the element's label, ``T#V#``/``L#C#``/``R#B#`` as ``viz.scene`` says); right,
the physical space (cell text: the logical coordinate; a replica's text ends with ``'`` and its border is dashed).
A bank view, when given, adds one strip of 32 banks per phase, each bank showing how many distinct words the access
needs there. Every text gets its own line or cell, and the canvas is as wide as the widest text, so nothing overlaps
or is cut off.
"""

from __future__ import annotations

from dataclasses import dataclass, field

CHAR_W = 6  # pixels per character of the 10-pixel monospace text (0.6 em, as DejaVu Sans Mono and Courier)
FONT_SIZE = 10
CELL_H = 16
GAP = 28
MARGIN = 10
LINE = 14  # baseline to baseline
MAX_PANEL_W = 2400
MAX_SIDE_BY_SIDE = 2400  # wider than this, the physical panel goes below the logical one


def text_width(text: str) -> float:
    """Width in pixels of ``text`` at the pictures' monospace size (what layout reserves; PNG fits its font to it).

    Example:
        >>> text_width("T37V3")
        30
    """
    return len(text) * CHAR_W


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
    """Everything to draw, and the canvas size; ``complete`` is false when some grid was too wide for its texts."""

    width: float
    height: float
    boxes: list[Box]
    labels: list[Label]
    complete: bool = True


def _cell_width(texts: list[str], cols: int) -> tuple[float, bool]:
    """A cell wide enough for its longest text, unless the panel would get too wide (then no text)."""
    chars = max((len(t) for t in texts), default=1)
    width = max(14, chars * CHAR_W + 6)
    if width * cols <= MAX_PANEL_W:
        return width, True
    return max(3.0, MAX_PANEL_W / cols), False


@dataclass(frozen=True)
class _Frame:
    """Where a panel's grid sits: its top-left corner, cell width, right edge, and whether cells show text."""

    gx: float
    gy: float
    cell_w: float
    right: float
    show: bool


def _panel(pic: Picture, x0: float, y0: float, title: str, grid: dict, cell_texts: list[str]) -> _Frame:
    """Title, column title, column and row labels of a grid, one text line each so none overlaps another."""
    width, show = _cell_width(cell_texts, grid["cols"])
    label_w = max((text_width(t) for t in grid["row_labels"]), default=CHAR_W) + 8
    pic.labels.append(Label(x0, y0 + 12, title, bold=True))
    gx, y = x0 + label_w, y0 + 12
    if grid.get("col_title"):
        y += LINE
        pic.labels.append(Label(gx, y, grid["col_title"]))
    y += LINE
    gy = y + 4
    # Column numbers: every one that fits, else every step-th (each at most its cell span wide, so none touch).
    widest = max((text_width(t) for t in grid["col_labels"]), default=CHAR_W) + 4
    step = 1
    while widest > width * step and step < len(grid["col_labels"]):
        step *= 2
    for c, text in enumerate(grid["col_labels"]):
        if c % step == 0:
            pic.labels.append(Label(gx + c * width + width / 2, y, text, anchor="middle"))
    for r, text in enumerate(grid["row_labels"]):
        pic.labels.append(Label(gx - 4 - text_width(text), gy + r * CELL_H + 12, text))
    right = max(
        gx + grid["cols"] * width,
        x0 + text_width(title),
        gx + text_width(grid.get("col_title") or ""),
        gx + (len(grid["col_labels"]) - 0.5) * width + widest / 2,
    )
    return _Frame(gx, gy, width, right, show)


def _panel_width(title: str, grid: dict, cell_texts: list[str]) -> float:
    scratch = Picture(0, 0, [], [])
    return _panel(scratch, 0, 0, title, grid, cell_texts).right


def layout_picture(scene: dict, banks: dict | None = None) -> Picture:
    """Boxes and text for ``scene`` (from ``build_scene``) and an optional ``bank_view``: a header (layout, shape,
    the label legend), the logical panel (cells: ``element["label"]``), the physical panel (cells: the logical
    coordinate, ``'`` and a dashed border for a replica) and the bank strips. The canvas holds every text.

    Example:
        >>> from tirx_layout.viz.scene import build_scene
        >>> pic = layout_picture(build_scene(TileLayout(S[(2, 4):(1 @ laneid, 1)]), (2, 4)))
        >>> [b.meta for b in pic.boxes if b.meta.get("element") == 5]
        [{'panel': 'logical', 'element': 5}, {'panel': 'physical', 'element': 5, 'replica': 0}]
        >>> sorted({t.text for t in pic.labels} & {"T1V1", "1,1"})
        ['1,1', 'T1V1']
    """
    pic = Picture(0, 0, [], [])
    elements, colours = scene["elements"], scene["palette"]
    legend = scene.get("labels", {}).get("legend", ",".join(scene["axes"]))
    header = [
        f"shape {tuple(scene['shape'])}  dtype {scene['dtype']}  axes {', '.join(scene['axes'])}",
        f"logical cell: {legend};  physical cell: logical coordinate (' and dashed border = replica)",
    ]
    if scene.get("cropped"):
        header.append(scene["cropped"]["note"])
    y = MARGIN + 12
    pic.labels.append(Label(MARGIN, y, scene["layout"], bold=True))
    for line in header:
        y += LINE
        pic.labels.append(Label(MARGIN, y, line))
    top = y + 12
    logical = dict(scene["logical"], col_title="")
    logical_texts = [e.get("label", e["place_text"]) for e in elements]
    lf = _panel(pic, MARGIN, top, f"logical {tuple(scene['shape'])}", logical, logical_texts)
    cols = logical["cols"]
    for k, e in enumerate(elements):
        x, y = lf.gx + (k % cols) * lf.cell_w, lf.gy + (k // cols) * CELL_H
        pic.boxes.append(Box(x, y, lf.cell_w, CELL_H, colours[e["colour"]], meta={"panel": "logical", "element": k}))
        if lf.show:
            pic.labels.append(Label(x + lf.cell_w / 2, y + 12, logical_texts[k], anchor="middle"))
    bottom = lf.gy + logical["rows"] * CELL_H
    physical = scene["physical"]
    title = f"physical: {physical['row_title'] or '-'} (rows) x {physical['col_title'] or '-'} (columns)"
    physical_grid = dict(physical, col_title="")  # the title names the column axes already
    physical_texts = [e["coord_text"] + "'" for e in elements]
    if lf.right + GAP + _panel_width(title, physical_grid, physical_texts) <= MAX_SIDE_BY_SIDE:
        corner = (lf.right + GAP, top)
    else:
        corner = (MARGIN, bottom + GAP)
    pf = _panel(pic, *corner, title, physical_grid, physical_texts)
    for r, c, k, rep in physical["cells"]:
        x, y = pf.gx + c * pf.cell_w, pf.gy + r * CELL_H
        meta = {"panel": "physical", "element": k, "replica": rep}
        fill = colours[elements[k]["colour"]]
        pic.boxes.append(Box(x, y, pf.cell_w, CELL_H, fill, dashed=rep > 0, meta=meta))
        if pf.show:
            text = elements[k]["coord_text"] + ("'" if rep else "")
            pic.labels.append(Label(x + pf.cell_w / 2, y + 12, text, "middle"))
    bottom = max(bottom, pf.gy + physical["rows"] * CELL_H)
    if banks is not None:
        bottom = _bank_strips(pic, max(pf.gx, MARGIN + text_width("phase 99") + 4), bottom + GAP, banks)
    pic.complete = lf.show and pf.show
    pic.width = max([lf.right, pf.right, *(label_right(t) for t in pic.labels)]) + MARGIN
    pic.height = bottom + MARGIN
    return pic


def label_left(label: Label) -> float:
    """The left edge of ``label``'s text.

    Example:
        >>> label_left(Label(30, 12, "abc", anchor="middle"))
        21.0
    """
    return label.x - (text_width(label.text) / 2 if label.anchor == "middle" else 0)


def label_right(label: Label) -> float:
    """The right edge of ``label``'s text.

    Example:
        >>> label_right(Label(30, 12, "abc"))
        48
    """
    return label_left(label) + text_width(label.text)


def _bank_strips(pic: Picture, x0: float, y0: float, banks: dict) -> float:
    summary = (
        f"bank view, {banks['pattern']} ({banks['vector_bytes']} B per lane): {banks['wavefronts']} wavefronts"
        f" (minimum {banks['minimum']}), per phase {banks['phases']}"
    )
    pic.labels.append(Label(x0, y0 + 12, summary, bold=True))
    pic.labels.append(Label(x0, y0 + 12 + LINE, "bank (cell: distinct 4-byte words the phase needs there)"))
    w, y = 20, y0 + 12 + 2 * LINE + 4
    for b in range(32):
        pic.labels.append(Label(x0 + b * w + w / 2, y - 4, str(b), anchor="middle"))
    for p, counts in enumerate(banks["words"]):
        pic.labels.append(Label(x0 - 4 - text_width(f"phase {p}"), y + 12, f"phase {p}"))
        for b, n in enumerate(counts):
            fill = "#eeeeee" if n == 0 else ("#9be39b" if n == 1 else "#f08080")
            pic.boxes.append(Box(x0 + b * w, y, w, CELL_H, fill, meta={"panel": "banks", "phase": p, "bank": b}))
            if n:
                pic.labels.append(Label(x0 + b * w + w / 2, y + 12, str(n), anchor="middle"))
        y += CELL_H
    return y


def grid_picture(title: str, row_labels: list[str], col_labels: list[str], texts: list[str], fills: list[str]):
    """A titled grid of cells (row-major ``texts`` and ``fills``) under column labels, beside row labels: the
    picture of a table such as CuTe's ``print_layout``.

    Example:
        >>> pic = grid_picture("(2,1):(1,0)", ["0", "1"], ["0"], ["0", "1"], ["#ffffff", "#eeeeee"])
        >>> [(b.x, b.y, b.fill) for b in pic.boxes]
        [(24, 40, '#ffffff'), (24, 56, '#eeeeee')]
    """
    pic = Picture(0, 0, [], [])
    grid = {"rows": len(row_labels), "cols": len(col_labels), "row_labels": row_labels, "col_labels": col_labels}
    frame = _panel(pic, MARGIN, MARGIN, title, grid, texts)
    cols = len(col_labels)
    for k, (text, fill) in enumerate(zip(texts, fills, strict=True)):
        x, y = frame.gx + (k % cols) * frame.cell_w, frame.gy + (k // cols) * CELL_H
        pic.boxes.append(Box(x, y, frame.cell_w, CELL_H, fill, meta={"panel": "cute", "cell": k}))
        if frame.show:
            pic.labels.append(Label(x + frame.cell_w / 2, y + 12, text, anchor="middle"))
    pic.width = max([frame.right, *(label_right(t) for t in pic.labels)]) + MARGIN
    pic.height = frame.gy + len(row_labels) * CELL_H + MARGIN
    return pic
