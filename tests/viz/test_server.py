"""The page's JSON API, in process: answers come from the library, bad requests are answered (400) and the server
keeps serving."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request

import pytest

from tirx_layout.layout.text import LayoutTextError, parse_layout
from tirx_layout.viz.presets import PRESETS
from tirx_layout.viz.server import MAX_BODY, make_server

from oracles.pictures import as_int_dicts


@pytest.fixture(scope="module")
def url():
    server = make_server(0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


def _post(url, body: bytes):
    request = urllib.request.Request(
        url + "api/scene", data=body, method="POST", headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def test_page_and_presets(url):
    assert b"<svg" in urllib.request.urlopen(url, timeout=30).read()
    presets = json.loads(urllib.request.urlopen(url + "api/presets", timeout=30).read())
    assert presets == [p.form() for p in PRESETS.values()]


def test_scene_is_computed_by_the_library(url):
    text = "S[(8, 2, 4, 2):(4@laneid, 1@warpid, 1@laneid, 1)] + R[2:4@warpid] + 5@warpid"
    status, answer = _post(url, json.dumps({"text": text, "shape": "8,16"}).encode())
    assert status == 200 and answer["ok"]
    scene, layout = answer["scene"], parse_layout(text)
    element = scene["elements"][19]
    assert element["coord"] == [1, 3]
    assert [dict(zip(scene["axes"], p, strict=False)) for p in element["places"]] == as_int_dicts(
        layout.apply_all(1, 3, shape=[8, 16])
    )


def test_bank_view_in_the_answer(url):
    form = PRESETS["swizzled-fp16-128B"].form()
    status, answer = _post(url, json.dumps(dict(form, access="row_vectors", vector_bytes=16)).encode())
    assert status == 200 and answer["banks"]["wavefronts"] == 4
    status, answer = _post(url, json.dumps(dict(form, access="nope")).encode())
    assert status == 200 and "unknown access pattern" in answer["banks"]["error"]


@pytest.mark.parametrize("text", ["S[(8, 4):(4, 1]", "S[4:1@nope]", "", "5@warpid", "S[4:1] + R"])
def test_bad_layout_text_answers_the_parsers_error(url, text):
    with pytest.raises(LayoutTextError) as info:
        parse_layout(text)
    status, answer = _post(url, json.dumps({"text": text}).encode())
    assert status == 400 and answer == {"ok": False, "error": str(info.value), "column": info.value.column}


def test_bad_requests_are_answered_and_the_server_stays_up(url):
    assert _post(url, b"{not json")[0] == 400
    assert _post(url, b"[1, 2]")[0] == 400
    assert _post(url, b" " * (MAX_BODY + 1))[0] == 413
    status, answer = _post(url, json.dumps({"text": "S[32:1]", "shape": "3,4"}).encode())
    assert status == 400 and "has 12 elements" in answer["error"]
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(url + "nothing", timeout=30)
    assert info.value.code == 404
    query = urllib.request.urlopen(url + "api/scene?text=S%5B4%3A1%5D", timeout=30)
    assert json.loads(query.read())["scene"]["layout"] == "TileLayout(S[4:1])"
