"""What a layout picture shows, as plain data: every logical element with all its places, and the grid of the
physical space those places are drawn on. Every renderer (the web page, SVG, PNG, the terminal) draws this.

Physical space, by what the layout maps onto (the first rule that fits):
* ``TLane`` (tensor memory): rows are lanes, columns the other memory axes (``TCol``);
* thread axes: rows are the threads (their axes outer level first), columns the memory axes (register slots ``m``);
* ``m`` alone (shared memory): rows of 128 bytes, columns the elements of a row, headed by their 4-byte bank;
* otherwise: the first memory axis as rows, the rest as columns.
An element's colour comes from its base place (its thread, lane or bank), so the logical view shows where it went.

One label convention for every view (the terminal table, SVG/PNG pictures, the page, notebooks): a logical cell
shows its base place in short letters, a physical cell the logical coordinate of what lies there.
* fragments (thread axes): ``T<t>V<v>`` as in CuTe's TV pictures: ``t`` is the CTA thread (the thread axes combined,
  ``laneid + 32 * warpid``), ``v`` the value, the register slot ``m``;
* tensor memory: ``L<lane>C<column>``;
* shared memory (``m`` only): ``R<row>B<bank>``, the 128-byte row and the 4-byte bank of the element's address;
* anything else: the place's values, comma separated.
``scene["labels"]`` names the convention and its legend; ``element["label"]`` is the short text and
``element["detail"]`` the long one (coordinate, every place, row and bank).
"""

from __future__ import annotations

import colorsys
import math
from collections.abc import Sequence

import numpy as np

from ..hw.memory import BANKS, WORD_BYTES, bank_of, dtype_bytes
from ..hw.threads import thread_unit
from ..layout import EXEC_LEVELS, Axis, ComposeLayout, TileLayout
from .limits import MAX_GRID_CELLS, check_drawable

ROW_BYTES = BANKS * WORD_BYTES
#: Widest row of a default logical shape (a terminal table of 64 columns still fits a wide screen).
DEFAULT_ROW_WIDTH = 64


def default_shape(layout) -> tuple[int, ...]:
    """The logical shape pictured when none is given: the first shard extent by the rest (the guide's fragment
    ``S[(8, 2, 4, 2):...]`` is an ``8 x 16`` tile); one extent gives one row. When the rest would make rows wider
    than ``DEFAULT_ROW_WIDTH``, a row holds only the innermost extents that fit (at least the last one).

    Example:
        >>> default_shape(TileLayout(S[(8, 2, 4, 2):(4 @ laneid, 1 @ warpid, 1 @ laneid, 1)]))
        (8, 16)
        >>> default_shape(TileLayout(S[(2, 32, 64):(2048, 64, 1)]))  # not 2 rows of 2048
        (64, 64)
    """
    tile = layout.tile_layout if isinstance(layout, ComposeLayout) else layout
    extents = [it.extent for it in tile.shard] or [1]
    if len(extents) == 1:
        return (1, extents[0])
    if len(extents) == 2 or math.prod(extents[1:]) <= DEFAULT_ROW_WIDTH:
        return (extents[0], math.prod(extents[1:]))
    inner = 1
    while inner < len(extents) - 1 and math.prod(extents[-inner - 1 :]) <= DEFAULT_ROW_WIDTH:
        inner += 1
    return (math.prod(extents[:-inner]), math.prod(extents[-inner:]))


def check_shape(layout, shape: Sequence[int] | None) -> tuple[int, ...]:
    """``shape`` (or the default) as a tuple, ``ValueError`` unless its size is the layout's size.

    Example:
        >>> check_shape(TileLayout(S[(8, 4):(4, 1)]), [4, 8])
        (4, 8)
    """
    shape = default_shape(layout) if shape is None else tuple(int(s) for s in shape)
    if not shape or any(s < 1 for s in shape):
        raise ValueError(f"a logical shape needs extents >= 1, got {shape}")
    if math.prod(shape) != layout.size():
        raise ValueError(f"shape {shape} has {math.prod(shape)} elements but the layout has {layout.size()}")
    return shape


def all_places(layout, shape: Sequence[int]) -> tuple[list[str], np.ndarray]:
    """Every place of every element of a ``shape`` tile, row-major: axis names and an array indexed
    ``[replica, element, axis]`` (replica 0 is the base place), straight from ``apply_all``.

    Example:
        >>> names, places = all_places(TileLayout(S[(2, 2):(1 @ laneid, 1)] + R[2:4 @ laneid]), (2, 2))
        >>> names, places[1, 3].tolist()
        (['laneid', 'm'], [5, 1])
    """
    coords = np.indices(tuple(shape)).reshape(len(shape), -1)
    result = layout.apply_all(*coords, shape=list(shape))
    names = list(result)
    return names, np.stack([np.asarray(result[n]) for n in names], axis=-1)


def _thread_order(axis: Axis) -> tuple[int, int]:
    return EXEC_LEVELS.index(axis.get_scope()), EXEC_LEVELS.index(axis.get_subscope())


def palette(count: int) -> list[str]:
    """``count`` light colours, neighbours far apart in hue (golden-ratio steps), as ``#rrggbb``.

    Example:
        >>> palette(2)
        ['#f19d9d', '#9db5f1']
    """
    out = []
    for k in range(count):
        r, g, b = colorsys.hls_to_rgb((k * 0.618034) % 1.0, 0.78, 0.75)
        out.append(f"#{round(r * 255):02x}{round(g * 255):02x}{round(b * 255):02x}")
    return out


class _Grid:
    """Positions of places along one direction of the physical grid, for some of the axes."""

    def __init__(self, axes: list[int], names: list[str], places: np.ndarray, dense: bool):
        self.axes = axes
        keys = places[..., axes].reshape(-1, len(axes)) if axes else np.zeros((places[..., 0].size, 0), np.int64)
        if dense and len(axes) == 1:
            # One memory axis: every value between the extremes gets a row/column, so gaps show.
            low, high = int(keys.min()), int(keys.max())
            self.values = [(v,) for v in range(low, high + 1)]
            self.index = (keys[:, 0] - low).reshape(places.shape[:2])
        else:
            unique, inverse = np.unique(keys, axis=0, return_inverse=True)
            self.values = [tuple(int(x) for x in row) for row in unique]
            self.index = inverse.reshape(places.shape[:2])
        short = [names[a] for a in axes]
        self.labels = [_text(row) for row in self.values]
        self.title = ", ".join(short) if short else ""


def arrangement(names: list[str]) -> tuple[str, list[int], list[int]]:
    """The kind of picture for places on the axes ``names`` (``threads``, ``tmem``, ``banks`` or ``memory``, as
    the module docstring says) and which axes index the physical rows and columns.

    Example:
        >>> arrangement(["laneid", "m"]), arrangement(["m"])
        (('threads', [0], [1]), ('banks', [0], [0]))
    """
    axes = [Axis.get(n) for n in names]
    threads = sorted((i for i, a in enumerate(axes) if a.is_thread()), key=lambda i: _thread_order(axes[i]))
    memory = [i for i, a in enumerate(axes) if a.is_memory()]
    if "TLane" in names:
        lane = names.index("TLane")
        return "tmem", [lane], [i for i in memory if i != lane] + threads
    if threads:
        return "threads", threads, memory
    if names == ["m"]:
        return "banks", [0], [0]
    return "memory", memory[:1], memory[1:]


def _text(values) -> str:
    return ",".join(str(int(v)) for v in values)


#: The legend of each kind's cell labels, shown by the pictures, the page and the terminal table.
LEGENDS = {
    "threads": "T = CTA thread (the thread axes combined), V = value (register slot m)",
    "tmem": "L = TMEM lane, C = TMEM column",
    "banks": "R = 128-byte row, B = 4-byte bank of the element's address",
    "memory": "the place, one value per axis",
}
#: The label pattern of each kind (``#`` stands for a number).
PATTERNS = {"threads": "T#V#", "tmem": "L#C#", "banks": "R#B#", "memory": "#,#"}


def _cta_thread(names: list[str], places: np.ndarray) -> np.ndarray | None:
    """The CTA thread of every place (``sum(place[axis] * threads per step)`` over the thread axes), or ``None`` when
    a thread axis lies outside one CTA (a cluster's CTAs have no common thread number)."""
    total = np.zeros(places.shape[:-1], np.int64)
    for a, name in enumerate(names):
        axis = Axis.get(name)
        if not axis.is_thread():
            continue
        try:
            total += places[..., a] * thread_unit(name)
        except ValueError:
            return None
    return total


def cell_labels(kind: str, names: list[str], places: np.ndarray, dtype: str) -> list[str]:
    """The short label of each element's base place (``places[0]``) under the convention of ``kind``.

    Example:
        >>> places = np.array([[[1, 5, 3], [0, 2, 0]]])  # one replica, two elements: (warpid, laneid, m)
        >>> cell_labels("threads", ["warpid", "laneid", "m"], places, "float32")
        ['T37V3', 'T2V0']
        >>> cell_labels("banks", ["m"], np.array([[[73], [64]]]), "float16")
        ['R1B4', 'R1B0']
        >>> cell_labels("threads", ["laneid"], np.array([[[3]]]), "float32")  # one value per thread
        ['T3']
    """
    base = places[0]
    memory = [a for a, n in enumerate(names) if Axis.get(n).is_memory()]
    if kind == "threads":
        threads = _cta_thread(names, base)
        thread_axes = [a for a in range(len(names)) if a not in memory]
        t_text = [str(int(t)) for t in threads] if threads is not None else [f"({_text(p[thread_axes])})" for p in base]
        if not memory:  # one value per thread
            return [f"T{t}" for t in t_text]
        return [f"T{t}V{_text(p[memory])}" for t, p in zip(t_text, base, strict=True)]
    if kind == "tmem":
        lane = names.index("TLane")
        others = [a for a in range(len(names)) if a != lane]
        return [f"L{int(p[lane])}C{_text(p[others])}" for p in base]
    if kind == "banks":
        address = base[:, 0] * dtype_bytes(dtype)
        return [f"R{int(a) // ROW_BYTES}B{int(b)}" for a, b in zip(address, bank_of(address), strict=True)]
    return [_text(p) for p in base]


def _detail(coord: list[int], names: list[str], element_places: np.ndarray, label: str, kind: str, dtype: str) -> str:
    """The long description of one element: coordinate, label, every place; for shared memory the byte address."""
    places = "; ".join(", ".join(f"{n}={int(v)}" for n, v in zip(names, p, strict=True)) for p in element_places)
    text = f"element ({', '.join(map(str, coord))}) {label}: {places}"
    if kind == "banks":
        address = int(element_places[0, 0]) * dtype_bytes(dtype)
        text += f" (byte {address}: row {address // ROW_BYTES}, bank {int(bank_of(address))})"
    if len(element_places) > 1:
        text += f"; {len(element_places) - 1} replica{'s' if len(element_places) > 2 else ''}"
    return text


def build_scene(
    layout, shape: Sequence[int] | None = None, dtype: str = "float32", window: tuple[int, int] | None = None
) -> dict:
    """The picture of ``layout`` (a TileLayout or ComposeLayout) over a logical ``shape`` tile of ``dtype``,
    as JSON-ready data: ``elements`` (logical coordinate, every place, colour) and the ``logical`` and ``physical``
    grids (``physical["cells"]``: ``[row, col, element, replica]``). ``ValueError`` for a wrong shape or a tile
    too big to draw. ``window=(rows, cols)`` draws only the top-left corner of the logical grid (rows count the
    leading dimensions together), for a summary of a tile of any size; ``scene["cropped"]`` then says so.

    Example:
        >>> big = build_scene(TileLayout(S[(256, 256):(256, 1)]), None, "float16", window=(2, 8))
        >>> len(big["elements"]), big["cropped"]["note"]
        (16, 'summary: logical rows 0-1 of 256, columns 0-7 of 256')
        >>> scene = build_scene(TileLayout(S[(32, 4):(1 @ TLane, 1 @ TCol)] + R[4:32 @ TLane]), (32, 4), "uint8")
        >>> scene["physical"]["kind"], scene["elements"][7]["places"]
        ('tmem', [[1, 3], [33, 3], [65, 3], [97, 3]])
    """
    if not isinstance(layout, TileLayout | ComposeLayout):
        raise TypeError(f"expected a TileLayout or ComposeLayout, got {layout!r}")
    shape = check_shape(layout, shape)
    size = dtype_bytes(dtype)
    total_rows, total_cols = math.prod(shape[:-1]), shape[-1]
    win_rows, win_cols = total_rows, total_cols
    if window is not None:
        win_rows, win_cols = (int(w) for w in window)
        if win_rows < 1 or win_cols < 1:
            raise ValueError(f"a window needs at least one row and one column, got {tuple(window)}")
        win_rows, win_cols = min(win_rows, total_rows), min(win_cols, total_cols)
    check_drawable(layout, elements=win_rows * win_cols)
    lead = np.stack(np.unravel_index(np.arange(win_rows), shape[:-1])) if len(shape) > 1 else np.zeros((0, 1), np.int64)
    coords = np.concatenate([np.repeat(lead, win_cols, axis=1), np.tile(np.arange(win_cols), win_rows)[None, :]])
    result = layout.apply_all(*coords, shape=list(shape))
    names = list(result)
    places = np.stack([np.asarray(result[n]) for n in names], axis=-1)
    kind, row_axes, col_axes = arrangement(names)
    if kind == "banks":
        per_row = max(ROW_BYTES // size, 1)
        address = places[..., 0]
        low_row = int(address.min()) // per_row
        rows_of = address // per_row - low_row
        cols_of = address % per_row
        row_count = int(rows_of.max()) + 1
        row_labels = [str((low_row + r) * per_row) for r in range(row_count)]
        col_labels = [str(bank_of(c * size)) for c in range(per_row)]
        physical = {
            "kind": kind,
            "row_title": "m (row start)",
            "col_title": "bank",
            "rows": row_count,
            "cols": per_row,
            "row_labels": row_labels,
            "col_labels": col_labels,
        }
        colour_of = bank_of((places[0, :, 0] % per_row) * size)
    else:
        rows = _Grid(row_axes, names, places, dense=kind != "threads")
        cols = _Grid(col_axes, names, places, dense=True)
        rows_of, cols_of = rows.index, cols.index
        physical = {
            "kind": kind,
            "row_title": rows.title,
            "col_title": cols.title,
            "rows": len(rows.values),
            "cols": len(cols.values),
            "row_labels": rows.labels,
            "col_labels": cols.labels,
        }
        colour_of = rows_of[0]
        if kind == "tmem" and size < WORD_BYTES and physical["col_title"].startswith("TCol"):
            # TCol counts elements; narrow types share a 32-bit hardware column (the guide's s // 4 for 8 bits).
            physical["col_title"] += f" ({WORD_BYTES // size} elements per 32-bit column)"
    if physical["rows"] * physical["cols"] > MAX_GRID_CELLS:
        raise ValueError(f"the physical space is {physical['rows']} x {physical['cols']}; too sparse to draw")
    replicas, count = places.shape[:2]
    cells = np.stack(
        [
            rows_of,
            cols_of,
            np.broadcast_to(np.arange(count), (replicas, count)),
            np.broadcast_to(np.arange(replicas)[:, None], (replicas, count)),
        ],
        axis=-1,
    )
    physical["cells"] = cells.reshape(-1, 4).tolist()
    colours = np.unique(colour_of, return_inverse=True)[1].reshape(-1)
    coords = coords.T
    labels = cell_labels(kind, names, places, dtype)
    elements = [
        {
            "coord": coords[e].tolist(),
            "places": places[:, e, :].tolist(),
            "colour": int(colours[e]),
            "place_text": _text(places[0, e]),
            "coord_text": _text(coords[e]),
            "label": labels[e],
            "detail": _detail(coords[e].tolist(), names, places[:, e, :], labels[e], kind, dtype),
        }
        for e in range(count)
    ]
    lead = lead.T if len(shape) > 1 else np.zeros((1, 0), np.int64)
    scene = {
        "layout": repr(layout),
        "shape": list(shape),
        "dtype": str(dtype),
        "axes": names,
        "kind": kind,
        "labels": {
            "pattern": PATTERNS[kind],
            "legend": LEGENDS[kind],
            "logical_cell": "label (base place)",
            "physical_cell": "logical coordinate (' = replica)",
        },
        "palette": palette(int(colours.max()) + 1),
        "elements": elements,
        "logical": {
            "rows": win_rows,
            "cols": win_cols,
            "row_labels": [_text(r) if len(r) else "0" for r in lead],
            "col_labels": [str(c) for c in range(win_cols)],
        },
        "physical": physical,
    }
    if (win_rows, win_cols) != (total_rows, total_cols):
        note = _summary_note(win_rows, win_cols, total_rows, total_cols)
        scene["cropped"] = {"rows": win_rows, "cols": win_cols, "total": [total_rows, total_cols], "note": note}
    return scene


def _summary_note(rows: int, cols: int, total_rows: int, total_cols: int) -> str:
    return f"summary: logical rows 0-{rows - 1} of {total_rows}, columns 0-{cols - 1} of {total_cols}"


def crop_scene(scene: dict, rows: int, cols: int) -> dict:
    """A summary of ``scene``: only the elements in the top-left ``rows x cols`` of its logical grid, and only the
    physical rows and columns those elements occupy (in their order, labels kept). ``scene["cropped"]`` says what
    was left out; a scene that already fits comes back unchanged.

    Example:
        >>> scene = build_scene(TileLayout(S[(16, 16):(16, 1)]), (16, 16), "float16")
        >>> small = crop_scene(scene, 2, 4)
        >>> len(small["elements"]), small["physical"]["rows"], small["physical"]["cols"], small["cropped"]["note"]
        (8, 1, 8, 'summary: logical rows 0-1 of 16, columns 0-3 of 16')
    """
    logical = scene["logical"]
    if rows < 1 or cols < 1:
        raise ValueError(f"a summary needs at least one row and one column, got {rows} x {cols}")
    if rows >= logical["rows"] and cols >= logical["cols"]:
        return scene
    rows, cols = min(rows, logical["rows"]), min(cols, logical["cols"])
    kept = [r * logical["cols"] + c for r in range(rows) for c in range(cols)]
    renumber = {old: new for new, old in enumerate(kept)}
    physical = scene["physical"]
    cells = [cell for cell in physical["cells"] if cell[2] in renumber]
    used_rows = sorted({r for r, _, _, _ in cells})
    used_cols = sorted({c for _, c, _, _ in cells})
    row_at = {r: i for i, r in enumerate(used_rows)}
    col_at = {c: i for i, c in enumerate(used_cols)}
    total_rows, total_cols = scene.get("cropped", {}).get("total", (logical["rows"], logical["cols"]))
    note = _summary_note(rows, cols, total_rows, total_cols)
    return {
        **scene,
        "elements": [scene["elements"][k] for k in kept],
        "logical": {
            "rows": rows,
            "cols": cols,
            "row_labels": logical["row_labels"][:rows],
            "col_labels": logical["col_labels"][:cols],
        },
        "physical": {
            **physical,
            "rows": len(used_rows),
            "cols": len(used_cols),
            "row_labels": [physical["row_labels"][r] for r in used_rows],
            "col_labels": [physical["col_labels"][c] for c in used_cols],
            "cells": [[row_at[r], col_at[c], renumber[k], rep] for r, c, k, rep in cells],
        },
        "cropped": {"rows": rows, "cols": cols, "total": [total_rows, total_cols], "note": note},
    }
