"""Wavefronts per warp access for shared-memory tiles, unswizzled vs the three swizzle modes.

Run ``python benchmarks/bank_table.py``. For each dtype and tile shape it prints, per access pattern (16-byte row
vectors in ldmatrix order, 16-byte contiguous vectors, one scalar column), the wavefronts under the plain row-major
tile and under ``mma_shared_layout`` for 32B/64B/128B swizzles, the minimum possible, and the mode ``pick_swizzle``
chooses.
"""

from __future__ import annotations

from tirx_layout import mma_shared_layout, swizzle_mode
from tirx_layout.analysis import bank_conflicts, column, contiguous, pick_swizzle, row_vectors
from tirx_layout.analysis.bank_conflicts import swizzled_tile

DTYPES = ("float16", "bfloat16", "float32")
SHAPES = ((8, 64), (16, 64), (32, 64), (64, 64), (64, 128), (128, 64), (128, 128))
PATTERNS = (("row16B", row_vectors), ("contig16B", contiguous), ("column", lambda shape, dtype: column(shape, dtype)))


def layouts(dtype, shape):
    out = {"plain": swizzled_tile(shape, dtype, "none")}
    for mode in ("32B", "64B", "128B"):
        try:
            out[mode] = mma_shared_layout(dtype, mode, shape)
        except ValueError:
            out[mode] = None
    return out


def main() -> None:
    header = (
        f"{'dtype':9s} {'shape':>10s} {'access':10s} {'plain':>6s} {'32B':>5s} {'64B':>5s} {'128B':>5s} {'min':>4s}"
        "  picked"
    )
    print(header)
    for dtype in DTYPES:
        for shape in SHAPES:
            candidates = layouts(dtype, shape)
            picked = swizzle_mode(pick_swizzle(dtype, shape), dtype)
            for name, make in PATTERNS:
                access = make(shape, dtype)
                cells, minimum = [], None
                for layout in candidates.values():
                    if layout is None:
                        cells.append("-")
                        continue
                    report = bank_conflicts(layout, dtype, access)
                    minimum = report.minimum
                    cells.append(str(report.wavefronts))
                shape_text = f"{shape[0]}x{shape[1]}"
                print(
                    f"{dtype:9s} {shape_text:>10s} {name:10s} {cells[0]:>6s} {cells[1]:>5s} {cells[2]:>5s} "
                    f"{cells[3]:>5s} {minimum:>4d}  {picked}"
                )


if __name__ == "__main__":
    main()
