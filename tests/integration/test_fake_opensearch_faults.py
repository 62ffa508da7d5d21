"""The k-NN fake's injected faults (``fake.fail``), and the OpenSearch adapter meeting them over real HTTP.

The soak (``bench/soak``, ``--index opensearch-fake``) fails the fake this way under load; here each fault is
shown once: what the client sees, what the fake applied, and that ``heal()`` ends it.
"""

from __future__ import annotations

import http.client
import json
import threading
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest

from indexer.errors import IndexUnavailable
from indexer.index.opensearch.client import connect
from indexer.index.opensearch.index import OpenSearchIndex, OpenSearchOptions
from indexer.index.port import StoreSpec
from tests.contract.index_contract import DIM, STORE, chunk, random_vectors
from tests.fakes_opensearch.opensearch_knn import FakeOpenSearch

pytestmark = pytest.mark.integration


@pytest.fixture
def fake() -> Iterator[FakeOpenSearch]:
    with FakeOpenSearch.start(version="2.19.1", refresh_interval_s=0.2) as started:
        yield started


@pytest.fixture
def index(fake: FakeOpenSearch) -> Iterator[OpenSearchIndex]:
    adapter = connect(
        fake.url, timeout_s=5.0, options=OpenSearchOptions(refresh="true", backoff_s=0.01, search_timeout_s=0.5)
    )
    adapter.ensure(StoreSpec(STORE, DIM))
    yield adapter
    adapter.close()


def _request(fake: FakeOpenSearch, method: str, path: str, body: bytes = b"") -> tuple[int, dict[str, str], bytes]:
    address = urlsplit(fake.url)
    connection = http.client.HTTPConnection(address.hostname or "", address.port, timeout=10)
    try:
        connection.request(method, path, body=body, headers={"Content-Type": "application/x-ndjson"})
        reply = connection.getresponse()
        return reply.status, {k.lower(): v for k, v in reply.getheaders()}, reply.read()
    finally:
        connection.close()


def test_a_status_fault_answers_an_opensearch_error_applies_nothing_and_is_used_up(fake: FakeOpenSearch) -> None:
    fault = fake.fail("/docqa-x", status=429, headers={"Retry-After": "1"})
    status, headers, body = _request(fake, "PUT", "/docqa-x")
    assert status == 429 and headers["retry-after"] == "1"
    assert json.loads(body)["error"]["type"] == "rejected_execution_exception"
    assert fault.times == 0
    assert _request(fake, "HEAD", "/docqa-x")[0] == 404  # the index was not created
    assert _request(fake, "PUT", "/docqa-x")[0] == 200  # the fault is used up


def test_a_dropped_bulk_was_applied_and_its_reply_cut_half_way(fake: FakeOpenSearch) -> None:
    assert _request(fake, "PUT", "/docqa-y")[0] == 200
    fake.fail("/_bulk", drop=True)
    bulk = b'{"index":{"_index":"docqa-y","_id":"a"}}\n{"text":"applied"}\n'
    with pytest.raises((http.client.IncompleteRead, http.client.RemoteDisconnected, ConnectionError)):
        _request(fake, "POST", "/_bulk?refresh=true", bulk)
    status, _, body = _request(fake, "GET", "/docqa-y/_doc/a")
    assert status == 200 and json.loads(body)["_source"] == {"text": "applied"}


def test_the_adapter_retries_a_cut_bulk_and_keeps_each_chunk_once(fake: FakeOpenSearch, index: OpenSearchIndex) -> None:
    vectors = random_vectors(6, seed=3)
    fake.fail("/_bulk", drop=True, times=2)
    index.upsert(STORE, [chunk("doc", i, vectors[i]) for i in range(6)])
    assert index.count(STORE) == 6
    assert len([r for r in fake.requests if r.path.endswith("/_bulk")]) == 3  # two cut, the third answered


@pytest.mark.parametrize("how", [{"status": 503}, {"status": 429}, {"delay_s": 30.0}], ids=["503", "429", "hang"])
def test_until_healed_the_adapter_gives_index_unavailable_then_answers(
    fake: FakeOpenSearch, index: OpenSearchIndex, how: dict[str, Any]
) -> None:
    fault = fake.fail("", times=10**9, **how)
    started = time.monotonic()
    with pytest.raises(IndexUnavailable, match="failed after 4 attempt"):
        index.count(STORE)
    assert time.monotonic() - started < 10  # a hang costs the search timeout per attempt, not the delay
    assert 10**9 - fault.times == 4  # one attempt and the three retries, each met by the fault
    fake.heal()
    assert index.count(STORE) == 0


def test_heal_lets_a_held_request_go_at_once(fake: FakeOpenSearch) -> None:
    fake.fail("/", delay_s=60.0)
    answered: list[int] = []
    held = threading.Thread(target=lambda: answered.append(_request(fake, "GET", "/")[0]))
    started = time.monotonic()
    held.start()
    time.sleep(0.3)
    assert not answered
    fake.heal()
    held.join(timeout=10)
    assert answered == [200] and time.monotonic() - started < 5


def test_bad_faults_are_refused(fake: FakeOpenSearch) -> None:
    with pytest.raises(ValueError, match="4xx or 5xx"):
        fake.fail(status=200)
    with pytest.raises(ValueError, match="times >= 1"):
        fake.fail(times=0)
