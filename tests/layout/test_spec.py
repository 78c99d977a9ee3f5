"""The S[...] + R[...] + offset notation in every form SPEC §2 lists."""

import pytest
import tvm

from tirx_layout import Axis, Iter, Offset, R, S, TCol, TileLayout, TLane, laneid, m, warpid


def iters(spec_part):
    return [(it.extent, it.stride, it.axis.name) for it in spec_part]


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (S[8], [(8, 1, "m")]),
        (S[8, 4, 2], [(8, 8, "m"), (4, 2, "m"), (2, 1, "m")]),
        (S[(8, 4)], [(8, 4, "m"), (4, 1, "m")]),
        (S[[8, 4]], [(8, 4, "m"), (4, 1, "m")]),
        (S[8:3], [(8, 3, "m")]),
        (S[8 : 4 @ laneid], [(8, 4, "laneid")]),
        (S[(8, 4) : (1, 8)], [(8, 1, "m"), (4, 8, "m")]),
        (S[(8, 4) : ("laneid", 1)], [(8, 1, "laneid"), (4, 1, "m")]),
        (S[(8, 4) : ((2, "warpid"), (3, warpid))], [(8, 2, "warpid"), (4, 3, "warpid")]),
        (S[(8, 4) : (laneid, -1 @ m)], [(8, 1, "laneid"), (4, -1, "m")]),
        (S[(8, 4) : (0, 4 @ TCol)], [(8, 0, "m"), (4, 4, "TCol")]),
        (S[()], []),
    ],
)
def test_shard_forms(spec, expected):
    assert iters(spec.shard) == expected
    assert iters(TileLayout(spec).shard) == expected


def test_replica_forms():
    assert iters((S[4] + R[4 : 32 @ TLane]).replica) == [(4, 32, "TLane")]
    assert iters((S[4] + R[(2, 2) : (1 @ warpid, 8)]).replica) == [(2, 1, "warpid"), (2, 8, "m")]
    # two R[...] parts concatenate, in order
    assert iters((S[4] + R[2 : 4 @ warpid] + R[2:16]).replica) == [(2, 4, "warpid"), (2, 16, "m")]


def offsets(layout):
    return {a.name: v for a, v in layout.offset.items()}


def test_offset_forms_add_per_axis():
    assert offsets(TileLayout(S[4] + 5)) == {"m": 5}
    assert offsets(TileLayout(S[4] + 5 @ warpid)) == {"warpid": 5}
    assert offsets(TileLayout(S[4] + 1 @ laneid + 2 @ warpid + 3 @ laneid)) == {"laneid": 4, "warpid": 2}
    assert offsets(TileLayout(7 + S[4])) == {"m": 7}
    assert offsets(TileLayout(2 @ warpid + S[4] + 3)) == {"warpid": 2, "m": 3}
    assert offsets(TileLayout(S[4] + (1 @ laneid + 2 @ laneid))) == {"laneid": 3}
    assert offsets(TileLayout(S[4] + R[2:8] + 1 + 1)) == {"m": 2}
    assert offsets(TileLayout(S[4] + Offset.of({"TCol": 3, TLane: 1}))) == {"TCol": 3, "TLane": 1}


def test_symbolic_offsets_keep_the_expression():
    stage = tvm.tirx.Var("stage", "int32")
    layout = TileLayout(S[(2, 64) : (64, 1)] + stage * 128 + 3 @ warpid)
    assert str(layout.offset[m]) == "stage * 128"
    assert layout.offset[warpid] == 3


def test_a_step_of_one_is_what_tvmscript_adds():
    assert TileLayout(S[8 : 4 @ laneid : 1]) == TileLayout(S[8 : 4 @ laneid])


def test_parts_combine_in_any_order():
    a = TileLayout(S[(8, 4) : (4 @ laneid, 1)] + R[2 : 4 @ warpid] + 5 @ warpid)
    b = TileLayout(R[2 : 4 @ warpid] + S[(8, 4) : (4 @ laneid, 1)] + 5 @ warpid)
    assert a == b


@pytest.mark.parametrize(
    ("build", "error", "fragment"),
    [
        (lambda: S[(8, 4) : (1,)], ValueError, "2 extents but 1 strides"),
        (lambda: S[(8, 0) : (1, 1)], ValueError, "extent must be >= 1, got 0"),
        (lambda: S[-2], ValueError, "got -2"),
        (lambda: S[8.0], TypeError, "8.0"),
        (lambda: S[8:1.5], TypeError, "1.5"),
        (lambda: S[8:"lane"], KeyError, "'lane'"),
        (lambda: S[8 : (1, 2, 3)], ValueError, "1 extents but 3 strides"),
        (lambda: S[8 : ((1, 2, 3),)], ValueError, r"\(1, 2, 3\)"),
        (lambda: S[8:1:2], ValueError, "step"),
        (lambda: S[8:1:"m"], ValueError, "step"),
        (lambda: S[True], TypeError, "bool"),
        (lambda: S[8] + S[4], ValueError, "S\\[...\\] appears twice"),
        (lambda: S[8] + 1.5, TypeError, "1.5"),
        (lambda: S[8] + "m", TypeError, "'m'"),
        (lambda: TileLayout((8, 4)), TypeError, r"\(8, 4\)"),
        (lambda: Iter(2**70, 1), ValueError, "does not fit in int64"),
        (lambda: Iter(4, 1, 3), TypeError, "3"),
    ],
)
def test_malformed_specs_raise_naming_the_value(build, error, fragment):
    with pytest.raises(error, match=fragment):
        build()


def test_user_axis_in_spec_and_repr():
    axis = Axis.register("test_spec_axis", "memory")
    layout = TileLayout(S[(4, 2) : (2 @ axis, "test_spec_axis")])
    assert iters(layout.shard) == [(4, 2, "test_spec_axis"), (2, 1, "test_spec_axis")]
    assert repr(layout) == "TileLayout(S[(4, 2):(2@Axis.get('test_spec_axis'), 1@Axis.get('test_spec_axis'))])"
