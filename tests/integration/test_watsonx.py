"""The watsonx adapter, through the real ibm-watsonx-ai SDK, against a stand-in server on 127.0.0.1 over TLS."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from acl.errors import ConfigurationError
from acl.model import Acl
from service.bootstrap import build_app
from service.config import GeneratorConfig, Settings, WatsonxConfig, load_settings
from service.domain.queries import NO_ANSWER_GENERATED, Caller, VectorQuery
from service.generation.errors import GeneratorUnavailable
from service.generation.prompt import ContextChunk, Prompt
from service.generation.watsonx import WatsonxGenerator, check
from service.query.engine import QueryEngine
from tests.integration.watsonx_standin import StandIn, count_tokens, make_certificate
from tests.unit.engine_world import STORE, make_world

ROOT = Path(__file__).resolve().parents[2]
MODEL = "ibm/granite-3-8b-instruct"
USER, API_KEY = "svc-docqa", "wx-api-key-4f9a1c77d2e8"
PROJECT = "7c1f0e52-1c1d-4c57-9d0c-2b1f1f3f6a10"
TEMPLATE = "Answer from the context.\n\nContext:\n{context}\n\nQuestion: {question}\nAnswer:"
#: Environment variables the SDK sets process-wide; restored after each test.
_SDK_ENV = ("WX_CLIENT_VERIFY_REQUESTS", "DEPLOYMENT_PLATFORM", "DEPLOYMENT_PRIVATE")


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return make_certificate(tmp_path_factory.mktemp("tls"))


@pytest.fixture(scope="module")
def server(certificate: tuple[Path, Path]) -> Iterator[StandIn]:
    with StandIn(*certificate) as standin:
        yield standin


@pytest.fixture
def standin(server: StandIn) -> Iterator[StandIn]:
    server.clear()
    server.users = {USER: API_KEY}
    server.projects = {PROJECT}
    server.spaces = set()
    server.models = {MODEL: 8192}
    server.reply = "Revenue rose by 12 percent [1]."
    yield server
    server.clear()


@pytest.fixture(autouse=True)
def _sdk_environment() -> Iterator[None]:
    """The SDK writes some settings into os.environ; leave the process as it was."""
    saved = {k: os.environ.get(k) for k in (*_SDK_ENV, "WATSONX_MAX_RETRIES", "WATSONX_DELAY_TIME")}
    for key in ("WATSONX_MAX_RETRIES", "WATSONX_DELAY_TIME", "WATSONX_RETRY_STATUS_CODES"):
        os.environ.pop(key, None)
    yield
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


def config_for(standin: StandIn, certificate: tuple[Path, Path], **overrides: Any) -> WatsonxConfig:
    values: dict[str, Any] = {
        "url": standin.url,
        "username": USER,
        "api_key": API_KEY,
        "project_id": PROJECT,
        "model_id": MODEL,
        "ca_bundle": certificate[0],
        "timeout_s": 2.0,
        "max_retries": 2,
        "delay_time_s": 0.05,
        "max_new_tokens": 50,
        "context_window": 8192,
    }
    values.update(overrides)
    return WatsonxConfig(**values)


@pytest.fixture
def make(standin: StandIn, certificate: tuple[Path, Path]) -> Iterator[Any]:
    made: list[WatsonxGenerator] = []

    def _make(**overrides: Any) -> WatsonxGenerator:
        generator = WatsonxGenerator(config_for(standin, certificate, **overrides))
        made.append(generator)
        return generator

    yield _make
    for generator in made:
        generator.close()


def prompt(*texts: str, question: str = "How did revenue change?") -> Prompt:
    chunks = tuple(ContextChunk(i + 1, f"d{i + 1}", f"Doc {i + 1}", t, 0.9 - i / 10) for i, t in enumerate(texts))
    return Prompt(question=question, chunks=chunks, template=TEMPLATE, model_id="extractive")


GENERATION = "/ml/v1/text/generation"
STREAM = "/ml/v1/text/generation_stream"


# answers ------------------------------------------------------------------------
def test_normal_answer_has_text_token_counts_stop_reason_and_model(standin: StandIn, make: Any) -> None:
    generator = make()
    assert standin.requests == []  # nothing happens until the first answer
    asked = prompt("Revenue in the third quarter rose by 12 percent.")
    completion = generator.generate(asked)
    assert completion.text == "Revenue rose by 12 percent [1]."
    assert completion.model_id == MODEL and completion.stop_reason == "eos_token"
    assert completion.input_tokens == count_tokens(asked.render())
    assert completion.output_tokens == count_tokens(completion.text)
    assert completion.used_citations == (1,)
    (sent,) = standin.calls(GENERATION)
    assert sent.body["input"] == asked.render()
    assert sent.body["model_id"] == MODEL and sent.body["project_id"] == PROJECT
    assert sent.body["parameters"]["max_new_tokens"] == 50
    assert "version" in sent.query
    # Connected once: a second answer makes one request only.
    before = len(standin.requests)
    generator.generate(asked)
    assert len(standin.requests) == before + 1


def test_sdk_path_is_the_documented_one(standin: StandIn, make: Any) -> None:
    make().generate(prompt("Revenue rose."))
    paths = [r.path for r in standin.requests]
    assert paths == [
        "/ml/wml_services/v2/version",
        "/icp4d-api/v1/authorize",
        f"/v2/projects/{PROJECT}",
        "/ml/v1/foundation_model_specs",
        GENERATION,
    ]


def test_a_bearer_token_needs_no_authentication_request(standin: StandIn, make: Any) -> None:
    token = standin.issue_token()
    generator = make(api_key=None, username=None, token=token)
    assert generator.generate(prompt("Revenue rose.")).text
    assert standin.calls("/icp4d-api/v1/authorize") == []


def test_streaming_yields_pieces_that_make_the_answer(standin: StandIn, make: Any) -> None:
    pieces = list(make().stream(prompt("Revenue rose by 12 percent.")))
    assert len(pieces) > 1
    assert "".join(pieces) == standin.reply
    assert len(standin.calls(STREAM)) == 1 and standin.calls(GENERATION) == []


def test_a_store_model_id_wins_over_the_configured_one(standin: StandIn, make: Any) -> None:
    standin.models["meta-llama/llama-3-3-70b-instruct"] = 8192
    asked = Prompt("q?", prompt("text").chunks, TEMPLATE, "meta-llama/llama-3-3-70b-instruct")
    assert make().generate(asked).model_id == "meta-llama/llama-3-3-70b-instruct"


def test_stand_in_chat_is_what_the_sdk_expects(standin: StandIn, certificate: tuple[Path, Path]) -> None:
    """The stand-in's chat endpoint, read by the SDK's own chat call."""
    import ssl

    import httpx
    from ibm_watsonx_ai import APIClient, Credentials
    from ibm_watsonx_ai.foundation_models import ModelInference

    context = ssl.create_default_context(cafile=str(certificate[0]))
    with httpx.Client(verify=context, timeout=5) as client:
        credentials = Credentials(url=standin.url, username=USER, api_key=API_KEY, verify=str(certificate[0]))
        api = APIClient(
            credentials,
            project_id=PROJECT,
            httpx_client=client,
            async_httpx_client=httpx.AsyncClient(verify=context),
        )
        model = ModelInference(model_id=MODEL, api_client=api, max_retries=0)
        reply = model.chat(messages=[{"role": "user", "content": "hello"}])
    assert reply["choices"][0]["message"]["content"] == standin.reply


# the token budget -----------------------------------------------------------------
def test_budget_leaves_out_the_lowest_chunks_so_the_model_accepts_the_prompt(standin: StandIn, make: Any) -> None:
    standin.models[MODEL] = 650  # DocQA's system part and the document tags take ~240 of it
    generator = make(context_window=650, max_new_tokens=50)
    w = make_world(max_chunks=4)
    paragraphs = [
        f"Revenue report part {i}: revenue grew in region {i}. " + " ".join(["sales", "rose", f"r{i}"] * 30)
        for i in range(4)
    ]
    w.add("report.md", paragraphs, Acl.of(["group:everyone"]))
    engine = QueryEngine(repository=w.repo, index=w.index, embedder_for=lambda _: w.embedder, generator=generator)
    everything = engine.ask(Caller("bob"), VectorQuery(STORE, "revenue report", level=0, perform_llm_query=False))
    assert len(everything.chunks) == 4
    answer = engine.ask(Caller("bob"), VectorQuery(STORE, "revenue report", level=0))
    assert answer.generation_error is None and answer.answer == standin.reply
    (sent,) = standin.calls(GENERATION)
    assert 1 <= len(answer.chunks) < 4
    assert all(c.text in sent.body["input"] for c in answer.chunks)  # the chunks listed were sent, whole
    left_out = [c for c in everything.chunks if c.chunk_id not in {a.chunk_id for a in answer.chunks}]
    assert left_out and all(c.text not in sent.body["input"] for c in left_out)
    assert min(c.score or 0.0 for c in answer.chunks) >= max(c.score or 0.0 for c in left_out)
    assert count_tokens(sent.body["input"]) + 50 <= 650
    # Without the budget the same context is refused by the model: the budget is what made it fit.
    full = Prompt("revenue report", prompt(*paragraphs).chunks, TEMPLATE, "extractive")
    with pytest.raises(GeneratorUnavailable, match="HTTP 400"):
        generator.generate(full)


def test_the_prompt_sent_holds_only_chunks_the_caller_can_read(standin: StandIn, make: Any) -> None:
    w = make_world()
    w.access.add_member("group:finance", "user:alice", "test")
    w.add("q3.md", ["Revenue in the third quarter was 48 million euros."], Acl.of(["group:finance"]))
    w.add("memo.md", ["Revenue targets for the third quarter were shared with all staff."], Acl.of(["group:everyone"]))
    engine = QueryEngine(repository=w.repo, index=w.index, embedder_for=lambda _: w.embedder, generator=make())
    question = VectorQuery(STORE, "revenue third quarter", level=0)
    bob = engine.ask(Caller("bob"), question)
    assert {c.document_id for c in bob.chunks} == {"memo.md"}
    sent = standin.calls(GENERATION)[-1].body["input"]
    assert "48 million" not in sent and "Q3.MD" not in sent and "shared with all staff" in sent
    engine.ask(Caller("alice"), question)
    assert "48 million" in standin.calls(GENERATION)[-1].body["input"]


# faults ---------------------------------------------------------------------------
def test_429_then_success(standin: StandIn, make: Any) -> None:
    standin.fail(GENERATION, status=429, times=2)
    completion = make(max_retries=2).generate(prompt("Revenue rose."))
    assert completion.text == standin.reply
    assert len(standin.calls(GENERATION)) == 3


@pytest.mark.parametrize("status", [500, 503])
@pytest.mark.parametrize("streaming", [False, True])
def test_5xx_exhausted_is_generator_unavailable_within_the_budget(
    standin: StandIn, make: Any, status: int, streaming: bool
) -> None:
    generator = make(max_retries=2, delay_time_s=0.05)
    generator.generate(prompt("warm up"))  # connect first: time only the answer
    standin.clear()
    standin.fail(STREAM if streaming else GENERATION, status=status, times=100)
    started = time.monotonic()
    with pytest.raises(GeneratorUnavailable) as raised:
        if streaming:
            list(generator.stream(prompt("Revenue rose.")))
        else:
            generator.generate(prompt("Revenue rose."))
    elapsed = time.monotonic() - started
    assert raised.value.message == f"language model unavailable: HTTP {status} after 3 attempts"
    assert len(standin.calls(STREAM if streaming else GENERATION)) == 3  # 1 + max_retries, no hidden retries
    assert elapsed >= 0.05 + 0.10  # the SDK backed off by the configured delay_time (0.05 s, then 0.1 s)


def test_read_timeout_is_generator_unavailable(standin: StandIn, make: Any) -> None:
    generator = make(timeout_s=0.5, max_retries=0)
    generator.generate(prompt("warm up"))
    standin.fail(GENERATION, delay_s=3.0)
    with pytest.raises(GeneratorUnavailable, match=r"no reply within 0\.5 s"):
        generator.generate(prompt("Revenue rose."))  # the stand-in would have answered after 3 s


def test_stream_timeout_is_generator_unavailable(standin: StandIn, make: Any) -> None:
    generator = make(timeout_s=0.5, max_retries=0)
    standin.fail(STREAM, delay_s=3.0)
    with pytest.raises(GeneratorUnavailable, match="no reply within"):
        list(generator.stream(prompt("Revenue rose.")))


def test_dropped_connection_is_generator_unavailable(standin: StandIn, make: Any) -> None:
    generator = make()
    generator.generate(prompt("warm up"))
    standin.fail(GENERATION, drop=True)
    with pytest.raises(GeneratorUnavailable, match="connection dropped"):
        generator.generate(prompt("Revenue rose."))
    assert generator.generate(prompt("again")).text == standin.reply  # and the next call works


def test_a_stream_cut_mid_answer_is_generator_unavailable_after_its_first_pieces(standin: StandIn, make: Any) -> None:
    standin.reply = "one two three four five six seven eight"
    standin.fail(STREAM, cut_after=3)
    generator = make()
    received: list[str] = []
    with pytest.raises(GeneratorUnavailable, match="connection dropped"):
        for piece in generator.stream(prompt("Revenue rose.")):
            received.append(piece)
    assert "".join(received) == "one two three "  # the first pieces arrived, the rest never did
    (cut,) = standin.streams
    assert cut.sent == 3 and cut.total == 8
    assert "".join(generator.stream(prompt("again"))) == standin.reply  # the next stream is whole


def test_server_down_is_generator_unavailable(standin: StandIn, make: Any) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens there once closed
    generator = make(url=f"https://127.0.0.1:{port}")
    with pytest.raises(GeneratorUnavailable, match="cannot connect"):
        generator.generate(prompt("Revenue rose."))


def test_engine_answers_with_sources_when_the_llm_fails(standin: StandIn, make: Any) -> None:
    w = make_world()
    w.add("memo.md", ["Revenue targets for the third quarter were shared with all staff."], Acl.of(["group:everyone"]))
    engine = QueryEngine(repository=w.repo, index=w.index, embedder_for=lambda _: w.embedder, generator=make())
    standin.fail(GENERATION, status=503, times=100)
    answer = engine.ask(Caller("bob"), VectorQuery(STORE, "revenue third quarter", level=0))
    assert answer.answer == NO_ANSWER_GENERATED
    assert answer.generation_error == "language model unavailable: HTTP 503 after 3 attempts"
    assert [c.document_id for c in answer.chunks] == ["memo.md"]


# configuration errors ------------------------------------------------------------------
@pytest.mark.parametrize(
    "overrides",
    [
        {"api_key": "wrong-key-000"},
        {"username": "nobody"},
        {"api_key": None, "username": None, "token": "aaa.bbb.ccc"},
    ],
    ids=["bad-api-key", "bad-username", "bad-token"],
)
def test_bad_credentials_are_a_clear_configuration_error(make: Any, overrides: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError, match="rejected the credentials") as raised:
        make(**overrides).generate(prompt("Revenue rose."))
    assert "wrong-key-000" not in raised.value.message and "aaa.bbb.ccc" not in raised.value.message
    assert raised.value.__cause__ is None


def test_unknown_model_is_a_configuration_error(make: Any) -> None:
    with pytest.raises(ConfigurationError, match="'ibm/no-such-model' is not offered"):
        make(model_id="ibm/no-such-model").generate(prompt("Revenue rose."))


def test_unknown_project_is_a_configuration_error(make: Any) -> None:
    with pytest.raises(ConfigurationError, match="project_id"):
        make(project_id="no-such-project").generate(prompt("Revenue rose."))


def test_deployment_space_instead_of_project(standin: StandIn, make: Any) -> None:
    standin.spaces = {"space-1"}
    assert make(project_id=None, space_id="space-1").generate(prompt("Revenue rose.")).text == standin.reply
    assert standin.calls(GENERATION)[-1].body["space_id"] == "space-1"


def test_untrusted_certificate_is_refused_and_checks_stay_on(make: Any) -> None:
    from ibm_watsonx_ai._wrappers.httpx import GlobalHttpxSettings

    with pytest.raises(ConfigurationError, match="certificate"):
        make(ca_bundle=None).generate(prompt("Revenue rose."))
    # The SDK's fallback would have switched verification off for the whole process.
    assert GlobalHttpxSettings.verify is not False
    assert os.environ.get("WX_CLIENT_VERIFY_REQUESTS") == "True"


def test_api_key_without_username_outside_ibm_cloud(make: Any) -> None:
    with pytest.raises(ConfigurationError, match="username is required"):
        make(username=None).generate(prompt("Revenue rose."))


# secrets -------------------------------------------------------------------------------
def test_keys_and_tokens_never_reach_logs_reprs_errors_or_doctor(
    standin: StandIn, make: Any, certificate: tuple[Path, Path], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    bearer = standin.issue_token()
    secrets = [API_KEY, bearer]
    texts: list[str] = []
    generator = make()
    generator.generate(prompt("Revenue rose."))
    secrets.extend(standin.tokens)  # the tokens the SDK was issued
    texts.append(repr(generator))
    config = config_for(standin, certificate)
    texts += [repr(config), str(config), repr(Settings(generator=GeneratorConfig(backend="watsonx", watsonx=config)))]
    texts.append(str(Settings(generator=GeneratorConfig(backend="watsonx", watsonx=config)).model_dump()))
    standin.fail(GENERATION, status=503, times=100)
    with pytest.raises(GeneratorUnavailable) as unavailable:
        generator.generate(prompt("Revenue rose."))
    texts.append(str(unavailable.value))
    for overrides in ({"api_key": API_KEY + "x"}, {"api_key": None, "username": None, "token": bearer + "x"}):
        with pytest.raises(ConfigurationError) as rejected:
            make(**overrides).generate(prompt("Revenue rose."))
        texts.append(str(rejected.value))
    settings = Settings(generator=GeneratorConfig(backend="watsonx", watsonx=config))
    texts += [f"{name} {ok} {detail}" for name, ok, detail in check(settings)]
    texts += [record.getMessage() for record in caplog.records]
    texts.append(caplog.text)
    leaked = [s for s in secrets for t in texts if s in t]
    assert leaked == []


def test_errors_carry_no_prompt_text(standin: StandIn, make: Any, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)  # ours, the SDK's, httpx's
    standin.fail(GENERATION, status=500, times=100)
    with pytest.raises(GeneratorUnavailable) as raised:
        make().generate(prompt("The secret merger with Initech closes on Friday."))
    assert "Initech" not in str(raised.value) and "Initech" not in caplog.text


# doctor and wiring -----------------------------------------------------------------------
def settings_with(config: WatsonxConfig) -> Settings:
    return Settings(generator=GeneratorConfig(backend="watsonx", watsonx=config))


def test_doctor_check_reports_credentials_and_model(standin: StandIn, certificate: tuple[Path, Path]) -> None:
    good = check(settings_with(config_for(standin, certificate)))
    assert [(name, ok) for name, ok, _ in good] == [("watsonx credentials", True), ("watsonx model", True)]
    assert "8192" in good[1][2]
    bad_model = check(settings_with(config_for(standin, certificate, model_id="ibm/gone")))
    assert [ok for _, ok, _ in bad_model] == [True, False] and "ibm/gone" in bad_model[1][2]
    too_big = check(settings_with(config_for(standin, certificate, context_window=16384)))
    assert too_big[1][1] is False and "16384" in too_big[1][2]
    bad_key = check(settings_with(config_for(standin, certificate, api_key="nope")))
    assert bad_key == [("watsonx credentials", False, bad_key[0][2])] and "credentials" in bad_key[0][2]
    assert check(Settings()) == [("generator", True, "extractive answers (offline, no language model)")]


def test_bootstrap_picks_watsonx_without_connecting(standin: StandIn, certificate: tuple[Path, Path]) -> None:
    app = build_app(settings_with(config_for(standin, certificate)))
    generator = app.generator
    assert isinstance(generator, WatsonxGenerator) and generator.context_tokens == 8192 - 50
    assert standin.requests == []
    generator.close()


def test_importing_the_adapter_imports_no_sdk() -> None:
    code = "import sys, service.generation.watsonx, service.bootstrap; print('ibm_watsonx_ai' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert result.stdout.strip() == "False", result.stderr


# configuration -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("yaml_text", "expected"),
    [
        ("generator:\n  backend: watsonx\n", "watsonx.url is required"),
        ("generator:\n  backend: watsonx\n  watsonx:\n    url: http://x\n", "must start with https://"),
        ("generator:\n  backend: watsonx\n  watsonx:\n    url: https://x\n", "one of watsonx.api_key"),
        ("generator:\n  backend: watsonx\n  watsonx:\n    url: https://x\n    token: t\n", "project_id"),
        (
            "generator:\n  backend: watsonx\n  watsonx:\n    url: https://x\n    token: t\n    project_id: p\n",
            "watsonx.model_id is required",
        ),
        (
            "generator:\n  backend: watsonx\n  watsonx:\n    url: https://x\n    token: t\n    project_id: p\n"
            "    space_id: s\n    model_id: m\n",
            "exactly one of",
        ),
        ("generator:\n  watsonx:\n    timeout_s: 0\n", "generator.watsonx.timeout_s"),
        ("generator:\n  backend: openai\n", "generator.backend"),
    ],
)
def test_configuration_names_what_is_missing(tmp_path: Path, yaml_text: str, expected: str) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(yaml_text)
    with pytest.raises(ConfigurationError, match=expected):
        load_settings(path, data_dir=tmp_path)


def test_secrets_come_from_the_environment_and_stay_hidden(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in {
        "DOCQA_GENERATOR__BACKEND": "watsonx",
        "DOCQA_GENERATOR__WATSONX__URL": "https://us-south.ml.cloud.ibm.com",
        "DOCQA_GENERATOR__WATSONX__API_KEY": API_KEY,
        "DOCQA_GENERATOR__WATSONX__PROJECT_ID": PROJECT,
        "DOCQA_GENERATOR__WATSONX__MODEL_ID": MODEL,
    }.items():
        monkeypatch.setenv(key, value)
    settings = load_settings(None, data_dir=tmp_path)
    watsonx = settings.generator.watsonx
    assert watsonx.api_key is not None and watsonx.api_key.get_secret_value() == API_KEY
    assert API_KEY not in repr(settings) and API_KEY not in str(settings.model_dump())


def test_readyz_fails_on_a_wrong_model_id_and_logs_why(
    standin: StandIn, certificate: tuple[Path, Path], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from starlette.testclient import TestClient

    from service.api.graphql.context import GraphQLServices
    from service.api.grpc.server import services_for
    from service.api.http import build_http_app
    from service.observability.metrics import Metrics

    def ready(model_id: str) -> tuple[int, object]:
        settings = Settings(
            data_dir=tmp_path / model_id.replace("/", "-"),
            generator=GeneratorConfig(backend="watsonx", watsonx=config_for(standin, certificate, model_id=model_id)),
        )
        app = build_app(settings)
        try:
            services = services_for(app, Metrics())
            http = build_http_app(GraphQLServices(app, services.authenticator, services.queries, services.metrics))
            with TestClient(http) as client:
                reply = client.get("/readyz")
            return reply.status_code, reply.json()
        finally:
            app.close()

    assert ready(MODEL) == (200, {"status": "ready"})
    with caplog.at_level("WARNING", logger="docqa.http"):
        assert ready("ibm/gone") == (503, {"status": "unavailable", "failing": "generator"})
    assert "ibm/gone" in caplog.text  # the operator reads why; the prober only learns what


# conversations: the condense prompt --------------------------------------------------
def test_a_follow_up_is_condensed_by_the_model_from_the_earlier_questions_only(standin: StandIn, make: Any) -> None:
    from service.history.rewrite import CondensingRewriter

    standin.reply = "Standalone question: How do I drop a tablespace? [1]"
    rewriter = CondensingRewriter(make())
    earlier = ["How do I create a tablespace on another disk?"]
    assert rewriter.rewrite(earlier, "How do I remove it?", MODEL) == "How do I drop a tablespace?"
    [call] = standin.calls(GENERATION)
    assert "How do I create a tablespace on another disk?" in call.body["input"]
    assert "Follow-up question: How do I remove it?" in call.body["input"]
    assert rewriter.rewrite([], "How do I remove it?", MODEL) == "How do I remove it?"  # nothing earlier: no call
    assert len(standin.calls(GENERATION)) == 1


def test_a_failing_model_falls_back_to_the_offline_rewrite(standin: StandIn, make: Any) -> None:
    from service.history.rewrite import CondensingRewriter, offline_rewrite

    rewriter = CondensingRewriter(make(max_retries=0))
    standin.fail(GENERATION, status=503, times=10)
    earlier = ["How do I create a tablespace on another disk?"]
    assert rewriter.rewrite(earlier, "How do I remove it?", MODEL) == offline_rewrite(earlier, "How do I remove it?")
    standin.clear()
    standin.reply = ""
    assert rewriter.rewrite(earlier, "and then?", MODEL) == offline_rewrite(earlier, "and then?")
