"""The page in headless Chromium (Debian's package, driven by Playwright): presets, typed layouts, clicked
elements against apply_all, the bank view against bank_conflicts, and the parser's error for bad text.
Screenshots are left in test-artifacts/viz-page-*.png."""

from __future__ import annotations

import json
import os
import shutil
import threading
from pathlib import Path

import pytest

from tirx_layout.analysis.bank_conflicts import column
from tirx_layout.layout.text import LayoutTextError, parse_layout
from tirx_layout.viz.presets import PRESETS
from tirx_layout.viz.server import make_server

from oracles.pictures import as_int_dicts

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install '.[test]')")
CHROMIUM = os.environ.get("TIRX_LAYOUT_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
if not os.access(CHROMIUM, os.X_OK):
    pytest.skip(
        f"no Chromium at {CHROMIUM}: ./dev.sh setup installs Debian's chromium when run as root with apt; "
        "elsewhere install it or set TIRX_LAYOUT_CHROMIUM",
        allow_module_level=True,
    )
ARTIFACTS = Path(__file__).resolve().parents[1] / "test-artifacts"


@pytest.fixture(scope="module")
def page():
    server = make_server(0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        tab = browser.new_page(viewport={"width": 1500, "height": 1100})
        tab.set_default_timeout(30_000)
        tab.goto(f"http://127.0.0.1:{server.server_address[1]}/")
        yield tab
        browser.close()
    server.shutdown()
    server.server_close()


def _drawn(page, layout) -> None:
    """Wait until the page has drawn ``layout``."""
    page.wait_for_function(
        "expected => document.body.dataset.state === 'ready' && document.body.dataset.layout === expected",
        arg=repr(layout),
    )


def _screenshot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"viz-page-{name}.png"), full_page=True)


def _click_and_read(page, k: int) -> tuple[list[int], list[dict]]:
    page.click(f'#logical rect[data-element="{k}"]')
    coord = json.loads(page.get_attribute("#selected", "data-coord"))
    places = [
        json.loads(v) for v in page.eval_on_selector_all("#info li.place", "els => els.map(e => e.dataset.place)")
    ]
    return coord, places


def test_presets_clicks_and_typed_layouts_match_apply_all(page):
    first = next(iter(PRESETS.values()))
    _drawn(page, first.build())
    preset = PRESETS["scale-factor-atom"]
    page.select_option("#preset", preset.name)
    layout = preset.build()
    _drawn(page, layout)
    coord, places = _click_and_read(page, 3 * 4 + 1)
    assert coord == [3, 1]
    assert places == as_int_dicts(layout.apply_all(3, 1, shape=[32, 4]))
    highlighted = page.eval_on_selector_all("#physical rect.hl, #physical rect.hlrep", "els => els.length")
    assert highlighted == layout.num_replicas() == 4
    _screenshot(page, "scale-factor")

    text = "S[(4, 8):(8@laneid, 1)] + R[2:16@laneid] + 1@warpid"
    page.fill("#shape", "4,8")
    page.fill("#text", "")
    page.locator("#text").press_sequentially(text)
    layout = parse_layout(text)
    _drawn(page, layout)
    coord, places = _click_and_read(page, 2 * 8 + 5)
    assert coord == [2, 5]
    assert places == as_int_dicts(layout.apply_all(2, 5, shape=[4, 8]))
    _screenshot(page, "typed")


def test_bank_view_shows_the_wavefront_count(page):
    from tirx_layout.analysis.bank_conflicts import bank_conflicts

    preset = PRESETS["swizzled-fp16-128B"]
    page.select_option("#preset", preset.name)
    page.select_option("#access", "column")
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
    _screenshot(page, "banks")


def test_malformed_text_shows_the_parsers_error_and_the_page_recovers(page):
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
