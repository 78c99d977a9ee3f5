"""The layout inverse: which logical element and which replica a place holds, against enumeration."""

import itertools
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tirx_layout import R, S, TileLayout, laneid, tcgen05_atom_layout, warpid, wg_local_layout
from tirx_layout.layout.indexing import unflatten
from tirx_layout.layout.inverse import PlaceInverse


def nested_layout(rng: random.Random) -> TileLayout:
    """A random layout whose iters nest on every axis (invertible by construction), with replicas and offsets."""
    axes = ["m", "laneid", "warpid"]
    stride_on = dict.fromkeys(axes, 1)
    shard, replica = [], []
    for _ in range(rng.randint(1, 5)):
        axis, extent = rng.choice(axes), rng.choice([1, 2, 3, 4])
        gap = rng.choice([1, 1, 2])
        shard.append((extent, stride_on[axis] * gap, axis))
        stride_on[axis] *= extent * gap
    for _ in range(rng.randint(0, 2)):
        axis, extent = rng.choice(axes), rng.choice([2, 3])
        replica.append((extent, stride_on[axis], axis))
        stride_on[axis] *= extent
    rng.shuffle(shard)
    offset = {a: rng.randint(0, 3) for a in rng.sample(axes, rng.randint(0, 2))}
    from tirx_layout import Iter

    return TileLayout.from_iters([Iter(*i) for i in shard], [Iter(*i) for i in replica], offset)


@given(st.randoms(use_true_random=False))
def test_inverse_undoes_apply_all_on_every_place(rng):
    layout = nested_layout(rng)
    inverse = PlaceInverse(layout)
    for flat in range(layout.size()):
        for replica, place in enumerate(layout.apply_all(flat)):
            assert inverse.flat_index(place) == flat
            assert inverse.holds(place)
            extents = [int(it.extent) for it in layout.replica]
            expected = list(itertools.product(*[range(e) for e in extents]))[replica]  # row-major, as apply_all
            assert tuple(inverse.replica_digits(place)) == expected


@given(st.randoms(use_true_random=False))
def test_holds_is_exactly_the_image(rng):
    layout = nested_layout(rng)
    inverse = PlaceInverse(layout)
    axes = sorted(inverse.axes)
    image = {tuple(p.get(a, 0) for a in axes) for f in range(layout.size()) for p in layout.apply_all(f)}
    reach = [inverse.reach(a) + 1 for a in axes]
    for point in itertools.product(*[range(r) for r in reach]):
        places = dict(zip(axes, point, strict=True))
        for a, v in layout.offset.items():
            places.setdefault(a.name, v)
        assert bool(inverse.holds(places)) == (point in image)


@pytest.mark.parametrize(
    "layout",
    [
        TileLayout(S[(8, 2, 4, 2) : (4 @ laneid, 1 @ warpid, 1 @ laneid, 1)]),
        wg_local_layout(16),
        tcgen05_atom_layout("16x64b", (64, 8), "float32"),
        tcgen05_atom_layout("16x256b", (128, 32), "float16"),
        TileLayout(S[(16, 8) : (1 @ laneid, 1)] + R[2 : 16 @ laneid]),
    ],
)
def test_hardware_fragments_invert(layout):
    inverse = PlaceInverse(layout)
    for flat in range(layout.size()):
        assert inverse.flat_index(layout.apply(flat)) == flat


@pytest.mark.parametrize(
    ("layout", "message"),
    [
        (TileLayout(S[(4, 2) : (1, 0)]), "stride that is not positive"),
        (TileLayout(S[(4, 2) : (1, -4)]), "stride that is not positive"),
        (TileLayout(S[(4, 4) : (2, 3)]), "strides 2 \\(extent 4\\) and 3 overlap or interleave"),
        (TileLayout(S[(4, 4) : (1, 2)]), "overlap or interleave"),
    ],
)
def test_layouts_that_are_not_invertible_by_place_say_why(layout, message):
    with pytest.raises(ValueError, match=message):
        PlaceInverse(layout)


def test_unflatten_is_row_major():
    assert unflatten(27, (4, 8)) == [3, 3]
    assert unflatten(5, (2, 1, 3)) == [1, 0, 2]


def test_a_gap_that_is_no_multiple_of_the_extent_inverts():
    # 12 rows on lanes 0..11 and 16..27: lane 16 holds row 1 (digit 0 of the first iter), not 16 % 12 = 4
    layout = TileLayout(S[(12, 2, 2) : (1 @ laneid, 16 @ laneid, 1)])
    inverse = PlaceInverse(layout)
    for flat in range(layout.size()):
        place = layout.apply(flat)
        assert inverse.flat_index(place) == flat and inverse.holds(place)
    assert not inverse.holds({"laneid": 12, "m": 0})
