"""A store's fusion, lexical weight and source base URL through every admin surface.

gRPC (AdminService.SetStoreSettings / GetStoreSettings) and GraphQL (updateStoreSettings, storeSettings)
against real servers on 127.0.0.1; the CLI (``docqa settings``) in-process on the same data directory. Good
values are stored and shown; a bad one is refused with the interface's own error and nothing changes.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import httpx
import pytest

from service.api.cli.main import main
from service.api.grpc.server import GrpcServer
from service.api.grpc.stubs import Stubs, load
from service.api.http import HttpServer
from service.bootstrap import App
from tests.integration.server_world import STORE, bearer, build_world, on_servers, token

#: (setting, bad value, what the refusal says) — the same words on every surface.
BAD = [
    pytest.param("fusion", "bm25", "fusion must be one of rrf, weighted, dense, lexical", id="fusion"),
    pytest.param("lexical_weight", 1.5, "lexical_weight must be a finite number between 0 and 1", id="weight-high"),
    pytest.param("source_base_url", "https://u:p@intranet/docs", "must not carry a user name or password", id="user"),
    pytest.param("source_base_url", "https://intranet/docs?x=1", "must not have a query", id="url-query"),
    pytest.param("source_base_url", "javascript:alert(1)", "must be an https:// or http:// URL", id="url-scheme"),
]
#: JSON has no NaN: only gRPC can send one.
NAN = pytest.param("lexical_weight", float("nan"), "lexical_weight must be a finite number", id="weight-nan")
CAMEL = {"fusion": "fusion", "lexical_weight": "lexicalWeight", "source_base_url": "sourceBaseUrl"}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[App, GrpcServer, HttpServer, Path]]:
    data_dir = tmp_path_factory.mktemp("retrieval-settings")
    app = build_world(data_dir)
    with on_servers(app) as served:
        assert served.grpc is not None
        yield app, served.grpc, served.http, data_dir
    app.close()


@pytest.fixture(scope="module")
def stubs() -> Stubs:
    return load()


@pytest.fixture
def channel(world: Any) -> Iterator[grpc.Channel]:
    with grpc.insecure_channel(f"127.0.0.1:{world[1].port}") as open_channel:
        yield open_channel


@pytest.fixture(autouse=True)
def _reset(world: Any) -> Iterator[None]:
    yield
    world[0].admin_without_index().update_settings(STORE, fusion="rrf", lexical_weight=0.3, source_base_url="")


def _graphql(world: Any, query: str, variables: dict[str, Any], *, admin: bool = True) -> dict[str, Any]:
    app, _, http, _ = world
    reply = httpx.post(
        f"http://127.0.0.1:{http.port}/graphql",
        json={"query": query, "variables": variables},
        headers={"authorization": f"Bearer {token(app, 'root' if admin else 'alice', admin=admin)}"},
        timeout=10,
    )
    assert reply.status_code == 200
    body: dict[str, Any] = reply.json()
    return body


SET = (
    'mutation($s: StoreSettingsInput!) { updateStoreSettings(storeId: "acme", settings: $s) '
    "{ fusion lexicalWeight sourceBaseUrl level } }"
)


def test_grpc_sets_shows_and_clears(world: Any, stubs: Stubs, channel: grpc.Channel) -> None:
    app = world[0]
    admin = stubs.admin_grpc.AdminServiceStub(channel)
    request = stubs.admin.SetStoreSettingsRequest(
        store_id=STORE, fusion="weighted", lexical_weight=0.6, source_base_url="https://intranet.example/docs/"
    )
    reply = admin.SetStoreSettings(request, metadata=bearer(app, "root", admin=True), timeout=10)
    assert (reply.fusion, reply.lexical_weight, reply.source_base_url) == (
        "weighted",
        pytest.approx(0.6),
        "https://intranet.example/docs/",
    )
    shown = admin.GetStoreSettings(
        stubs.admin.GetStoreSettingsRequest(store_id=STORE), metadata=bearer(app, "alice"), timeout=10
    )
    assert (shown.fusion, shown.source_base_url) == ("weighted", "https://intranet.example/docs/")
    cleared = admin.SetStoreSettings(
        stubs.admin.SetStoreSettingsRequest(store_id=STORE, source_base_url=""),
        metadata=bearer(app, "root", admin=True),
        timeout=10,
    )
    assert cleared.source_base_url == "" and cleared.fusion == "weighted"
    assert app.repository.get_store(STORE).source_base_url is None


@pytest.mark.parametrize(("key", "value", "says"), [*BAD, NAN])
def test_grpc_refuses_a_bad_value_and_changes_nothing(
    world: Any, stubs: Stubs, channel: grpc.Channel, key: str, value: Any, says: str
) -> None:
    app = world[0]
    before = app.repository.get_store(STORE)
    admin = stubs.admin_grpc.AdminServiceStub(channel)
    request = stubs.admin.SetStoreSettingsRequest(store_id=STORE, level=0.9, **{key: value})
    with pytest.raises(grpc.RpcError) as info:
        admin.SetStoreSettings(request, metadata=bearer(app, "root", admin=True), timeout=10)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert says in info.value.details()
    assert app.repository.get_store(STORE) == before


def test_only_an_admin_changes_them(world: Any, stubs: Stubs, channel: grpc.Channel) -> None:
    app = world[0]
    admin = stubs.admin_grpc.AdminServiceStub(channel)
    with pytest.raises(grpc.RpcError) as info:
        admin.SetStoreSettings(
            stubs.admin.SetStoreSettingsRequest(store_id=STORE, fusion="dense"), metadata=bearer(app, "alice")
        )
    assert info.value.code() == grpc.StatusCode.PERMISSION_DENIED
    body = _graphql(world, SET, {"s": {"fusion": "dense"}}, admin=False)
    assert body["errors"][0]["extensions"]["code"] == "FORBIDDEN"
    assert app.repository.get_store(STORE).fusion == "rrf"


def test_graphql_sets_and_clears(world: Any) -> None:
    body = _graphql(world, SET, {"s": {"fusion": "lexical", "lexicalWeight": 1.0, "sourceBaseUrl": "http://wiki/x"}})
    assert body["data"]["updateStoreSettings"] == {
        "fusion": "lexical",
        "lexicalWeight": 1.0,
        "sourceBaseUrl": "http://wiki/x",
        "level": 0.5,
    }
    body = _graphql(world, SET, {"s": {"sourceBaseUrl": ""}})
    assert body["data"]["updateStoreSettings"]["sourceBaseUrl"] is None
    assert body["data"]["updateStoreSettings"]["fusion"] == "lexical"


@pytest.mark.parametrize(("key", "value", "says"), BAD)
def test_graphql_refuses_a_bad_value_and_changes_nothing(world: Any, key: str, value: Any, says: str) -> None:
    app = world[0]
    before = app.repository.get_store(STORE)
    body = _graphql(world, SET, {"s": {"level": 0.9, CAMEL[key]: value}})
    [error] = body["errors"]
    assert error["extensions"]["code"] == "BAD_USER_INPUT" and says in error["message"]
    assert app.repository.get_store(STORE) == before


def test_cli_sets_shows_and_clears(
    world: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    app, _, _, data_dir = world
    monkeypatch.setenv("DOCQA_DATA_DIR", str(data_dir))
    monkeypatch.delenv("DOCQA_CONFIG", raising=False)
    args = ["settings", "set", STORE, "--fusion", "dense", "--lexical-weight", "0.1", "--source-base-url"]
    assert main([*args, "https://intranet.example/", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert (shown["fusion"], shown["lexical_weight"], shown["source_base_url"]) == (
        "dense",
        0.1,
        "https://intranet.example/",
    )
    assert main(["settings", "set", STORE, "--clear-source-base-url", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["source_base_url"] is None
    assert main(["settings", "show", STORE]) == 0
    # One column as wide as the longest setting's name (max_chunks_per_document), then two spaces.
    assert "\nfusion                   dense\n" in capsys.readouterr().out
    assert app.repository.get_store(STORE).fusion == "dense"


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (["--fusion", "bm25"], "error: fusion must be one of rrf, weighted, dense, lexical"),
        (["--lexical-weight", "nan"], "error: lexical_weight must be a finite number"),
        (["--lexical-weight", "heavy"], "error: lexical_weight must be a number"),
        (["--source-base-url", "https://intranet/#top"], "error: source_base_url must not have a fragment"),
        (["--source-base-url", "https://x/", "--clear-source-base-url"], "not allowed with argument"),
    ],
)
def test_cli_refuses_a_bad_value_and_changes_nothing(
    world: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], flags: list[str], says: str
) -> None:
    app, _, _, data_dir = world
    monkeypatch.setenv("DOCQA_DATA_DIR", str(data_dir))
    monkeypatch.delenv("DOCQA_CONFIG", raising=False)
    before = app.repository.get_store(STORE)
    try:
        code = main(["settings", "set", STORE, "--level", "0.9", *flags])
    except SystemExit as exit_:  # argparse's own usage error
        code = int(str(exit_.code))
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and says in err and "Traceback" not in err
    assert app.repository.get_store(STORE) == before
