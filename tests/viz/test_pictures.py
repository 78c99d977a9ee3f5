"""Pictures against the library: every place a scene, an SVG, a PNG, a bank view or a table shows is compared with
what apply_all / bank_conflicts compute for the same layout."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from hypothesis import assume, given, settings

from tirx_layout import ComposeLayout, R, S, SwizzleLayout, TCol, TileLayout, TLane, laneid, warpid
from tirx_layout.analysis.bank_conflicts import bank_conflicts, column, contiguous, row_vectors
from tirx_layout.analysis.injectivity import injectivity
from tirx_layout.viz.banks import bank_view
from tirx_layout.viz.geometry import layout_picture
from tirx_layout.viz.limits import MAX_ELEMENTS
from tirx_layout.viz.notebook import repr_svg
from tirx_layout.viz.png import picture_png
from tirx_layout.viz.presets import PRESETS
from tirx_layout.viz.request import layout_from, parse_shape, parse_swizzle
from tirx_layout.viz.scene import build_scene, default_shape
from tirx_layout.viz.svg import picture_svg
from tirx_layout.viz.table import layout_table

from oracles.pictures import as_int_dicts, decode_png, library_places
from oracles.strategies import build, layouts

PRESET_NAMES = list(PRESETS)


def _scene(name):
    preset = PRESETS[name]
    layout = preset.build()
    return layout, build_scene(layout, preset.shape, preset.dtype)


@pytest.mark.parametrize("name", PRESET_NAMES)
def test_presets_rebuild_from_their_form(name):
    preset = PRESETS[name]
    form = preset.form()
    assert layout_from(form["text"], form["swizzle"], form["dtype"]) == preset.build()
    assert parse_shape(form["shape"]) == preset.shape


@pytest.mark.parametrize("name", PRESET_NAMES)
def test_scene_places_are_apply_all(name):
    layout, scene = _scene(name)
    expected = library_places(layout, tuple(scene["shape"]))
    for element, places in zip(scene["elements"], expected, strict=True):
        assert [dict(zip(scene["axes"], p, strict=True)) for p in element["places"]] == as_int_dicts(places)


def _cell_keys(scene):
    """For every physical cell, the place it is drawn for and the row/column labels it is drawn under."""
    physical, axes = scene["physical"], scene["axes"]
    for r, c, k, rep in physical["cells"]:
        yield (
            dict(zip(axes, scene["elements"][k]["places"][rep], strict=True)),
            physical["row_labels"][r],
            physical["col_labels"][c],
            (r, c),
        )


@pytest.mark.parametrize("name", PRESET_NAMES)
def test_physical_cells_sit_under_their_place(name):
    _layout, scene = _scene(name)
    physical = scene["physical"]
    rows = [a.strip() for a in physical["row_title"].split(",")]
    cols = [a.split(" (")[0].strip() for a in physical["col_title"].split(",")]
    seen = {}
    for place, row_label, col_label, position in _cell_keys(scene):
        if scene["kind"] == "banks":
            assert int(row_label) + position[1] == place["m"]
            assert int(col_label) == position[1] * int(np.dtype(scene["dtype"]).itemsize) // 4 % 32
        else:
            assert row_label == ",".join(str(place[a]) for a in rows)
            assert col_label == ",".join(str(place[a]) for a in cols if a)
        key = tuple(sorted(place.items()))
        assert seen.setdefault(key, position) == position
    assert len(set(seen.values())) == len(seen)  # one position per place


@pytest.mark.parametrize("name", PRESET_NAMES)
def test_colour_follows_the_base_row_or_bank(name):
    _, scene = _scene(name)
    physical, elements = scene["physical"], scene["elements"]
    base_row = {
        k: (r if scene["kind"] != "banks" else physical["col_labels"][c])
        for r, c, k, rep in physical["cells"]
        if rep == 0
    }
    pairs = {(base_row[k], e["colour"]) for k, e in enumerate(elements)}
    assert len(pairs) == len({row for row, _ in pairs}) == len({colour for _, colour in pairs})


def test_svg_cells_match_the_scene():
    layout, scene = _scene("warp-fragment")
    root = ET.fromstring(picture_svg(layout_picture(scene)))
    rects = [r for r in root.iter("{http://www.w3.org/2000/svg}rect") if "data-panel" in r.attrib]
    logical = [r for r in rects if r.get("data-panel") == "logical"]
    physical = [r for r in rects if r.get("data-panel") == "physical"]
    assert len(logical) == layout.size() and len(physical) == layout.size() * layout.num_replicas()
    places = library_places(layout, (8, 16))
    by_place = {}
    for rect in physical:
        k, rep = int(rect.get("data-element")), int(rect.get("data-replica"))
        key = tuple(sorted(as_int_dicts(places[k])[rep].items()))
        assert by_place.setdefault(key, (rect.get("x"), rect.get("y"))) == (rect.get("x"), rect.get("y"))
        assert (rect.get("stroke-dasharray") is not None) == (rep > 0)
    assert len(set(by_place.values())) == len(by_place)
    # Logical cells are row-major: x grows with the column, y with the row.
    xs = {int(r.get("data-element")) % 16: float(r.get("x")) for r in logical}
    assert [xs[c] for c in range(16)] == sorted(xs.values())


def test_png_pixels_have_the_scene_colours():
    _layout, scene = _scene("scale-factor-atom")
    picture = layout_picture(scene)
    pixels = decode_png(picture_png(picture))
    assert pixels.shape[:2] == (round(picture.height), round(picture.width))
    for box in picture.boxes[:: max(1, len(picture.boxes) // 300)]:
        colour = scene["palette"][scene["elements"][box.meta["element"]]["colour"]]
        assert bytes(pixels[int(box.y) + 2, int(box.x) + 2]).hex() == colour.lstrip("#")


@pytest.mark.parametrize("mode", ["none", "128B"])
@pytest.mark.parametrize("pattern", ["row_vectors", "contiguous", "column"])
def test_bank_view_is_bank_conflicts(mode, pattern):
    layout = layout_from("S[(8, 64):(64, 1)]", mode, "float16")
    view = bank_view(layout, (8, 64), "float16", pattern)
    access = {"row_vectors": row_vectors, "contiguous": contiguous, "column": lambda s, d: column(s, d)}[pattern]
    report = bank_conflicts(layout, "float16", access((8, 64), "float16"))
    assert (view["wavefronts"], view["minimum"], view["phases"]) == (
        report.wavefronts,
        report.minimum,
        list(report.phases),
    )
    assert [max(words) for words in view["words"]] == view["phases"]
    # The banks the view marks are the banks of the addresses apply gives for the lanes' elements.
    banks = set()
    for lane in view["lanes"][: view["lanes_per_phase"]]:
        for k in lane:
            address = layout.apply(k)["m"] * 2
            banks.add(address // 4 % 32)
    assert banks == {b for b, n in enumerate(view["words"][0]) if n}


def test_guide_column_check_in_the_bank_view():
    swizzled = bank_view(layout_from("S[(8, 64):(64, 1)]", "128B", "float16"), (8, 64), "float16", "column")
    lanes = range(8)  # lanes 0-7 read column 0 of rows 0-7
    expected = {layout_from("S[(8, 64):(64, 1)]", "128B", "float16").apply(i, 0)["m"] // 2 % 32 for i in lanes}
    assert expected <= {b for b, n in enumerate(swizzled["words"][0]) if n}


@settings(max_examples=150)
@given(layouts)
def test_injectivity_against_enumeration(data):
    layout = build(data)
    assume(layout.size() * layout.num_replicas() <= 2000)  # the twin enumerates in Python
    owners = {}
    for k in range(layout.size()):
        for place in layout.apply_all(k):
            owners.setdefault(tuple(sorted(place.items())), set()).add(k)
    report = injectivity(layout)
    assert report.shared_places == sum(len(o) > 1 for o in owners.values())
    if report.example:
        a, b, place = report.example
        assert {a, b} <= owners[tuple(sorted(place.items()))]


def test_table_numbers_are_apply():
    layout = layout_from("S[(8, 64):(64, 1)]", "3,3,3", "float16")
    text = layout_table(layout, (8, 64), "float16")
    lines = text.splitlines()
    m_rows = lines[lines.index("m:") + 2 : lines.index("m:") + 10]
    bank_at = next(i for i, line in enumerate(lines) if line.startswith("bank"))
    bank_rows = lines[bank_at + 2 : bank_at + 10]
    for i, (row, bank_row) in enumerate(zip(m_rows, bank_rows, strict=True)):
        values, banks = [int(v) for v in row.split()[1:]], [int(v) for v in bank_row.split()[1:]]
        assert values == [layout.apply(i, j)["m"] for j in range(64)]
        assert banks == [layout.apply(i, j)["m"] * 2 // 4 % 32 for j in range(64)]
    assert "replicas" not in text


def test_table_lists_replica_shifts():
    layout = TileLayout(S[(8, 2, 4, 2) : (4 @ laneid, 1 @ warpid, 1 @ laneid, 1)] + R[2 : 4 @ warpid] + 5 @ warpid)
    assert layout_table(layout).splitlines()[-1] == "replicas: every element also at +4@warpid"


def test_inputs_and_limits():
    # rank 3: rows no wider than DEFAULT_ROW_WIDTH where the inner extents allow (not 2 rows of 14336)
    assert default_shape(TileLayout(S[(2, 128, 112) : (112 @ TCol, 1 @ TLane, 1 @ TCol)])) == (256, 112)
    assert default_shape(TileLayout(S[(2, 4, 8, 8) : (256, 64, 8, 1)])) == (8, 64)
    with pytest.raises(ValueError, match="has 12 elements but the layout has 32"):
        build_scene(TileLayout(S[32:1]), (3, 4))
    with pytest.raises(ValueError, match="pictures stop at"):
        build_scene(TileLayout(S[MAX_ELEMENTS * 2 : 1]), (2, MAX_ELEMENTS))
    with pytest.raises(ValueError, match="not a list of positive integers"):
        parse_shape("8,a")
    with pytest.raises(ValueError, match="per_element,swizzle_len,atom_len"):
        parse_swizzle("3,3", "float16")
    with pytest.raises(ValueError, match="already a ComposeLayout"):
        layout_from("ComposeLayout(SwizzleLayout(3, 3, 3), TileLayout(S[512:1]))", "128B", "float16")
    assert parse_swizzle("64B", "float32") == SwizzleLayout(2, 2, 3)


def test_notebook_hooks_delegate_to_the_pictures():
    tile = TileLayout(S[(32, 4) : (1 @ TLane, 1 @ TCol)] + R[4 : 32 @ TLane])
    assert tile._repr_svg_() == picture_svg(layout_picture(build_scene(tile)))
    composed = ComposeLayout(SwizzleLayout(3, 3, 3), TileLayout(S[(8, 64) : (64, 1)]))
    assert composed._repr_svg_() == picture_svg(layout_picture(build_scene(composed, None, "float16")))
    assert composed._repr_html_().startswith("<div")
    assert repr_svg(TileLayout(S[(256, 256) : (256, 1)])) is None
    assert re.match(r"<svg[^>]+width=", tile._repr_svg_())
