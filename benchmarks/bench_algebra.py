"""Per-call latency of the layout algebra: tirx_layout against upstream ``tvm.tirx.layout`` on the same inputs.

Run ``python benchmarks/bench_algebra.py`` (or ``./dev.sh bench``). Prints microseconds per call for both and the
ratio upstream / ours (above 1: ours is faster).
"""

from __future__ import annotations

import sys
from pathlib import Path

from tvm.tirx import layout as up

sys.path.insert(0, str(Path(__file__).parent))
from _timing import ratio_main

from tirx_layout import R, S, TileLayout, laneid, warpid


def unpack(pair):
    grouped, seps = pair
    return grouped, seps


def ax(name):
    return up.Axis.get(name)


def cases():
    """(operation, input description, ours as a thunk, upstream as a thunk)."""
    frag = TileLayout(S[(8, 2, 4, 2) : (4 @ laneid, 1 @ warpid, 1 @ laneid, 1)] + R[2 : 4 @ warpid] + 5 @ warpid)
    up_frag = up.TileLayout(
        up.S[(8, 2, 4, 2) : (4 @ ax("laneid"), 1 @ ax("warpid"), 1 @ ax("laneid"), 1)]
        + up.R[2 : 4 @ ax("warpid")]
        + 5 @ ax("warpid")
    )
    fusable, up_fusable = (
        TileLayout(S[(8, 8, 8, 4, 2) : (512, 64, 8, 2, 1)]),
        up.TileLayout(up.S[(8, 8, 8, 4, 2) : (512, 64, 8, 2, 1)]),
    )
    smem, up_smem = TileLayout(S[(128, 64) : (64, 1)]), up.TileLayout(up.S[(128, 64) : (64, 1)])
    inner, up_inner = TileLayout(S[(2, 4) : (1, 2)]), up.TileLayout(up.S[(2, 4) : (1, 2)])
    outer, up_outer = TileLayout(S[(8, 8) : (8, 1)]), up.TileLayout(up.S[(8, 8) : (8, 1)])
    tiled, up_tiled = inner.tile(outer, [8, 8], [2, 4]), up_inner.tile(up_outer, [8, 8], [2, 4])
    # per-element apply on ints, in each coordinate form
    yield "apply", "guide fragment, flat index 37", lambda: frag.apply(37), lambda: up_frag.apply(37)
    yield "apply", "guide fragment, shard coords", lambda: frag.apply(1, 1, 2, 1), lambda: up_frag.apply(1, 1, 2, 1)
    yield (
        "apply",
        "guide fragment, (3, 5) of [8, 16]",
        lambda: frag.apply(3, 5, shape=[8, 16]),
        lambda: up_frag.apply(3, 5, shape=[8, 16]),
    )
    yield "apply", "S[(128,64):(64,1)], (100, 7)", lambda: smem.apply(100, 7), lambda: up_smem.apply(100, 7)
    yield "canonicalize", "S[(8,8,8,4,2):(512,64,8,2,1)]", fusable.canonicalize, up_fusable.canonicalize
    yield "canonicalize", "guide fragment (lanes, warps, replica, offset)", frag.canonicalize, up_frag.canonicalize
    # group answers a pair; both sides are timed as callers use them, unpacking it: `grouped, seps = ...`
    yield (
        "group",
        "S[(128,64):(64,1)] by [8,16,64]",
        lambda: unpack(smem.group([8, 16, 64])),
        lambda: unpack(up_smem.group([8, 16, 64])),
    )
    yield (
        "group",
        "guide fragment by [8,16]",
        lambda: unpack(frag.group([8, 16])),
        lambda: unpack(up_frag.group([8, 16])),
    )
    yield (
        "tile",
        "S[(2,4):(1,2)] by S[(8,8):(8,1)]",
        lambda: inner.tile(outer, [8, 8], [2, 4]),
        lambda: up_inner.tile(up_outer, [8, 8], [2, 4]),
    )
    yield (
        "is_tile_inner",
        "S[(8,2,32):(64,1,2)] / S[(2,4):(1,2)]",
        lambda: inner.is_tile_inner(tiled, [16, 32], [2, 4]),
        lambda: up_inner.is_tile_inner(up_tiled, [16, 32], [2, 4]),
    )
    yield (
        "slice",
        "S[(128,64):(64,1)] rows 16..48",
        lambda: smem.slice([128, 64], [(16, 48), (0, 64)]),
        lambda: up_smem.slice([128, 64], [(16, 48), (0, 64)]),
    )
    yield (
        "slice",
        "S[(8,8):(8,1)] on [64], (5,8)",
        lambda: outer.slice([64], [(5, 8)]),
        lambda: up_outer.slice([64], [(5, 8)]),
    )


if __name__ == "__main__":
    ratio_main(cases, "upstream", __doc__)
