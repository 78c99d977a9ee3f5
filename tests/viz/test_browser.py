"""The page in headless Chromium (Debian's package, driven by Playwright), checked by structure, never by pixels:
DOM queries, element boxes, counts of marked cells, downloaded files and the console.

What is checked: presets, typed layouts and clicked elements against ``apply_all``; the bank view against
``bank_conflicts``; the parser's error for bad text; the view in the URL (a link restores preset, text, dtype,
swizzle and selection); the preset menu and note following edits; the selection kept by logical coordinate; the
legend; SVG and PNG export; the clicked cell told apart from accessed cells; replicas on screen without scrolling;
one grid when the physical grid is the logical one; no console errors and no request besides the page and its API.
Screenshots are left in test-artifacts/viz-page-*.png for a person to look at.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import threading
import xml.etree.ElementTree as ET
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from tirx_layout.analysis.bank_conflicts import column
from tirx_layout.layout.text import LayoutTextError, parse_layout
from tirx_layout.viz.presets import PRESETS
from tirx_layout.viz.request import layout_from
from tirx_layout.viz.scene import build_scene
from tirx_layout.viz.server import make_server

from oracles.pictures import as_int_dicts

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install '.[test]')")
CHROMIUM = os.environ.get("TIRX_LAYOUT_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
if not os.access(CHROMIUM, os.X_OK):
    pytest.skip(
        f"no Chromium at {CHROMIUM}: ./dev.sh test installs Debian's chromium when run as root with apt (unless "
        "TIRX_LAYOUT_NO_BROWSER=1); elsewhere install it or set TIRX_LAYOUT_CHROMIUM",
        allow_module_level=True,
    )
ARTIFACTS = Path(__file__).resolve().parents[1] / "test-artifacts"
SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture(scope="module")
def site():
    """A server on a free port and a headless Chromium, shared by the module's tests."""
    server = make_server(0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        yield browser, f"http://127.0.0.1:{server.server_address[1]}"
        browser.close()
    server.shutdown()
    server.server_close()


@dataclass
class View:
    """One browser tab on the page, with what it logged: console errors, uncaught exceptions, failed or refused
    requests, and every path it asked the server for."""

    tab: object
    base: str
    problems: list[str] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)

    def open(self, query: str = "") -> None:
        self.tab.goto(f"{self.base}/{query}")


def _view(site, width=1500, height=1100) -> View:
    browser, base = site
    tab = browser.new_page(viewport={"width": width, "height": height}, accept_downloads=True)
    tab.set_default_timeout(30_000)
    view = View(tab, base)
    tab.on("console", lambda m: m.type == "error" and view.problems.append(f"console: {m.text}"))
    tab.on("pageerror", lambda e: view.problems.append(f"exception: {e}"))
    tab.on("requestfailed", lambda r: view.problems.append(f"failed: {r.url}"))
    tab.on("request", lambda r: view.paths.append(urlsplit(r.url).path))
    tab.on("response", lambda r: r.status >= 400 and view.problems.append(f"{r.status}: {r.url}"))
    return view


@pytest.fixture
def view(site):
    view = _view(site)
    yield view
    view.tab.close()


@contextmanager
def _editing(view: View):
    """Edits made one field at a time pass through states the server refuses (a shape that does not match the text
    yet) when the page's 200 ms pause between keystrokes runs out between two of them on a busy machine: their 400
    answers, and Chromium's console line for each, are expected; nothing else is."""
    start = len(view.problems)
    yield
    during = view.problems[start:]
    assert all("400" in p for p in during), during
    del view.problems[start:]


def _drawn(page, layout) -> None:
    """Wait until the page has drawn ``layout``."""
    page.wait_for_function(
        "expected => document.body.dataset.state === 'ready' && document.body.dataset.layout === expected",
        arg=repr(layout),
    )


def _screenshot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"viz-page-{name}.png"), full_page=True)


def _click(page, k: int, panel: str = "logical") -> None:
    page.click(f'#{panel} rect.cell[data-element="{k}"]')


def _selection(page) -> tuple[list[int], list[dict]] | None:
    """The selected element's coordinate and every place the info panel lists, or None when none is selected."""
    if page.query_selector("#selected") is None:
        return None
    coord = json.loads(page.get_attribute("#selected", "data-coord"))
    places = [
        json.loads(v) for v in page.eval_on_selector_all("#info li.place", "els => els.map(e => e.dataset.place)")
    ]
    return coord, places


def _query(page) -> dict[str, str]:
    return {k: v[-1] for k, v in parse_qs(urlsplit(page.url).query).items()}


def _boxes(page, selector: str) -> list[dict]:
    return page.eval_on_selector_all(
        selector,
        "els => els.map(e => { const b = e.getBoundingClientRect(); "
        "return {top: b.top, bottom: b.bottom, left: b.left, right: b.right, element: e.dataset.element}; })",
    )


def _stroke(page, selector: str) -> tuple[str, float]:
    return tuple(
        page.eval_on_selector(
            selector, "e => { const s = getComputedStyle(e); return [s.stroke, parseFloat(s.strokeWidth)]; }"
        )
    )


def test_presets_clicks_and_typed_layouts_match_apply_all(view):
    page = view.tab
    view.open()
    _drawn(page, next(iter(PRESETS.values())).build())
    preset = PRESETS["scale-factor-atom"]
    page.select_option("#preset", preset.name)
    layout = preset.build()
    _drawn(page, layout)
    _click(page, 3 * 4 + 1)
    assert _selection(page) == ([3, 1], as_int_dicts(layout.apply_all(3, 1, shape=[32, 4])))
    assert page.eval_on_selector_all("#physical rect.cell.hl, #physical rect.cell.hlrep", "e => e.length") == 4
    # Logical cells show the base place as L<lane>C<column>: element (i, j) sits on lane i, column j.
    labels = page.eval_on_selector_all("#logical g.labels text", "els => els.map(e => e.textContent)")
    assert labels == [f"L{i}C{j}" for i in range(32) for j in range(4)]
    assert layout.num_replicas() == 4
    _screenshot(page, "scale-factor")

    text = "S[(4, 8):(8@laneid, 1)] + R[2:16@laneid] + 1@warpid"
    layout = parse_layout(text)
    with _editing(view):
        page.fill("#shape", "4,8")
        page.fill("#text", "")
        page.locator("#text").press_sequentially(text)
        _drawn(page, layout)
    _click(page, 2 * 8 + 5)
    assert _selection(page) == ([2, 5], as_int_dicts(layout.apply_all(2, 5, shape=[4, 8])))
    _screenshot(page, "typed")
    assert view.problems == []


def test_bank_view_shows_the_wavefront_count(view):
    from tirx_layout.analysis.bank_conflicts import bank_conflicts

    page = view.tab
    preset = PRESETS["swizzled-fp16-128B"]
    view.open(f"?preset={preset.name}&access=column")
    layout = preset.build()
    _drawn(page, layout)
    page.wait_for_function("() => document.getElementById('wavefront-count') !== null")
    report = bank_conflicts(layout, "float16", column((8, 64), "float16"))
    assert page.inner_text("#wavefront-count") == str(report.wavefronts)
    marked = page.eval_on_selector_all(
        "#bankstrip rect[data-words]:not([data-words='0'])", "els => els.map(e => Number(e.dataset.bank))"
    )
    lanes = column((8, 64), "float16").lanes
    assert set(marked) == {layout.apply(i, j)["m"] * 2 // 4 % 32 for lane in lanes for i, j in lane}
    # The clicked element's row, bank and byte, from the preset's formula: (1, 9) is at 64 + 8 ((9 >> 3) xor 1) +
    # (9 & 7) = 65, byte 130: row 1, bank 0.
    _click(page, 1 * 64 + 9)
    assert page.inner_text("#selected").endswith("R1B0: m=65 (byte 130: row 1, bank 0)")
    page.hover(f'#physical rect.cell[data-element="{1 * 64 + 9}"]')
    tip = page.eval_on_selector(f'#physical rect.cell[data-element="{1 * 64 + 9}"] title', "e => e.textContent")
    assert tip == page.inner_text("#selected")
    _screenshot(page, "banks")
    assert view.problems == []


def test_malformed_text_shows_the_parsers_error_and_the_page_recovers(view):
    page = view.tab
    view.open()
    _drawn(page, next(iter(PRESETS.values())).build())
    bad = "S[(8, 4):(4, 1]"
    with pytest.raises(LayoutTextError) as info:
        parse_layout(bad)
    page.fill("#swizzle", "none")
    page.fill("#text", "")
    page.locator("#text").press_sequentially(bad)
    page.wait_for_function("() => document.body.dataset.state === 'error'")
    assert page.inner_text("#error").splitlines()[0] == str(info.value)
    _screenshot(page, "error")
    page.fill("#shape", "8,4")
    page.fill("#text", "S[(8, 4):(4, 1)]")
    _drawn(page, parse_layout("S[(8, 4):(4, 1)]"))
    assert page.inner_text("#error") == ""
    # The server answers bad text with 400, which Chromium logs; nothing else may be logged.
    assert f"400: {view.base}/api/scene" in view.problems, view.problems
    assert all("400" in p for p in view.problems), view.problems


def test_a_link_restores_the_view(view, site):
    page = view.tab
    preset = PRESETS["scale-factor-atom"]
    view.open(f"?preset={preset.name}")
    layout = preset.build()
    _drawn(page, layout)
    _click(page, 5 * 4 + 2)
    assert _query(page) == {"preset": preset.name, "select": "5,2"}
    assert page.get_attribute("#link", "href") == page.url
    chosen = _selection(page)

    other = _view(site)
    other.tab.goto(page.url)
    _drawn(other.tab, layout)
    assert other.tab.input_value("#preset") == preset.name
    assert _selection(other.tab) == chosen == ([5, 2], as_int_dicts(layout.apply_all(5, 2, shape=[32, 4])))

    # An edited layout travels as its fields (text, shape, dtype, swizzle) and the bank access pattern.
    text, shape = "S[(8, 64):(64, 1)]", "8,64"
    edited = layout_from(text, "128B", "float16")
    with _editing(view):
        page.fill("#shape", shape)
        page.fill("#text", text)
        page.fill("#swizzle", "128B")
        page.select_option("#dtype", "float16")
        page.select_option("#access", "contiguous")
        _drawn(page, edited)
    _click(page, 7 * 64 + 9)
    query = _query(page)
    assert query == {
        "text": text,
        "shape": shape,
        "dtype": "float16",
        "swizzle": "128B",
        "access": "contiguous",
        "select": "7,9",
    }
    other.tab.goto(page.url)
    _drawn(other.tab, edited)
    for field_id, value in [("#text", text), ("#shape", shape), ("#dtype", "float16"), ("#swizzle", "128B")]:
        assert other.tab.input_value(field_id) == value
    assert other.tab.input_value("#access") == "contiguous"
    assert other.tab.input_value("#preset") == ""
    assert _selection(other.tab) == ([7, 9], as_int_dicts(edited.apply_all(7, 9, shape=[8, 64])))
    assert other.tab.inner_text("#wavefront-count") == page.inner_text("#wavefront-count")

    # A rank-3 tile's coordinate.
    stages = PRESETS["tmem-two-stages"]
    other.tab.goto(f"{view.base}/?preset={stages.name}&select=1,5,3")
    _drawn(other.tab, stages.build())
    assert _selection(other.tab) == ([1, 5, 3], as_int_dicts(stages.build().apply_all(1, 5, 3, shape=[2, 128, 16])))

    # A link naming no preset says so and shows the first one.
    other.tab.goto(f"{view.base}/?preset=no-such-preset")
    _drawn(other.tab, next(iter(PRESETS.values())).build())
    assert 'no preset named "no-such-preset"' in other.tab.inner_text("#note")
    assert view.problems == other.problems == []
    other.tab.close()


def test_the_preset_menu_and_note_follow_edits(view):
    page = view.tab
    preset = PRESETS["warp-fragment"]
    view.open(f"?preset={preset.name}")
    _drawn(page, preset.build())
    assert page.inner_text("#note") == f"{preset.title}: {preset.note}"
    page.fill("#text", "S[(8, 16):(16, 1)]")
    _drawn(page, parse_layout("S[(8, 16):(16, 1)]"))
    assert page.input_value("#preset") == ""
    assert page.inner_text("#note") == f'custom layout, edited from "{preset.title}"'
    assert "preset" not in _query(page)
    page.fill("#text", preset.form()["text"])  # back to the preset's own text: the preset again
    _drawn(page, preset.build())
    assert page.input_value("#preset") == preset.name
    assert page.inner_text("#note") == f"{preset.title}: {preset.note}"
    assert view.problems == []


def test_the_selection_is_kept_by_logical_coordinate_only_where_it_exists(view):
    page = view.tab
    view.open("?preset=scale-factor-atom&select=3,1")
    _drawn(page, PRESETS["scale-factor-atom"].build())
    assert _selection(page)[0] == [3, 1]
    layout = parse_layout("S[(8, 4):(1, 8)]")
    with _editing(view):
        page.fill("#shape", "8,4")
        page.fill("#text", "S[(8, 4):(1, 8)]")
        _drawn(page, layout)
    # Same coordinate, new places (flat index 13 would have been (3, 1) too; (1, 8) makes the places differ).
    assert _selection(page) == ([3, 1], as_int_dicts(layout.apply_all(3, 1, shape=[8, 4])))
    assert page.eval_on_selector_all("#panels rect.mark.sel", "e => e.length") == 2  # logical cell and base place
    page.fill("#shape", "2,16")
    _drawn(page, layout)
    assert _selection(page) is None
    assert (
        page.eval_on_selector_all("#panels rect.mark.sel, #panels rect.mark.sel-rep, #panels rect.hl", "e => e.length")
        == 0
    )
    assert "select" not in _query(page)
    assert view.problems == []


def test_the_legend_describes_what_is_drawn(view):
    page = view.tab
    preset = PRESETS["scale-factor-atom"]
    view.open(f"?preset={preset.name}&select=0,0")
    layout = preset.build()
    _drawn(page, layout)
    visible = page.eval_on_selector_all(
        "#legend li.key", "els => els.filter(e => e.checkVisibility()).map(e => e.dataset.key)"
    )
    assert visible == ["labels", "colour", "colours", "replica", "selected", "selected-replica"]
    scene = build_scene(layout, preset.shape, preset.dtype)
    colours = sorted({e["colour"] for e in scene["elements"]})
    assert len(colours) == 32  # one per TMEM lane of the base places: the legend lists 24 and counts the rest
    keys = page.eval_on_selector_all("#colour-keys span", "els => els.map(e => [e.dataset.colour, e.textContent])")
    assert [c for c, _ in keys] == [scene["palette"][c] for c in colours[:24]]
    assert page.inner_text("#colour-keys").endswith("+8 more")
    # Colour follows the base place's TMEM lane: element (i, j) sits on lane i, so lane 7's key is element (7, 0)'s.
    assert {label: c for c, label in keys}["7"] == scene["palette"][scene["elements"][7 * 4]["colour"]]
    assert "TMEM lane" in page.inner_text("#colour-title")
    # Each key's swatch is drawn with the same style as the marks it names.
    for key, mark in [("selected", "sel"), ("selected-replica", "sel-rep")]:
        assert _stroke(page, f'#legend [data-key="{key}"] rect') == _stroke(page, f"#physical rect.mark.{mark}")

    page.select_option("#preset", "swizzled-fp16-128B")
    _drawn(page, PRESETS["swizzled-fp16-128B"].build())
    visible = page.eval_on_selector_all(
        "#legend li.key", "els => els.filter(e => e.checkVisibility()).map(e => e.dataset.key)"
    )
    assert visible == ["labels", "colour", "colours", "selected", "accessed", "bank-words"]
    assert page.inner_text("#label-legend").startswith("logical cells: R#B#")
    assert "bank" in page.inner_text("#colour-title")
    assert _stroke(page, '#legend [data-key="accessed"] rect') == _stroke(page, "#physical rect.mark.acc")
    assert view.problems == []


def test_the_clicked_cell_stands_apart_from_accessed_cells(view):
    page = view.tab
    view.open("?preset=swizzled-fp16-128B&access=row_vectors")
    _drawn(page, PRESETS["swizzled-fp16-128B"].build())
    accessed = page.eval_on_selector_all("#physical rect.cell.acc", "els => els.map(e => Number(e.dataset.element))")
    assert accessed and len(page.query_selector_all("#physical rect.mark.acc")) == len(accessed)
    k = accessed[0]
    _click(page, k, "physical")
    sel, acc = _stroke(page, "#physical rect.mark.sel"), _stroke(page, "#physical rect.mark.acc")
    assert sel[0] != acc[0] and sel[1] >= 2 * acc[1]
    # The clicked cell's outline is drawn over its accessed mark and around it, not under a neighbour.
    order = page.eval_on_selector_all(
        f'#physical rect.mark[data-element="{k}"]', "els => els.map(e => e.classList.contains('sel'))"
    )
    assert order == [False, True]
    cell = _boxes(page, f'#physical rect.cell[data-element="{k}"]')[0]
    outline = _boxes(page, "#physical rect.mark.sel")[0]
    assert outline["left"] < cell["left"] and outline["right"] > cell["right"]
    assert outline["top"] < cell["top"] and outline["bottom"] > cell["bottom"]
    # A wide tile: the grids stand one above the other, which leaves them wider cells than side by side.
    logical, physical = _boxes(page, "#logical-panel")[0], _boxes(page, "#physical-panel")[0]
    assert logical["bottom"] <= physical["top"]
    _screenshot(page, "clicked-and-accessed")
    assert view.problems == []


@pytest.mark.parametrize("size", [(1500, 1100), (1280, 720)])
def test_every_replica_is_on_screen_without_scrolling(site, size):
    view = _view(site, *size)
    page = view.tab
    preset = PRESETS["scale-factor-atom"]
    view.open(f"?preset={preset.name}&select=31,3")
    _drawn(page, preset.build())
    marks = _boxes(page, "#physical rect.mark.sel, #physical rect.mark.sel-rep")
    assert len(marks) == 4
    width, height = size
    for box in marks:
        assert box["top"] >= 0 and box["bottom"] <= height and box["left"] >= 0 and box["right"] <= width, box
    scrolls = page.eval_on_selector_all(
        ".scroll", "els => els.map(e => e.scrollHeight > e.clientHeight || e.scrollWidth > e.clientWidth)"
    )
    assert not any(scrolls)
    # A tall tile: the grids stand side by side.
    logical, physical = _boxes(page, "#logical-panel")[0], _boxes(page, "#physical-panel")[0]
    assert logical["right"] <= physical["left"]
    assert page.evaluate("() => document.documentElement.scrollHeight") <= height
    _screenshot(page, f"replicas-{width}x{height}")
    assert view.problems == []
    view.tab.close()


def test_one_grid_when_physical_is_logical(view):
    page = view.tab
    view.open()
    first = next(iter(PRESETS.values()))
    scene = build_scene(first.build(), first.shape, first.dtype)
    _drawn(page, first.build())
    # The default preset puts row i on TMEM lane i and column j on column j: one grid, not two identical ones.
    cols = first.shape[1]
    assert scene["physical"]["cells"] == [[k // cols, k % cols, k, 0] for k in range(len(scene["elements"]))]
    assert page.is_hidden("#logical-panel") and page.is_visible("#physical-panel")
    assert page.inner_text("#physical-title").startswith("physical = logical")
    _click(page, 5 * 32 + 7, "physical")
    assert _selection(page)[0] == [5, 7]
    page.select_option("#preset", "warp-fragment")
    _drawn(page, PRESETS["warp-fragment"].build())
    assert page.is_visible("#logical-panel") and page.is_visible("#physical-panel")
    assert view.problems == []


def test_export_writes_the_picture_on_screen_as_svg_and_png(view):
    page = view.tab
    preset = PRESETS["warp-fragment"]
    view.open(f"?preset={preset.name}&select=1,2")
    _drawn(page, preset.build())
    with page.expect_download() as info:
        page.click("#export-svg")
    assert info.value.suggested_filename == f"tirx-layout-{preset.name}.svg"
    svg = ET.fromstring(Path(info.value.path()).read_bytes())
    cells = [r for r in svg.iter(f"{SVG}rect") if "cell" in r.get("class", "").split()]
    on_page = page.eval_on_selector_all("#panels rect.cell", "e => e.length")
    assert len(cells) == on_page
    scene = build_scene(preset.build(), preset.shape, preset.dtype)
    assert sum(r.get("data-panel") == "physical" for r in cells) == len(scene["physical"]["cells"])
    assert sum(r.get("data-panel") == "logical" for r in cells) == len(scene["elements"])
    marks = [r.get("class") for r in svg.iter(f"{SVG}rect") if "mark" in r.get("class", "").split()]
    replicas = len(scene["elements"][1 * 16 + 2]["places"]) - 1
    assert replicas == 1 and sorted(marks) == ["mark sel", "mark sel", "mark sel-rep"]
    texts = "".join(t.text or "" for t in svg.iter(f"{SVG}text"))
    assert scene["layout"] in texts and "style" in {child.tag.removeprefix(SVG) for child in svg}
    width, height = int(svg.get("width")), int(svg.get("height"))

    with page.expect_download() as info:
        page.click("#export-png")
    assert info.value.suggested_filename == f"tirx-layout-{preset.name}.png"
    png = Path(info.value.path()).read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and png[12:16] == b"IHDR"
    assert struct.unpack(">II", png[16:24]) == (2 * width, 2 * height)

    # The export arranges the grids as the page does: a wide tile's grids one above the other, with the bank view.
    page.select_option("#preset", "swizzled-fp16-128B")
    _drawn(page, PRESETS["swizzled-fp16-128B"].build())
    with page.expect_download() as info:
        page.click("#export-svg")
    svg = ET.fromstring(Path(info.value.path()).read_bytes())
    grids = [(float(g.get("y")), float(g.get("height"))) for g in svg.findall(f"{SVG}svg")]
    assert len(grids) == 3  # logical, physical, bank view
    assert grids[0][0] + grids[0][1] <= grids[1][0] and grids[1][0] + grids[1][1] <= grids[2][0]
    assert view.problems == []


def test_the_page_asks_for_nothing_but_itself_and_its_api(view):
    page = view.tab
    view.open()
    _drawn(page, next(iter(PRESETS.values())).build())
    page.wait_for_load_state("networkidle")
    assert set(view.paths) == {"/", "/api/presets", "/api/scene"}
    assert page.get_attribute("link[rel=icon]", "href").startswith("data:")
    assert view.problems == []
