"""SCIM 2.0 provisioning through the real HTTP server: an identity provider's calls (scim2-client round trips
and raw HTTP), the independent compliance suite scim2-tester, what a query sees after each change, and the
RFC's errors for what must be refused (nothing changed)."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from scim2_client.engines.httpx2 import SyncSCIMClient
from scim2_tester import check_server
from scim2_tester.utils import Status

from service.api.scim import issue_token, principal_name
from service.bootstrap import App
from service.domain.queries import Caller, VectorQuery
from tests.integration.server_world import STORE, build_world, on_servers

pytestmark = pytest.mark.integration

QUESTION = "How many days of paid vacation do executives get?"


@pytest.fixture
def world(tmp_path: Path) -> Iterator[tuple[App, str, str]]:
    app = build_world(tmp_path)
    token = issue_token(app, "test")
    with on_servers(app, with_grpc=False) as served:
        yield app, f"http://127.0.0.1:{served.http.port}/scim/v2", token
    app.close()


def _http(base: str, token: str) -> httpx.Client:
    return httpx.Client(base_url=base, headers={"authorization": f"Bearer {token}"}, timeout=30)


def _reads_executive_pay(app: App, user: str) -> bool:
    answer = app.engine.ask(Caller(user), VectorQuery(STORE, QUESTION, level=0.0, perform_llm_query=False))
    return any(c.document_id == "executive-pay" for c in answer.chunks)


def _user(client: httpx.Client, name: str) -> str:
    reply = client.post("/Users", json={"schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"], "userName": name})
    assert reply.status_code == 201, reply.text
    return str(reply.json()["id"])


def _group(client: httpx.Client, name: str, members: list[str]) -> httpx.Response:
    return client.post(
        "/Groups",
        json={
            "schemas": ["urn:ietf:params:scim:schemas:core:2.0:Group"],
            "displayName": name,
            "members": [{"value": m} for m in members],
        },
    )


def test_a_provisioned_group_opens_a_document_and_a_removal_closes_it(world: Any) -> None:
    app, base, token = world
    with _http(base, token) as scim:
        dave = _user(scim, "dave")
        assert not _reads_executive_pay(app, "dave")
        created = _group(scim, "hr", [dave])  # executive-pay allows group:hr
        assert created.status_code == 201, created.text
        group = created.json()["id"]
        assert _reads_executive_pay(app, "dave")
        patch = {
            "schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
            "Operations": [{"op": "remove", "path": f'members[value eq "{dave}"]'}],
        }
        started = time.perf_counter()
        assert scim.patch(f"/Groups/{group}", json=patch).status_code in (200, 204)
        assert not _reads_executive_pay(app, "dave")
        print(
            f"SCIM removal to effect (the PATCH, then the next query): {(time.perf_counter() - started) * 1000:.1f} ms"
        )
        patch["Operations"] = [{"op": "add", "path": "members", "value": [{"value": dave}]}]
        assert scim.patch(f"/Groups/{group}", json=patch).status_code in (200, 204)
        assert _reads_executive_pay(app, "dave")
        assert scim.delete(f"/Groups/{group}").status_code == 204
        assert not _reads_executive_pay(app, "dave")
        found = scim.get("/Users", params={"filter": 'userName eq "dave"'}).json()
        assert found["totalResults"] == 1 and found["Resources"][0]["id"] == dave


def test_an_admins_tombstone_wins_over_scim(world: Any) -> None:
    app, base, token = world
    with _http(base, token) as scim:
        erin = _user(scim, "erin")
        assert _group(scim, "hr", [erin]).status_code == 201
        assert _reads_executive_pay(app, "erin")
        app.access.remove_member("group:hr", "user:erin", "root")
        assert not _reads_executive_pay(app, "erin")


def test_refusals_are_the_rfcs_and_change_nothing(world: Any) -> None:
    app, base, token = world
    with _http(base, token) as scim:
        gina = _user(scim, "gina")
        duplicate = scim.post(
            "/Users", json={"schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"], "userName": "gina"}
        )
        assert (duplicate.status_code, duplicate.json().get("scimType")) == (409, "uniqueness")
        bad_filter = scim.get("/Users", params={"filter": 'userName eq "gina'})
        assert (bad_filter.status_code, bad_filter.json().get("scimType")) == (400, "invalidFilter")
        unknown = scim.post(
            "/Users",
            json={"schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"], "userName": "hal", "shoeSize": 44},
        )
        assert unknown.status_code == 400, unknown.text
        outer = _group(scim, "outer", [gina]).json()["id"]
        inner = _group(scim, "inner", [outer]).json()["id"]
        cycle = {
            "schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
            "Operations": [{"op": "add", "path": "members", "value": [{"value": inner}]}],
        }
        refused = scim.patch(f"/Groups/{outer}", json=cycle)
        assert (refused.status_code, refused.json().get("scimType")) == (400, "invalidValue")
        members = scim.get(f"/Groups/{outer}").json().get("members", [])
        assert [m["value"] for m in members] == [gina]
        assert scim.get("/Users", params={"filter": 'userName eq "hal"'}).json()["totalResults"] == 0
    principals = app.engine.principals(Caller("gina"))
    assert {"group:outer", "group:inner"} <= principals


def test_every_request_needs_an_issued_token(world: Any) -> None:
    _app, base, token = world
    for headers in ({}, {"authorization": "Bearer not-issued"}, {"authorization": f"Basic {token}"}):
        reply = httpx.get(f"{base}/Users", headers=headers, timeout=30)
        assert reply.status_code == 401, headers
    assert httpx.get(f"{base}/ServiceProviderConfig", timeout=30).status_code == 200  # RFC 7643 §5: open
    with _http(base, token) as scim:
        assert scim.get("/Users").status_code == 200


def test_names_a_principal_cannot_hold_are_written_with_dashes() -> None:
    assert principal_name("Finance Team / EU") == "Finance-Team-EU"
    assert principal_name("alice@example.com") == "alice@example.com"


def test_scim2_client_round_trips_and_the_compliance_suite(world: Any, capsys: pytest.CaptureFixture[str]) -> None:
    _app, base, token = world
    with httpx2.Client(base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=30) as http:
        client = SyncSCIMClient(http)
        client.discover()
        results = check_server(client)
    counted = Counter(r.status.name for r in results)
    failing = [f"{r.title}: {r.reason}" for r in results if r.status in (Status.ERROR, Status.CRITICAL)]
    with capsys.disabled():
        print(f"\nscim2-tester: {len(results)} checks, {dict(sorted(counted.items()))}")
        for line in failing:
            print(f"  {line}")
    assert failing == []


def test_the_cli_issues_and_revokes_tokens(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from service.api.cli.main import main
    from service.api.scim import scim_rows
    from service.config import Settings
    from tests.env import clear_docqa_env

    clear_docqa_env(monkeypatch)
    monkeypatch.setenv("DOCQA_DATA_DIR", str(tmp_path))
    assert main(["scim", "token"]) == 0
    token = capsys.readouterr().out.strip()
    app = App(Settings())
    try:
        assert len(token) >= 40 and scim_rows(app).token_valid(token)
        assert main(["scim", "revoke-tokens"]) == 0
        assert capsys.readouterr().out.strip() == "1 token(s) revoked"
        assert not scim_rows(app).token_valid(token)
    finally:
        app.close()
