"""Register fragments seen from their threads: who holds which element, both directions, against a twin written
with the layout's inverse map."""

from __future__ import annotations

import numpy as np
import pytest

from tirx_layout import R, S, TileLayout, laneid, tcgen05_atom_layout, warpid, wg_local_layout
from tirx_layout.analysis.thread_placement import (
    element_holders,
    fragment_threads,
    same_placement,
    slot_holders,
    warp_slot_elements,
)
from tirx_layout.hw.threads import thread_axis_place
from tirx_layout.layout.indexing import unflatten
from tirx_layout.layout.inverse import PlaceInverse
from tirx_layout.transform.infer_layouts import fragment_candidates

FRAGMENTS = [
    (TileLayout(S[(8, 2, 4, 2) : (4 @ laneid, 1 @ warpid, 1 @ laneid, 1)]), (8, 16)),
    (TileLayout(S[(16, 4) : (1 @ laneid, 1)] + R[2 : 16 @ laneid]), (16, 4)),
    (TileLayout(S[(4, 32, 4) : (1 @ warpid, 1 @ laneid, 1)] + R[2 : 4 @ warpid]), (128, 4)),
    (wg_local_layout(8), (128, 8)),
    (tcgen05_atom_layout("16x256b", (128, 16), "float16"), (128, 16)),
    *[(c, (229,)) for c in fragment_candidates((229,), "float32", 128)],
    *[(c, (16, 40)) for c in fragment_candidates((16, 40), "float16", 64)],
]


def by_inverse(layout, shape, warp: int, slots: int) -> list[list[tuple]]:
    """Each lane's elements, slot by slot, through the inverse map (the twin)."""
    inverse, threads = PlaceInverse(layout), fragment_threads(layout)
    out = []
    for lane in range(32):
        places = {a: thread_axis_place(a, warp * 32 + lane, threads)[0] for a in inverse.axes if a != "m"}
        held = []
        for slot in range(slots):
            places["m"] = slot
            if inverse.holds(places):
                held.append(tuple(unflatten(inverse.flat_index(places), shape)))
        out.append(held)
    return out


@pytest.mark.parametrize(("layout", "shape"), FRAGMENTS, ids=lambda v: str(v))
def test_slot_holders_agree_with_the_inverse_map(layout, shape):
    slots = int(layout.span("m"))
    for warp in range(fragment_threads(layout) // 32):
        assert warp_slot_elements(layout, shape, warp, 0, slots) == by_inverse(layout, shape, warp, slots)


@pytest.mark.parametrize(("layout", "shape"), FRAGMENTS, ids=lambda v: str(v))
def test_element_holders_are_the_other_direction(layout, shape):
    thread, slot = element_holders(layout, shape, every_replica=True)
    holder, _ = slot_holders(layout, fragment_threads(layout))
    flat = np.arange(int(np.prod(shape))).reshape(shape)
    for r in range(thread.shape[0]):
        np.testing.assert_array_equal(holder[thread[r], slot[r]], flat)


def test_placement_is_compared_by_thread_and_slot_whatever_the_spelling():
    assert same_placement(wg_local_layout(8), TileLayout(S[(4, 32, 8) : (1 @ warpid, 1 @ laneid, 1)]), (128, 8), 128)
    assert not same_placement(
        wg_local_layout(8), TileLayout(S[(32, 4, 8) : (1 @ laneid, 1 @ warpid, 1)]), (128, 8), 128
    )
