"""The web console's server side over real HTTP on loopback: headers, sessions, the admin gate, the dev
login, GraphiQL from local assets, and the GraphQL the pages use (askStream over SSE, documents, the
relevancy preview, the audit view's date filter). The pages themselves are tested in a browser
(tests/browser)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from service.api.http import HttpServer
from service.api.web.pages import SESSION_COOKIE, STATIC
from service.bootstrap import App, build_app
from service.config import Settings
from tests.fakes_service import FakeEmbedder
from tests.integration.server_world import (
    QUESTION,
    STORE,
    VAULT,
    SlowGenerator,
    add_vault,
    build_world,
    on_servers,
    token,
)
from tests.integration.sse import read_events

pytestmark = pytest.mark.integration

STREAM = """subscription Ask($store: String!, $q: String!, $doc: String, $docs: [String!]) {
  askStream(storeId: $store, question: $q, documentId: $doc, documentIds: $docs) {
    text
    result { queryId answer chunks { documentId } documents { documentId } }
  }
}"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[App, HttpServer]]:
    app = build_world(tmp_path_factory.mktemp("web"), generator=SlowGenerator())
    add_vault(app)
    with on_servers(app, with_grpc=False) as served:
        yield app, served.http
    app.close()


def _url(server: tuple[App, HttpServer], path: str) -> str:
    return f"http://127.0.0.1:{server[1].port}{path}"


def _bearer(app: App, user: str, admin: bool = False) -> dict[str, str]:
    return {"authorization": f"Bearer {token(app, user, admin=admin)}"}


def _graphql(server: tuple[App, HttpServer], query: str, caller: str, admin: bool = False, **variables: Any) -> Any:
    reply = httpx.post(
        _url(server, "/graphql"),
        json={"query": query, "variables": variables},
        headers=_bearer(server[0], caller, admin),
        timeout=30,
    )
    assert reply.status_code == 200, reply.text
    return reply.json()


def _events(server: tuple[App, HttpServer], headers: dict[str, str], **variables: Any) -> list[dict[str, Any]]:
    """The ``next`` events of one askStream, decoded (a ``complete`` event must end the stream)."""
    stream = read_events(_url(server, "/graphql"), headers, STREAM, variables)
    assert stream.kinds[-1] == "complete" and stream.kinds.count("complete") == 1
    return stream.payloads


# ---------------------------------------------------------------------------- headers and pages
@pytest.mark.parametrize("path", ["/", "/healthz", "/web/config", "/static/api.js"])
def test_every_response_carries_a_strict_policy(server: tuple[App, HttpServer], path: str) -> None:
    reply = httpx.get(_url(server, path), timeout=10)
    policy = reply.headers["content-security-policy"]
    assert "script-src 'self';" in policy and "'unsafe-inline'" not in policy and "frame-ancestors 'none'" in policy
    assert reply.headers["x-frame-options"] == "DENY"
    assert reply.headers["x-content-type-options"] == "nosniff"
    assert reply.headers["referrer-policy"] == "no-referrer"


def test_a_graphql_reply_carries_the_policy_too(server: tuple[App, HttpServer]) -> None:
    reply = httpx.post(_url(server, "/graphql"), json={"query": "{ stores { id } }"}, timeout=10)
    assert "frame-ancestors 'none'" in reply.headers["content-security-policy"]


def test_graphiql_loads_from_this_server_only(server: tuple[App, HttpServer]) -> None:
    page = httpx.get(_url(server, "/graphql"), headers={"accept": "text/html"}, timeout=10)
    assert page.status_code == 200 and "GraphiQL" in page.text
    assert "https://" not in page.text and "http://" not in page.text and "<script>" not in page.text
    sources = [part.split('"', 1)[0] for part in page.text.split('src="')[1:]]
    assert sources and all(s.startswith(("/vendor/", "/ide/")) for s in sources)
    for source in sources:
        assert httpx.get(_url(server, source), timeout=10).status_code == 200, source
    assert "'unsafe-eval'" not in page.headers["content-security-policy"]


def test_static_files_do_not_leave_their_folder(server: tuple[App, HttpServer]) -> None:
    for path in ("/static/../pages.py", "/static/%2e%2e/pages.py", "/vendor/../pages.py", "/static/nope.js"):
        reply = httpx.get(_url(server, path), timeout=10)
        assert reply.status_code == 404, path
        assert "SESSION_COOKIE" not in reply.text


# ---------------------------------------------------------------------------- sessions and the admin gate
def test_signing_in_sets_a_cookie_scripts_cannot_read(server: tuple[App, HttpServer]) -> None:
    app = server[0]
    reply = httpx.post(_url(server, "/web/session"), headers=_bearer(app, "bob"), timeout=10)
    assert reply.status_code == 200
    assert reply.json()["userId"] == "bob" and reply.json()["admin"] is False
    cookie = reply.headers["set-cookie"]
    assert cookie.startswith(f"{SESSION_COOKIE}=")
    for attribute in ("HttpOnly", "Secure", "SameSite=strict", "Path=/"):
        assert attribute.lower() in cookie.lower(), attribute
    cleared = httpx.delete(_url(server, "/web/session"), timeout=10)
    assert cleared.status_code == 204 and "Max-Age=0" in cleared.headers["set-cookie"]


@pytest.mark.parametrize("header", [None, "Bearer not-a-token", "Basic Ym9iOmJvYg=="])
def test_signing_in_needs_a_valid_bearer_token(server: tuple[App, HttpServer], header: str | None) -> None:
    reply = httpx.post(_url(server, "/web/session"), headers={"authorization": header} if header else {}, timeout=10)
    assert reply.status_code == 401
    assert "set-cookie" not in reply.headers
    assert set(reply.json()) == {"error"}


def _admin_page(server: tuple[App, HttpServer], cookie: str | None) -> httpx.Response:
    cookies = {SESSION_COOKIE: cookie} if cookie is not None else {}
    return httpx.get(_url(server, "/admin"), cookies=cookies, timeout=10)


def test_the_admin_page_is_for_admins_only(server: tuple[App, HttpServer]) -> None:
    app = server[0]
    admin_markup = (STATIC / "admin.html").read_bytes()
    signed_out = _admin_page(server, None)
    assert signed_out.status_code == 401 and signed_out.content != admin_markup
    forged = _admin_page(server, token(app, "bob", admin=True)[:-4] + "AAAA")
    assert forged.status_code == 401
    user = _admin_page(server, token(app, "bob"))
    assert user.status_code == 403 and user.content != admin_markup
    assert user.content == (STATIC / "forbidden.html").read_bytes()
    admin = _admin_page(server, token(app, "root", admin=True))
    assert admin.status_code == 200 and admin.content == admin_markup
    assert admin.headers["cache-control"] == "no-store"


def test_the_api_ignores_the_session_cookie(server: tuple[App, HttpServer]) -> None:
    """A cross-site request would carry the cookie; the API answers only to the bearer header (no CSRF)."""
    app = server[0]
    reply = httpx.post(
        _url(server, "/graphql"),
        json={"query": "{ stores { id } }"},
        cookies={SESSION_COOKIE: token(app, "root", admin=True)},
        timeout=10,
    )
    assert reply.json()["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"


def test_dev_login_is_off_unless_configured(server: tuple[App, HttpServer]) -> None:
    reply = httpx.post(_url(server, "/web/dev-login"), json={"userId": "root", "admin": True}, timeout=10)
    assert reply.status_code == 404 and "token" not in reply.text
    assert httpx.get(_url(server, "/web/config"), timeout=10).json()["devLogin"] is False


def test_dev_login_on_a_laptop_mints_a_short_token(tmp_path: Path) -> None:
    settings = Settings(
        data_dir=tmp_path,
        auth={"allow_unauthenticated": True},
        web={"dev_login": True, "graphiql": False},
        server={"grpc_port": 0, "http_port": 0},
    )
    app = build_app(settings, embedder_factory=lambda _: FakeEmbedder())
    try:
        with on_servers(app, with_grpc=False) as served:
            base = f"http://127.0.0.1:{served.http.port}"
            assert httpx.get(f"{base}/web/config", timeout=10).json()["devLogin"] is True
            minted = httpx.post(f"{base}/web/dev-login", json={"userId": "carol", "admin": True}, timeout=10)
            assert minted.status_code == 200 and minted.json()["devMode"] is True
            session = httpx.post(
                f"{base}/web/session", headers={"authorization": f"Bearer {minted.json()['token']}"}, timeout=10
            )
            assert session.json()["userId"] == "carol" and session.json()["admin"] is True
            assert session.json()["expiresAt"] <= (datetime.now(UTC) + timedelta(hours=1, seconds=5)).timestamp()
            for body in ({"userId": ""}, {"userId": 7}, {"userId": "x", "admin": "yes"}, [1], {"userId": "anonymous"}):
                refused = httpx.post(f"{base}/web/dev-login", json=body, timeout=10)
                assert refused.status_code == 400 and "token" not in refused.json(), body
            junk = httpx.post(
                f"{base}/web/dev-login", content=b"{", headers={"content-type": "application/json"}, timeout=10
            )
            assert junk.status_code == 400
            # web.graphiql: false serves no GraphiQL and none of its assets
            assert httpx.get(f"{base}/graphql", headers={"accept": "text/html"}, timeout=10).status_code == 404
            assert httpx.get(f"{base}/vendor/graphiql.min.js", timeout=10).status_code == 404
    finally:
        app.close()


@pytest.mark.parametrize(
    ("web", "auth", "message"),
    [
        ({"dev_login": True}, {}, "needs auth.allow_unauthenticated"),
        (
            {"dev_login": True},
            {"allow_unauthenticated": True, "hs256_secret": "s" * 40, "issuer": "i", "audience": "a"},
            "generated data-directory secret",
        ),
    ],
)
def test_dev_login_is_refused_outside_a_laptop(
    tmp_path: Path, web: dict[str, Any], auth: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        Settings(data_dir=tmp_path, web=web, auth=auth)


# ---------------------------------------------------------------------------- askStream
def test_an_answer_streams_then_ends_with_its_sources(server: tuple[App, HttpServer]) -> None:
    events = _events(server, _bearer(server[0], "bob"), store=STORE, q=QUESTION)
    pieces = [e["data"]["askStream"]["text"] for e in events[:-1]]
    result = events[-1]["data"]["askStream"]["result"]
    assert len(pieces) > 1 and all(p for p in pieces)
    assert "".join(pieces) == result["answer"]
    assert {c["documentId"] for c in result["chunks"]} <= {"handbook", "bob-notes"}


def test_a_stream_never_carries_what_the_caller_cannot_read(server: tuple[App, HttpServer]) -> None:
    app = server[0]
    for user, unreadable in (("bob", "executive-pay"), ("alice", "bob-notes")):
        text = json.dumps(_events(server, _bearer(app, user), store=STORE, q="vacation leave days executives notes"))
        assert unreadable not in text
        [hidden] = _events(server, _bearer(app, user), store=STORE, q=QUESTION, doc=unreadable)
        [missing] = _events(server, _bearer(app, user), store=STORE, q=QUESTION, doc="no-such-document")
        assert hidden["errors"][0]["extensions"]["code"] == "NOT_FOUND"
        assert json.dumps(hidden).replace(unreadable, "X") == json.dumps(missing).replace("no-such-document", "X")


@pytest.mark.parametrize(
    ("headers", "variables", "code"),  # the GraphQL codes of the one error table
    [
        ({}, {"store": STORE, "q": QUESTION}, "UNAUTHENTICATED"),
        ({"authorization": "Bearer junk"}, {"store": STORE, "q": QUESTION}, "UNAUTHENTICATED"),
        (None, {"store": "nope", "q": QUESTION}, "NOT_FOUND"),
        (None, {"store": STORE, "q": "  "}, "BAD_USER_INPUT"),
        (None, {"store": STORE, "q": QUESTION, "doc": "handbook", "docs": ["handbook"]}, "BAD_USER_INPUT"),
    ],
)
def test_a_refused_stream_is_one_typed_error(
    server: tuple[App, HttpServer], headers: dict[str, str] | None, variables: dict[str, Any], code: str
) -> None:
    events = _events(server, _bearer(server[0], "bob") if headers is None else headers, **variables)
    assert len(events) == 1 and events[0]["data"] is None
    assert events[0]["errors"][0]["extensions"]["code"] == code


# ---------------------------------------------------------------------------- the document picker
DOCUMENTS = """query D($store: String!, $search: String) {
  documents(storeId: $store, search: $search) { documentId title link chunks }
}"""


def test_the_picker_lists_only_readable_documents(server: tuple[App, HttpServer]) -> None:
    bob = _graphql(server, DOCUMENTS, "bob", store=STORE)["data"]["documents"]
    alice = _graphql(server, DOCUMENTS, "alice", store=STORE)["data"]["documents"]
    assert [d["documentId"] for d in bob] == ["bob-notes", "handbook"]
    assert [d["documentId"] for d in alice] == ["executive-pay", "handbook"]
    assert all(d["chunks"] >= 1 and d["link"].startswith("https://cms.example/") for d in bob)
    found = _graphql(server, DOCUMENTS, "alice", store=STORE, search="EXEC")["data"]["documents"]
    assert [d["documentId"] for d in found] == ["executive-pay"]
    assert _graphql(server, DOCUMENTS, "bob", store=STORE, search="exec")["data"]["documents"] == []


def test_a_store_with_nothing_readable_is_not_found_in_the_picker(server: tuple[App, HttpServer]) -> None:
    hidden = _graphql(server, DOCUMENTS, "alice", store=VAULT)
    missing = _graphql(server, DOCUMENTS, "alice", store="no-such-store")
    assert hidden["errors"][0]["extensions"]["code"] == missing["errors"][0]["extensions"]["code"] == "NOT_FOUND"
    assert hidden["errors"][0]["message"].replace(VAULT, "X") == missing["errors"][0]["message"].replace(
        "no-such-store", "X"
    )


# ---------------------------------------------------------------------------- the relevancy preview
PREVIEW = """query P($store: String!, $q: String!, $k: Int) {
  relevancyPreview(storeId: $store, question: $q, k: $k) {
    storeId level minThreshold maxThreshold chunks { maxPassingLevel chunk { documentId score relevance } }
  }
}"""


def test_the_preview_is_for_admins(server: tuple[App, HttpServer]) -> None:
    refused = _graphql(server, PREVIEW, "bob", store=STORE, q=QUESTION)
    assert refused["errors"][0]["extensions"]["code"] == "FORBIDDEN"


def test_the_preview_scores_readable_chunks_with_no_threshold(server: tuple[App, HttpServer]) -> None:
    app = server[0]
    preview = _graphql(server, PREVIEW, "bob", admin=True, store=STORE, q=QUESTION)["data"]["relevancyPreview"]
    chunks = preview["chunks"]
    assert {c["chunk"]["documentId"] for c in chunks} == {"handbook", "bob-notes"}  # bob's rights, not all
    assert [c["chunk"]["score"] for c in chunks] == sorted((c["chunk"]["score"] for c in chunks), reverse=True)
    for c in chunks:
        assert c["maxPassingLevel"] == pytest.approx(c["chunk"]["relevance"])
    assert preview["minThreshold"] <= preview["maxThreshold"]
    assert (
        len(
            _graphql(server, PREVIEW, "bob", admin=True, store=STORE, q=QUESTION, k=1)["data"]["relevancyPreview"][
                "chunks"
            ]
        )
        == 1
    )
    for k in (0, 51):
        bad = _graphql(server, PREVIEW, "bob", admin=True, store=STORE, q=QUESTION, k=k)
        assert bad["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"
    # audited as the console's preview, kept out of the admin's history
    [audit] = app.repository.audit_records("bob", 1)
    assert audit.interface == "console-preview" and audit.query_class == "vector"
    history = _graphql(server, "{ history(first: 100) { edges { node { queryId } } } }", "bob", admin=True)
    assert audit.query_id not in json.dumps(history)


# ---------------------------------------------------------------------------- the audit view's dates
AUDIT = """query A($user: String, $since: String, $until: String) {
  auditEntries(userId: $user, since: $since, until: $until) { userId queryClass interface createdAt }
}"""


def test_the_audit_view_filters_by_date(server: tuple[App, HttpServer]) -> None:
    _graphql(
        server, 'query Q($s: String!) { vectorQuery(storeId: $s, question: "vacation") { queryId } }', "dave", s=STORE
    )
    today = datetime.now(UTC).date()
    day = timedelta(days=1)
    rows = _graphql(server, AUDIT, "root", admin=True, user="dave", since=today.isoformat(), until=today.isoformat())
    assert [r["userId"] for r in rows["data"]["auditEntries"]] == ["dave"]
    before = _graphql(server, AUDIT, "root", admin=True, user="dave", until=(today - day).isoformat())
    after = _graphql(server, AUDIT, "root", admin=True, user="dave", since=(today + day).isoformat())
    assert before["data"]["auditEntries"] == after["data"]["auditEntries"] == []
    for since, until in (("yesterday", None), (today.isoformat(), (today - day).isoformat())):
        bad = _graphql(server, AUDIT, "root", admin=True, since=since, until=until)
        assert bad["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"


# ---------------------------------------------------------------------------- single sign-on configuration
def _oidc(**changes: str) -> dict[str, str]:
    return {
        "authorization_endpoint": "https://login.example/authorize",
        "token_endpoint": "https://login.example/token",
        "client_id": "docqa-console",
        **changes,
    }


def test_single_sign_on_is_offered_with_its_token_endpoint_allowed(tmp_path: Path) -> None:
    from tests.oidc_standin import Provider

    jwks = Provider("http://127.0.0.1").write_jwks(tmp_path / "jwks.json")
    settings = Settings(
        data_dir=tmp_path,
        auth={"jwks_file": jwks, "issuer": "https://login.example/", "audience": "docqa"},
        web={"oidc": _oidc()},
        server={"grpc_port": 0, "http_port": 0},
    )
    app = build_app(settings, embedder_factory=lambda _: FakeEmbedder())
    try:
        with on_servers(app, with_grpc=False) as served:
            reply = httpx.get(f"http://127.0.0.1:{served.http.port}/web/config", timeout=10)
            assert reply.json()["oidc"] == {
                "authorizationEndpoint": "https://login.example/authorize",
                "tokenEndpoint": "https://login.example/token",
                "clientId": "docqa-console",
                "scope": "openid profile",
                "token": "access_token",
                "label": "Sign in with single sign-on",
            }
            assert "connect-src 'self' https://login.example;" in reply.headers["content-security-policy"]
    finally:
        app.close()


@pytest.mark.parametrize(
    ("oidc", "auth", "message"),
    [
        (_oidc(), {}, "needs the provider's keys"),
        (_oidc(token_endpoint="http://login.example/token"), None, "https URL"),
        (_oidc(authorization_endpoint="javascript:alert(1)"), None, "https URL"),
        (_oidc(authorization_endpoint="https://u:p@login.example/a"), None, "https URL"),
    ],
)
def test_single_sign_on_configuration_fails_loudly(
    tmp_path: Path, oidc: dict[str, str], auth: dict[str, Any] | None, message: str
) -> None:
    if auth is None:
        (tmp_path / "jwks.json").write_text('{"keys": []}')
        auth = {"jwks_file": tmp_path / "jwks.json", "issuer": "https://login.example/", "audience": "docqa"}
    with pytest.raises(ValueError, match=message):
        Settings(data_dir=tmp_path, web={"oidc": oidc}, auth=auth)
