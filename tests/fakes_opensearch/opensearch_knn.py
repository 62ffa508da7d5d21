"""``FakeOpenSearch``: an HTTP server on 127.0.0.1 that answers like OpenSearch with the k-NN plugin.

Start one, point ``opensearch-py`` at ``fake.url``, and the adapter talks to it through the client's real
transport. The fake records every request (``fake.requests``), how each ``knn`` query searched each leaf
(``fake.knn_modes``), the segments of each index (``fake.segments``) and the indices a write created
(``fake.auto_created``). One lock guards all state; a ticker thread refreshes indices every
``refresh_interval_s`` as the server's scheduled refresh does. ``fake.fail(...)`` makes the next requests to a
path answer 429/5xx, hang, or lose their connection mid-reply (``faults``); ``record=False`` keeps no record
of requests (a long run's memory stays flat).
"""

from __future__ import annotations

import base64
import contextlib
import gzip
import json
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from tests.fakes_opensearch.cluster import Cluster
from tests.fakes_opensearch.errors import NOT_MODELLED, OpenSearchError
from tests.fakes_opensearch.faults import Fault, Faults
from tests.fakes_opensearch.knn import LeafSearch
from tests.fakes_opensearch.routes import Call, check_params, route
from tests.fakes_opensearch.versions import V_3_7_0, Version, parse_version

#: http.max_content_length's default.
MAX_CONTENT_LENGTH = 100 * 1024 * 1024
_JSON = "application/json; charset=UTF-8"


@dataclass(frozen=True, slots=True)
class Request:
    """One request as the fake received it, and what it answered."""

    method: str
    path: str
    params: dict[str, str]
    body_bytes: int
    #: JSON, a list for NDJSON, the text when neither, None when empty (or refused before reading).
    body: Any
    status: int
    response: Any


class FakeOpenSearch:
    """A fake OpenSearch server with the k-NN plugin; see the package docstring for what it models."""

    def __init__(
        self,
        *,
        version: str = "2.19.1",
        distribution: str = "opensearch",
        knn_plugin: bool = True,
        refresh_interval_s: float = 1.0,
        max_content_length: int = MAX_CONTENT_LENGTH,
        templates: list[dict[str, Any]] | None = None,
        api_keys: set[str] | None = None,
        basic_auth: tuple[str, str] | None = None,
        record: bool = True,
    ) -> None:
        if refresh_interval_s <= 0:
            raise ValueError("refresh_interval_s must be positive")
        self.version: Version = parse_version(version)
        self.distribution = distribution
        self.max_content_length = max_content_length
        self._api_keys = set(api_keys or ())
        self._basic_auth = basic_auth
        self._cluster = Cluster(
            self.version, knn_plugin=knn_plugin, templates=list(templates or []), refresh_interval_s=refresh_interval_s
        )
        self._requests: list[Request] = []
        self._record = record
        self.faults = Faults()
        self._stop = threading.Event()
        self._server: _Server | None = None
        self._threads: list[threading.Thread] = []

    @classmethod
    def start(cls, **options: Any) -> FakeOpenSearch:
        """A running fake (the keyword arguments of the constructor); ``close()`` it when done."""
        fake = cls(**options)
        fake._serve()
        return fake

    def _serve(self) -> None:
        server = _Server(("127.0.0.1", 0), _Handler)
        server.fake = self
        self._server = server
        serving = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="fake-opensearch-http", daemon=True
        )
        ticker = threading.Thread(target=self._tick, name="fake-opensearch-refresh", daemon=True)
        self._threads = [serving, ticker]
        for thread in self._threads:
            thread.start()

    def _tick(self) -> None:
        while not self._stop.wait(self._cluster.refresh_interval_s):
            with self._cluster.lock:
                self._cluster.periodic_refresh()

    def close(self) -> None:
        """Stop serving; writes still waiting for a refresh are answered."""
        self._stop.set()
        self.faults.heal()
        with self._cluster.lock:
            self._cluster.closed = True
            self._cluster.refreshed.notify_all()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        for thread in self._threads:
            thread.join(timeout=5)

    def __enter__(self) -> FakeOpenSearch:
        if self._server is None:
            self._serve()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------------ injected faults
    def fail(
        self,
        path: str = "",
        *,
        status: int | None = None,
        times: int = 1,
        delay_s: float = 0.0,
        drop: bool = False,
        headers: dict[str, str] | None = None,
    ) -> Fault:
        """The next ``times`` HTTP requests whose path contains ``path`` ("" for all) answer ``status`` (applying
        nothing), wait ``delay_s`` first, or (``drop``) are applied and lose their connection half-way through the
        reply's body. The fault is returned: its ``times`` counts down as requests meet it. See
        ``tests.fakes_opensearch.faults``."""
        fault = Fault(path, times, status, delay_s, drop, dict(headers or {}))
        self.faults.add(fault)
        return fault

    def heal(self) -> None:
        """Forget every pending fault and let requests held by a delay go."""
        self.faults.heal()

    # ------------------------------------------------------------------------ what tests read
    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("the fake is not started")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def requests(self) -> list[Request]:
        with self._cluster.lock:
            return list(self._requests)

    @property
    def auto_created(self) -> list[str]:
        """Indices that a document write created because nothing had its name."""
        with self._cluster.lock:
            return list(self._cluster.auto_created)

    @property
    def knn_modes(self) -> list[list[LeafSearch]]:
        """One entry per request that ran ``knn`` queries: how each leaf of each shard searched."""
        with self._cluster.lock:
            return [list(entry) for entry in self._cluster.knn_modes]

    def segments(self, index: str) -> int:
        """Segments the concrete ``index`` holds now, over all shards (no merges, so they only accumulate)."""
        with self._cluster.lock:
            return sum(len(shard.segments) for shard in self._cluster.concrete(index).shards)

    def segments_created(self, index: str) -> int:
        """Segments refreshes have created in ``index`` so far (including ones dropped since)."""
        with self._cluster.lock:
            return sum(shard.created_segments for shard in self._cluster.concrete(index).shards)

    def create_index_as_of(self, name: str, body: dict[str, Any], created_version: str = "2.17.0") -> None:
        """An index as an older server created it (validated by that version's rules), for upgrade stories."""
        created = parse_version(created_version)
        if created > self.version:
            raise ValueError(f"an index cannot be created by {created_version}, newer than the server")
        with self._cluster.lock:
            self._cluster.create_index(name, body, created=created)

    def connection_class(self) -> type:
        """An ``opensearch-py`` connection class that calls this fake in-process (no socket)."""
        from tests.fakes_opensearch.connection import in_process_connection

        return in_process_connection(self)

    # ------------------------------------------------------------------------ serving one request
    def handle(self, method: str, target: str, headers: dict[str, str], raw: bytes) -> tuple[int, Any]:
        """Answer one request: ``(status, body)``; body is JSON data, text, or None (HEAD, 413)."""
        split = urlsplit(target)
        segments = [unquote(part) for part in split.path.split("/") if part]
        path = "/" + "/".join(segments)
        params = dict(parse_qsl(split.query, keep_blank_values=True))
        status, body = self._answer(method, path, segments, params, headers, raw)
        with self._cluster.lock:
            if self._record:
                self._requests.append(Request(method, path, params, len(raw), _decoded(raw), status, body))
            else:
                self._cluster.knn_modes.clear()
        return status, body

    def refused_too_large(self, method: str, target: str, length: int) -> None:
        """Record a request refused with 413 before its body was read."""
        split = urlsplit(target)
        params = dict(parse_qsl(split.query, keep_blank_values=True))
        with self._cluster.lock:
            self._requests.append(Request(method, unquote(split.path), params, length, None, 413, None))

    def _answer(
        self, method: str, path: str, segments: list[str], params: dict[str, str], headers: dict[str, str], raw: bytes
    ) -> tuple[int, Any]:
        cluster = self._cluster
        try:
            self._authenticate(headers)
            handler, parts, allowed = route(method, segments)
            check_params(path, params, allowed)
            call = Call(cluster, method, path, params, raw, parts, self.distribution)
            with cluster.lock:
                answer = handler(call)
                if answer.wait_for:
                    while not cluster.visible(answer.wait_for) and not cluster.closed:
                        cluster.refreshed.wait(timeout=1.0)
            return answer.status, answer.body
        except OpenSearchError as error:
            return error.status, (error.body() if method != "HEAD" else None)
        except Exception as error:  # a bug of the fake: say so loudly
            body = {
                "error": {"type": f"{NOT_MODELLED}_internal", "reason": f"the fake OpenSearch failed: {error!r}"},
                "status": 500,
            }
            return 500, body

    def _authenticate(self, headers: dict[str, str]) -> None:
        """Basic auth and (on 3.7+) ``ApiKey`` keys, when the fake was started with either."""
        if self._basic_auth is None and not self._api_keys:
            return
        given = headers.get("authorization", "")
        scheme, _, credentials = given.partition(" ")
        if scheme.lower() == "basic" and self._basic_auth is not None:
            with contextlib.suppress(ValueError):
                user, _, password = base64.b64decode(credentials).decode().partition(":")
                if (user, password) == self._basic_auth:
                    return
        if scheme == "ApiKey" and self._api_keys and self.version >= V_3_7_0 and credentials in self._api_keys:
            return
        raise OpenSearchError(
            401,
            "security_exception",
            "Authentication finally failed",
            header={"WWW-Authenticate": 'Basic realm="OpenSearch Security"'},
        )


def _decoded(raw: bytes) -> Any:
    if not raw:
        return None
    text = raw.decode("utf-8", errors="replace")
    try:
        return json.loads(text)
    except ValueError:
        pass
    try:
        return [json.loads(line) for line in text.split("\n") if line.strip()]
    except ValueError:
        return text


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    fake: FakeOpenSearch


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    #: Headers and body go out in separate writes: without TCP_NODELAY every answer waits ~40 ms for a
    #: delayed ACK (Nagle), which would swamp the timings the benchmarks read.
    disable_nagle_algorithm = True
    #: Headers and body leave in one write (flushed per request), not two small ones that wait on delayed ACKs.
    wbufsize = 1 << 16
    server: _Server

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the fake's record is ``fake.requests``."""

    def handle(self) -> None:
        try:
            super().handle()
        except ConnectionResetError:  # a client that timed out on a held request reset its kept-alive connection
            self.close_connection = True

    def _serve(self) -> None:
        fake = self.server.fake
        length = int(self.headers.get("Content-Length") or 0)
        if length > fake.max_content_length:
            # OpenSearch refuses the whole request (Netty's aggregator): 413 with no body, nothing applied.
            remaining = length
            while remaining > 0:
                chunk = self.rfile.read(min(remaining, 1 << 20))
                if not chunk:
                    break
                remaining -= len(chunk)
            fake.refused_too_large(self.command, self.path, length)
            self._send(413, None, close=True)
            return
        raw = self.rfile.read(length) if length else b""
        fault = fake.faults.take(urlsplit(self.path).path)
        try:
            if fault is not None and fault.delay_s:
                fake.faults.released.wait(fault.delay_s)
            if fault is not None and fault.status is not None:
                self._send(fault.status, fault.error(), extra=fault.headers)
                return
            if self.headers.get("Content-Encoding") == "gzip":
                raw = gzip.decompress(raw)
            headers = {key.lower(): value for key, value in self.headers.items()}
            status, body = fake.handle(self.command, self.path, headers, raw)
            self._send(status, body, cut=fault is not None and fault.drop)
        except (BrokenPipeError, ConnectionResetError):  # its client gave up on a request held by a fault
            self.close_connection = True

    def _send(
        self, status: int, body: Any, close: bool = False, cut: bool = False, extra: dict[str, str] | None = None
    ) -> None:
        if body is None or self.command == "HEAD":
            payload, kind = b"", "text/plain; charset=UTF-8"
        elif isinstance(body, str):
            payload, kind = body.encode(), "text/plain; charset=UTF-8"
        else:
            payload, kind = json.dumps(body).encode(), _JSON
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(payload)))
        if status == 401:
            self.send_header("WWW-Authenticate", 'Basic realm="OpenSearch Security"')
        for name, value in (extra or {}).items():
            self.send_header(name, value)
        if close:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        if cut:  # an injected fault: half of the body, then the connection is gone
            self.wfile.write(payload[: len(payload) // 2])
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        if self.command != "HEAD":
            self.wfile.write(payload)

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _serve


@contextlib.contextmanager
def fake_opensearch(**options: Any) -> Iterator[FakeOpenSearch]:
    """``with fake_opensearch(version="3.1.0") as fake: ...``: a started fake, closed afterwards."""
    fake = FakeOpenSearch.start(**options)
    try:
        yield fake
    finally:
        fake.close()
