"""Fusion of the dense and lexical rankings: properties that hold for any two lists (hypothesis)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acl.errors import InvalidArgument
from acl.model import Acl
from indexer.index import ChunkRecord, SearchHit
from service.query.fusion import RRF_K, fuse

DIM = 4
IDS = [f"c{i}" for i in range(12)]


def _record(chunk_id: str, vector: np.ndarray | None) -> ChunkRecord:
    return ChunkRecord(chunk_id, chunk_id, 0, "t", "T", "", (), 0, 1, Acl.of(["group:everyone"]), vector)


@dataclass(frozen=True)
class Lists:
    question: np.ndarray
    vectors: dict[str, np.ndarray]
    dense: list[SearchHit]
    lexical: list[SearchHit]

    def cosine(self, chunk_id: str) -> float:
        return float(np.clip(np.dot(self.question.astype(np.float64), self.vectors[chunk_id]), -1, 1))


def _unit(values: list[float]) -> np.ndarray:
    array = np.asarray(values, np.float32)
    return (array / np.linalg.norm(array)).astype(np.float32)


vectors = st.lists(st.floats(-1, 1, allow_nan=False, width=32), min_size=DIM, max_size=DIM).filter(
    lambda v: float(np.linalg.norm(v)) > 0.1
)


@st.composite
def lists(draw: st.DrawFn) -> Lists:
    question = _unit(draw(vectors))
    units = {chunk_id: _unit(draw(vectors)) for chunk_id in IDS}
    dense_ids = draw(st.lists(st.sampled_from(IDS), unique=True, max_size=8))
    lexical_ids = draw(st.permutations(draw(st.lists(st.sampled_from(IDS), unique=True, max_size=8))))
    dense = sorted(
        (SearchHit(_record(i, None), float(np.dot(question.astype(np.float64), units[i]))) for i in dense_ids),
        key=lambda h: (-h.score, h.chunk.chunk_id),
    )
    bm25 = sorted(draw(st.lists(st.floats(0.01, 30), min_size=len(lexical_ids), max_size=len(lexical_ids))))[::-1]
    lexical = [SearchHit(_record(i, units[i]), s) for i, s in zip(lexical_ids, bm25, strict=True)]
    return Lists(question, units, dense, lexical)


weights = st.floats(0.0, 1.0)
methods = st.sampled_from(["rrf", "weighted"])


def _ids(hits: list[SearchHit]) -> list[str]:
    return [h.chunk.chunk_id for h in hits]


@settings(max_examples=150, deadline=None)
@given(data=lists(), method=st.sampled_from(["rrf", "weighted", "dense", "lexical"]), weight=weights)
def test_every_chunk_once_and_every_score_a_cosine(data: Lists, method: str, weight: float) -> None:
    fused = fuse(method, data.dense, data.lexical, data.question, weight)
    ids = _ids(fused)
    assert len(ids) == len(set(ids))
    expected = {
        "rrf": set(_ids(data.dense)) | set(_ids(data.lexical)),
        "weighted": set(_ids(data.dense)) | set(_ids(data.lexical)),
        "dense": set(_ids(data.dense)),
        "lexical": set(_ids(data.lexical)),
    }[method]
    assert set(ids) == expected
    for hit in fused:
        assert hit.score == pytest.approx(data.cosine(hit.chunk.chunk_id), abs=1e-5)


@settings(max_examples=150, deadline=None)
@given(data=lists(), method=methods, weight=weights)
def test_a_chunk_first_in_both_lists_is_first(data: Lists, method: str, weight: float) -> None:
    if not data.dense or not data.lexical or data.dense[0].chunk.chunk_id != data.lexical[0].chunk.chunk_id:
        return
    if method == "weighted" and len({h.score for h in data.dense}) < len(data.dense):
        return  # two dense hits at the top score normalise to 1 both
    assert _ids(fuse(method, data.dense, data.lexical, data.question, weight))[0] == data.dense[0].chunk.chunk_id


@settings(max_examples=150, deadline=None)
@given(data=lists(), weight=st.floats(0.01, 0.99))
def test_rrf_keeps_a_chunk_that_ranks_higher_in_both_lists_ahead(data: Lists, weight: float) -> None:
    fused = _ids(fuse("rrf", data.dense, data.lexical, data.question, weight))
    dense, lexical = _ids(data.dense), _ids(data.lexical)
    for a in fused:
        for b in fused:
            in_both = a in dense and b in dense and a in lexical and b in lexical
            if in_both and dense.index(a) < dense.index(b) and lexical.index(a) < lexical.index(b):
                assert fused.index(a) < fused.index(b)


@settings(max_examples=100, deadline=None)
@given(data=lists())
def test_equal_weights_are_plain_reciprocal_rank_fusion(data: Lists) -> None:
    plain: dict[str, float] = {}
    for hits in (data.dense, data.lexical):
        for rank, hit in enumerate(hits, start=1):
            plain[hit.chunk.chunk_id] = plain.get(hit.chunk.chunk_id, 0.0) + 1.0 / (RRF_K + rank)
    expected = sorted(plain, key=lambda i: (-plain[i], -data.cosine(i), i))
    assert _ids(fuse("rrf", data.dense, data.lexical, data.question, 0.5)) == expected


@settings(max_examples=100, deadline=None)
@given(data=lists(), method=methods)
def test_weight_zero_is_the_dense_order_and_weight_one_the_lexical_order(data: Lists, method: str) -> None:
    dense_first = _ids(fuse(method, data.dense, data.lexical, data.question, 0.0))
    lexical_first = _ids(fuse(method, data.dense, data.lexical, data.question, 1.0))
    dense_scores = {h.chunk.chunk_id: h.score for h in data.dense}
    lexical_scores = {h.chunk.chunk_id: h.score for h in data.lexical}
    # The other list's hits may only tie at the bottom (weighted: a minimum normalises to 0, like a miss).
    if len(set(dense_scores.values())) == len(dense_scores):  # no tie to break by other means
        assert [i for i in dense_first if i in dense_scores] == _ids(data.dense)
    if len(set(lexical_scores.values())) == len(lexical_scores):
        assert [i for i in lexical_first if i in lexical_scores] == _ids(data.lexical)
    if method == "rrf":  # a miss scores 0, any rank more
        assert dense_first[: len(data.dense)] == _ids(data.dense)
        assert lexical_first[: len(data.lexical)] == _ids(data.lexical)


def test_dense_and_lexical_alone() -> None:
    question = _unit([1, 0, 0, 0])
    near, far = _unit([1, 0.1, 0, 0]), _unit([0, 1, 0, 0])
    dense = [SearchHit(_record("near", None), float(np.dot(question, near)))]
    lexical = [SearchHit(_record("far", far), 12.0), SearchHit(_record("near", near), 3.0)]
    assert _ids(fuse("dense", dense, lexical, question, 0.5)) == ["near"]
    only = fuse("lexical", [], lexical, question, 0.5)
    assert _ids(only) == ["far", "near"]
    assert only[0].score == pytest.approx(0.0, abs=1e-6) and only[1].score == pytest.approx(dense[0].score)


def test_duplicates_are_kept_once_and_a_lexical_hit_without_a_vector_is_dropped() -> None:
    question = _unit([1, 0, 0, 0])
    a = _unit([1, 1, 0, 0])
    dense = [SearchHit(_record("a", None), 0.7), SearchHit(_record("a", None), 0.7)]
    lexical = [SearchHit(_record("a", a), 2.0), SearchHit(_record("b", None), 1.0)]
    assert _ids(fuse("rrf", dense, lexical, question, 0.3)) == ["a"]
    assert fuse("rrf", dense, lexical, question, 0.3)[0].score == 0.7  # the dense score wins


@pytest.mark.parametrize(("method", "weight"), [("bm25", 0.3), ("rrf", 1.5), ("weighted", -0.1)])
def test_bad_method_or_weight_is_invalid(method: str, weight: float) -> None:
    with pytest.raises(InvalidArgument):
        fuse(method, [], [], _unit([1, 0, 0, 0]), weight)
