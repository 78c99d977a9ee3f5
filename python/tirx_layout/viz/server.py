"""The local web page: a standard-library HTTP server on 127.0.0.1 whose JSON API computes pictures with the
library (``build_scene``, ``bank_view``); the page (``page.html``) only draws them.

    GET  /                 the page
    GET  /api/presets      the guide's presets, as the page's form values
    POST /api/scene        {text, shape, dtype, swizzle, access, vector_bytes}
                           -> {ok, scene, banks} or {ok: false, error}

A bad request answers ``{"ok": false, "error": ..., "column": ...}`` with status 400; any failure is answered, never
fatal: the server keeps serving.
"""

from __future__ import annotations

import json
import sys
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from urllib.parse import parse_qs, urlsplit

from ..layout import LayoutTextError
from .banks import bank_view
from .presets import PRESETS
from .request import layout_from, parse_shape
from .scene import build_scene

HOST = "127.0.0.1"
MAX_BODY = 64 * 1024


def scene_response(params: dict) -> dict:
    """The API's answer to one request (``params`` as the page sends them); errors become ``ok: false``.

    Example:
        >>> answer = scene_response({"text": "S[(2, 4):(1@laneid, 1)]", "shape": "2,4"})
        >>> answer["ok"], answer["scene"]["elements"][5]["places"]
        (True, [[1, 1]])
        >>> scene_response({"text": "S[(2, 4):(1@laneid, 1]"})
        {'ok': False, 'error': "column 22: expected ',' or ')' but found ']'", 'column': 22}
    """
    try:
        dtype = str(params.get("dtype") or "float32")
        layout = layout_from(str(params.get("text", "")), params.get("swizzle"), dtype)
        scene = build_scene(layout, parse_shape(params.get("shape")), dtype)
        banks = None
        if scene["kind"] == "banks" and len(scene["shape"]) == 2 and params.get("access"):
            try:
                banks = bank_view(
                    layout, scene["shape"], dtype, str(params["access"]), int(params.get("vector_bytes") or 16)
                )
            except ValueError as err:
                banks = {"error": str(err)}
        return {"ok": True, "scene": scene, "banks": banks}
    except LayoutTextError as err:
        return {"ok": False, "error": str(err), "column": err.column}
    except (ValueError, TypeError, KeyError) as err:
        message = str(err)[1:-1] if isinstance(err, KeyError) else str(err)
        return {"ok": False, "error": message, "column": 0}


def _page() -> bytes:
    return resources.files(__package__).joinpath("page.html").read_bytes()


class _Handler(BaseHTTPRequestHandler):
    server_version = "tirx-layout"

    def log_message(self, format, *args):
        if getattr(self.server, "verbose", False):
            sys.stderr.write(f"{self.address_string()} {format % args}\n")

    def _send(self, status: int, body: bytes, kind: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def _json(self, status: int, value) -> None:
        self._send(status, json.dumps(value).encode(), "application/json")

    def _answer(self, params: dict) -> None:
        answer = scene_response(params)
        self._json(HTTPStatus.OK if answer["ok"] else HTTPStatus.BAD_REQUEST, answer)

    def do_GET(self):
        url = urlsplit(self.path)
        try:
            if url.path in ("/", "/index.html"):
                self._send(HTTPStatus.OK, _page(), "text/html; charset=utf-8")
            elif url.path == "/api/presets":
                self._json(HTTPStatus.OK, [p.form() for p in PRESETS.values()])
            elif url.path == "/api/scene":
                self._answer({k: v[-1] for k, v in parse_qs(url.query).items()})
            else:
                self._json(HTTPStatus.NOT_FOUND, {"ok": False, "error": f"no such page {url.path}"})
        except Exception as err:  # the server must outlive any one request
            self._json(HTTPStatus.INTERNAL_SERVER_ERROR, {"ok": False, "error": f"internal error: {err}"})

    def do_POST(self):
        try:
            if urlsplit(self.path).path != "/api/scene":
                self._json(HTTPStatus.NOT_FOUND, {"ok": False, "error": f"no such endpoint {self.path}"})
                return
            length = int(self.headers.get("Content-Length") or 0)
            if not 0 <= length <= MAX_BODY:
                self._json(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, {"ok": False, "error": "request too large"})
                return
            params = json.loads(self.rfile.read(length) or b"{}")
            if not isinstance(params, dict):
                raise ValueError("the request body must be a JSON object")
            self._answer(params)
        except ValueError as err:
            self._json(HTTPStatus.BAD_REQUEST, {"ok": False, "error": f"bad request: {err}"})
        except Exception as err:
            self._json(HTTPStatus.INTERNAL_SERVER_ERROR, {"ok": False, "error": f"internal error: {err}"})


def make_server(port: int = 0, verbose: bool = False) -> ThreadingHTTPServer:
    """A server for the page on 127.0.0.1:``port`` (0: a free port; read it from ``server_address``); call
    ``serve_forever()`` to run it and ``shutdown()``/``server_close()`` to stop.

    Example:
        >>> server = make_server(0)
        >>> server.server_address[0]
        '127.0.0.1'
        >>> server.server_close()
    """
    server = ThreadingHTTPServer((HOST, port), _Handler)
    server.daemon_threads = True
    server.verbose = verbose
    return server
