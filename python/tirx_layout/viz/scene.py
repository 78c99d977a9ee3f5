"""What a layout picture shows, as plain data: every logical element with all its places, and the grid of the
physical space those places are drawn on. Every renderer (the web page, SVG, PNG, the terminal) draws this.

Physical space, by what the layout maps onto (the first rule that fits):
* ``TLane`` (tensor memory): rows are lanes, columns the other memory axes (``TCol``);
* thread axes: rows are the threads (their axes outer level first), columns the memory axes (register slots ``m``);
* ``m`` alone (shared memory): rows of 128 bytes, columns the elements of a row, headed by their 4-byte bank;
* otherwise: the first memory axis as rows, the rest as columns.
An element's colour comes from its base place (its thread, lane or bank), so the logical view shows where it went.
"""

from __future__ import annotations

import colorsys
import math
from collections.abc import Sequence

import numpy as np

from ..hw.memory import BANKS, WORD_BYTES, bank_of, dtype_bytes
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


def _arrangement(names: list[str]) -> tuple[str, list[int], list[int]]:
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


def build_scene(layout, shape: Sequence[int] | None = None, dtype: str = "float32") -> dict:
    """The picture of ``layout`` (a TileLayout or ComposeLayout) over a logical ``shape`` tile of ``dtype``,
    as JSON-ready data: ``elements`` (logical coordinate, every place, colour) and the ``logical`` and ``physical``
    grids (``physical["cells"]``: ``[row, col, element, replica]``). ``ValueError`` for a wrong shape or a tile
    too big to draw.

    Example:
        >>> scene = build_scene(TileLayout(S[(32, 4):(1 @ TLane, 1 @ TCol)] + R[4:32 @ TLane]), (32, 4), "uint8")
        >>> scene["physical"]["kind"], scene["elements"][7]["places"]
        ('tmem', [[1, 3], [33, 3], [65, 3], [97, 3]])
    """
    if not isinstance(layout, TileLayout | ComposeLayout):
        raise TypeError(f"expected a TileLayout or ComposeLayout, got {layout!r}")
    shape = check_shape(layout, shape)
    check_drawable(layout)
    size = dtype_bytes(dtype)
    names, places = all_places(layout, shape)
    kind, row_axes, col_axes = _arrangement(names)
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
    coords = np.indices(shape).reshape(len(shape), -1).T
    elements = [
        {
            "coord": coords[e].tolist(),
            "places": places[:, e, :].tolist(),
            "colour": int(colours[e]),
            "place_text": _text(places[0, e]),
            "coord_text": _text(coords[e]),
        }
        for e in range(count)
    ]
    cols = shape[-1]
    lead = np.indices(shape[:-1]).reshape(len(shape) - 1, -1).T if len(shape) > 1 else np.zeros((1, 0), np.int64)
    return {
        "layout": repr(layout),
        "shape": list(shape),
        "dtype": str(dtype),
        "axes": names,
        "kind": kind,
        "palette": palette(int(colours.max()) + 1),
        "elements": elements,
        "logical": {
            "rows": count // cols,
            "cols": cols,
            "row_labels": [_text(r) if len(r) else "0" for r in lead],
            "col_labels": [str(c) for c in range(cols)],
        },
        "physical": physical,
    }
