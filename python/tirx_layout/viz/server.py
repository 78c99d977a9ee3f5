"""The local web page: a standard-library HTTP server on 127.0.0.1 whose JSON API computes pictures with the
library (``build_scene``, ``bank_view``); the page (``page.html``) only draws them.

    GET  /                 the page
    GET  /api/presets      the guide's presets, as the page's form values
    POST /api/scene        {text, shape, dtype, swizzle, access, vector_bytes}
                           -> {ok, scene, banks} or {ok: false, error}

A bad request answers ``{"ok": false, "error": ..., "column": ...}`` with status 400; any failure is answered, never
fatal: the server keeps serving. What keeps it serving when a client misbehaves:

* only requests addressed to this server are answered: a ``Host`` other than 127.0.0.1/localhost at the bound port
  (a DNS-rebinding page) and a POST from another origin (any web page the user visits) get 403;
* a request must arrive whole within ``REQUEST_SECONDS`` (408 otherwise), at most ``MAX_CONNECTIONS`` are open at
  once (503 beyond), and ``MAX_COMPUTING`` scenes are computed at a time, each bounded by ``viz.limits``;
* a client that hangs up is nobody's error: nothing is printed for it.
"""

from __future__ import annotations

import contextlib
import json
import select
import socket
import sys
import threading
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
#: Seconds a client has to send its whole request (line, headers, body); a loopback client needs milliseconds.
REQUEST_SECONDS = 2.0
#: Connections served at once; more are answered 503 at once (a thread each, so this bounds threads and memory).
MAX_CONNECTIONS = 64
#: Scenes computed at once (each is CPU-bound under the GIL and bounded in size by ``viz.limits``).
MAX_COMPUTING = 2
#: The listen backlog: connections the kernel queues while the server accepts.
BACKLOG = 128
#: Deepest JSON nesting read (a request is a flat object).
MAX_JSON_DEPTH = 32


class BadRequest(ValueError):
    """A request the server refuses, with its HTTP status and the message the client sees."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


def _refuse_constant(name: str):
    raise BadRequest(HTTPStatus.BAD_REQUEST, f"bad request: {name} is not a JSON number")


def _json_depth(body: bytes) -> int:
    """The deepest nesting of ``[``/``{`` in a JSON text, outside strings (checked before parsing, which recurses)."""
    depth = deepest = 0
    in_string = escaped = False
    for byte in body:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:  # backslash
                escaped = True
            elif byte == 0x22:  # quote
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in (0x5B, 0x7B):
            depth += 1
            deepest = max(deepest, depth)
        elif byte in (0x5D, 0x7D):
            depth -= 1
    return deepest


def parse_body(body: bytes) -> dict:
    """The parameters of a POST body: a flat JSON object. ``BadRequest`` (400) for anything else.

    Example:
        >>> parse_body(b'{"text": "S[4:1]", "vector_bytes": 16}')
        {'text': 'S[4:1]', 'vector_bytes': 16}
        >>> parse_body(b'{"vector_bytes": Infinity}')
        Traceback (most recent call last):
        ...
        tirx_layout.viz.server.BadRequest: bad request: Infinity is not a JSON number
        >>> parse_body(b"[" * 60000)
        Traceback (most recent call last):
        ...
        tirx_layout.viz.server.BadRequest: bad request: the JSON is nested 60000 deep; a request is a flat object
    """
    depth = _json_depth(body)
    if depth > MAX_JSON_DEPTH:
        raise BadRequest(
            HTTPStatus.BAD_REQUEST, f"bad request: the JSON is nested {depth} deep; a request is a flat object"
        )
    try:
        params = json.loads(body or b"{}", parse_constant=_refuse_constant)
    except (ValueError, RecursionError) as err:
        if isinstance(err, BadRequest):
            raise
        raise BadRequest(HTTPStatus.BAD_REQUEST, f"bad request: not JSON ({err})") from None
    if not isinstance(params, dict):
        raise BadRequest(HTTPStatus.BAD_REQUEST, "bad request: the request body must be a JSON object")
    return params


def _field(params: dict, name: str) -> str | None:
    """A request field as text: strings as they are, integers written out (a shape may also be a list of them),
    absent/null as ``None``; ``ValueError`` naming the field for anything else.

    Example:
        >>> _field({"shape": [8, 16]}, "shape"), _field({"vector_bytes": 16}, "vector_bytes"), _field({}, "text")
        ('8,16', '16', None)
    """
    value = params.get(name)
    if value is None:
        return None
    if name == "shape" and isinstance(value, list) and all(type(v) is int for v in value):
        value = ",".join(str(v) for v in value)
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise ValueError(f"{name} must be a string, got {json.dumps(value)[:40]}")
    return str(value)


def _vector_bytes(params: dict) -> int:
    text = _field(params, "vector_bytes")
    if text is None or not text.strip():
        return 16
    if not text.strip().isdigit() or len(text.strip()) > 4:
        raise ValueError(f"vector_bytes must be a small positive integer such as 16, got {text[:40]!r}")
    return int(text)


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
        dtype = _field(params, "dtype") or "float32"
        access = _field(params, "access")
        vector_bytes = _vector_bytes(params)
        layout = layout_from(_field(params, "text") or "", _field(params, "swizzle"), dtype)
        scene = build_scene(layout, parse_shape(_field(params, "shape")), dtype)
        banks = None
        if scene["kind"] == "banks" and len(scene["shape"]) == 2 and access:
            try:
                banks = bank_view(layout, scene["shape"], dtype, access, vector_bytes)
            except ValueError as err:
                banks = {"error": str(err)}
        return {"ok": True, "scene": scene, "banks": banks}
    except LayoutTextError as err:
        return {"ok": False, "error": str(err), "column": err.column}
    except RecursionError:
        return {"ok": False, "error": "the layout text is nested too deeply", "column": 0}
    except (ValueError, TypeError, KeyError, IndexError, OverflowError) as err:
        message = str(err)[1:-1] if isinstance(err, KeyError) else str(err)
        return {"ok": False, "error": message or type(err).__name__, "column": 0}


def _page() -> bytes:
    return resources.files(__package__).joinpath("page.html").read_bytes()


def _host_and_port(value: str) -> tuple[str, int | None]:
    """``("localhost", 8765)`` from ``"localhost:8765"``; the port is ``None`` when absent or not a number.

    Example:
        >>> _host_and_port("LocalHost:8765"), _host_and_port("evil.example")
        (('localhost', 8765), ('evil.example', None))
    """
    text = value.strip().lower()
    host, colon, port = text.rpartition(":")
    if not colon or not port.isdigit():
        return text, None
    return host, int(port)


class _Handler(BaseHTTPRequestHandler):
    server_version = "tirx-layout"
    timeout = 30  # seconds any one read or write may block (a client that never reads its answer)

    def log_message(self, format, *args):
        if getattr(self.server, "verbose", False):
            sys.stderr.write(f"{self.address_string()} {format % args}\n")

    # ---- one request, received before a deadline -------------------------------------------------------------

    def handle(self) -> None:
        """Serve one request; a client that has not sent all of it within the deadline gets 408 and is closed."""
        self._lock = threading.Lock()
        self._receiving = True
        timer = threading.Timer(self.server.request_seconds, self._expire)
        timer.daemon = True
        timer.start()
        try:
            super().handle()
        finally:
            timer.cancel()

    def _expire(self) -> None:
        with self._lock:
            if not self._receiving:
                return
            self._receiving = False
        body = json.dumps({"ok": False, "error": "request timeout: the request did not arrive in time"}).encode()
        with contextlib.suppress(OSError):
            self.connection.sendall(
                b"HTTP/1.0 408 Request Timeout\r\nContent-Type: application/json\r\n"
                + f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
                + body
            )
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)

    def _received(self) -> bool:
        """Mark the request received; ``False`` when the deadline already answered it."""
        with self._lock:
            received, self._receiving = self._receiving, False
        return received

    # ---- answers -------------------------------------------------------------------------------------------

    def _send(self, status: int, body: bytes, kind: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def _json(self, status: int, value) -> None:
        self._send(status, json.dumps(value).encode(), "application/json")

    def _client_reset(self) -> bool:
        """Whether the client has reset the connection: its answer would go nowhere, so it is not computed. (A
        client that only closed its sending side still reads the answer, so end-of-stream does not count.)"""
        readable, _, _ = select.select([self.connection], [], [], 0)
        if not readable:
            return False
        try:
            self.connection.recv(1, socket.MSG_PEEK)
        except OSError:
            return True
        return False

    def _answer(self, params: dict) -> None:
        if self._client_reset():
            return
        if not self.server.computing.acquire(timeout=self.server.request_seconds):
            self._json(HTTPStatus.SERVICE_UNAVAILABLE, {"ok": False, "error": "busy: too many requests at once"})
            return
        try:
            if self._client_reset():  # while it waited for its turn
                return
            answer = scene_response(params)
        finally:
            self.server.computing.release()
        self._json(HTTPStatus.OK if answer["ok"] else HTTPStatus.BAD_REQUEST, answer)

    def _check_addressed_to_us(self, post: bool) -> None:
        """``BadRequest`` (403) unless the Host is this server and a POST comes from its own page (or no page)."""
        port = self.server.server_address[1]
        host = self.headers.get("Host")
        if host is None:
            raise BadRequest(HTTPStatus.BAD_REQUEST, "bad request: no Host header")
        if _host_and_port(host) not in {(HOST, port), ("localhost", port)}:
            raise BadRequest(
                HTTPStatus.FORBIDDEN, f"forbidden: this server answers 127.0.0.1:{port}, not {host[:80]!r}"
            )
        origin = self.headers.get("Origin")
        if post and origin is not None:
            url = urlsplit(origin.strip().lower())
            if url.scheme != "http" or _host_and_port(url.netloc) not in {(HOST, port), ("localhost", port)}:
                raise BadRequest(HTTPStatus.FORBIDDEN, f"forbidden: cross-origin request from {origin[:80]!r}")
        if post and self.headers.get("Sec-Fetch-Site", "same-origin") not in ("same-origin", "none"):
            raise BadRequest(HTTPStatus.FORBIDDEN, "forbidden: cross-site request")

    def _refuse(self, err: BadRequest) -> None:
        self._json(err.status, {"ok": False, "error": str(err)})

    def do_GET(self):
        url = urlsplit(self.path)
        try:
            if not self._received():
                return
            self._check_addressed_to_us(post=False)
            if url.path in ("/", "/index.html"):
                self._send(HTTPStatus.OK, _page(), "text/html; charset=utf-8")
            elif url.path == "/api/presets":
                self._json(HTTPStatus.OK, [p.form() for p in PRESETS.values()])
            elif url.path == "/api/scene":
                self._answer({k: v[-1] for k, v in parse_qs(url.query).items()})
            else:
                self._json(HTTPStatus.NOT_FOUND, {"ok": False, "error": f"no such page {url.path}"})
        except BadRequest as err:
            self._refuse(err)
        except OSError:
            raise  # the client went away: nothing to answer (the server's handle_error stays quiet)
        except Exception as err:  # the server must outlive any one request
            self._json(HTTPStatus.INTERNAL_SERVER_ERROR, {"ok": False, "error": f"internal error: {err}"})

    def _read_body(self) -> bytes | None:
        """The body of a POST to the scene API (``None`` when the client hung up mid-way); ``BadRequest`` for a
        request that is not for us or too large."""
        self._check_addressed_to_us(post=True)
        if urlsplit(self.path).path != "/api/scene":
            raise BadRequest(HTTPStatus.NOT_FOUND, f"no such endpoint {self.path[:80]}")
        length_text = (self.headers.get("Content-Length") or "0").strip()
        if not length_text.isdigit():
            raise BadRequest(HTTPStatus.BAD_REQUEST, f"bad request: Content-Length {length_text[:40]!r}")
        length = int(length_text)
        if length > MAX_BODY:
            raise BadRequest(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, f"request too large: over {MAX_BODY} bytes")
        body = self.rfile.read(length)
        return body if len(body) == length else None

    def do_POST(self):
        try:
            try:
                body = self._read_body()
            except BadRequest as err:
                if self._received():
                    self._refuse(err)
                return
            if not self._received() or body is None:
                return  # answered by the deadline, or the client hung up
            self._answer(parse_body(body))
        except BadRequest as err:
            self._refuse(err)
        except OSError:
            raise
        except Exception as err:
            self._json(HTTPStatus.INTERNAL_SERVER_ERROR, {"ok": False, "error": f"internal error: {err}"})


class LayoutServer(ThreadingHTTPServer):
    """The page's server: a thread per connection, bounded (see the module's notes)."""

    daemon_threads = True
    block_on_close = False
    request_queue_size = BACKLOG

    def __init__(
        self,
        address,
        verbose: bool = False,
        request_seconds: float = REQUEST_SECONDS,
        max_connections: int = MAX_CONNECTIONS,
    ):
        super().__init__(address, _Handler)
        self.verbose = verbose
        self.request_seconds = request_seconds
        self.connections = threading.BoundedSemaphore(max_connections)
        self.computing = threading.BoundedSemaphore(MAX_COMPUTING)

    def process_request(self, request, client_address):
        if not self.connections.acquire(blocking=False):
            with contextlib.suppress(OSError):
                request.sendall(b"HTTP/1.0 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            self.shutdown_request(request)
            return
        super().process_request(request, client_address)

    def process_request_thread(self, request, client_address):
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.connections.release()

    def handle_error(self, request, client_address):
        """A client that hangs up or stalls is not an error of the server: say nothing. Anything else: one line."""
        err = sys.exc_info()[1]
        if isinstance(err, OSError):
            return
        sys.stderr.write(f"{client_address[0]}: {type(err).__name__}: {err}\n")


def make_server(port: int = 0, verbose: bool = False, request_seconds: float = REQUEST_SECONDS) -> LayoutServer:
    """A server for the page on 127.0.0.1:``port`` (0: a free port; read it from ``server_address``); call
    ``serve_forever()`` to run it and ``shutdown()``/``server_close()`` to stop. A client gets ``request_seconds``
    to send its request.

    Example:
        >>> server = make_server(0)
        >>> server.server_address[0], server.request_queue_size
        ('127.0.0.1', 128)
        >>> server.server_close()
    """
    return LayoutServer((HOST, port), verbose, request_seconds)
