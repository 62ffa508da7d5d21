"""Junk sent to /graphql is the client's error: 400/415 with a JSON message, counted, never a 500 or a traceback.

A real uvicorn server on 127.0.0.1. uvicorn's own loggers do not propagate to
the root logger, so the tests hang pytest's capture handler on them as well:
"no traceback" is checked on every record either side wrote.
"""

from __future__ import annotations

import json
import logging
import socket
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from service.api.http import HttpServer
from service.bootstrap import App
from service.observability.metrics import Metrics
from tests.integration.server_world import build_world, on_servers, token

NOT_AN_OBJECT = 'the request body must be a JSON object: {"query": "...", "variables": {...}}'


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[App, HttpServer, Metrics]]:
    app = build_world(tmp_path_factory.mktemp("junk"))
    with on_servers(app, with_grpc=False) as served:
        yield app, served.http, served.services.metrics
    app.close()


@pytest.fixture
def logged(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    """Every record of DocQA and of uvicorn (which does not propagate) at DEBUG and above."""
    uvicorn = logging.getLogger("uvicorn")
    uvicorn.addHandler(caplog.handler)
    caplog.set_level(logging.DEBUG, logger="docqa")
    try:
        yield caplog
    finally:
        uvicorn.removeHandler(caplog.handler)


def _no_incident(records: list[logging.LogRecord]) -> None:
    bad = [r for r in records if r.levelno >= logging.WARNING or r.exc_info or "Traceback" in r.getMessage()]
    assert not bad, [f"{r.name} {r.levelname} {r.getMessage()}" for r in bad]


def _unparsed(metrics: Metrics) -> float:
    value = metrics.registry.get_sample_value(
        "docqa_requests_total", {"interface": "graphql", "method": "unparsed", "code": "INVALID_ARGUMENT"}
    )
    return value or 0.0


NOT_JSON = "the request body is not valid JSON in UTF-8"
LONE_SURROGATE = "the request body is not valid Unicode text (a lone surrogate)"


def _post(http: HttpServer, body: bytes, content_type: str = "application/json") -> httpx.Response:
    return httpx.post(
        f"http://127.0.0.1:{http.port}/graphql", content=body, headers={"content-type": content_type}, timeout=10
    )


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b'"x"', NOT_AN_OBJECT),
        (b"null", NOT_AN_OBJECT),
        (b"42", NOT_AN_OBJECT),
        (b"true", NOT_AN_OBJECT),
        (b"[" * 50_000 + b"]" * 50_000, "the request body is JSON nested too deeply"),
        (b'{"query": ' + b"[" * 50_000 + b"]" * 50_000 + b"}", "the request body is JSON nested too deeply"),
        (b'{"query": "{ stores { id } }"', NOT_JSON),
        (b'{"query": "\xe9"}', NOT_JSON),  # not UTF-8
        ('{"query": "{ stores { id } }"}'.encode("utf-16"), NOT_JSON),  # JSON between systems is UTF-8
        (b'{"query": "{ stores { id } }", "variables": {"q": "\\ud800"}}', LONE_SURROGATE),
        (b'{"query": "{ stores { id } }", "variables": {"\\uDFFF": 1}}', LONE_SURROGATE),
        (b'[{"query": "{ stores { id } }"}]', "Batching is not enabled"),
        (b'{"query": 5}', "The GraphQL operation's `query` must be a string or null, if provided."),
    ],
    ids=[
        "string",
        "null",
        "number",
        "true",
        "deep-list",
        "deep-in-object",
        "truncated",
        "latin1",
        "utf-16",
        "lone-surrogate",
        "lone-surrogate-key",
        "batch",
        "query-5",
    ],
)
def test_a_body_that_is_not_a_graphql_request_is_400(server: Any, logged: Any, body: bytes, message: str) -> None:
    _, http, metrics = server
    before = _unparsed(metrics)
    reply = _post(http, body)
    assert reply.status_code == 400, reply.text
    assert reply.headers["content-type"] == "application/json"
    assert reply.json() == {"errors": [{"message": message, "extensions": {"code": "BAD_REQUEST"}}]}
    assert _unparsed(metrics) == before + 1
    _no_incident(logged.records)


@pytest.mark.parametrize(
    "content_type", ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", ""]
)
def test_another_content_type_is_415(server: Any, logged: Any, content_type: str) -> None:
    _, http, _ = server
    reply = _post(http, b'{"query": "{ stores { id } }"}', content_type)
    assert reply.status_code == 415
    assert reply.json()["errors"][0]["message"] == "send the GraphQL request as application/json"
    _no_incident(logged.records)


def test_a_real_request_still_works_beside_the_junk(server: Any, logged: Any) -> None:
    app, http, _ = server
    reply = httpx.post(
        f"http://127.0.0.1:{http.port}/graphql",
        json={"query": "{ stores { id } }"},
        headers={"authorization": f"Bearer {token(app, 'alice')}", "content-type": "application/json; charset=utf-8"},
        timeout=10,
    )
    assert reply.status_code == 200 and reply.json() == {"data": {"stores": [{"id": "acme"}]}}
    too_large = _post(http, b"{" + b" " * (300 * 1024) + b"}")
    assert too_large.status_code == 413 and too_large.json()["errors"][0]["message"] == "request too large"
    _no_incident(logged.records)


def _disconnect_mid_body(port: int, head: bytes, sent: bytes) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(head + b"\r\n\r\n" + sent)


def test_a_client_gone_mid_body_is_one_debug_line(server: Any, logged: Any) -> None:
    _, http, _ = server
    _disconnect_mid_body(
        http.port,
        b"POST /graphql HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: 5000",
        b'{"query": "{ sto',
    )
    _disconnect_mid_body(
        http.port,
        b"POST /graphql HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked",
        b'10\r\n{"query": "{ sto',
    )
    gone = "client went away before its request body arrived"
    deadline = time.monotonic() + 10  # a bound on waiting for the server, not an assertion on time
    while sum(r.getMessage() == gone for r in logged.records) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    lines = [r for r in logged.records if r.getMessage() == gone]
    assert [r.levelno for r in lines] == [logging.DEBUG, logging.DEBUG]
    # And nothing else: no traceback, no "Exception in ASGI application", no "returned without a response".
    _no_incident(logged.records)
    assert httpx.get(f"http://127.0.0.1:{http.port}/healthz", timeout=10).json() == {"status": "ok"}


def test_variables_nested_deep_but_parsable_are_a_graphql_error(server: Any, logged: Any) -> None:
    app, http, _ = server
    body = {
        "query": 'query($q: String!) { vectorQuery(storeId: "acme", question: $q) { answer } }',
        "variables": {"q": json.loads("[" * 500 + "]" * 500)},
    }
    reply = httpx.post(
        f"http://127.0.0.1:{http.port}/graphql",
        json=body,
        headers={"authorization": f"Bearer {token(app, 'alice')}"},
        timeout=10,
    )
    assert reply.status_code == 200
    assert [e["extensions"]["code"] for e in reply.json()["errors"]] == ["BAD_USER_INPUT"]
    _no_incident(logged.records)
