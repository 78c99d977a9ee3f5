"""The page's JSON API: answers come from the library, bad requests are answered (4xx) and the server keeps
serving — in process, and as a real server process driven with foreign hosts, half-sent requests, oversized layouts
and deep JSON."""

from __future__ import annotations

import json
import os
import socket
import struct
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tirx_layout.layout.text import LayoutTextError, parse_layout
from tirx_layout.viz.presets import PRESETS
from tirx_layout.viz.server import MAX_BODY, LayoutServer, make_server

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


# ---- a real server process under attack ------------------------------------------------------------------------
# Each bad request must be answered within 3 s with a 4xx, the server must keep answering, and its memory stay
# under 1 GiB. The server runs as its own process (the console script) so its RSS and stderr are its own.

ANSWER_SECONDS = 3.0
OVERSIZED = ["S[2:1099511627776]", "S[1:1] + R[268435456:0]", "S[1:1] + R[16777216:0]", "S[(2, 16384):(1, 2)]"]


@pytest.fixture(scope="module")
def server_process():
    script = Path(sys.executable).with_name("tirx-layout")
    process = subprocess.Popen(
        [str(script), "serve", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ, PYTHONUNBUFFERED="1"),
    )
    line = process.stdout.readline()
    assert line.startswith("tirx-layout serving on http://127.0.0.1:"), line
    port = int(urlsplit(line.split()[3]).port)
    yield process, port
    process.terminate()
    _, stderr = process.communicate(timeout=30)
    assert "Traceback" not in stderr and "Error" not in stderr, stderr


def _exchange(port: int, request: bytes, wait: float = ANSWER_SECONDS + 2) -> tuple[int, dict | None, float]:
    """Send raw bytes, read the whole answer: (status, JSON body or None, seconds until the connection closed)."""
    start = time.perf_counter()
    with socket.create_connection(("127.0.0.1", port), timeout=wait) as sock:
        sock.sendall(request)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    seconds = time.perf_counter() - start
    head, _, body = data.partition(b"\r\n\r\n")
    status = int(head.split()[1]) if head else 0
    try:
        return status, json.loads(body), seconds
    except ValueError:
        return status, None, seconds


def _request(port, method="POST", body: bytes = b"", host: str | None = None, headers: str = "") -> bytes:
    host = f"127.0.0.1:{port}" if host is None else host
    return (
        f"{method} /api/scene HTTP/1.1\r\nHost: {host}\r\n{headers}Content-Length: {len(body)}\r\n\r\n".encode() + body
    )


def _memory_bytes(pid: int, field: str) -> int:
    """A memory figure of a process from ``/proc`` (``VmRSS`` now, ``VmHWM`` its peak)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS line")


def _still_answers(port: int) -> None:
    status, answer, seconds = _exchange(port, _request(port, body=b'{"text": "S[(2, 4):(1@laneid, 1)]"}'))
    assert status == 200 and answer["ok"] and seconds < ANSWER_SECONDS


@pytest.mark.parametrize("text", OVERSIZED)
def test_oversized_layouts_are_refused_before_anything_is_built(server_process, text):
    _, port = server_process
    status, answer, seconds = _exchange(port, _request(port, body=json.dumps({"text": text}).encode()))
    assert status == 400 and "pictures stop at" in answer["error"] and seconds < ANSWER_SECONDS
    _still_answers(port)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"[" * 60000, "nested 60000 deep"),
        (b'{"a":' * 12000, "nested 12000 deep"),
        (b'{"text": "S[8:1]", "vector_bytes": Infinity}', "Infinity is not a JSON number"),
        (b'{"text": "S[8:1]", "vector_bytes": NaN}', "NaN is not a JSON number"),
        (b'{"text": "S[(8, 64):(64, 1)]", "access": "column", "vector_bytes": 1e308}', "vector_bytes must be a"),
        (b'{"text": ["S[8:1]"]}', "text must be a string"),
        (b'{"text": "S[8:1]", "shape": {"a": 1}}', "shape must be a string"),
        (b'{"text": "' + b"SwizzleLayout(" * 1000 + b'"}', "nested too deeply"),
        (b"\xff\xfe", "not JSON"),
        (b'{"text": "S[8:1]", "shape": ' + b"[" * 30 + b"]" * 30 + b"}", "shape must be a string"),
        (b'{"text": "S[8:1]", "shape": [2, "4"]}', "shape must be a string"),
    ],
)
def test_bad_bodies_are_400_with_a_message(server_process, body, message):
    _, port = server_process
    status, answer, seconds = _exchange(port, _request(port, body=body))
    assert status == 400 and message in answer["error"] and seconds < ANSWER_SECONDS


@pytest.mark.parametrize(
    ("host", "headers"),
    [
        ("evil.example", ""),  # DNS rebinding: a page of evil.example that resolves to 127.0.0.1
        ("evil.example:{port}", ""),
        ("127.0.0.1:1", ""),
        ("127.0.0.1:{port}", "Origin: http://evil.example\r\n"),
        ("127.0.0.1:{port}", "Origin: null\r\n"),
        ("127.0.0.1:{port}", "Origin: http://127.0.0.1:1\r\n"),
        ("127.0.0.1:{port}", "Sec-Fetch-Site: cross-site\r\n"),
    ],
)
def test_foreign_host_and_cross_origin_posts_are_forbidden(server_process, host, headers):
    _, port = server_process
    request = _request(port, body=b'{"text": "S[8:1]"}', host=host.format(port=port), headers=headers)
    status, answer, seconds = _exchange(port, request)
    assert status == 403 and answer["error"].startswith("forbidden") and seconds < ANSWER_SECONDS
    get = f"GET /api/presets HTTP/1.1\r\nHost: {host.format(port=port)}\r\n{headers}\r\n".encode()
    status, _, _ = _exchange(port, get)
    assert status == (200 if host == "127.0.0.1:{port}" else 403)


@pytest.mark.parametrize("host", ["127.0.0.1:{port}", "localhost:{port}"])
def test_the_pages_own_origin_is_served(server_process, host):
    _, port = server_process
    origin = f"Origin: http://{host.format(port=port)}\r\nSec-Fetch-Site: same-origin\r\n"
    status, answer, _ = _exchange(
        port, _request(port, body=b'{"text": "S[8:1]"}', host=host.format(port=port), headers=origin)
    )
    assert status == 200 and answer["ok"]


def test_half_sent_requests_time_out_and_do_not_starve_the_server(server_process):
    _, port = server_process
    stalled = []
    try:
        for k in range(50):
            sock = socket.create_connection(("127.0.0.1", port), timeout=ANSWER_SECONDS + 5)
            start = time.perf_counter()
            # Every way of stopping short: in the request line, in the headers, in the body.
            sock.sendall(
                [b"POST /api/sc", b"POST /api/scene HTTP/1.1\r\nHost: 127.0", _request(port, body=b'{"te')[:-1]][k % 3]
            )
            stalled.append((sock, start))
        _still_answers(port)
        for sock, start in stalled:
            answer = sock.recv(4096)
            assert time.perf_counter() - start < ANSWER_SECONDS
            assert answer == b"" or answer.startswith(b"HTTP/1.0 408"), answer[:40]
    finally:
        for sock, _ in stalled:
            sock.close()
    _still_answers(port)


def test_a_shape_may_be_a_list_of_integers(server_process):
    _, port = server_process
    status, answer, _ = _exchange(port, _request(port, body=b'{"text": "S[8:1]", "shape": [2, 4]}'))
    assert status == 200 and answer["scene"]["shape"] == [2, 4]


def test_connections_beyond_the_cap_are_answered_503_at_once():
    server = LayoutServer(("127.0.0.1", 0), max_connections=2)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    try:
        held = [socket.create_connection(("127.0.0.1", port)) for _ in range(2)]  # silent: each holds a thread
        time.sleep(0.2)
        status, _, seconds = _exchange(port, _request(port, body=b'{"text": "S[8:1]"}'))
        assert status == 503 and seconds < 1.0
        for sock in held:
            sock.close()
        deadline = time.perf_counter() + ANSWER_SECONDS  # their threads see the close and give their places back
        while (status := _exchange(port, _request(port, body=b'{"text": "S[8:1]"}'))[0]) == 503:
            assert time.perf_counter() < deadline
            time.sleep(0.1)
        assert status == 200
    finally:
        server.shutdown()
        server.server_close()


def test_clients_that_hang_up_leave_no_trace(server_process):
    _, port = server_process
    for _ in range(20):
        with socket.create_connection(("127.0.0.1", port)) as sock:
            sock.sendall(_request(port, body=b'{"text": "S[(64, 64):(64, 1)]"}'))
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # reset, do not read
    _still_answers(port)  # and the fixture's teardown finds no traceback on the server's stderr


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads the server's memory from /proc (Linux)")
def test_memory_stays_bounded_under_attack(server_process):
    process, port = server_process
    statuses = []

    def attack(text):
        status, _, _ = _exchange(port, _request(port, body=json.dumps({"text": text}).encode()), wait=60)
        statuses.append(status)

    texts = [*OVERSIZED, "S[(128, 128):(1@laneid, 1)] + R[4:1@warpid]", "S[(2, 8192):(1@laneid, 1)]"] * 4
    threads = [threading.Thread(target=attack, args=(text,)) for text in texts]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    # Each is answered: the largest drawable scenes (200) or busy (503), the oversized ones refused (400).
    assert len(statuses) == len(texts) and set(statuses) <= {200, 400, 503}
    # The peak resident memory over the whole module (this test runs last), not just now.
    assert _memory_bytes(process.pid, "VmHWM") < 1 << 30
    _still_answers(port)
