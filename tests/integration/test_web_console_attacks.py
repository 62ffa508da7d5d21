"""Attacks on the web console's server side, from an adversarial review: errors over server-sent events,
streams that starve the API or exceed the server's bound, the admin page through /static, the dev login
from another site or another host, dates at the calendar's end, headers on refusals, oversized tokens."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import grpc
import httpx
import pytest

from service.api.grpc.stubs import load
from service.api.web.pages import STATIC
from service.bootstrap import build_app
from service.config import Settings
from service.generation.port import Completion, Generator
from service.generation.prompt import Prompt
from tests.fakes_service import FakeEmbedder
from tests.integration.server_world import QUESTION, STORE, SlowGenerator, add_vault, build_world, on_servers, token
from tests.integration.server_world import bearer as grpc_bearer
from tests.integration.sse import read_events

pytestmark = pytest.mark.integration


class PacedGenerator(Generator):
    """Streams many pieces, ``pause_s`` apart, and counts the pieces it produced (to see if it stops)."""

    def __init__(self, pieces: int = 60, pause_s: float = 0.05) -> None:
        self.model_id = "paced"
        self.context_tokens = 8192
        self.pieces = pieces
        self.pause_s = pause_s
        self.produced = 0
        self.started = 0
        self.finished = 0
        self.lock = threading.Lock()

    def generate(self, prompt: Prompt) -> Completion:
        return Completion(text="".join(self.stream(prompt)), model_id=self.model_id)

    def stream(self, prompt: Prompt) -> Iterator[str]:
        with self.lock:
            self.started += 1
        try:
            cited = prompt.chunks[0].citation if prompt.chunks else 1
            for i in range(self.pieces):
                time.sleep(self.pause_s)
                with self.lock:
                    self.produced += 1
                yield f"word{i} [{cited}] "
        finally:
            with self.lock:
                self.finished += 1


STREAM = """subscription Ask($store: String!, $q: String!, $doc: String, $docs: [String!], $conv: String) {
  askStream(storeId: $store, question: $q, documentId: $doc, documentIds: $docs, conversationId: $conv) {
    text
    result { queryId answer conversationId chunks { documentId text } documents { documentId } }
  }
}"""


def bearer(app: Any, user: str, admin: bool = False, **kw: Any) -> dict[str, str]:
    return {"authorization": f"Bearer {token(app, user, admin=admin, **kw)}"}


def graphql(base: str, query: str, headers: dict[str, str], timeout: float = 30, **variables: Any) -> Any:
    reply = httpx.post(
        f"{base}/graphql", json={"query": query, "variables": variables}, headers=headers, timeout=timeout
    )
    assert reply.status_code == 200, reply.text
    return reply.json()


def events(base: str, headers: dict[str, str], query: str = STREAM, **variables: Any) -> list[dict[str, Any]]:
    """The ``next`` events of one askStream, decoded."""
    return read_events(f"{base}/graphql", headers, query, variables).payloads


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, str]]:
    app = build_world(tmp_path_factory.mktemp("review19"), generator=SlowGenerator())
    add_vault(app)
    with on_servers(app, with_grpc=False) as served:
        yield app, f"http://127.0.0.1:{served.http.port}"
    app.close()


# ---------------------------------------------------------------------------- test_sse_errors.py
SECRET_DETAIL = "http://10.1.2.3:8443/v1 with api key sk-live-0123456789"


class BrokenGenerator(Generator):
    """A generator client that fails with an internal error naming its endpoint and key (as HTTP client,
    driver and SQL errors do: URLs, statements, bound parameters)."""

    model_id = "broken"
    context_tokens = 8192

    def generate(self, prompt: Prompt) -> Completion:
        raise RuntimeError(f"connection reset by {SECRET_DETAIL}")

    def stream(self, prompt: Prompt):  # type: ignore[no-untyped-def]
        raise RuntimeError(f"connection reset by {SECRET_DETAIL}")


def test_a_query_over_sse_does_not_leak_an_internal_error_message(tmp_path: Path) -> None:
    """vectorQuery over JSON says 'internal error' (INTERNAL_SERVER_ERROR); with Accept: text/event-stream
    it must say the same, never the exception's own text (endpoint and key here)."""
    app = build_world(tmp_path, generator=BrokenGenerator())
    query = 'query Q($s: String!) { vectorQuery(storeId: $s, question: "paid vacation leave") { answer } }'
    try:
        with on_servers(app, with_grpc=False) as served:
            base = f"http://127.0.0.1:{served.http.port}"
            plain = httpx.post(
                f"{base}/graphql",
                json={"query": query, "variables": {"s": STORE}},
                headers=bearer(app, "bob"),
                timeout=30,
            ).json()
            assert plain["errors"][0]["extensions"]["code"] == "INTERNAL_SERVER_ERROR"  # the JSON path hides it
            assert SECRET_DETAIL not in json.dumps(plain)
            [event] = events(base, bearer(app, "bob"), query, s=STORE)
    finally:
        app.close()
    assert SECRET_DETAIL not in json.dumps(event), event
    assert event["errors"][0].get("extensions", {}).get("code") == "INTERNAL_SERVER_ERROR", event


def test_validation_errors_over_sse_carry_a_code(world: tuple[Any, str]) -> None:
    """Over JSON a refused document is GRAPHQL_VALIDATION_FAILED; over SSE it carries the same code."""
    app, base = world
    aliases = " ".join(f"a{i}: text" for i in range(40))
    query = f'subscription {{ askStream(storeId: "acme", question: "vacation") {{ {aliases} }} }}'
    [event] = events(base, bearer(app, "bob"), query)
    assert event["errors"][0].get("extensions", {}).get("code") == "GRAPHQL_VALIDATION_FAILED", event


def test_a_subscription_posted_as_plain_json_is_a_typed_bad_request(world: tuple[Any, str]) -> None:
    """askStream POSTed without Accept: text/event-stream is a clear typed error (graphql-core alone would crash
    on it: 'Cannot return null for non-nullable field Subscription.askStream')."""
    app, base = world
    query = 'subscription { askStream(storeId: "acme", question: "vacation") { text } }'
    reply = httpx.post(f"{base}/graphql", json={"query": query}, headers=bearer(app, "bob"), timeout=30)
    body = reply.json()
    code = body["errors"][0].get("extensions", {}).get("code")
    assert code not in (None, "INTERNAL_SERVER_ERROR"), body
    assert body["errors"][0]["message"] != "internal error", body


# ---------------------------------------------------------------------------- test_streams.py
def test_grpc_and_sse_streams_share_max_streams(tmp_path: Path) -> None:
    """max_streams: 1, a gRPC StreamVectorQuery running: an askStream must be RESOURCE_EXHAUSTED, not a second
    concurrent generation."""
    generator = PacedGenerator(pieces=100, pause_s=0.05)
    app = build_world(tmp_path, generator=generator, limits={"max_streams": 1})
    stubs = load()
    try:
        with on_servers(app, with_grpc=True) as served:
            base = f"http://127.0.0.1:{served.http.port}"
            channel = grpc.insecure_channel(served.channel_target)
            try:
                service = stubs.query_grpc.QueryServiceStub(channel)
                request = stubs.query.VectorQueryRequest(store_id=STORE, question=QUESTION, level=0.0)
                first = service.StreamVectorQuery(request, metadata=grpc_bearer(app, "alice"), timeout=60)
                assert next(first).text  # the one stream allowed is being generated
                streamed = events(base, bearer(app, "bob"), store=STORE, q=QUESTION)
                first.cancel()
            finally:
                channel.close()
    finally:
        app.close()
    codes = [e.get("errors", [{}])[0].get("extensions", {}).get("code") for e in streamed]
    assert codes[0] == "RESOURCE_EXHAUSTED", f"a second stream ran at once: {len(streamed)} events, {codes[:3]}"


def test_streams_within_max_streams_do_not_freeze_the_api(tmp_path: Path) -> None:
    """As many askStreams as asyncio's default executor has threads, where resolvers ran before they got
    ``server.graphql_workers`` (all within limits.max_streams): a plain `{ stores { id } }` must still answer."""
    threads = min(32, (os.cpu_count() or 1) + 4)
    generator = PacedGenerator(pieces=160, pause_s=0.05)  # 8 s per answer
    app = build_world(
        tmp_path,
        generator=generator,
        limits={"max_streams": threads},
        server={"grpc_workers": max(16, threads)},
    )
    try:
        with on_servers(app, with_grpc=False) as served:
            base = f"http://127.0.0.1:{served.http.port}"
            readers = [
                threading.Thread(
                    target=events, args=(base, bearer(app, f"user{i}")), kwargs={"store": STORE, "q": QUESTION}
                )
                for i in range(threads)
            ]
            for reader in readers:
                reader.start()
            deadline = time.monotonic() + 20
            while generator.started < threads and time.monotonic() < deadline:
                time.sleep(0.05)
            assert generator.started == threads and generator.finished == 0  # all streams are generating
            try:
                reply = httpx.post(
                    f"{base}/graphql", json={"query": "{ stores { id } }"}, headers=bearer(app, "bob"), timeout=4
                )
                frozen = False
            except httpx.ReadTimeout:
                frozen = True
            for reader in readers:
                reader.join()
    finally:
        app.close()
    assert not frozen, f"{threads} streams (max_streams={threads}) froze GraphQL for everyone"
    assert reply.status_code == 200


# ---------------------------------------------------------------------------- test_pages_and_headers.py
def test_the_admin_page_is_not_served_from_static_to_anybody(world: tuple[Any, str]) -> None:
    """GET /admin is gated (401/403); the same file must not be public at /static/admin.html either: the admin
    page is never served to a non-admin."""
    _, base = world
    admin_markup = (STATIC / "admin.html").read_bytes()
    for path in ("/static/admin.html", "/static/./admin.html", "/static//admin.html"):
        reply = httpx.get(f"{base}{path}", timeout=10, follow_redirects=True)
        assert not (reply.status_code == 200 and reply.content == admin_markup), f"{path}: admin page served to anybody"


def test_a_413_carries_the_security_headers(world: tuple[Any, str]) -> None:
    """A refusal by the body limit (413) carries the security headers too."""
    _, base = world
    reply = httpx.post(
        f"{base}/graphql", content=b"x" * (300 * 1024), headers={"content-type": "application/json"}, timeout=10
    )
    assert reply.status_code == 413
    assert "frame-ancestors 'none'" in reply.headers.get("content-security-policy", ""), dict(reply.headers)
    assert reply.headers.get("x-frame-options") == "DENY"
    assert reply.headers.get("x-content-type-options") == "nosniff"


AUDIT = """query A($since: String, $until: String) {
  auditEntries(since: $since, until: $until) { userId }
}"""


def test_until_the_last_day_of_year_9999_is_not_an_internal_error(world: tuple[Any, str]) -> None:
    """until the calendar's last day is the end of time, not an overflow (INTERNAL_SERVER_ERROR)."""
    app, base = world
    for until in ("9999-12-31", "9999-12-31T23:59:59.9999Z"):
        reply = graphql(base, AUDIT, bearer(app, "root", admin=True), until=until)
        if "errors" in reply:
            assert reply["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT", (until, reply)


def test_until_a_basic_format_date_is_the_whole_day(world: tuple[Any, str]) -> None:
    """'a bare date is a whole UTC day', in the basic form 20240501 too (not midnight + 1 ms)."""
    app, base = world
    graphql(
        base,
        '{ vectorQuery(storeId: "acme", question: "vacation", performLlmQuery: false) { queryId } }',
        bearer(app, "erin"),
    )
    today = datetime.now(UTC).date()
    root = bearer(app, "root", admin=True)
    query = 'query A($u: String) { auditEntries(userId: "erin", until: $u) { userId } }'
    extended = graphql(base, query, root, u=today.isoformat())["data"]["auditEntries"]
    basic = graphql(base, query, root, u=today.strftime("%Y%m%d"))
    assert extended, "the extended form finds today's entry"
    if "errors" not in basic:
        assert basic["data"]["auditEntries"] == extended, basic


# ---------------------------------------------------------------------------- test_dev_login_and_session.py
def test_dev_login_is_refused_on_a_non_loopback_host(tmp_path: Path) -> None:
    """The dev login is refused with server.host 0.0.0.0 (the helm chart's host), where anybody on the network
    could mint admin tokens: a laptop listens on loopback."""
    with pytest.raises(ValueError):
        Settings(
            data_dir=tmp_path,
            auth={"allow_unauthenticated": True},
            web={"dev_login": True},
            server={"host": "0.0.0.0"},
        )


@pytest.fixture
def laptop(tmp_path: Path) -> Iterator[str]:
    settings = Settings(
        data_dir=tmp_path,
        auth={"allow_unauthenticated": True},
        web={"dev_login": True},
        server={"grpc_port": 0, "http_port": 0},
    )
    app = build_app(settings, embedder_factory=lambda _: FakeEmbedder())
    try:
        with on_servers(app, with_grpc=False) as served:
            yield f"http://127.0.0.1:{served.http.port}"
    finally:
        app.close()


def test_dev_login_refuses_a_foreign_host_dns_rebinding(laptop: str) -> None:
    """A web page on evil.example whose name is rebound to 127.0.0.1 is same-origin with the laptop's server:
    its script POSTs (text/plain: a simple request, no preflight) and would *read* an admin token: the Host
    header, the content type and the origin are checked on /web/dev-login."""
    reply = httpx.post(
        f"{laptop}/web/dev-login",
        content=json.dumps({"userId": "root", "admin": True}),
        headers={"host": "evil.example:8080", "origin": "http://evil.example:8080", "content-type": "text/plain"},
        timeout=10,
    )
    assert "token" not in reply.text, f"{reply.status_code}: minted an admin token for a foreign origin"


def test_signing_in_with_a_token_too_big_for_a_cookie_is_not_a_silent_success(world: tuple[Any, str]) -> None:
    """Tokens up to 16 KiB are accepted, but browsers drop a cookie over 4096 bytes: POST /web/session
    refuses such a token with a clear error rather than a 200 whose cookie /admin never sees."""
    app, base = world
    big = token(
        app, "root", admin=True, groups=[f"group:g{i:05d}" for i in range(400)]
    )  # an IdP token with many groups
    reply = httpx.post(f"{base}/web/session", headers={"authorization": f"Bearer {big}"}, timeout=10)
    pair = reply.headers.get("set-cookie", "").split(";", 1)[0]
    assert not (reply.status_code == 200 and len(pair) > 4096), (
        f"{reply.status_code} 'signed in' with a {len(pair)}-byte cookie that browsers drop"
    )
