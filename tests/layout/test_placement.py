"""What a layout says about storage: storage extent and the addresses of an element, for every layout kind."""

from __future__ import annotations

import numpy as np

from tirx_layout import ComposeLayout, R, S, SwizzleLayout, TileLayout, laneid, warpid
from tirx_layout.layout.placement import layout_threads, slot_count, storage_addresses, storage_extent, tail_padded


def test_addresses_of_each_layout_kind_for_ints_and_arrays():
    tile = TileLayout(S[(8, 64) : (64, 1)])
    cases = [
        (None, (8, 64), lambda i, j: [64 * i + j]),
        (tile, (8, 64), lambda i, j: [64 * i + j]),
        (ComposeLayout(SwizzleLayout(3, 3, 3), tile), (8, 64), lambda i, j: [64 * i + 8 * ((j >> 3) ^ i) + (j & 7)]),
        (SwizzleLayout(3, 3, 3), (8, 64), lambda i, j: [64 * i + 8 * ((j >> 3) ^ i) + (j & 7)]),
        (TileLayout(S[(8, 64) : (64, 1)] + R[2:512]), (8, 64), lambda i, j: [64 * i + j, 64 * i + j + 512]),
    ]
    i, j = np.meshgrid(np.arange(8), np.arange(64), indexing="ij")
    for layout, shape, want in cases:
        assert storage_addresses(layout, shape, [3, 17], every_replica=True) == want(3, 17)
        for got, expected in zip(storage_addresses(layout, shape, [i, j], every_replica=True), want(i, j), strict=True):
            np.testing.assert_array_equal(np.broadcast_to(got, shape), expected)


def test_extent_slots_threads_and_tails():
    assert storage_extent(TileLayout(S[(8, 8) : (1, 8)] + 4)) == 68
    assert storage_extent(ComposeLayout(SwizzleLayout(3, 3, 3), TileLayout(S[(4, 64) : (64, 1)]))) == 512
    frag = TileLayout(S[(8, 2, 4, 2) : (4 @ laneid, 1 @ warpid, 1 @ laneid, 1)] + R[2 : 4 @ warpid])
    assert layout_threads(frag) == ["laneid", "warpid"] and slot_count(frag) == 2
    assert tail_padded(TileLayout(S[(2, 4, 32) : (1, 1 @ warpid, 1 @ laneid)]), (229,))
    assert not tail_padded(TileLayout(S[(2, 4, 32) : (1, 1 @ warpid, 1 @ laneid)]), (256,))
