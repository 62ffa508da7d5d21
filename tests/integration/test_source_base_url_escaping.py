"""A store's ``source_base_url`` holds no quote, angle bracket, backtick or other character that could end an
attribute or open markup, whichever way it is set (GraphQL, gRPC, the CLI): such a value is refused with the
interface's typed error and changes nothing. One stored before the rule is never used for a link. Links under
a good base carry the document's path percent-encoded, so no document id adds markup to them either.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import httpx
import pytest

from acl.model import Acl
from service.api.cli.main import main
from service.api.grpc.stubs import Stubs, load
from service.bootstrap import App
from service.domain.retrieval_settings import validate_source_base_url
from service.domain.source_links import check_base_url, source_link
from tests.integration.server_world import STORE, Served, bearer, build_world, on_servers, token

pytestmark = pytest.mark.integration

ODD_ID = "guide/Q&A \"v2\" <draft> `x` 'y'.md"
ODD_PATH = "guide/Q%26A%20%22v2%22%20%3Cdraft%3E%20%60x%60%20%27y%27.md"
BAD = [
    'https://intranet.example/docs"onmouseover="alert(1)',
    "https://intranet.example/<script>alert(1)</script>",
    "https://intranet.example/a>b",
    "https://intranet.example/it's",
    "https://intranet.example/`x`",
    "https://intranet.example/a\\b",
    "https://intranet.example/{x}",
    "https://intranet.example/a|b^c",
    "https://intranet.example/zero\u200bwidth",
    "https://intranet.example/bidi\u202eevil",
]
SAYS = "source_base_url must not contain"
QUERY = """query($s: String!, $q: String!) { vectorQuery(storeId: $s, question: $q, level: 0.0) {
  chunks { documentId link } documents { documentId link } } }"""
SET = 'mutation($u: String!) { updateStoreSettings(storeId: "acme", settings: {sourceBaseUrl: $u}) { sourceBaseUrl } }'


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[App, Served, Path]]:
    data_dir = tmp_path_factory.mktemp("base-url")
    app = build_world(data_dir)
    app.ingestor(STORE).upsert_bytes(
        ODD_ID, b"Quoted drafts of paid vacation leave.", "text/plain", acl=Acl.of(["group:everyone"])
    )
    with on_servers(app) as served:
        yield app, served, data_dir
    app.close()


@pytest.fixture(autouse=True)
def _reset(world: Any) -> Iterator[None]:
    yield
    world[0].admin_without_index().update_settings(STORE, source_base_url="")


def _graphql(world: Any, query: str, **variables: Any) -> dict[str, Any]:
    app, served, _ = world
    reply = httpx.post(
        served.graphql_url,
        json={"query": query, "variables": variables},
        headers={"authorization": f"Bearer {token(app, 'root', admin=True)}"},
        timeout=10,
    )
    assert reply.status_code == 200, reply.text
    body: dict[str, Any] = reply.json()
    return body


@pytest.mark.parametrize("url", BAD)
def test_the_rule_refuses_each_character_by_name(url: str) -> None:
    with pytest.raises(Exception, match=SAYS):
        validate_source_base_url(url)
    with pytest.raises(Exception, match="source_base_url must not contain"):
        check_base_url(url)
    assert source_link("handbook", "", base_url=url) is None  # stored before the rule: never used


@pytest.mark.parametrize("url", BAD[:6])
def test_graphql_refuses_it_and_changes_nothing(world: Any, url: str) -> None:
    app = world[0]
    before = app.repository.get_store(STORE)
    body = _graphql(world, SET, u=url)
    [error] = body["errors"]
    assert error["extensions"]["code"] == "BAD_USER_INPUT" and SAYS in error["message"], error
    assert app.repository.get_store(STORE) == before


@pytest.mark.parametrize("url", BAD[:6])
def test_grpc_refuses_it_and_changes_nothing(world: Any, url: str) -> None:
    app, served, _ = world
    stubs: Stubs = load()
    before = app.repository.get_store(STORE)
    with grpc.insecure_channel(served.channel_target) as channel:
        admin = stubs.admin_grpc.AdminServiceStub(channel)
        with pytest.raises(grpc.RpcError) as info:
            admin.SetStoreSettings(
                stubs.admin.SetStoreSettingsRequest(store_id=STORE, source_base_url=url),
                metadata=bearer(app, "root", admin=True),
                timeout=10,
            )
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT and SAYS in info.value.details()
    assert app.repository.get_store(STORE) == before


def test_the_cli_refuses_it_and_changes_nothing(
    world: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    app, _, data_dir = world
    monkeypatch.setenv("DOCQA_DATA_DIR", str(data_dir))
    monkeypatch.delenv("DOCQA_CONFIG", raising=False)
    before = app.repository.get_store(STORE)
    code = main(["settings", "set", STORE, "--source-base-url", BAD[0]])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and f"error: {SAYS}" in err and "Traceback" not in err
    assert app.repository.get_store(STORE) == before


def test_a_good_base_gives_links_with_the_path_percent_encoded(world: Any) -> None:
    body = _graphql(world, SET, u="https://intranet.example/docs/")
    assert body["data"]["updateStoreSettings"]["sourceBaseUrl"] == "https://intranet.example/docs/"
    links = _graphql(world, QUERY, s=STORE, q="Quoted drafts of paid vacation leave")["data"]["vectorQuery"]
    [chunk] = [c for c in links["chunks"] if c["documentId"] == ODD_ID]
    [document] = [d for d in links["documents"] if d["documentId"] == ODD_ID]
    assert chunk["link"] == document["link"] == f"https://intranet.example/docs/{ODD_PATH}"
    for link in [c["link"] for c in links["chunks"]] + [d["link"] for d in links["documents"]]:
        assert link is not None and not set("\"'<>`\\ ") & set(link), link


def test_a_bad_base_stored_before_the_rule_gives_no_link_under_it(world: Any) -> None:
    app = world[0]
    app.repository.update_store(STORE, source_base_url=BAD[0])  # as a row written before the rule
    links = _graphql(world, QUERY, s=STORE, q="paid vacation leave")["data"]["vectorQuery"]
    shown = [c["link"] for c in links["chunks"]] + [d["link"] for d in links["documents"]]
    assert shown and all(link is None or link.startswith("https://cms.example/") for link in shown), shown
