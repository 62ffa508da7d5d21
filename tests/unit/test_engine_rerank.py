"""The rerank step inside a query: only readable, passing chunks reach it; its order is the answer's; a reranker
that is down leaves the fused order and a warning, never an error."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from acl.model import Acl
from indexer.index import SearchHit
from indexer.index.port import Vector
from service.domain.queries import Caller, MultiDocumentQuery, VectorQuery
from service.query.engine import QueryEngine
from service.ranking.errors import RerankerUnavailable
from service.ranking.port import Reranked, Reranker, ranked
from tests.unit.engine_world import STORE, World, make_world

pytestmark = pytest.mark.unit

EVERYONE = Acl(allow=frozenset({"group:everyone"}))
SECRET = Acl(allow=frozenset({"user:alice"}))
QUESTION = "vacation days carried over"


class Reverse(Reranker):
    """Puts the last candidate first; remembers every chunk it was shown."""

    name = "reverse"

    def __init__(self) -> None:
        self.seen: list[str] = []

    def rerank(self, question: str, question_vector: Vector, hits: Sequence[SearchHit]) -> list[Reranked]:
        self.seen += [h.chunk.chunk_id for h in hits]
        return ranked(hits, [float(i) for i in range(len(hits))])


class Down(Reranker):
    name = "down"

    def rerank(self, question: str, question_vector: Vector, hits: Sequence[SearchHit]) -> list[Reranked]:
        raise RerankerUnavailable("reranker unavailable: HTTP 503")


def world(reranker: Reranker) -> World:
    w = make_world(level=0.0, max_chunks=2)
    w.add("a", ["vacation days carried over to next year", "vacation days are counted in January"], EVERYONE)
    w.add("b", ["unused vacation days carried over need approval"], EVERYONE)
    # In the index copy everyone may read it; the authoritative ACL says only alice.
    w.add("secret", ["vacation days carried over secretly for executives"], SECRET, index_acl=EVERYONE)
    w.engine = QueryEngine(
        repository=w.repo, index=w.index, embedder_for=lambda _: w.embedder, generator=w.generator, reranker=reranker
    )
    return w


def test_the_reranker_orders_readable_candidates_only_and_k_is_kept_after_it() -> None:
    reverse = Reverse()
    w = world(reverse)
    answer = w.engine.ask(Caller("bob"), VectorQuery(STORE, QUESTION, perform_llm_query=False))
    assert "secret#0" not in reverse.seen and len(reverse.seen) == 3
    # The reverse of the fused order, cut to k = 2 after the rerank; the scores are still cosines.
    assert [c.chunk_id for c in answer.chunks] == reverse.seen[::-1][:2]
    assert all(c.score is not None and -1.0 <= c.score <= 1.0 for c in answer.chunks)
    assert "rerank" in answer.timings_ms and answer.warnings == ()
    scoped = w.engine.ask(Caller("bob"), MultiDocumentQuery(STORE, QUESTION, ("a", "b"), perform_llm_query=False))
    assert {c.document_id for c in scoped.chunks} <= {"a", "b"}


def test_a_reranker_that_is_down_leaves_the_fused_order_and_says_so() -> None:
    plain = world(Reverse()).ask("bob", VectorQuery(STORE, QUESTION, perform_llm_query=False))
    w = world(Down())
    answer = w.ask("bob", VectorQuery(STORE, QUESTION))
    assert answer.answer and not answer.no_relevant_document
    assert [c.chunk_id for c in answer.chunks] != [] and answer.warnings
    assert answer.warnings[0] == "reranker unavailable: HTTP 503; sources are in retrieval order"
    assert "secret" not in answer.warnings[0] and "secret" not in (answer.answer or "")
    del plain
