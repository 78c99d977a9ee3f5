"""Converters to and from upstream ``tvm.tirx.layout``: exact round trips, and both libraries' apply agree over the
whole domain of thousands of random layouts (upstream's apply as the oracle)."""

import math
import os
import random

import numpy as np
import pytest
import tvm
import tvm_ffi
from hypothesis import given, settings
from hypothesis import strategies as st
from tvm.tirx import layout as upstream

from tirx_layout import (
    BUILTIN_AXES,
    Axis,
    ComposeLayout,
    Iter,
    S,
    SwizzleLayout,
    TileLayout,
    from_upstream,
    laneid,
    to_upstream,
)
from tirx_layout.layout import is_upstream_layout

from oracles.strategies import build, layouts, random_layout
from oracles.upstream import upstream_layout

NUM_LAYOUTS = int(os.environ.get("TIRX_LAYOUT_DIFF_LAYOUTS", "2000"))
#: Domains up to this size are enumerated whole (upstream's per-element apply is the slow side).
WHOLE_DOMAIN = 512


def upstream_places(layout, flats) -> list[dict]:
    return [{str(k): int(v) for k, v in layout.apply(flat).items()} for flat in flats]


def our_places(layout, flats) -> list[dict]:
    places = layout.apply(np.asarray(flats, dtype=np.int64))
    return [{axis: int(values[k]) for axis, values in places.items()} for k in range(len(flats))]


def assert_same_upstream(mine, theirs):
    assert tvm_ffi.structural_equal(mine, theirs), (mine, theirs)


@settings(max_examples=1000, deadline=None)
@given(layouts)
def test_tile_layout_round_trips_both_ways_and_applies_alike(data):
    ours, theirs = build(data), upstream_layout(data)
    assert_same_upstream(ours.to_upstream(), theirs)
    assert from_upstream(theirs) == ours
    assert from_upstream(to_upstream(ours)) == ours
    if ours.size() <= WHOLE_DOMAIN:
        flats = list(range(ours.size()))
        assert our_places(from_upstream(theirs), flats) == upstream_places(theirs, flats)


def test_thousands_of_layouts_round_trip_and_apply_alike_over_the_whole_domain():
    rng = random.Random(20261201)
    enumerated = 0
    for _ in range(NUM_LAYOUTS):
        data = random_layout(rng)
        ours, theirs = build(data), upstream_layout(data)
        converted = from_upstream(theirs)
        assert converted == ours
        assert_same_upstream(ours.to_upstream(), theirs)
        size = ours.size()
        if size <= WHOLE_DOMAIN:
            flats = list(range(size))
            assert our_places(converted, flats) == upstream_places(theirs, flats), ours
            enumerated += 1
    assert enumerated >= NUM_LAYOUTS // 4  # most random layouts are small enough to enumerate


def random_swizzle(rng):
    swizzle_len = rng.randint(0, 3)
    return SwizzleLayout(rng.randint(0, 3), swizzle_len, rng.randint(swizzle_len, 4), rng.random() < 0.7)


def random_memory_tile(rng, period):
    """A TileLayout on ``m`` only: rows of one swizzle period, sometimes with a permuted or padded inner part."""
    rows = rng.choice([1, 2, 3, 4, 8])
    if rng.random() < 0.5:
        return TileLayout(S[(rows, period) : (period, 1)])
    cols = rng.choice([2, 4, 8])
    return TileLayout(S[(rows, cols, period // cols if period >= cols else 1) : (period, 1, cols)] + rng.randint(0, 9))


def test_compose_layouts_round_trip_and_apply_alike_over_the_whole_domain():
    rng = random.Random(5)
    for _ in range(300):
        swizzle = random_swizzle(rng)
        ours = ComposeLayout(swizzle, random_memory_tile(rng, swizzle.size()))
        theirs = to_upstream(ours)
        assert isinstance(theirs, upstream.ComposeLayout)
        assert (theirs.per_element, theirs.swizzle_len, theirs.atom_len, bool(theirs.swizzle_inner)) == (
            swizzle.per_element,
            swizzle.swizzle_len,
            swizzle.atom_len,
            swizzle.swizzle_inner,
        )
        assert from_upstream(theirs) == ours
        flats = list(range(min(ours.size(), 2048)))
        assert [ours.apply(f) for f in flats] == upstream_places(theirs, flats), ours


def test_upstream_mma_atom_converts_to_the_documented_swizzle():
    # Upstream's 128-byte fp16 atom (ComposeLayout(3, 3, 3, S[(8, 64):(64, 1)])): column 0 of rows 0..3 sits at
    # 0, 72, 144, 216 (row r's 16-byte chunk 0 XOR-ed with r, SPEC §3).
    theirs = upstream.ComposeLayout(3, 3, 3, upstream.TileLayout(upstream.S[(8, 64) : (64, 1)]))
    ours = from_upstream(theirs)
    assert ours == ComposeLayout(SwizzleLayout(3, 3, 3), TileLayout(S[(8, 64) : (64, 1)]))
    assert [ours.apply(r, 0)["m"] for r in range(4)] == [0, 72, 144, 216]


def test_a_bare_swizzle_goes_upstream_as_a_compose_over_one_period():
    rng = random.Random(11)
    for _ in range(50):
        swizzle = random_swizzle(rng)
        period = swizzle.size()
        theirs = swizzle.to_upstream()
        expected = upstream.ComposeLayout(
            swizzle.per_element,
            swizzle.swizzle_len,
            swizzle.atom_len,
            upstream.TileLayout(upstream.S[period]),
            swizzle.swizzle_inner,
        )
        assert_same_upstream(theirs, expected)
        assert from_upstream(theirs) == ComposeLayout(swizzle, TileLayout(S[period]))
        flats = list(range(period))
        assert [swizzle.apply(f) for f in flats] == upstream_places(theirs, flats)


@pytest.mark.parametrize("name", BUILTIN_AXES)
def test_builtin_axes_convert_by_name_with_the_same_kind(name):
    ours = Axis.get(name)
    theirs = ours.to_upstream()
    assert theirs.same_as(upstream.Axis.get(name))
    assert bool(theirs.is_thread()) == ours.is_thread()
    assert from_upstream(theirs) is ours


@given(
    st.integers(1, 64),
    st.integers(-64, 64),
    st.sampled_from(BUILTIN_AXES),
)
def test_iters_round_trip(extent, stride, axis):
    ours = Iter(extent, stride, axis)
    theirs = to_upstream(ours)
    assert (int(theirs.extent), int(theirs.stride), str(theirs.axis.name)) == (extent, stride, axis)
    assert from_upstream(theirs) == ours


def test_a_user_axis_has_no_upstream_counterpart():
    Axis.register("interop_lane", "thread", scope="warp", subscope="thread")
    with pytest.raises(ValueError, match="'interop_lane' has no upstream counterpart"):
        TileLayout(S[4 : 1 @ Axis.get("interop_lane")]).to_upstream()


def test_an_axis_unknown_here_is_a_key_error():
    with pytest.raises(KeyError, match="interop_unknown"):
        from_upstream(upstream.TileLayout(upstream.S[4 : 1 @ upstream.Axis.get("interop_unknown")]))


def test_symbolic_offsets_stay_expressions_and_symbolic_extents_are_refused():
    n = tvm.tirx.Var("n", "int32")
    converted = from_upstream(upstream.TileLayout(upstream.S[(4, 8) : (8, 1)] + n))
    assert converted.size() == 32
    assert tvm_ffi.structural_equal(converted.offset[Axis.get("m")], n)
    assert math.prod(it.extent for it in converted.shard) == 32
    with pytest.raises(TypeError, match="an upstream iter extent must be a static int"):
        from_upstream(upstream.TileLayout(upstream.S[(n, 8) : (8, 1)]))


def test_anything_else_is_a_type_error():
    with pytest.raises(TypeError, match="from_upstream takes an upstream"):
        from_upstream(TileLayout(S[4]))
    with pytest.raises(TypeError, match="to_upstream takes a tirx_layout"):
        to_upstream(upstream.TileLayout(upstream.S[4]))
    assert is_upstream_layout(upstream.TileLayout(upstream.S[4]))
    assert not is_upstream_layout(TileLayout(S[(4, 2) : (1 @ laneid, 1)]))
