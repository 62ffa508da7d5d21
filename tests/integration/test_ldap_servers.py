"""Groups from a real OpenLDAP server behind real gRPC and GraphQL servers: a directory group opens a document,
a removal in the directory closes it on the next query, and a directory that cannot be reached is UNAVAILABLE
(never a document let through, never the directory's address in the reply), /readyz names it and
``docqa doctor`` names the setting; all of it recovers without a restart.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import httpx
import pytest

from acl.model import Acl
from service.api.cli.main import main
from service.api.grpc.stubs import Stubs, load
from service.bootstrap import App, build_app
from tests.env import clear_docqa_env
from tests.fakes_service import FakeEmbedder
from tests.integration.server_world import on_servers, settings_for, token
from tests.ldap_world import ADMIN_DN, ADMIN_PASSWORD, GROUPS, PEOPLE, SLAPD, LdapWorld, user_dn

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(SLAPD is None, reason="slapd is not installed (apt-get install slapd; .ci/run installs it)"),
]

STORE = "ledger"
QUESTION = "What is the quarterly budget forecast for the ledger?"
GRAPHQL = (
    "query($s: String!, $q: String!) { vectorQuery(storeId: $s, question: $q, level: 0.0, performLlmQuery: false)"
    " { chunks { documentId } } }"
)


@pytest.fixture
def world(tmp_path: Path) -> Iterator[tuple[App, LdapWorld, Any]]:
    ldap = LdapWorld(tmp_path / "slapd")
    ldap.start()
    ldap.seed()
    base = settings_for(tmp_path / "data")
    settings = base.model_copy(
        update={"directory": base.directory.model_validate({"ldap": ldap.settings(), "cache_ttl_s": 0})}
    )
    app = build_app(settings, embedder_factory=lambda _: FakeEmbedder())
    ingest = app.ingestor(STORE)
    ingest.upsert_bytes(
        "forecast.md", b"# Forecast\n\nThe quarterly budget forecast for the ledger is 4.2 million euros.\n",
        "text/markdown", acl=Acl.of(["group:finance"]),
    )  # fmt: skip
    ingest.upsert_bytes(
        "welcome.md", b"# Welcome\n\nThe ledger team answers questions on Mondays.\n", "text/markdown",
        acl=Acl.of(["group:everyone"]),
    )  # fmt: skip
    with on_servers(app) as served:
        yield app, ldap, served
    app.close()
    ldap.stop()


def _graphql(app: App, served: Any, user: str) -> dict[str, Any]:
    reply = httpx.post(
        served.graphql_url,
        json={"query": GRAPHQL, "variables": {"s": STORE, "q": QUESTION}},
        headers={"authorization": f"Bearer {token(app, user)}"},
        timeout=30,
    )
    return dict(reply.json())


def _documents(body: dict[str, Any]) -> set[str]:
    return {c["documentId"] for c in body["data"]["vectorQuery"]["chunks"]}


def test_directory_groups_open_and_close_documents_through_the_servers(world: Any) -> None:
    app, ldap, served = world
    assert "forecast.md" in _documents(_graphql(app, served, "carol"))  # carol → auditors → finance
    assert "forecast.md" not in _documents(_graphql(app, served, "bob"))
    ldap.remove_member("auditors", user_dn("carol"))
    started = time.perf_counter()
    assert "forecast.md" not in _documents(_graphql(app, served, "carol"))
    print(f"LDAP removal to effect through GraphQL: {(time.perf_counter() - started) * 1000:.1f} ms")


def test_an_unreachable_directory_is_unavailable_on_every_transport_and_readyz_names_it(world: Any) -> None:
    app, ldap, served = world
    stubs: Stubs = load()
    ready = f"http://127.0.0.1:{served.http.port}/readyz"
    assert httpx.get(ready, timeout=30).status_code == 200
    ldap.stop()
    body = _graphql(app, served, "carol")
    assert body["data"] is None
    assert [e["extensions"]["code"] for e in body["errors"]] == ["UNAVAILABLE"]
    assert ldap.url not in str(body) and "example" not in str(body)
    with grpc.insecure_channel(served.channel_target) as channel:
        request = stubs.query.VectorQueryRequest(store_id=STORE, question=QUESTION, level=0.0)
        metadata = (("authorization", f"Bearer {token(app, 'carol')}"),)
        with pytest.raises(grpc.RpcError) as failed:
            stubs.query_grpc.QueryServiceStub(channel).VectorQuery(request, metadata=metadata, timeout=30)
        assert failed.value.code() == grpc.StatusCode.UNAVAILABLE
        assert ldap.url not in (failed.value.details() or "")
    reply = httpx.get(ready, timeout=30)
    assert (reply.status_code, reply.json()) == (503, {"status": "unavailable", "failing": "group directory"})
    ldap.start()
    assert "forecast.md" in _documents(_graphql(app, served, "carol"))
    assert httpx.get(ready, timeout=30).status_code == 200


@pytest.fixture
def cli_ldap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[LdapWorld]:
    """A seeded slapd, and the environment of a CLI on ``tmp_path / "data"`` that reads its groups (stopped after)."""
    ldap = LdapWorld(tmp_path / "slapd")
    ldap.start()
    ldap.seed()
    clear_docqa_env(monkeypatch)
    monkeypatch.setenv("DOCQA_DATA_DIR", str(tmp_path / "data"))
    settings = {"url": ldap.url, "bind_dn": ADMIN_DN, "user_base_dn": PEOPLE, "group_base_dn": GROUPS}
    for key, value in {**settings, "bind_password": ADMIN_PASSWORD}.items():
        monkeypatch.setenv(f"DOCQA_DIRECTORY__LDAP__{key.upper()}", value)
    yield ldap
    ldap.stop()


def test_doctor_names_the_directory_setting_that_is_wrong(
    cli_ldap: LdapWorld, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    ldap = cli_ldap
    try:
        assert main(["doctor"]) == 0
        assert "group directory          ok" in capsys.readouterr().out
        monkeypatch.setenv("DOCQA_DIRECTORY__LDAP__GROUP_BASE_DN", "ou=teams,dc=example,dc=com")
        assert main(["doctor"]) == 1
        out = capsys.readouterr().out
        assert "group directory          FAIL  directory.ldap.group_base_dn (ou=teams,dc=example,dc=com)" in out
        assert ADMIN_PASSWORD not in out
        ldap.stop()
        assert main(["doctor"]) == 1
        assert "FAIL  directory.ldap.url" in capsys.readouterr().out
    finally:
        ldap.stop()


def test_access_explain_on_the_cli(
    cli_ldap: LdapWorld, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    ldap = cli_ldap
    monkeypatch.setenv("DOCQA_DIRECTORY__CACHE_TTL_S", "0")
    from service.config import Settings

    app = build_app(Settings(), embedder_factory=lambda _: FakeEmbedder())
    app.ingestor(STORE).upsert_bytes(
        "forecast.md", b"# Forecast\n\nFour million.\n", "text/markdown", acl=Acl.of(["group:finance"])
    )
    app.close()
    try:
        assert main(["access", "explain", "--user", "carol", "--document", "forecast.md"]) == 0
        out = capsys.readouterr().out
        assert out.splitlines()[0] == f"user:carol CAN read forecast.md in store {STORE}"
        assert "user:carol → group:auditors (ldap) → group:finance (ldap)" in out
        assert "because the ACL allows group:finance" in out
        assert main(["access", "explain", "--user", "bob", "--document", "forecast.md", "--json"]) == 0
        assert '"readable": false' in capsys.readouterr().out
        assert main(["access", "explain", "--user", "bob", "--document", "nope.md"]) == 3  # not found
        assert "not found" in capsys.readouterr().err
        assert main(["access", "explain", "--user", "a*)(uid=*", "--document", "forecast.md"]) == 2
        assert "invalid principal" in capsys.readouterr().err
        # The query form: carol's search (an LDAP member of finance) marked for bob and for carol herself. The
        # CLI's application embeds with the fake the store was indexed with.
        monkeypatch.setattr(
            "service.bootstrap.build_app", lambda s: build_app(s, embedder_factory=lambda _: FakeEmbedder())
        )
        question = ["access", "explain", "--question", "How much is the forecast?", "--store", STORE, "--as", "carol"]
        assert main([*question, "--user", "bob"]) == 0
        out = capsys.readouterr().out.splitlines()
        assert out[0] == f"user:bob would see 0 of user:carol's top 1 chunks in store {STORE}"
        assert out[1].split()[0] == "no" and "forecast.md" in out[1] and out[1].endswith("no entry allows")
        assert main([*question, "--user", "carol", "--json"]) == 0
        [chunk] = json.loads(capsys.readouterr().out)["chunks"]
        assert (chunk["document_id"], chunk["visible"], chunk["deciding_entry"]) == (
            "forecast.md",
            True,
            "allow group:finance",
        )
        # Whose search it is decides what is explained: bob may read nothing here.
        assert main([*question[:-2], "--as", "bob", "--user", "carol", "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["chunks"] == []
        assert main(["access", "explain", "--user", "bob", "--question", "forecast?"]) == 2  # no store
        assert "--store" in capsys.readouterr().err
        app = build_app(Settings(), embedder_factory=lambda _: FakeEmbedder())
        rows = [r for r in app.repository.audit_records(None, 100, None, None) if r.query_class == "explain_access"]
        app.close()
        # The explanations given are audited (interface cli); the refused ones are not.
        documents = [(r.store_id, r.document_ids, r.interface) for r in rows if not r.chunk_count]
        # Newest first: bob's search found nothing (a row with no documents), then the two documents explained.
        assert documents == [(STORE, (), "cli"), *[(STORE, ("forecast.md",), "cli")] * 2]
        assert [(r.document_ids, r.chunk_count) for r in rows if r.chunk_count] == [(("forecast.md",), 1)] * 2
    finally:
        ldap.stop()
