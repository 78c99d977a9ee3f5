"""A layout as terminal text: a summary, the table of cell labels (the pictures' convention: ``T#V#``, ``L#C#``,
``R#B#``, see ``viz.scene``), one table per output axis over the logical tile (base places), the 4-byte bank table
for a shared-memory layout, and where the replicas lie."""

from __future__ import annotations

import math

import numpy as np

from ..hw.memory import BANKS, WORD_BYTES, bank_of, dtype_bytes
from .limits import check_drawable
from .scene import LEGENDS, all_places, arrangement, cell_labels, check_shape


def grid_text(values: np.ndarray, row_labels: list[str], col_labels: list[str], width: int | None = None) -> list[str]:
    """Right-aligned rows of a 2-D table with its row and column headers. With a ``width``, a table wider than that
    is cut into bands of whole columns, each under its own column header and each line at most ``width`` characters
    (at least one column per band), a blank line between bands.

    Example:
        >>> print("\\n".join(grid_text(np.array([[0, 1], [10, 11]]), ["0", "1"], ["0", "1"])))
             0  1
          0  0  1
          1 10 11
        >>> print("\\n".join(grid_text(np.array([[0, 1], [10, 11]]), ["0", "1"], ["0", "1"], width=7)))
             0
          0  0
          1 10
        <BLANKLINE>
             1
          0  1
          1 11
    """
    cell = max(len(str(v)) for v in [*values.reshape(-1).tolist(), *col_labels]) + 1
    lead = max(len(r) for r in row_labels) + 2
    per_band = len(col_labels) if width is None else max(1, (width - lead) // cell)
    rows = values.tolist()
    lines = []
    for start in range(0, len(col_labels), per_band):
        band = slice(start, start + per_band)
        lines += [""] if start else []
        lines.append(" " * lead + "".join(c.rjust(cell) for c in col_labels[band]))
        for label, row in zip(row_labels, rows, strict=True):
            lines.append(label.rjust(lead) + "".join(str(v).rjust(cell) for v in row[band]))
    return lines


def _summary(layout) -> str:
    try:
        scope = layout.get_scope()
        scope = scope and tuple(map(str, scope))  # level names, as the page shows them
    except ValueError:
        scope = "ill-formed"
    return f"size {layout.size()}  span {layout.span()}  scope {scope or 'memory only'}"


def layout_table(layout, shape=None, dtype: str = "float32", width: int | None = None) -> str:
    """What ``tirx-layout show`` prints for ``layout`` over a logical ``shape`` tile of ``dtype``; with a ``width``,
    each table wider than that is cut into bands of columns (:func:`grid_text`).

    Example:
        >>> print(layout_table(TileLayout(S[(2, 4):(1 @ laneid, 1)] + R[2:2 @ laneid]), (2, 4)))
        TileLayout(S[(2, 4):(1@laneid, 1)] + R[2:2@laneid])
        shape (2, 4)  dtype float32  size 8  span 4  scope ('thread', 'warp')
        cells (T = CTA thread (the thread axes combined), V = value (register slot m)):
                  0    1    2    3
             0  T0V0 T0V1 T0V2 T0V3
             1  T1V0 T1V1 T1V2 T1V3
        laneid:
                0 1 2 3
             0  0 0 0 0
             1  1 1 1 1
        m:
                0 1 2 3
             0  0 1 2 3
             1  0 1 2 3
        replicas: every element also at +2@laneid
    """
    shape = check_shape(layout, shape)
    check_drawable(layout)
    names, places = all_places(layout, shape)
    rows, cols = math.prod(shape[:-1]), shape[-1]
    lead = np.indices(shape[:-1]).reshape(len(shape) - 1, -1).T if len(shape) > 1 else [[]]
    row_labels = [",".join(map(str, r)) or "0" for r in np.asarray(lead).tolist()]
    col_labels = [str(c) for c in range(cols)]
    lines = [repr(layout), f"shape {shape}  dtype {dtype}  {_summary(layout)}"]
    kind = arrangement(names)[0]
    if kind != "memory":
        labels = np.array(cell_labels(kind, names, places, dtype), dtype=object)
        lines.append(f"cells ({LEGENDS[kind]}):")
        lines += grid_text(labels.reshape(rows, cols), row_labels, col_labels, width)
    for a, name in enumerate(names):
        lines.append(f"{name}:")
        lines += grid_text(places[0, :, a].reshape(rows, cols), row_labels, col_labels, width)
    if names == ["m"]:
        size = dtype_bytes(dtype)
        lines.append(f"bank ({BANKS} banks of {WORD_BYTES} bytes, {size}-byte elements):")
        banks = bank_of(places[0, :, 0] * size)
        lines += grid_text(banks.reshape(rows, cols), row_labels, col_labels, width)
    if places.shape[0] > 1:
        # Replica places differ from the base by the same vector for every element; element 0 shows them.
        shifts = places[1:, 0, :] - places[0, 0, :]
        words = [" + ".join(f"{int(v)}@{n}" for n, v in zip(names, row, strict=True) if v) or "+0" for row in shifts]
        lines.append("replicas: every element also at " + ", ".join(f"+{w}" for w in words))
    return "\n".join(lines)
