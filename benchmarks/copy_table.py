"""The memory instructions of the tile-copy examples, measured in the simulator: vector width of the global and
shared accesses, and shared-memory wavefronts per warp instruction against the minimum, for each staging layout
(the MMA swizzles, the swizzle matched to the fragment, and a plain row-major tile for comparison).

Usage: python benchmarks/copy_table.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
import tile_copies

from tirx_layout import S, TileLayout
from tirx_layout.tools.kernel_report import sample_input
from tirx_layout.tools.measurement import kernel_accesses, summarize

STAGES = [
    ("load", "global", "A -> "),
    ("store", "shared", "tile st"),
    ("load", "shared", "tile ld"),
    ("store", "global", "-> B"),
]


def row(kernel) -> str:
    summary = summarize(kernel_accesses(kernel, [sample_input(kernel)]))
    cells = []
    for kind, scope, _ in STAGES:
        s = summary[(kind, scope)]
        width = "/".join(str(b) for b in s.vector_bytes) + "B"
        if scope == "shared":
            per = s.warp_executions
            width += f" {s.wavefronts / per:4.1f}/{s.minimum_wavefronts / per:.1f}"
        cells.append(f"{width:>14}")
    return " ".join(cells)


def plain_kernel(dtype: str, fragment: str):
    """The same round trip through a plain row-major shared tile."""
    rows = tile_copies.FRAGMENTS[fragment][0]
    original = tile_copies.staging_layout
    tile_copies.staging_layout = lambda d, s, f: TileLayout(S[(rows, tile_copies.COLS)])
    try:
        return tile_copies.round_trip_kernel(dtype, "plain", fragment)
    finally:
        tile_copies.staging_layout = original


def main() -> None:
    print(f"{'fragment':15} {'dtype':9} {'staging':8} " + " ".join(f"{label:>14}" for _, _, label in STAGES))
    print(f"{'':34}" + " ".join(f"{'(vec, wf/min)':>14}" for _ in STAGES))
    for fragment in tile_copies.FRAGMENTS:
        for dtype in ("float16", "bfloat16", "float32"):
            for swizzle in ("128B", "64B", "32B", "matched", "plain"):
                kernel = (
                    plain_kernel(dtype, fragment)
                    if swizzle == "plain"
                    else tile_copies.round_trip_kernel(dtype, swizzle, fragment)
                )
                print(f"{fragment:15} {dtype:9} {swizzle:8} {row(kernel)}")


if __name__ == "__main__":
    main()
