"""The layout-text parser: the library's own printing parses back to an equal object, Python's meaning of the
notation is kept, and bad text is a LayoutTextError that names the column (never anything else)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tirx_layout import Axis, ComposeLayout, R, S, SwizzleLayout, TCol, TileLayout, TLane, laneid, warpid
from tirx_layout.layout.text import MAX_TEXT, LayoutTextError, parse_layout

from oracles.strategies import build, layouts

GUIDE_FRAGMENT = TileLayout(S[(8, 2, 4, 2) : (4 @ laneid, 1 @ warpid, 1 @ laneid, 1)] + R[2 : 4 @ warpid] + 5 @ warpid)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("S[(8,64):(64,1)]", TileLayout(S[(8, 64) : (64, 1)])),
        ("S[(8, 2, 4, 2) : (4@laneid, 1@warpid, 1@laneid, 1)] + R[2 : 4@warpid] + 5@warpid", GUIDE_FRAGMENT),
        (
            "S[(2, 128, 112) : (112@TCol, 1@TLane, 1@TCol)]",
            TileLayout(S[(2, 128, 112) : (112 @ TCol, 1 @ TLane, 1 @ TCol)]),
        ),
        (
            "S[(32, 4):(1@TLane, 1@TCol)] + R[4:32@TLane]",
            TileLayout(S[(32, 4) : (1 @ TLane, 1 @ TCol)] + R[4 : 32 @ TLane]),
        ),
        ("S[8, 4]", TileLayout(S[8, 4])),
        ("S[(8, 4)]", TileLayout(S[(8, 4)])),
        ("S[8:2]", TileLayout(S[8:2])),
        ("S[()]", TileLayout(S[()])),
        ("S[4:laneid]", TileLayout(S[4:laneid])),
        ("3 + S[4:-1@laneid] + 2@warpid + 1@warpid", TileLayout(3 + S[4 : -1 @ laneid] + 2 @ warpid + 1 @ warpid)),
        ("S[4:1] - 2@warpid", TileLayout(S[4:1] + -2 @ warpid)),
        ("R[2:4@warpid] + S[4:1@laneid]", TileLayout(R[2 : 4 @ warpid] + S[4 : 1 @ laneid])),
        ("S[(2,2):(1,2)] + R[2:4] + R[3:8]", TileLayout(S[(2, 2) : (1, 2)] + R[2:4] + R[3:8])),
        ("S[4:1@Axis.get('m')]", TileLayout(S[4:1])),
        ("TileLayout(S[4:1@laneid] + 2@warpid)", TileLayout(S[4 : 1 @ laneid] + 2 @ warpid)),
        (
            "ComposeLayout(SwizzleLayout(3, 3, 3), TileLayout(S[(8, 64):(64, 1)]))",
            ComposeLayout(SwizzleLayout(3, 3, 3), TileLayout(S[(8, 64) : (64, 1)])),
        ),
        (
            "ComposeLayout(per_element=2, swizzle_len=3, atom_len=3, tile_layout=TileLayout(S[(8,32):(32,1)]),"
            " swizzle_inner=False)",
            ComposeLayout(SwizzleLayout(2, 3, 3, swizzle_inner=False), TileLayout(S[(8, 32) : (32, 1)])),
        ),
    ],
)
def test_text_builds_the_same_object_as_python(text, expected):
    assert parse_layout(text) == expected


@given(layouts)
def test_printed_layouts_parse_back_equal(data):
    layout = build(data)
    assert parse_layout(str(layout)) == layout
    assert parse_layout(repr(layout)) == layout


@given(layouts, st.integers(0, 4), st.integers(0, 3), st.integers(0, 3), st.booleans())
def test_printed_compose_layouts_parse_back_equal(data, pe, sl, extra, inner):
    shard, replica, _ = data
    memory_only = ([(e, s, "m") for e, s, _ in shard], [(e, s, "m") for e, s, _ in replica], {})
    layout = ComposeLayout(SwizzleLayout(pe, sl, sl + extra, swizzle_inner=inner), build(memory_only))
    assert parse_layout(repr(layout)) == layout


def test_user_axes_print_and_parse_back():
    Axis.register("viz_rows", "memory")
    layout = TileLayout(S[(4, 2) : (1 @ Axis.get("viz_rows"), 1)] + 3 @ Axis.get("viz_rows"))
    assert "Axis.get(" in repr(layout)
    assert parse_layout(repr(layout)) == layout
    assert parse_layout('S[4:1@Axis.get("viz_rows")]') == TileLayout(S[4 : 1 @ Axis.get("viz_rows")])


@pytest.mark.parametrize(
    ("text", "column", "fragment"),
    [
        ("S[(8, 4):(4, 1]", 15, "expected ',' or ')' but found ']'"),
        ("S[(8,4):(4@foo,1)]", 12, "unknown axis 'foo'"),
        ("S[4:1]]", 7, "end of the text"),
        ("S[4:1] + S[2:1]", 8, "S[...] appears twice"),
        ("S[4:1] $ 2", 8, "unexpected character '$'"),
        ("S[4:1] + 2@", 12, "expected an axis name"),
        ("S[4:1] + laneid", 10, "an offset needs a value"),
        ("S[4:1] - S[2:1]", 10, "cannot be negated"),
        ("SwizzleLayout(3, 3, x)", 21, "unknown axis 'x'"),
    ],
)
def test_bad_text_names_the_column(text, column, fragment):
    with pytest.raises(LayoutTextError) as info:
        parse_layout(text)
    assert info.value.column == column
    assert fragment in str(info.value)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("", "empty layout text"),
        ("5@warpid", "only an offset"),
        ("S[0:1]", "extent must be >= 1"),
        ("S[(2, 2):(1)]", "2 extents but 1 strides"),
        ("SwizzleLayout(3, 3, 3)", "has no tile"),
        ("ComposeLayout(SwizzleLayout(3, 3, 3), TileLayout(S[4:1@laneid]))", "only to the linear axis m"),
        ("ComposeLayout(SwizzleLayout(3, 3, 1), TileLayout(S[4:1]))", "atom_len"),
        ("S[99999999999999999999:1]", "int64"),
        ("__import__('os').system('true')", "unknown axis '__import__'"),
        ("S[4:1]" + " " * MAX_TEXT, "at most"),
    ],
)
def test_bad_layouts_are_layout_text_errors(text, fragment):
    with pytest.raises(LayoutTextError, match=None) as info:
        parse_layout(text)
    assert fragment in str(info.value)


@given(st.text(alphabet="SR[](),:@+-=.'\"0123456789 laneidwarpTLCo_xAg", max_size=40))
def test_any_text_parses_or_is_a_layout_text_error(text):
    try:
        layout = parse_layout(text)
    except LayoutTextError:
        return
    assert isinstance(layout, TileLayout | ComposeLayout)


def test_the_parser_never_evaluates_python():
    assert "eval(" not in Path(parse_layout.__code__.co_filename).read_text()
