"""Pictures against the library: every place a scene, an SVG, a PNG, a bank view or a table shows is compared with
what apply_all / bank_conflicts compute for the same layout."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections import Counter

import numpy as np
import pytest
from hypothesis import assume, given, settings

from tirx_layout import ComposeLayout, R, S, SwizzleLayout, TCol, TileLayout, TLane, laneid, warpid
from tirx_layout.analysis.bank_conflicts import bank_conflicts, column, contiguous, row_vectors
from tirx_layout.analysis.injectivity import injectivity
from tirx_layout.viz.banks import bank_view
from tirx_layout.viz.geometry import layout_picture
from tirx_layout.viz.limits import MAX_ELEMENTS
from tirx_layout.viz.notebook import MAX_NOTEBOOK_BYTES, notebook_svg, repr_svg
from tirx_layout.viz.png import picture_png
from tirx_layout.viz.presets import PRESETS
from tirx_layout.viz.request import layout_from, parse_shape, parse_swizzle
from tirx_layout.viz.scene import build_scene, crop_scene, default_shape
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
    pixels = decode_png(picture_png(picture, scale=1))
    assert pixels.shape[:2] == (round(picture.height), round(picture.width))
    for box in picture.boxes[:: max(1, len(picture.boxes) // 300)]:
        colour = scene["palette"][scene["elements"][box.meta["element"]]["colour"]]
        assert bytes(pixels[int(box.y) + 1, int(box.x) + 1]).hex() == colour.lstrip("#")


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
    assert tile._repr_svg_() == picture_svg(layout_picture(build_scene(tile)))  # small: the whole picture
    composed = ComposeLayout(SwizzleLayout(3, 3, 3), TileLayout(S[(8, 64) : (64, 1)]))
    assert composed._repr_svg_() == picture_svg(layout_picture(build_scene(composed, None, "float16")))
    assert composed._repr_html_().startswith("<div")
    big = repr_svg(TileLayout(S[(256, 256) : (256, 1)]))  # past MAX_ELEMENTS: a summary of the corner
    assert len(big) <= MAX_NOTEBOOK_BYTES and "summary: logical rows 0-" in big
    assert re.match(r"<svg[^>]+width=", tile._repr_svg_())


# ---- labels: one convention, checked against places computed here ------------------------------------------------

#: Threads one step on each CTA thread axis is worth, from SPEC §1's (scope, subscope) table: the subscope's size.
THREADS_PER_STEP = {"tx": 1, "laneid": 1, "tid_in_wg": 1, "warpid": 32, "wid_in_wg": 32, "wgid": 128}
MEMORY_AXES = {"m", "TLane", "TCol"}


def _expected_label(kind, place: dict, dtype: str) -> str:
    if kind == "threads":
        thread = sum(v * THREADS_PER_STEP[a] for a, v in place.items() if a not in MEMORY_AXES)
        values = [str(v) for a, v in place.items() if a in MEMORY_AXES]
        return f"T{thread}" + (f"V{','.join(values)}" if values else "")
    if kind == "tmem":
        others = [str(v) for a, v in place.items() if a != "TLane"]
        return f"L{place['TLane']}C{','.join(others)}"
    address = place["m"] * np.dtype(dtype).itemsize
    return f"R{address // 128}B{address // 4 % 32}"


@pytest.mark.parametrize("name", PRESET_NAMES)
def test_element_labels_follow_the_convention(name):
    layout, scene = _scene(name)
    expected = library_places(layout, tuple(scene["shape"]))
    assert scene["labels"]["pattern"] == {"threads": "T#V#", "tmem": "L#C#", "banks": "R#B#"}[scene["kind"]]
    for element, places in zip(scene["elements"], expected, strict=True):
        base = as_int_dicts(places)[0]
        assert element["label"] == _expected_label(scene["kind"], base, scene["dtype"])
        assert element["detail"].startswith(f"element ({', '.join(map(str, element['coord']))}) {element['label']}")


def test_table_labels_are_the_scene_labels():
    layout = layout_from("S[(8, 64):(64, 1)]", "128B", "float16")
    lines = layout_table(layout, (8, 64), "float16").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("cells (R = 128-byte row"))
    rows = [line.split()[1:] for line in lines[start + 2 : start + 10]]
    scene = build_scene(layout, (8, 64), "float16")
    assert [label for row in rows for label in row] == [e["label"] for e in scene["elements"]]
    # The guide's column check: column 0 of rows 0..7 lies in banks 0, 4, ..., 28 once swizzled.
    assert [row[0] for row in rows] == [f"R{i}B{4 * i}" for i in range(8)]


# ---- text present, inside the picture, not overlapping -----------------------------------------------------------

SVG_NS = "{http://www.w3.org/2000/svg}"
CHAR_W, ASCENT, DESCENT = 6, 8, 2  # the SVG's 10 px monospace text: 0.6 em per character


def _texts(svg: str):
    root = ET.fromstring(svg)
    width, height = float(root.get("width")), float(root.get("height"))
    boxes = []
    for t in root.iter(f"{SVG_NS}text"):
        w = len(t.text) * CHAR_W
        x = float(t.get("x")) - (w / 2 if t.get("text-anchor") == "middle" else 0)
        y = float(t.get("y"))
        boxes.append((t.text, x, y - ASCENT, x + w, y + DESCENT))
    return width, height, boxes


def _assert_text_unclipped_and_apart(svg: str) -> list[str]:
    width, height, boxes = _texts(svg)
    for text, x0, y0, x1, y1 in boxes:
        assert x0 >= 0 and x1 <= width and y0 >= 0 and y1 <= height, f"{text!r} is cut off at {(x0, y0, x1, y1)}"
    boxes.sort(key=lambda b: b[1])
    for i, (text, _x0, y0, x1, y1) in enumerate(boxes):
        for other, ox0, oy0, _ox1, oy1 in boxes[i + 1 :]:
            if ox0 >= x1:
                break
            assert oy1 <= y0 or oy0 >= y1, f"{text!r} overlaps {other!r}"
    return [b[0] for b in boxes]


PICTURED = [*PRESET_NAMES, "wide-swizzled"]


def _pictured(name):
    if name == "wide-swizzled":  # 8 x 64 fp16 under 128B: the physical grid is 64 elements wide
        layout = layout_from("S[(8, 64):(64, 1)]", "128B", "float16")
        return layout, build_scene(layout, (8, 64), "float16")
    return _scene(name)


@pytest.mark.parametrize("name", PICTURED)
def test_svg_text_is_present_unclipped_and_apart(name):
    layout, scene = _pictured(name)
    banks = bank_view(layout, scene["shape"], scene["dtype"], "column") if scene["kind"] == "banks" else None
    svg = picture_svg(layout_picture(scene, banks))
    texts = _assert_text_unclipped_and_apart(svg)
    # Every cell carries its text: the logical labels and the physical coordinates (with ' for replicas).
    want = Counter(e["label"] for e in scene["elements"])
    want.update(
        scene["elements"][k]["coord_text"] + ("'" if rep else "") for _, _, k, rep in scene["physical"]["cells"]
    )
    assert not want - Counter(texts)
    assert scene["layout"] in texts  # the header keeps its case: TLane, @, ...


def test_wide_swizzled_tile_shows_row_bank_and_element():
    _layout, scene = _pictured("wide-swizzled")
    svg = picture_svg(layout_picture(scene))
    texts = _assert_text_unclipped_and_apart(svg)
    assert "R0B0" in texts and "R7B28" in texts  # logical cells: row and bank
    assert "7,0" in texts and "0,63" in texts  # physical cells: the element there
    assert [t for t in texts if t.startswith("physical")] == ["physical: m (row start) (rows) x bank (columns)"]
    assert "0.0" not in texts


def test_tmem_header_keeps_case_and_fits():
    layout = TileLayout(S[(2, 128, 16) : (16 @ TCol, 1 @ TLane, 1 @ TCol)])
    svg = picture_svg(layout_picture(build_scene(layout, (2, 2048), "float32")))
    texts = _assert_text_unclipped_and_apart(svg)
    assert "TileLayout(S[(2, 128, 16):(16@TCol, 1@TLane, 1@TCol)])" in texts
    assert any(t.startswith("physical: TLane (rows) x TCol") for t in texts)


def _ink_in(pixels: np.ndarray, x0, y0, x1, y1) -> int:
    area = pixels[max(0, int(y0)) : int(y1) + 1, max(0, int(x0)) : int(x1) + 1]
    return int((area.max(axis=-1) < 100).sum())  # dark pixels: text (cell fills and borders are light or grey)


@pytest.mark.parametrize("name", ["warp-fragment", "scale-factor-atom", "swizzled-fp16-128B"])
def test_png_has_the_svg_text_in_place(name):
    _layout, scene = _scene(name)
    picture = layout_picture(scene)
    scale = 2
    pixels = decode_png(picture_png(picture, scale=scale))
    assert pixels.shape[:2] == (round(picture.height * scale), round(picture.width * scale))
    for label in picture.labels[:: max(1, len(picture.labels) // 200)]:
        x0 = label.x - (len(label.text) * CHAR_W / 2 if label.anchor == "middle" else 0)
        box = (x0 * scale, (label.y - ASCENT) * scale, (x0 + len(label.text) * CHAR_W) * scale, (label.y + 2) * scale)
        assert _ink_in(pixels, *box) >= len(label.text.strip()), f"no text drawn for {label.text!r}"
    # Nothing but text is dark: the ink outside every label's box is none.
    mask = np.ones(pixels.shape[:2], bool)
    for label in picture.labels:
        x0 = label.x - (len(label.text) * CHAR_W / 2 if label.anchor == "middle" else 0)
        mask[
            max(0, int((label.y - ASCENT - 2) * scale)) : int((label.y + 3) * scale),
            max(0, int(x0 * scale) - 1) : int((x0 + len(label.text) * CHAR_W) * scale) + 2,
        ] = False
    assert int(((pixels.max(axis=-1) < 100) & mask).sum()) == 0


def test_png_scale_is_checked():
    with pytest.raises(ValueError, match="whole number"):
        picture_png(layout_picture(_scene("wg-local")[1]), scale=0)


# ---- notebooks ---------------------------------------------------------------------------------------------------


def test_notebook_picture_of_a_big_swizzled_tile_is_small_and_labelled():
    layout = layout_from("S[(128, 128):(128, 1)]", "128B", "float16")
    svg = layout._repr_svg_()
    assert len(svg) <= MAX_NOTEBOOK_BYTES
    texts = _assert_text_unclipped_and_apart(svg)
    assert any(t.startswith("summary: logical rows 0-") and t.endswith("of 128") for t in texts)
    scene = build_scene(layout, (128, 128), "float16")
    assert scene["elements"][0]["label"] in texts and "R0B0" in texts


@pytest.mark.parametrize("name", PRESET_NAMES)
def test_every_preset_fits_a_notebook(name):
    _layout, scene = _scene(name)
    assert len(notebook_svg(scene)) <= MAX_NOTEBOOK_BYTES


def test_crop_keeps_places_and_renumbers():
    _layout, scene = _scene("tcgen05-32x32b")  # 128 x 8, one row per thread
    small = crop_scene(scene, 4, 8)
    assert [e["coord"] for e in small["elements"]] == [[r, c] for r in range(4) for c in range(8)]
    for r, _c, k, rep in small["physical"]["cells"]:
        place = dict(zip(small["axes"], small["elements"][k]["places"][rep], strict=True))
        threads = [a.strip() for a in small["physical"]["row_title"].split(",")]
        assert small["physical"]["row_labels"][r] == ",".join(str(place[a]) for a in threads)
    with pytest.raises(ValueError, match="at least one row"):
        crop_scene(scene, 0, 4)


def test_window_is_the_corner_of_the_whole_scene():
    layout = layout_from("S[(64, 64):(64, 1)]", "128B", "float16")
    whole = build_scene(layout, (64, 64), "float16")
    corner = build_scene(layout, (64, 64), "float16", window=(4, 16))
    assert corner["cropped"]["note"] == "summary: logical rows 0-3 of 64, columns 0-15 of 64"
    kept = [whole["elements"][r * 64 + c] for r in range(4) for c in range(16)]
    assert [(e["coord"], e["places"], e["label"]) for e in corner["elements"]] == [
        (e["coord"], e["places"], e["label"]) for e in kept
    ]
    cropped = crop_scene(whole, 4, 16)
    assert cropped["cropped"]["note"] == corner["cropped"]["note"]
    with pytest.raises(ValueError, match="at least one row"):
        build_scene(layout, (64, 64), "float16", window=(0, 4))
    with pytest.raises(ValueError, match="pictures stop at"):
        build_scene(TileLayout(S[(256, 256) : (256, 1)]), None, "float16", window=(200, 200))
