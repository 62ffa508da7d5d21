"""The fake OpenSearch scores ``match`` queries as Lucene's BM25 does, per shard or across shards (DFS).

Expected scores are computed here from the textbook formula in double precision (lengths up to 24 tokens,
which Lucene's one-byte norm keeps exactly), independently of ``tests/fakes_opensearch/bm25.py``.
"""

from __future__ import annotations

import math
import re
from typing import Any

import pytest
from opensearchpy.exceptions import RequestError

from tests.fakes_opensearch import NOT_MODELLED
from tests.fakes_opensearch.bm25 import byte4_to_int, int_to_byte4
from tests.integration.test_knn_fake import Start, client, knn_index, put, scores, start

__all__ = ["start"]  # the fixture, shared with test_knn_fake

DOCS = {
    "a": "The quick brown fox",
    "b": "the lazy dog sleeps",
    "c": "quick quick fox jumps over the lazy dog",
    "d": "nothing to see here",
}


def textbook(docs: dict[str, str], query: str, k1: float = 1.2, b: float = 0.75) -> dict[str, float]:
    bags = {i: re.findall(r"\w+", t.lower()) for i, t in docs.items()}
    average = sum(len(words) for words in bags.values()) / len(bags)
    found = {}
    for doc_id, words in bags.items():
        total = 0.0
        for term in re.findall(r"\w+", query.lower()):
            freq = words.count(term)
            if freq:
                n = sum(1 for other in bags.values() if term in other)
                idf = math.log(1 + (len(bags) - n + 0.5) / (n + 0.5))
                total += idf * freq / (freq + k1 * (1 - b + b * len(words) / average))
        if total:
            found[doc_id] = total
    return found


def _text_index(os_client: Any, name: str, shards: int = 1) -> None:
    knn_index(os_client, name, shards=shards, extra_fields={"text": {"type": "text"}})
    put(
        os_client, name, {i: {"text": t, "tag": "odd" if i in "ac" else "even", "chunk_id": i} for i, t in DOCS.items()}
    )


def _match(query: str, operator: str = "or", **extra: Any) -> dict[str, Any]:
    return {"match": {"text": {"query": query, "operator": operator, **extra}}}


def test_match_scores_are_lucene_bm25(start: Start) -> None:
    os_client = client(start())
    _text_index(os_client, "t")
    for query in ("quick fox", "lazy dog", "QUICK, brown!", "fox fox", "zebra"):
        answer = os_client.search(index="t", body={"query": _match(query)})
        expected = textbook(DOCS, query)
        assert set(scores(answer)) == set(expected), query
        for doc_id, score in scores(answer).items():
            assert score == pytest.approx(expected[doc_id], rel=1e-5), (query, doc_id)
        ranked = [hit["_id"] for hit in answer["hits"]["hits"]]
        assert ranked == sorted(expected, key=lambda i: -expected[i])


def test_operator_and_the_filter_and_no_tokens(start: Start) -> None:
    os_client = client(start())
    _text_index(os_client, "t")
    both = os_client.search(index="t", body={"query": _match("quick lazy", "and")})
    assert list(scores(both)) == ["c"]
    body = {"query": {"bool": {"must": [_match("lazy dog")], "filter": [{"term": {"tag": "even"}}]}}}
    filtered = scores(os_client.search(index="t", body=body))
    assert list(filtered) == ["b"] and filtered["b"] == pytest.approx(textbook(DOCS, "lazy dog")["b"], rel=1e-5)
    assert scores(os_client.search(index="t", body={"query": _match("?! ...")})) == {}


def test_statistics_are_per_shard_unless_dfs(start: Start) -> None:
    os_client = client(start())
    _text_index(os_client, "one")
    _text_index(os_client, "three", shards=3)
    single = scores(os_client.search(index="one", body={"query": _match("quick dog")}))
    dfs = scores(
        os_client.search(index="three", body={"query": _match("quick dog")}, search_type="dfs_query_then_fetch")
    )
    per_shard = scores(os_client.search(index="three", body={"query": _match("quick dog")}))
    assert dfs == pytest.approx(single, rel=1e-6)
    assert set(per_shard) == set(single) and per_shard != pytest.approx(single, rel=1e-6)


def test_deleted_documents_count_in_the_statistics_until_a_merge(start: Start) -> None:
    os_client = client(start())
    _text_index(os_client, "t")
    os_client.delete(index="t", id="d", refresh="true")
    answer = scores(os_client.search(index="t", body={"query": _match("fox")}))
    assert set(answer) == {"a", "c"}
    assert answer["a"] == pytest.approx(textbook(DOCS, "fox")["a"], rel=1e-5)  # d still counts in N and avgdl


def test_long_fields_use_the_one_byte_norm() -> None:
    assert [byte4_to_int(int_to_byte4(n)) for n in range(25)] == list(range(25))
    assert byte4_to_int(int_to_byte4(100)) == 96
    lengths = [byte4_to_int(int_to_byte4(n)) for n in range(1, 5000)]
    assert lengths == sorted(lengths) and all(length <= n for n, length in zip(range(1, 5000), lengths, strict=True))


def test_match_on_a_keyword_field_is_not_modelled(start: Start) -> None:
    os_client = client(start())
    _text_index(os_client, "t")
    with pytest.raises(RequestError) as raised:  # every shard fails: the server's search-phase wrapper
        os_client.search(index="t", body={"query": {"match": {"tag": "odd"}}})
    assert raised.value.error == "search_phase_execution_exception"
    assert NOT_MODELLED in str(raised.value.info)


@pytest.mark.parametrize(
    ("clause", "error"),
    [
        ({"match": {"text": {"query": "fox", "fuzziness": "AUTO"}}}, NOT_MODELLED),
        ({"match": {"text": {"query": "fox", "analyzer": "english"}}}, NOT_MODELLED),
        ({"match": {"text": {"query": "fox", "operator": "xor"}}}, "parsing_exception"),
        ({"match": {"text": {"query": "fox", "bogus": 1}}}, "parsing_exception"),
        ({"match": {"text": "fox", "tag": "x"}}, "parsing_exception"),
    ],
)
def test_what_the_fake_does_not_model_or_the_server_refuses(start: Start, clause: dict[str, Any], error: str) -> None:
    os_client = client(start())
    _text_index(os_client, "t")
    with pytest.raises(RequestError) as raised:
        os_client.search(index="t", body={"query": clause})
    assert raised.value.error == error
