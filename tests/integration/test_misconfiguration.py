"""Misconfiguration behind real gRPC and GraphQL servers: a language model (the watsonx stand-in over TLS)
with a wrong model id, key or project, and an embedding model that cannot load.

Start-up says why (``docqa doctor`` fails, ``docqa serve`` logs it, /readyz
answers 503); a caller gets UNAVAILABLE with a neutral message — no URL, model
id, project id, path or upstream text — and the log gets the detail.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import grpc
import httpx
import pytest

from acl.errors import ConfigurationError
from acl.model import Acl
from service.api.cli.main import main
from service.api.cli.serve import report_generator
from service.api.grpc.server import services_for, start_grpc
from service.api.grpc.stubs import Stubs, load
from service.bootstrap import App, build_app
from service.config import GeneratorConfig
from service.observability.metrics import Metrics
from tests.env import clear_docqa_env
from tests.fakes_service import FakeEmbedder
from tests.integration.server_world import DOCUMENTS, QUESTION, STORE, build_world, on_servers, settings_for, token
from tests.integration.watsonx_standin import StandIn, make_certificate

MODEL, USER, API_KEY = "ibm/granite-3-8b-instruct", "svc-docqa", "wx-api-key-51c0e7"
PROJECT = "0f5a8f8e-6a55-4f34-9c43-7d2f0b1c9e21"
NEUTRAL = "the language model is unavailable"
#: Each misconfiguration, and what the operator's log must name.
WRONG = {
    "unknown-model": ({"model_id": "ibm/no-such-model"}, "ibm/no-such-model"),
    "rejected-key": ({"api_key": "wx-wrong-key-9d1e"}, "rejected the credentials"),
    "unknown-project": ({"project_id": "3b0c9f9e-0000-4000-8000-00000000dead"}, "project_id"),
}
_SDK_ENV = ("WX_CLIENT_VERIFY_REQUESTS", "DEPLOYMENT_PLATFORM", "DEPLOYMENT_PRIVATE", "WATSONX_MAX_RETRIES")


@pytest.fixture(scope="module", autouse=True)
def _sdk_environment() -> Iterator[None]:
    """The SDK writes some settings into os.environ; leave the process as it was."""
    saved = {k: os.environ.get(k) for k in _SDK_ENV}
    yield
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.fixture(scope="module")
def standin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[StandIn, Path]]:
    ca, key = make_certificate(tmp_path_factory.mktemp("tls"))
    with StandIn(ca, key, models={MODEL: 8192}) as server:
        server.users = {USER: API_KEY}
        server.projects = {PROJECT}
        yield server, ca


def watsonx(standin: StandIn, ca: Path, **wrong: Any) -> dict[str, Any]:
    values = {
        "url": standin.url,
        "username": USER,
        "api_key": API_KEY,
        "project_id": PROJECT,
        "model_id": MODEL,
        "ca_bundle": ca,
        "timeout_s": 5.0,
        "max_retries": 0,
        "max_new_tokens": 50,
    }
    return {**values, **wrong}


@contextmanager
def serving(data_dir: Path, config: dict[str, Any]) -> Iterator[tuple[App, grpc.Channel, str]]:
    """The three-document world with watsonx as configured, behind gRPC and HTTP on loopback."""
    settings = settings_for(data_dir).model_copy(
        update={"generator": GeneratorConfig(backend="watsonx", watsonx=config)}
    )
    app = build_app(settings, embedder_factory=lambda _: FakeEmbedder())
    for document_id, (text, allow) in DOCUMENTS.items():
        app.ingestor(STORE).upsert_bytes(document_id, text.encode(), "text/plain", acl=Acl.of(allow))
    try:
        with on_servers(app) as served:
            channel = grpc.insecure_channel(served.channel_target)
            try:
                yield app, channel, f"http://127.0.0.1:{served.http.port}"
            finally:
                channel.close()
    finally:
        app.close()


@pytest.fixture(scope="module", params=WRONG.keys())
def world(
    request: pytest.FixtureRequest, standin: tuple[StandIn, Path], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[App, grpc.Channel, str, str, list[str]]]:
    server, ca = standin
    wrong, reason = WRONG[request.param]
    config = watsonx(server, ca, **wrong)
    # What a caller must never read: where the model lives, which model, which project, what it answered.
    hidden = [server.url.removeprefix("https://"), "127.0.0.1", MODEL, *map(str, wrong.values()), PROJECT, "HTTP"]
    with serving(tmp_path_factory.mktemp(request.param), config) as (app, channel, base):
        yield app, channel, base, reason, hidden


@pytest.fixture(scope="module")
def stubs() -> Stubs:
    return load()


def _metadata(app: App) -> tuple[tuple[str, str]]:
    return (("authorization", f"Bearer {token(app, 'alice')}"),)


def test_grpc_callers_get_unavailable_and_the_log_gets_why(
    world: Any, stubs: Stubs, caplog: pytest.LogCaptureFixture
) -> None:
    app, channel, _, reason, hidden = world
    query = stubs.query_grpc.QueryServiceStub(channel)
    request = stubs.query.VectorQueryRequest(store_id=STORE, question=QUESTION, level=0.0)
    with caplog.at_level(logging.WARNING):
        with pytest.raises(grpc.RpcError) as unary:
            query.VectorQuery(request, metadata=_metadata(app), timeout=30)
        with pytest.raises(grpc.RpcError) as streamed:
            list(query.StreamVectorQuery(request, metadata=_metadata(app), timeout=30))
    for error in (unary.value, streamed.value):
        assert (error.code(), error.details()) == (grpc.StatusCode.UNAVAILABLE, NEUTRAL)
        assert [h for h in hidden if h in (error.details() or "")] == []
    assert reason in caplog.text and "the language model is misconfigured" in caplog.text


def test_graphql_callers_get_unavailable_and_nothing_more(world: Any) -> None:
    app, _, base, _, hidden = world
    reply = httpx.post(
        f"{base}/graphql",
        json={
            "query": "query($s: String!, $q: String!) { vectorQuery(storeId: $s, question: $q) { answer } }",
            "variables": {"s": STORE, "q": QUESTION},
        },
        headers={"authorization": f"Bearer {token(app, 'alice')}"},
        timeout=30,
    )
    body = reply.json()
    assert body["data"] is None
    assert [(e["message"], e["extensions"]["code"]) for e in body["errors"]] == [(NEUTRAL, "UNAVAILABLE")]
    assert [h for h in hidden if h in reply.text] == []


def test_readyz_fails_without_saying_why(world: Any) -> None:
    _, _, base, _, hidden = world
    reply = httpx.get(f"{base}/readyz", timeout=30)
    assert (reply.status_code, reply.json()) == (503, {"status": "unavailable", "failing": "generator"})
    assert [h for h in hidden if h in reply.text] == []


def test_serve_logs_why_at_start_up(world: Any, caplog: pytest.LogCaptureFixture) -> None:
    app, _, _, reason, _ = world
    with caplog.at_level(logging.ERROR, logger="docqa.serve"):
        problems = report_generator(app)
    assert problems and reason in " ".join(problems)
    assert "language model check failed at start-up" in caplog.text and reason in caplog.text


def test_doctor_fails_and_names_the_reason(
    world: Any, standin: tuple[StandIn, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    app = world[0]
    clear_docqa_env(monkeypatch, tmp_path)
    monkeypatch.setenv("DOCQA_GENERATOR__BACKEND", "watsonx")
    for key, value in app.settings.generator.watsonx.model_dump().items():
        if value is not None:
            secret = getattr(value, "get_secret_value", None)
            monkeypatch.setenv(f"DOCQA_GENERATOR__WATSONX__{key.upper()}", str(secret() if secret else value))
    assert main(["doctor"]) == 1
    out = capsys.readouterr().out
    failed = [line for line in out.splitlines() if " FAIL " in line]
    assert len(failed) == 1 and failed[0].startswith("watsonx ") and world[3] in failed[0]


def test_the_same_world_answers_when_configured_right(
    standin: tuple[StandIn, Path], stubs: Stubs, tmp_path: Path
) -> None:
    """The control: the failures above come from the configuration, not from the setup."""
    server, ca = standin
    with serving(tmp_path, watsonx(server, ca)) as (app, channel, _):
        query = stubs.query_grpc.QueryServiceStub(channel)
        request = stubs.query.VectorQueryRequest(store_id=STORE, question=QUESTION, level=0.0)
        reply = query.VectorQuery(request, metadata=_metadata(app), timeout=30)
        assert reply.answer == server.reply and reply.model_id == MODEL
        assert report_generator(app) == []


def test_any_configuration_error_reaches_callers_as_unavailable(
    stubs: Stubs, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Not only the language model's: here the embedding model cannot be loaded when a question comes."""
    build_world(tmp_path).close()

    def unloadable(name: str) -> Any:
        raise ConfigurationError(f"embedding.model: cannot load {name!r} from /srv/models/private-build")

    app = build_app(settings_for(tmp_path), embedder_factory=unloadable)
    server = start_grpc(services_for(app, Metrics()), "127.0.0.1", 0)
    channel = grpc.insecure_channel(f"127.0.0.1:{server.port}")
    try:
        request = stubs.query.VectorQueryRequest(store_id=STORE, question=QUESTION, level=0.0)
        with caplog.at_level(logging.ERROR, logger="docqa.api"), pytest.raises(grpc.RpcError) as refused:
            stubs.query_grpc.QueryServiceStub(channel).VectorQuery(request, metadata=_metadata(app), timeout=30)
    finally:
        channel.close()
        server.stop(0)
        app.close()
    assert (refused.value.code(), refused.value.details()) == (
        grpc.StatusCode.UNAVAILABLE,
        "the service is unavailable",
    )
    assert "/srv/models/private-build" in caplog.text
