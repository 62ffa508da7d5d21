"""The offline reranker: each feature moves the ranking the way it should, and the result is a permutation."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acl.model import Acl
from indexer.embedder import Embedder
from indexer.index import ChunkRecord, SearchHit
from service.generation.extractive import content_terms
from service.ranking.errors import RerankerUnavailable
from service.ranking.features import heading_text, terms
from service.ranking.offline import FEATURES, OfflineReranker, OfflineWeights
from tests.fakes_service import FakeEmbedder

ACL = Acl(allow=frozenset({"group:everyone"}))
ONLY = {name: 0.0 for name in FEATURES}


def hit(
    chunk_id: str,
    score: float,
    text: str = "Nothing in particular is said here.",
    *,
    title: str = "Handbook",
    headings: tuple[str, ...] = (),
    document: str | None = None,
) -> SearchHit:
    document_id = document or chunk_id.split("#")[0]
    chunk = ChunkRecord(chunk_id, document_id, 0, text, title, f"file:///{document_id}", headings, 0, len(text), ACL)
    return SearchHit(chunk, score)


def weights(**chosen: float) -> OfflineWeights:
    return OfflineWeights(**{**ONLY, **chosen})


def order(reranker: OfflineReranker, question: str, hits: list[SearchHit]) -> list[str]:
    vector = FakeEmbedder().embed_query(question)
    return [r.hit.chunk.chunk_id for r in reranker.rerank(question, vector, hits)]


QUESTION = "How many unused vacation days can be carried over?"


def test_a_matching_heading_lifts_a_chunk_above_a_slightly_closer_one() -> None:
    hits = [
        hit("parking#0", 0.52, headings=("Parking", "Visitor spaces")),
        hit("leave#0", 0.50, headings=("Vacation", "Unused vacation days")),
    ]
    assert order(OfflineReranker(FakeEmbedder(), weights=weights(dense=1.0)), QUESTION, hits) == [
        "parking#0",
        "leave#0",
    ]
    assert order(OfflineReranker(FakeEmbedder(), weights=weights(dense=1.0, heading=0.3)), QUESTION, hits) == [
        "leave#0",
        "parking#0",
    ]


def test_words_of_the_question_in_the_text_lift_a_chunk_and_rare_words_count_most() -> None:
    hits = [
        hit("a#0", 0.52, "Days off are requested in the portal. Days are counted in hours."),
        hit("b#0", 0.50, "Unused days may be carried over into the next year."),
        hit("c#0", 0.49, "Days of rest are listed below."),
    ]
    reranker = OfflineReranker(FakeEmbedder(), weights=weights(dense=1.0, overlap=0.3))
    assert order(reranker, QUESTION, hits)[0] == "b#0"
    features = reranker.features(QUESTION, FakeEmbedder().embed_query(QUESTION), hits)
    # "day" is in every candidate, so "a" (only that word) earns little; "b" has the rare ones too.
    assert features.overlap[1] > 0.5 > features.overlap[0] > 0
    assert features.overlap[0] == pytest.approx(features.overlap[2])


def test_words_of_the_question_in_the_title_lift_a_chunk() -> None:
    hits = [
        hit("a#0", 0.51, title="Travel expenses"),
        hit("b#0", 0.50, title="Vacation carry-over rules"),
    ]
    reranker = OfflineReranker(FakeEmbedder(), weights=weights(dense=1.0, title_overlap=0.3))
    assert order(reranker, QUESTION, hits) == ["b#0", "a#0"]


def test_a_document_with_several_strong_chunks_gets_a_bonus_on_every_chunk() -> None:
    hits = [
        hit("lone#0", 0.60),
        hit("policy#0", 0.58, document="policy"),
        hit("policy#1", 0.57, document="policy"),
        hit("policy#2", 0.55, document="policy"),
        hit("weak#0", 0.30),
    ]
    reranker = OfflineReranker(FakeEmbedder(), weights=weights(dense=1.0, document=0.3))
    assert order(reranker, QUESTION, hits)[:2] == ["policy#0", "policy#1"]
    document = reranker.features(QUESTION, FakeEmbedder().embed_query(QUESTION), hits).document
    assert document[1] == document[2] == document[3] > 0
    assert document[0] == document[4] == 0  # one chunk alone earns nothing


def test_the_sentence_feature_finds_the_answering_sentence_inside_a_chunk() -> None:
    answering = (
        "The policy applies to all staff in every office. "
        "Up to five unused vacation days may be carried over. "
        "Managers approve requests."
    )
    other = "Vacation requests are approved by managers in the portal. The portal opens at nine."
    hits = [hit("other#0", 0.52, other), hit("answer#0", 0.50, answering)]
    plain = OfflineReranker(FakeEmbedder(), weights=weights(dense=1.0))
    with_sentences = OfflineReranker(FakeEmbedder(), weights=weights(dense=1.0, sentence=0.5))
    assert order(plain, QUESTION, hits)[0] == "other#0"
    assert order(with_sentences, QUESTION, hits)[0] == "answer#0"


def test_default_weights_rank_the_answering_chunk_first() -> None:
    hits = [
        hit("parking#0", 0.53, "Visitors park in the east lot. Days with events fill it early.", title="Parking"),
        hit(
            "leave#3",
            0.50,
            "Up to five unused days may be carried over.",
            title="Vacation policy",
            headings=("Carrying over unused days",),
            document="leave",
        ),
        hit("leave#1", 0.47, "Vacation days accrue monthly.", title="Vacation policy", document="leave"),
    ]
    assert order(OfflineReranker(FakeEmbedder()), QUESTION, hits)[0] == "leave#3"


def test_heading_strings_are_embedded_once_in_one_batch_and_cached_within_bounds() -> None:
    embedder = FakeEmbedder()
    reranker = OfflineReranker(embedder, cache_size=2, weights=OfflineWeights(heading=0.3))
    hits = [hit(f"d{i}#0", 0.5, title="Same title") for i in range(5)] + [hit("x#0", 0.4, title="Other")]
    vector = embedder.embed_query(QUESTION)
    calls, embedded = embedder.calls, embedder.embedded
    reranker.rerank(QUESTION, vector, hits)
    assert (embedder.calls - calls, embedder.embedded - embedded) == (1, 2)
    reranker.rerank(QUESTION, vector, hits)
    assert embedder.calls - calls == 1  # both strings were cached
    reranker.rerank(QUESTION, vector, [hit("y#0", 0.5, title="Third"), hit("z#0", 0.4, title="Fourth")])
    assert len(reranker._cache) == 2


def test_few_new_headings_per_query_the_best_candidates_first_the_rest_count_as_average() -> None:
    embedder = FakeEmbedder()
    reranker = OfflineReranker(embedder, new_headings=2, weights=weights(dense=1.0, heading=1.0))
    vector = embedder.embed_query(QUESTION)
    hits = [
        hit("a#0", 0.50, title="Parking"),
        hit("b#0", 0.49, title="Canteen"),
        hit("c#0", 0.48, title="Unused vacation days"),
        hit("d#0", 0.47, title="Badges"),
    ]
    embedded = embedder.embedded
    first = reranker.features(QUESTION, vector, hits).heading
    assert embedder.embedded - embedded == 2  # "Parking" and "Canteen" only
    assert first[2] == first[3] == pytest.approx((first[0] + first[1]) / 2)
    second = reranker.features(QUESTION, vector, hits).heading  # the next query embeds the next two
    assert second[2] > max(second[0], second[1], second[3])
    assert reranker.rerank(QUESTION, vector, hits)[0].hit.chunk.chunk_id == "c#0"


def test_the_default_weights_embed_nothing() -> None:
    embedder = FakeEmbedder()
    vector = embedder.embed_query(QUESTION)
    calls = embedder.calls
    OfflineReranker(embedder).rerank(QUESTION, vector, [hit("a#0", 0.5, title="A"), hit("b#0", 0.4, title="B")])
    assert embedder.calls == calls  # heading and sentence are off: text evidence only


def test_heading_text_joins_title_and_headings_without_repeating_the_title() -> None:
    assert heading_text(hit("a#0", 0.5, title="Guide", headings=("Guide", "Install")).chunk) == "Guide › Install"
    assert heading_text(hit("a#0", 0.5, title="", headings=()).chunk) == ""


def test_each_store_model_gets_its_own_embedder_and_a_mismatched_vector_is_unavailable() -> None:
    asked: list[str] = []
    small, large = FakeEmbedder(dimension=32, model_name="small"), FakeEmbedder(dimension=64, model_name="large")

    def embedder_for(name: str) -> Embedder:
        asked.append(name)
        return {"small": small, "large": large}[name]

    reranker = OfflineReranker(embedder_for, model="large", weights=OfflineWeights(heading=0.3))
    hits = [hit("a#0", 0.5, title="A"), hit("b#0", 0.4, title="B")]
    reranker.for_model("small").rerank(QUESTION, small.embed_query(QUESTION), hits)
    assert asked == ["small"]
    with pytest.raises(RerankerUnavailable, match="dimensions"):
        reranker.rerank(QUESTION, small.embed_query(QUESTION), hits)


def test_no_hits_one_hit_and_unknown_scores() -> None:
    reranker = OfflineReranker(FakeEmbedder())
    vector = FakeEmbedder().embed_query(QUESTION)
    assert reranker.rerank(QUESTION, vector, []) == []
    (only,) = reranker.rerank(QUESTION, vector, [hit("a#0", math.nan)])
    assert only.hit.chunk.chunk_id == "a#0"
    two = reranker.rerank(QUESTION, vector, [hit("a#all", math.nan), hit("b#all", math.nan, "Unused vacation days.")])
    assert [r.hit.chunk.chunk_id for r in two] == ["b#all", "a#all"]
    assert all(math.isfinite(r.score) for r in two)


def test_weights_must_be_finite() -> None:
    with pytest.raises(ValueError, match="heading"):
        OfflineWeights(heading=math.inf)


WORDS = st.sampled_from(["vacation", "days", "unused", "carried", "parking", "portal", "salary", "the", "over"])


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.floats(-1, 1, allow_nan=False),
            st.lists(WORDS, max_size=8),
            st.lists(WORDS, max_size=3),
            st.integers(0, 3),
        ),
        max_size=12,
    ),
    st.lists(WORDS, min_size=1, max_size=6),
)
def test_the_result_is_a_permutation_best_first_ties_in_input_order(
    rows: list[tuple[float, list[str], list[str], int]], question_words: list[str]
) -> None:
    hits = [
        hit(f"d{doc}#{i}", score, " ".join(text) + ".", title=" ".join(title), document=f"d{doc}")
        for i, (score, text, title, doc) in enumerate(rows)
    ]
    question = " ".join(question_words)
    result = OfflineReranker(FakeEmbedder(), weights=OfflineWeights(sentence=0.2)).rerank(
        question, FakeEmbedder().embed_query(question), hits
    )
    assert sorted(r.hit.chunk.chunk_id for r in result) == sorted(h.chunk.chunk_id for h in hits)
    scores = [r.score for r in result]
    assert scores == sorted(scores, reverse=True)
    position = {h.chunk.chunk_id: i for i, h in enumerate(hits)}
    for a, b in itertools.pairwise(result):
        if a.score == b.score:
            assert position[a.hit.chunk.chunk_id] < position[b.hit.chunk.chunk_id]
    assert all(np.isfinite(scores))


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("aAbBeEsSdgy'- .,\n!?-1")), max_size=80))
def test_the_remembered_terms_are_the_extractive_answerers(text: str) -> None:
    assert terms(text) == content_terms(text)
