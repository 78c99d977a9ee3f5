"""TileLayout: the guide's examples exactly, every apply form against the enumerating twin, queries, identity."""

import itertools
import math

import numpy as np
import pytest
import tvm
import tvm_ffi
from hypothesis import given

import tirx_layout
from tirx_layout import *  # noqa: F403  (repr must eval with the public names only)
from tirx_layout import R, S, TCol, TileLayout, TLane, laneid, tid_in_wg, warpid, wid_in_wg

from oracles.reference import all_places, base_place, flatten, size, span, split
from oracles.strategies import MEMORY_AXES, build, layouts

GUIDE_FRAGMENT = S[(8, 2, 4, 2) : (4 @ laneid, 1 @ warpid, 1 @ laneid, 1)] + R[2 : 4 @ warpid] + 5 @ warpid


# ---- the guide's worked examples ---------------------------------------------------------------------------


def test_guide_fragment_apply_and_replicas():
    frag = TileLayout(GUIDE_FRAGMENT)
    assert frag.apply(1, 3, shape=[8, 16]) == {"laneid": 5, "warpid": 5, "m": 1}
    assert frag.apply(19) == {"laneid": 5, "warpid": 5, "m": 1}
    assert frag.apply(1, 0, 1, 1) == {"laneid": 5, "warpid": 5, "m": 1}
    assert [p["warpid"] for p in frag.apply_all(1, 3, shape=[8, 16])] == [5, 9]


def test_guide_fragment_closed_forms_on_the_whole_tile():
    frag = TileLayout(GUIDE_FRAGMENT)
    for i, j in itertools.product(range(8), range(16)):
        assert frag.apply(i, j, shape=[8, 16]) == {
            "laneid": 4 * i + (j // 2) % 4,
            "warpid": j // 8 + 5,
            "m": j % 2,
        }
        assert [p["warpid"] for p in frag.apply_all(i, j, shape=[8, 16])] == [j // 8 + 5, j // 8 + 9]


def test_guide_tmem_accumulator():
    acc = TileLayout(S[(2, 128, 112) : (112 @ TCol, 1 @ TLane, 1 @ TCol)])
    a, lane, c = np.meshgrid(np.arange(2), np.arange(128), np.arange(112), indexing="ij")
    places = acc.apply(a, lane, c)
    np.testing.assert_array_equal(places["TLane"], lane)
    np.testing.assert_array_equal(places["TCol"], 112 * a + c)
    assert sorted(set(places["TCol"].ravel().tolist())) == list(range(224))
    assert acc.span("TCol") == 224 and acc.span("TLane") == 128 and acc.size("TCol") == 224


@pytest.mark.parametrize("sf_per_mma", [1, 4, 16])
def test_guide_scale_factor_atom(sf_per_mma):
    scale = TileLayout(S[(32, sf_per_mma) : (1 @ TLane, 1 @ TCol)] + R[4 : 32 @ TLane])
    for r, s in itertools.product(range(32), range(sf_per_mma)):
        places = scale.apply_all(r, s, shape=[32, sf_per_mma])
        assert [p["TLane"] for p in places] == [r, r + 32, r + 64, r + 96]
        assert {p["TCol"] for p in places} == {s}


# ---- apply in all forms against the twin ------------------------------------------------------------------


def _plain(layout):
    shard = [(it.extent, it.stride, it.axis.name) for it in layout.shard]
    replica = [(it.extent, it.stride, it.axis.name) for it in layout.replica]
    return shard, replica, {a.name: v for a, v in layout.offset.items()}


def _domain(shard):
    return range(min(size(shard), 400))


@given(layouts)
def test_int_apply_matches_twin(data):
    layout = build(data)
    shard, replica, offset = data
    extents = [e for e, _, _ in shard]
    for flat in _domain(shard):
        coords = split(flat, extents)
        want = base_place(shard, offset, coords)
        assert layout.apply(flat) == want
        if len(shard) > 1:
            assert layout.apply(*coords) == want
        assert layout.apply_all(flat) == all_places(shard, replica, offset, coords)


@given(layouts)
def test_shaped_apply_flattens_row_major(data):
    layout = build(data)
    shard, _, offset = data
    total = size(shard)
    shape = [d for d in (2, 3, 5) if total % d == 0][:1]
    shape = [*shape, total // math.prod(shape)]
    for flat in _domain(shard):
        coords = split(flat, shape)
        assert flatten(coords, shape) == flat
        assert layout.apply(*coords, shape=shape) == base_place(shard, offset, split(flat, [e for e, _, _ in shard]))


@given(layouts)
def test_numpy_apply_equals_int_apply(data):
    layout = build(data)
    shard, _replica, _offset = data
    flats = np.arange(len(_domain(shard)), dtype=np.int32).reshape(-1, 1)
    base = layout.apply(flats)
    every = layout.apply_all(flats)
    for k, flat in enumerate(flats.ravel().tolist()):
        want = layout.apply(flat)
        assert {name: int(values[k, 0]) for name, values in base.items()} == want
        places = layout.apply_all(flat)
        for r, place in enumerate(places):
            assert {name: int(values[r, k, 0]) for name, values in every.items()} == place


def test_numpy_apply_broadcasts_and_keeps_shape():
    frag = TileLayout(GUIDE_FRAGMENT)
    i = np.arange(8).reshape(8, 1)
    j = np.arange(16).reshape(1, 16)
    places = frag.apply(i, j, shape=[8, 16])
    assert places["laneid"].shape == (8, 16) and places["laneid"].dtype == np.int64
    np.testing.assert_array_equal(places["laneid"], 4 * i + (j // 2) % 4)
    assert frag.apply(np.int64(19)) == {"laneid": 5, "warpid": 5, "m": 1}
    everywhere = frag.apply_all(i, j, shape=[8, 16])
    assert everywhere["warpid"].shape == (2, 8, 16)
    np.testing.assert_array_equal(everywhere["warpid"][1] - everywhere["warpid"][0], np.full((8, 16), 4))
    scalar = frag.apply(np.array(19))
    assert scalar["laneid"].shape == () and int(scalar["laneid"]) == 5


def test_out_of_range_input_spills_into_the_first_component():
    layout = TileLayout(S[(2, 4) : (1 @ laneid, 1)])
    assert layout.apply(9) == {"laneid": 2, "m": 1}  # 9 = 2*4 + 1: the first component is not reduced
    assert layout.apply(-1) == {"laneid": -1, "m": 3}  # floor semantics, as TVM's floordiv/floormod


# ---- symbolic apply ----------------------------------------------------------------------------------------


def _evaluate(expr, bindings):
    analyzer = tvm.sym.Analyzer()
    for var, value in bindings.items():
        analyzer.bind(var, value)
    return int(analyzer.simplify(expr))


def test_symbolic_single_iter_is_a_product():
    x = tvm.tirx.Var("x", "int32")
    assert str(TileLayout(S[8:4]).apply(x)["m"]) == "x * 4"
    assert str(TileLayout(S[8 : 1 @ laneid]).apply(x)["laneid"]) == "x"


def test_symbolic_guide_fragment_matches_integers():
    frag = TileLayout(GUIDE_FRAGMENT)
    i, j = tvm.tirx.Var("i", "int32"), tvm.tirx.Var("j", "int32")
    exprs = frag.apply(i, j, shape=[8, 16])
    every = frag.apply_all(i, j, shape=[8, 16])
    for vi, vj in itertools.product(range(8), range(16)):
        got = {name: _evaluate(e, {i: vi, j: vj}) for name, e in exprs.items()}
        assert got == frag.apply(vi, vj, shape=[8, 16])
        got_all = [{name: _evaluate(e, {i: vi, j: vj}) for name, e in p.items()} for p in every]
        assert got_all == frag.apply_all(vi, vj, shape=[8, 16])


def test_symbolic_mixes_ints_and_promotes_large_constants():
    x = tvm.tirx.Var("x", "int32")
    frag = TileLayout(GUIDE_FRAGMENT)
    assert str(frag.apply(x, 3, shape=[8, 16])["laneid"]) == "x * 4 + 1"
    big = TileLayout(S[(4, 8) : (2**40, 1)])
    assert str(big.apply(x)["m"].ty.dtype) == "int64"


def test_symbolic_offset():
    stage = tvm.tirx.Var("stage", "int32")
    layout = TileLayout(S[(2, 64) : (64, 1)] + stage * 128)
    assert _evaluate(layout.apply(1, 5)["m"], {stage: 3}) == 64 + 5 + 384
    assert _evaluate(layout.span(), {stage: 3}) == 128 + 384
    with pytest.raises(ValueError, match="symbolic offset"):
        layout.apply(np.arange(4))


# ---- queries -----------------------------------------------------------------------------------------------


@given(layouts)
def test_size_and_span_match_the_twin(data):
    layout = build(data)
    shard, replica, offset = data
    assert layout.size() == size(shard)
    assert layout.span() == span(shard, replica, offset, MEMORY_AXES)
    for axis in {a for _, _, a in [*shard, *replica]} | set(offset):
        assert layout.size(axis) == size(shard, axis)
        assert layout.span(axis) == span(shard, replica, offset, MEMORY_AXES, axis)
    assert layout.num_replicas() == math.prod(e for e, _, _ in replica)


def test_span_counts_replicas_offsets_and_signs():
    assert TileLayout(S[(4, 4) : (1, 4)] + R[2:16] + 3).span() == 35
    assert TileLayout(S[(4, 4) : (-1, 0)]).span() == -2
    layout = TileLayout(S[(4, 4) : (1, 4)] + 3 + 3 @ laneid)
    assert (layout.span(), layout.span("laneid"), layout.span("warpid")) == (19, 4, 1)
    assert layout.size("laneid") == 1 and layout.size(tirx_layout.m) == 16


@pytest.mark.parametrize(
    ("spec", "scope"),
    [
        (S[(4, 32) : (1 @ warpid, 1 @ laneid)], ("thread", "cta")),
        (S[32 : 1 @ laneid], ("thread", "warp")),
        (S[(4, 32) : (1 @ wid_in_wg, 1 @ laneid)] + R[2 : 1 @ tirx_layout.wgid], ("thread", "cta")),
        (S[128 : 1 @ tid_in_wg] + 1 @ tirx_layout.wgid, ("thread", "cta")),
        (S[(2, 4) : (1 @ tirx_layout.bx, 1 @ warpid)], ("warp", "kernel")),
        (S[(4, 32) : (1 @ warpid, 1 @ laneid)] + 1 @ tirx_layout.bx, ("thread", "kernel")),
        (S[(128, 64) : (1 @ TLane, 1 @ TCol)], None),
        (S[4] + R[2 : 1 @ laneid], None),
    ],
)
def test_get_scope(spec, scope):
    layout = TileLayout(spec)
    assert layout.get_scope() == scope
    assert layout.verify_well_formed()


@pytest.mark.parametrize(
    ("spec", "problem"),
    [
        (S[(4, 4) : (1 @ laneid, 1 @ tirx_layout.tx)], "both step over threads"),
        (S[(4, 4) : (1 @ laneid, 1 @ tid_in_wg)], "both step over threads"),
        (S[(4, 4) : (1 @ laneid, 1 @ tirx_layout.wgid)], "connected chain"),
        (S[(4, 4) : (1 @ laneid, 1 @ wid_in_wg)] + 1 @ tirx_layout.cbx, "connected chain"),
        (S[(4, 4) : (1 @ laneid, 1 @ tirx_layout.bx)], "connected chain"),
        (S[4 : 1 @ laneid] + R[2 : 1 @ tirx_layout.tx], "both step over threads"),
    ],
)
def test_ill_formed_scope(spec, problem):
    layout = TileLayout(spec)
    assert layout.verify_well_formed() is False
    with pytest.raises(ValueError, match=problem):
        layout.get_scope()


# ---- identity and printing ---------------------------------------------------------------------------------


@given(layouts)
def test_repr_evals_back_and_equality_is_structural(data):
    layout = build(data)
    again = eval(repr(layout))
    assert again == layout and hash(again) == hash(layout)
    assert tvm_ffi.structural_equal(again, layout)
    assert TileLayout.from_iters(layout.shard, layout.replica, dict(layout.offset)) == layout


def test_equality_distinguishes_and_is_order_free_on_offsets():
    a = TileLayout(S[4:1] + 1 @ laneid + 2 @ warpid)
    assert a == TileLayout(S[4:1] + 2 @ warpid + 1 @ laneid)
    assert a != TileLayout(S[4:1] + 2 @ warpid + 2 @ laneid)
    assert a != TileLayout(S[4:2] + 1 @ laneid + 2 @ warpid)
    assert TileLayout(S[(2, 2) : (2, 1)]) != TileLayout(S[4:1])  # same map, different iters: not equal
    assert len({a, TileLayout(S[4:1] + 2 @ warpid + 1 @ laneid)}) == 1


def test_repr_of_the_guide_layout():
    assert repr(TileLayout(GUIDE_FRAGMENT)) == (
        "TileLayout(S[(8, 2, 4, 2):(4@laneid, 1@warpid, 1@laneid, 1)] + R[2:4@warpid] + 5@warpid)"
    )
    assert str(TileLayout(S[()])) == "S[()]"


def test_from_iters_accepts_every_offset_form():
    shard = [tirx_layout.Iter(4, 1, "laneid")]
    want = TileLayout(S[4 : 1 @ laneid] + 2 @ warpid)
    assert TileLayout.from_iters(shard, [], {"warpid": 2}) == want
    assert TileLayout.from_iters(shard, [], {warpid: 2}) == want
    assert TileLayout.from_iters(shard, [], 2 @ warpid) == want
    assert TileLayout.from_iters(shard) == TileLayout(S[4 : 1 @ laneid])


def test_layouts_pickle():
    import pickle

    layout = TileLayout(GUIDE_FRAGMENT)
    again = pickle.loads(pickle.dumps(layout))
    assert again == layout and again.apply(1, 3, shape=[8, 16]) == layout.apply(1, 3, shape=[8, 16])
    assert pickle.loads(pickle.dumps(laneid)) is laneid
