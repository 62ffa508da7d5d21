"""A stand-in for the front of an OpenSearch server: what the start-up check and the client's own plumbing see.

It answers ``GET /`` (version and distribution as configured), ``GET /_cat/plugins`` (with or without the
k-NN plugin) and ``POST /<index>/_count``, or one status to everything (401, say), over real HTTP/1.1 with
keep-alive on 127.0.0.1, and records every request as it arrived: method, path, query, headers, body
and the client's port (one port per connection). A barrier can hold requests until several are in
flight at once, to see how many connections the client keeps.
"""

from __future__ import annotations

import http.server
import json
import threading
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Seen:
    method: str
    path: str
    query: str
    #: Header names in lower case.
    headers: dict[str, str]
    body: bytes
    client_port: int


@dataclass
class OpenSearchStandIn:
    version: str = "3.1.0"
    #: None: no ``distribution`` in ``GET /``, as Elasticsearch answers.
    distribution: str | None = "opensearch"
    knn_plugin: bool = True
    #: Answer every request with this status instead (401: credentials refused).
    status: int = 200
    #: Requests wait here until this many are in flight.
    barrier: threading.Barrier | None = None
    seen: list[Seen] = field(default_factory=list)
    _server: http.server.ThreadingHTTPServer | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self) -> OpenSearchStandIn:
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        server.daemon_threads = True
        server.standin = self  # type: ignore[attr-defined]
        threading.Thread(target=server.serve_forever, name="opensearch-standin", daemon=True).start()
        self._server = server
        return self

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> OpenSearchStandIn:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.close()

    def record(self, seen: Seen) -> None:
        with self._lock:
            self.seen.append(seen)

    def answer(self, method: str, path: str) -> tuple[int, Any]:
        if self.status != 200:
            reason = {"type": "security_exception", "reason": "authentication failed"}
            return self.status, {"error": {"root_cause": [reason], **reason}, "status": self.status}
        if method == "GET" and path == "/":
            version: dict[str, Any] = {"number": self.version, "build_type": "tar", "lucene_version": "10.2.1"}
            if self.distribution is not None:
                version["distribution"] = self.distribution
            return 200, {"name": "node-1", "cluster_name": "standin", "version": version, "tagline": "stand-in"}
        if method == "GET" and path == "/_cat/plugins":
            rows = [{"name": "node-1", "component": "opensearch-security", "version": self.version}]
            if self.knn_plugin:
                rows.append({"name": "node-1", "component": "opensearch-knn", "version": f"{self.version}.0"})
            return 200, rows
        if method == "POST" and path.endswith("/_count"):
            return 200, {"count": 0, "_shards": {"total": 1, "successful": 1, "skipped": 0, "failed": 0}}
        reason = {"type": "unsupported_operation_exception", "reason": f"the stand-in does not answer {method} {path}"}
        return 400, {"error": {"root_cause": [reason], **reason}, "status": 400}


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: a client's connection is seen again when it is reused

    def do_GET(self) -> None:
        self._answer()

    def do_POST(self) -> None:
        self._answer()

    def _answer(self) -> None:
        standin: OpenSearchStandIn = self.server.standin  # type: ignore[attr-defined]
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        path, _, query = self.path.partition("?")
        headers = {name.lower(): value for name, value in self.headers.items()}
        standin.record(Seen(self.command, path, query, headers, body, self.client_address[1]))
        if standin.barrier is not None:
            standin.barrier.wait()
        status, payload = standin.answer(self.command, path)
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""
