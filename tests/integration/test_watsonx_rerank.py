"""The watsonx reranker, through the real ibm-watsonx-ai SDK (``Rerank``), against the stand-in server over TLS."""

from __future__ import annotations

import logging
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from acl.errors import ConfigurationError
from acl.model import Acl
from indexer.index import ChunkRecord, SearchHit
from service.bootstrap import build_app
from service.config import GeneratorConfig, RerankConfig, Settings, WatsonxConfig, load_settings
from service.query.context import QueryContext
from service.query.reranking import Reranking
from service.ranking.build import check
from service.ranking.errors import RerankerUnavailable
from service.ranking.watsonx import WatsonxReranker
from tests.integration import test_watsonx as wx
from tests.integration.watsonx_standin import StandIn
from tests.unit.engine_world import STORE, make_world

# The generator tests' fixtures: the stand-in over TLS, and the SDK's environment restored after each test.
certificate, server, standin, _sdk_environment = wx.certificate, wx.server, wx.standin, wx._sdk_environment
config_for, API_KEY, PROJECT = wx.config_for, wx.API_KEY, wx.PROJECT

RERANK = "/ml/v1/text/rerank"
MODEL = "cross-encoder/ms-marco-minilm-l-12-v2"
ACL = Acl.of(["group:everyone"])
QUESTION = "How many unused vacation days can be carried over?"
VECTOR = np.ones(4, dtype=np.float32) / 2  # a cross-encoder reads the text, not the vector


def hit(number: int, text: str, score: float, title: str = "Handbook", headings: tuple[str, ...] = ()) -> SearchHit:
    chunk = ChunkRecord(f"d{number}#0", f"d{number}", 0, text, title, f"file:///d{number}", headings, 0, 9, ACL)
    return SearchHit(chunk, score)


HITS = [
    hit(1, "The cafeteria opens at noon.", 0.61),
    hit(2, "Up to five unused vacation days may be carried over.", 0.55, "Leave", ("Vacation", "Carry-over")),
    hit(3, "Vacation requests go through the portal.", 0.52),
]


def rerank_config(**overrides: Any) -> RerankConfig:
    return RerankConfig(**{"kind": "watsonx", "model_id": MODEL, "timeout_s": 2.0, **overrides})


@pytest.fixture
def make(standin: StandIn, certificate: tuple[Path, Path]) -> Iterator[Any]:
    made: list[WatsonxReranker] = []

    def _make(watsonx: WatsonxConfig | None = None, **overrides: Any) -> WatsonxReranker:
        reranker = WatsonxReranker(rerank_config(**overrides), watsonx or config_for(standin, certificate))
        made.append(reranker)
        return reranker

    yield _make
    for reranker in made:
        reranker.close()


def ids(ranked: list[Any]) -> list[str]:
    return [r.hit.chunk.chunk_id for r in ranked]


def test_reranks_every_candidate_once_with_the_models_scores(standin: StandIn, make: Any) -> None:
    reranker = make()
    assert standin.requests == []  # nothing happens until the first rerank
    ranked = reranker.rerank(QUESTION, VECTOR, HITS)
    assert ids(ranked) == ["d2#0", "d3#0", "d1#0"]
    assert ranked[0].score > ranked[1].score > ranked[2].score
    assert [r.hit for r in ranked] == [HITS[1], HITS[2], HITS[0]]  # the hits themselves, cosines untouched
    (sent,) = standin.calls(RERANK)
    assert "version" in sent.query
    assert sent.body["model_id"] == MODEL and sent.body["query"] == QUESTION
    assert sent.body["inputs"][1] == {"text": "Leave › Vacation › Carry-over\n" + HITS[1].chunk.text}
    assert sent.body["parameters"] == {
        "truncate_input_tokens": 512,
        "return_options": {"top_n": 3, "inputs": False, "query": False},
    }
    assert sent.body["project_id"] == PROJECT
    before = len(standin.requests)
    reranker.rerank(QUESTION, VECTOR, HITS)
    assert len(standin.requests) == before + 1  # connected once


def test_long_chunks_are_cut_to_the_models_limit(standin: StandIn, make: Any) -> None:
    long = hit(4, "word " * 5000, 0.5)
    make(truncate_input_tokens=64).rerank(QUESTION, VECTOR, [long, HITS[1]])
    (sent,) = standin.calls(RERANK)
    assert sent.body["parameters"]["truncate_input_tokens"] == 64
    assert len(sent.body["inputs"][0]["text"]) <= 64 * 8


def test_no_candidates_no_request(standin: StandIn, make: Any) -> None:
    assert make().rerank(QUESTION, VECTOR, []) == []
    assert standin.requests == []


@pytest.mark.parametrize("status", [500, 503, 429])
def test_an_http_error_is_unavailable_at_once_without_retries(standin: StandIn, make: Any, status: int) -> None:
    reranker = make()
    reranker.rerank(QUESTION, VECTOR, HITS)  # connected
    standin.clear()
    standin.fail(RERANK, status=status, times=10)
    with pytest.raises(RerankerUnavailable) as raised:
        reranker.rerank(QUESTION, VECTOR, HITS)
    assert raised.value.message == f"reranker unavailable: HTTP {status}"
    assert len(standin.calls(RERANK)) == 1


def test_a_slow_model_is_unavailable_after_the_rerank_timeout(standin: StandIn, make: Any) -> None:
    reranker = make(timeout_s=0.5)
    reranker.rerank(QUESTION, VECTOR, HITS)
    standin.fail(RERANK, delay_s=3.0)
    with pytest.raises(RerankerUnavailable, match=r"no reply within 0\.5 s"):
        reranker.rerank(QUESTION, VECTOR, HITS)


def test_a_dropped_connection_is_unavailable_and_the_next_call_works(standin: StandIn, make: Any) -> None:
    reranker = make()
    reranker.rerank(QUESTION, VECTOR, HITS)
    standin.fail(RERANK, drop=True)
    with pytest.raises(RerankerUnavailable, match="connection dropped"):
        reranker.rerank(QUESTION, VECTOR, HITS)
    assert ids(reranker.rerank(QUESTION, VECTOR, HITS))[0] == "d2#0"


def test_garbage_instead_of_json_is_unavailable(standin: StandIn, make: Any) -> None:
    standin.fail(RERANK, body=b"<html>502 Bad Gateway</html>")
    with pytest.raises(RerankerUnavailable, match="reranker unavailable: unexpected reply"):
        make().rerank(QUESTION, VECTOR, HITS)


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ({"model_id": MODEL, "results": [{"index": 0, "score": 0.9}]}, "ranks 1 of 3 candidates"),
        ({"model_id": MODEL, "results": [{"index": i, "score": 0.5} for i in (0, 0, 1)]}, "malformed reply"),
        ({"model_id": MODEL, "results": [{"index": i, "score": 0.5} for i in (0, 1, 7)]}, "malformed reply"),
        ({"model_id": MODEL, "results": [{"index": i, "score": "high"} for i in (0, 1, 2)]}, "malformed reply"),
        ({"model_id": MODEL, "results": [{"index": True, "score": 1}, {"index": 1}, {}]}, "malformed reply"),
        ({"model_id": MODEL}, "malformed reply"),
        ([1, 2, 3], "unexpected reply|malformed reply"),
    ],
)
def test_a_reply_that_does_not_rank_every_candidate_once_is_unavailable(
    standin: StandIn, make: Any, reply: Any, reason: str
) -> None:
    standin.rerank_reply = reply
    try:
        with pytest.raises(RerankerUnavailable, match=reason):
            make().rerank(QUESTION, VECTOR, HITS)
    finally:
        standin.rerank_reply = None


def test_an_unknown_model_or_rejected_credentials_are_unavailable_with_a_short_message(
    standin: StandIn, make: Any, certificate: tuple[Path, Path], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="docqa.rerank")
    for reranker in (make(model_id="cross-encoder/gone"), make(config_for(standin, certificate, api_key="nope"))):
        with pytest.raises(RerankerUnavailable) as raised:
            reranker.rerank(QUESTION, VECTOR, HITS)
        assert raised.value.message == "reranker unavailable: misconfigured (docqa doctor says why)"
    assert "rerank.model_id" in caplog.text and "credentials" in caplog.text  # the operator learns why


def test_the_query_keeps_the_retrieval_order_and_says_why(standin: StandIn, make: Any) -> None:
    world = make_world()
    ctx = QueryContext(world.repo.get_store(STORE), QUESTION, None, frozenset({"group:everyone"}))
    reranking = Reranking(make())
    hits, warning = reranking.rerank(ctx, world.embedder.embed_query(QUESTION), HITS)
    assert [h.chunk.chunk_id for h in hits] == ["d2#0", "d3#0", "d1#0"] and warning is None
    standin.fail(RERANK, status=500)
    hits, warning = reranking.rerank(ctx, world.embedder.embed_query(QUESTION), HITS)
    assert hits == HITS
    assert warning == "reranker unavailable: HTTP 500; sources are in retrieval order"
    assert "rerank" in ctx.clock.timings


def test_secrets_and_chunk_text_never_reach_errors_logs_or_doctor(
    standin: StandIn, make: Any, certificate: tuple[Path, Path], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    secret_text = hit(9, "The merger with Initech closes on Friday.", 0.5)
    texts: list[str] = []
    for fault in ({"status": 500}, {"body": b"not json"}):
        standin.fail(RERANK, **fault)  # type: ignore[arg-type]
        with pytest.raises(RerankerUnavailable) as raised:
            make().rerank(QUESTION, VECTOR, [secret_text, HITS[0]])
        texts.append(str(raised.value))
    settings = Settings(rerank=rerank_config(), generator=GeneratorConfig(watsonx=config_for(standin, certificate)))
    texts += [f"{name} {ok} {detail}" for name, ok, detail in check(settings)]
    texts += [caplog.text, repr(make())]
    secrets = [API_KEY, *standin.tokens]
    assert [s for s in secrets for t in texts if s in t] == []
    assert not any("Initech" in t for t in texts)
    assert not any(standin.url in t for t in texts[:2])  # the query's warning carries no address


def test_doctor_says_which_reranker_and_whether_watsonx_answers(
    standin: StandIn, certificate: tuple[Path, Path]
) -> None:
    def settings_with(**overrides: Any) -> Settings:
        return Settings(
            rerank=rerank_config(**overrides.pop("rerank", {})),
            generator=GeneratorConfig(watsonx=config_for(standin, certificate, **overrides)),
        )

    good = check(settings_with())
    assert [(name, ok) for name, ok, _ in good] == [("reranker", True), ("watsonx reranker", True)]
    assert MODEL in good[1][2]
    gone = check(settings_with(rerank={"model_id": "cross-encoder/gone"}))
    assert gone[1][1] is False and "rerank.model_id" in gone[1][2]
    refused = check(settings_with(api_key="nope"))
    assert refused[1][1] is False and "credentials" in refused[1][2]
    assert check(Settings()) == [
        ("reranker", True, "offline: the store's embedding model and text evidence (no extra model)")
    ]
    assert check(Settings(rerank=RerankConfig(kind="none")))[0][2] == "none: sources stay in retrieval order"


def test_bootstrap_builds_the_configured_reranker_without_connecting(
    standin: StandIn, certificate: tuple[Path, Path]
) -> None:
    settings = Settings(rerank=rerank_config(), generator=GeneratorConfig(watsonx=config_for(standin, certificate)))
    app = build_app(settings)
    assert isinstance(app.reranker, WatsonxReranker) and app.reranker.name == f"watsonx:{MODEL}"
    assert standin.requests == []
    app.close()


def test_importing_the_adapter_imports_no_sdk() -> None:
    code = "import sys, service.ranking.watsonx, service.ranking.build; print('ibm_watsonx_ai' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], cwd=wx.ROOT, capture_output=True, text=True, timeout=60)
    assert result.stdout.strip() == "False", result.stderr


@pytest.mark.usefixtures("clean_env")
def test_configuration_needs_generator_watsonx_connection_for_kind_watsonx(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text("rerank:\n  kind: watsonx\n")
    with pytest.raises(ConfigurationError, match=r"rerank\.kind watsonx connects with generator\.watsonx: .*url"):
        load_settings(config)
