"""The query's rerank step: the reranker's order, the cosine scores kept, and the retrieval order when it fails."""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence
from pathlib import Path

import pytest

from acl.errors import ConfigurationError
from acl.model import Acl
from indexer.index import ChunkRecord, SearchHit
from indexer.index.port import Vector
from service.bootstrap import build_app
from service.config import RerankConfig, Settings, load_settings
from service.domain.store import Store
from service.query.context import QueryContext
from service.query.reranking import Reranking
from service.ranking.errors import RerankerUnavailable
from service.ranking.offline import OfflineReranker
from service.ranking.port import Reranked, Reranker, ranked
from tests.fakes_service import FakeEmbedder

ACL = Acl.of(["group:everyone"])
QUESTION = "How many unused vacation days can be carried over?"
VECTOR = FakeEmbedder().embed_query(QUESTION)


def hit(number: int, score: float) -> SearchHit:
    chunk = ChunkRecord(f"d{number}#0", f"d{number}", 0, f"text {number}", "T", "file:///d", (), 0, 6, ACL)
    return SearchHit(chunk, score)


HITS = [hit(1, 0.61), hit(2, 0.55), hit(3, 0.52)]


def context(model: str = "fake") -> QueryContext:
    store = Store(
        id="s", name="S", embedding_model=model, level=0.5, min_threshold=0.1, max_threshold=0.6, max_chunks=8
    )
    return QueryContext(store, QUESTION, None, frozenset({"user:u"}))


class Reverse(Reranker):
    """Ranks the last candidate first; remembers what it was shown and for which model."""

    def __init__(self) -> None:
        self.name = "reverse"
        self.seen: list[list[str]] = []
        self.models: list[str] = []

    def for_model(self, embedding_model: str) -> Reranker:
        self.models.append(embedding_model)
        return self

    def rerank(self, question: str, question_vector: Vector, hits: Sequence[SearchHit]) -> list[Reranked]:
        self.seen.append([h.chunk.chunk_id for h in hits])
        return ranked(hits, [float(i) for i in range(len(hits))])


class Down(Reranker):
    name = "down"

    def rerank(self, question: str, question_vector: Vector, hits: Sequence[SearchHit]) -> list[Reranked]:
        raise RerankerUnavailable("reranker unavailable: HTTP 503")


class Sloppy(Reranker):
    """Answers, but loses a candidate and repeats another."""

    name = "sloppy"

    def rerank(self, question: str, question_vector: Vector, hits: Sequence[SearchHit]) -> list[Reranked]:
        return [Reranked(hits[0], 1.0), Reranked(hits[0], 0.5), Reranked(hits[1], 0.1)]


def test_the_rerankers_order_with_the_original_cosine_scores_and_a_lap() -> None:
    reverse, ctx = Reverse(), context("all-MiniLM-L6-v2")
    hits, warning = Reranking(reverse).rerank(ctx, VECTOR, HITS)
    assert [h.chunk.chunk_id for h in hits] == ["d3#0", "d2#0", "d1#0"] and warning is None
    assert [h.score for h in hits] == [0.52, 0.55, 0.61]  # the threshold and relevance stay on the cosine
    assert hits[0] is HITS[2]
    assert reverse.seen == [["d1#0", "d2#0", "d3#0"]]  # exactly the (access-checked) candidates given
    assert reverse.models == ["all-MiniLM-L6-v2"]  # the store's embedding model
    assert "rerank" in ctx.clock.timings


@pytest.mark.parametrize(
    ("reranker", "warning"),
    [
        (Down(), "reranker unavailable: HTTP 503; sources are in retrieval order"),
        (Sloppy(), "reranker unavailable: it did not return each candidate once; sources are in retrieval order"),
    ],
)
def test_a_reranker_that_fails_leaves_the_retrieval_order_and_a_warning(reranker: Reranker, warning: str) -> None:
    ctx = context()
    hits, said = Reranking(reranker).rerank(ctx, VECTOR, HITS)
    assert hits == HITS and said == warning
    assert "rerank" in ctx.clock.timings


def test_no_reranker_or_nothing_to_order_costs_nothing() -> None:
    reverse = Reverse()
    for reranker, hits in ((None, HITS), (reverse, HITS[:1]), (reverse, [])):
        ctx = context()
        assert Reranking(reranker).rerank(ctx, VECTOR, hits) == (hits, None)
        assert "rerank" not in ctx.clock.timings
    assert reverse.seen == []


def test_ranked_puts_the_best_first_ties_and_nan_in_the_given_order() -> None:
    four = [*HITS, hit(4, 0.1)]
    result = ranked(four, [0.2, 0.9, math.nan, 0.2])
    assert [r.hit.chunk.chunk_id for r in result] == ["d2#0", "d1#0", "d4#0", "d3#0"]
    with pytest.raises(ValueError, match="3 scores for 4 hits"):
        ranked(four, [0.1, 0.2, 0.3])


# configuration and wiring ----------------------------------------------------------------------
pytestmark = pytest.mark.usefixtures("clean_env")


def test_the_default_is_the_offline_reranker_on_the_configured_embedding_model() -> None:
    app = build_app(Settings(), embedder_factory=lambda name: FakeEmbedder(model_name=name))
    reranker = app.reranker
    assert isinstance(reranker, OfflineReranker) and reranker.model == "all-MiniLM-L6-v2"
    assert app.reranker is reranker  # built once
    assert app.engine._retrieval._reranking.reranker is reranker


def test_kind_none_means_no_reranker_and_a_handed_in_one_wins() -> None:
    assert build_app(Settings(rerank=RerankConfig(kind="none"))).reranker is None
    reverse = Reverse()
    assert build_app(Settings(rerank=RerankConfig(kind="none")), reranker=reverse).reranker is reverse


@pytest.mark.parametrize(
    ("yaml_text", "expected"),
    [
        ("rerank:\n  kind: colbert\n", r"rerank\.kind"),
        ("rerank:\n  candidates: 0\n", r"rerank\.candidates"),
        ("rerank:\n  timeout_s: 0\n", r"rerank\.timeout_s"),
        ("rerank:\n  timeout_s: .nan\n", r"rerank\.timeout_s"),
        ("rerank:\n  model_id: 'bad model id!'\n", r"rerank\.model_id"),
        ("rerank:\n  kind: cross_encoder\n", r"needs rerank\.model_path"),
        ("rerank:\n  kind: cross_encoder\n  model_path: /nonexistent/model\n", r"rerank\.model_path .* not a folder"),
        ("rerank:\n  kind: watsonx\n", r"rerank\.kind watsonx connects with generator\.watsonx: watsonx\.url"),
        ("rerank:\n  truncate_input_tokens: 4\n", r"rerank\.truncate_input_tokens"),
        ("rerank:\n  weights: {}\n", r"rerank\.weights"),
    ],
)
def test_bad_rerank_settings_name_the_key(tmp_path: Path, yaml_text: str, expected: str) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(yaml_text)
    with pytest.raises(ConfigurationError, match=expected):
        load_settings(config)


def test_rerank_settings_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCQA_RERANK__KIND", "none")
    monkeypatch.setenv("DOCQA_RERANK__CANDIDATES", "50")
    settings = load_settings()
    assert (settings.rerank.kind, settings.rerank.candidates) == ("none", 50)


def test_doctor_names_the_configured_reranker(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from service.api.cli.doctor import cmd_doctor

    for kind, expected in (
        ("offline", "offline: the store's embedding model and text evidence"),
        ("none", "none: sources stay in retrieval order"),
    ):
        app = build_app(Settings(data_dir=tmp_path, rerank=RerankConfig(kind=kind)))
        try:
            cmd_doctor(argparse.Namespace(), app)
        finally:
            app.close()
        line = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("reranker "))
        assert " ok " in line and expected in line
