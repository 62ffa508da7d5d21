"""The OpenSearch adapter over real HTTP, against osmem-server (an in-memory OpenSearch-compatible server).

osmem speaks the OpenSearch REST API for index creation with aliases and
mappings, bulk (index, delete, partial update), realtime ``_mget``, count,
search with ``term``/``terms``/``bool`` filters, sort and ``search_after``,
``_delete_by_query`` and index deletion. It refuses the ``knn`` query and
Painless scripts, so searches are covered by the k-NN fake
(``tests/fakes``, ``tests/integration/test_opensearch_knn_fake.py``), the
request-schema unit tests and the contract suite against a real OpenSearch
(``tests/contract/test_index_contract_opensearch.py``); here a refusal is
shown to surface as ``IndexUnavailable``.

Every test gets its own osmem clone (an empty cluster on its own loopback
port), closed at teardown; the server listens on 127.0.0.1 on a free port.
"""

from __future__ import annotations

import contextlib
import dataclasses
import http.server
import json
import logging
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest
from osmem_server import OsmemServer

from acl.errors import InvalidArgument, NotFound
from acl.model import Acl
from indexer.errors import IndexUnavailable
from indexer.index.filters import acl_filter, documents_filter
from indexer.index.opensearch.client import connect
from indexer.index.opensearch.index import ChunksRejected, OpenSearchIndex, OpenSearchOptions
from indexer.index.opensearch.mapping import MAPPING_VERSION, IndexFacts
from indexer.index.port import StoreSpec
from tests.contract.index_contract import ACL_DOCS, DIM, FILTER_CASES, chunk, random_vectors

ROOT = Path(__file__).resolve().parents[2]
STORE = "contract"


@contextlib.contextmanager
def osmem() -> Iterator[OsmemServer]:
    """An osmem-server process on 127.0.0.1 (a free port), stopped and reaped on exit."""
    started = OsmemServer.start(japanese=False)
    try:
        yield started
    finally:
        started.close()
        if started.process.stdout is not None:
            started.process.stdout.close()


@pytest.fixture(scope="module")
def server() -> Iterator[OsmemServer]:
    with osmem() as started:
        yield started


@pytest.fixture
def url(server: OsmemServer) -> Iterator[str]:
    with server.clone() as clone:
        yield clone.url


def adapter(url: str, **options: Any) -> OpenSearchIndex:
    settings: dict[str, Any] = {"refresh": "true", "backoff_s": 0.01, **options}
    return connect(url, timeout_s=5.0, options=OpenSearchOptions(**settings))


@pytest.fixture
def index(url: str) -> Iterator[OpenSearchIndex]:
    opened = adapter(url, bulk_batch=3)
    opened.ensure(StoreSpec(STORE, DIM))
    yield opened
    with contextlib.suppress(NotFound):
        opened.drop(STORE)
    opened.close()


def raw(index: OpenSearchIndex) -> Any:
    """The adapter's own client, to look at what is stored."""
    return index._client


# -- index creation --------------------------------------------------------------------------------------


def test_ensure_creates_the_index_with_its_mapping_once(index: OpenSearchIndex) -> None:
    name = index.index_name(STORE)
    (concrete,) = raw(index).indices.get(index=name)
    assert concrete == f"{name}.v{MAPPING_VERSION}"  # the store's name is an alias of the concrete index
    stored = raw(index).indices.get(index=name)[concrete]
    assert name in stored["aliases"]
    vector = stored["mappings"]["properties"]["embedding"]
    assert (vector["type"], vector["dimension"]) == ("knn_vector", DIM)
    assert vector["method"]["space_type"] == "cosinesimil" and vector["method"]["engine"] == "lucene"
    assert stored["mappings"]["properties"]["acl_allow"] == {"type": "keyword"}
    assert stored["settings"]["index"]["knn"] == "true"
    index.ensure(StoreSpec(STORE, DIM))
    with pytest.raises(InvalidArgument, match=f"'{name}'.*dimension is {DIM}, expected {DIM + 1}"):
        index.ensure(StoreSpec(STORE, DIM + 1))
    facts, problems = index.check_store(STORE)
    assert (facts.dimension, problems) == (DIM, [])


def test_another_engine_is_refused_not_reused(url: str, index: OpenSearchIndex) -> None:
    from indexer.index.opensearch.mapping import HnswSettings

    other = adapter(url, hnsw=HnswSettings(engine="faiss"))
    with pytest.raises(InvalidArgument, match="engine is 'lucene', expected 'faiss'"):
        other.ensure(StoreSpec(STORE, DIM))


def test_drop_and_unknown_stores(index: OpenSearchIndex) -> None:
    index.upsert(STORE, [chunk("a", 0, np.ones(DIM))])
    index.drop(STORE)
    for call in (lambda: index.count(STORE), lambda: index.drop(STORE), lambda: index.delete_document(STORE, "a")):
        with pytest.raises(NotFound):
            call()
    with pytest.raises(NotFound):
        index.upsert(STORE, [chunk("a", 0, np.ones(DIM))])


# -- bulk writes -------------------------------------------------------------------------------------------


def test_bulk_upsert_in_batches_replaces_each_document(index: OpenSearchIndex) -> None:
    vectors = random_vectors(9, seed=1)
    document = "handbook/vacation policy#2.md"  # '/', ' ' and '#' in the id
    index.upsert(
        STORE, [chunk(document, i, vectors[i]) for i in range(7)] + [chunk("b", i, vectors[7 + i]) for i in range(2)]
    )
    assert index.count(STORE) == 9  # written in batches of 3
    stored = raw(index).get(index=index.index_name(STORE), id=f"{document}#4")
    assert stored["_id"] == f"{document}#4" and stored["_source"]["document_id"] == document
    assert len(stored["_source"]["embedding"]) == DIM
    index.upsert(STORE, [chunk(document, i, vectors[i], text="new") for i in range(2)])
    assert index.count(STORE) == 4  # the document's 5 stale chunks were deleted by _id in the same bulk
    assert index.count(STORE, documents_filter([document])) == 2
    index.upsert(STORE, [chunk(document, i, vectors[i], text="new") for i in range(2)])  # idempotent
    assert index.count(STORE) == 4
    index.upsert(STORE, [])
    assert index.count(STORE) == 4


def test_a_rejected_chunk_is_reported_with_its_document_and_the_rest_is_written(index: OpenSearchIndex) -> None:
    vectors = random_vectors(4, seed=2)
    index.upsert(STORE, [chunk("bad", i, vectors[i]) for i in range(3)])  # an older, complete version
    out_of_range = dataclasses.replace(chunk("bad", 1, vectors[1]), start=2**40)  # 'integer' refuses it
    with pytest.raises(ChunksRejected) as caught:
        index.upsert(STORE, [chunk("good", 0, vectors[3]), chunk("bad", 0, vectors[0]), out_of_range])
    assert caught.value.document_ids == ("bad",)
    assert "mapper_parsing_exception" in caught.value.message
    assert index.count(STORE, documents_filter(["good"])) == 1
    assert index.count(STORE, documents_filter(["bad"])) == 0  # nothing half-written is left


def test_a_bad_vector_writes_nothing(index: OpenSearchIndex) -> None:
    good = chunk("a", 0, np.ones(DIM))
    with pytest.raises(InvalidArgument):
        index.upsert(
            STORE, [good, dataclasses.replace(chunk("a", 1, np.ones(DIM)), vector=np.ones(DIM + 1, dtype=np.float32))]
        )
    assert index.count(STORE) == 0


# -- filters, count, delete ----------------------------------------------------------------------------------


@pytest.fixture
def acl_index(index: OpenSearchIndex) -> OpenSearchIndex:
    vectors = random_vectors(10, seed=3)
    index.upsert(
        STORE,
        [
            chunk(doc, ordinal, vectors[2 * i + ordinal], allow=allow, deny=deny)
            for i, (doc, (allow, deny)) in enumerate(ACL_DOCS.items())
            for ordinal in (0, 1)
        ],
    )
    return index


def test_terms_filters_count_what_the_contract_expects(acl_index: OpenSearchIndex) -> None:
    for filter_, expected in FILTER_CASES:
        assert acl_index.count(STORE, filter_) == len(expected), filter_
    for principals, readable in (
        (["user:alice", "group:x", "group:everyone"], 2),
        (["user:bob"], 1),
        (["group:y"], 0),
        ([], 0),
    ):
        assert acl_index.count(STORE, acl_filter(principals)) == 2 * readable
    assert acl_index.count(STORE) == 10


def test_delete_document_deletes_its_chunks(acl_index: OpenSearchIndex) -> None:
    acl_index.delete_document(STORE, "a")
    acl_index.delete_document(STORE, "never-there")
    assert acl_index.count(STORE) == 8 and acl_index.count(STORE, documents_filter(["a"])) == 0


def test_what_osmem_refuses_surfaces_as_index_unavailable(acl_index: OpenSearchIndex) -> None:
    vector = np.ones(DIM, dtype=np.float32) / np.sqrt(DIM)
    with pytest.raises(IndexUnavailable, match=r"knn search .*unsupported_operation_exception"):
        acl_index.knn(STORE, vector, 3, acl_filter(["group:x"]))
    with pytest.raises(IndexUnavailable, match=r"exact search .*HTTP 400 search_phase_execution_exception"):
        acl_index.exact(STORE, vector, 3, acl_filter(["group:x"]))

    # An ACL change is a partial update of each chunk by _id: no script, no by-query.
    acl_index.set_document_acl(STORE, "a", Acl.of(["user:carol"]))
    assert acl_index.count(STORE, acl_filter(["group:x"])) == 2  # b only now
    assert acl_index.count(STORE, acl_filter(["user:carol"])) == 2


# -- failures over real HTTP ---------------------------------------------------------------------------


def test_a_stopped_server_is_unavailable_after_bounded_retries(caplog: pytest.LogCaptureFixture) -> None:
    with osmem() as own:
        index = adapter(own.url, max_retries=2, backoff_s=0.05)
        index.ensure(StoreSpec(STORE, DIM))
        index.upsert(STORE, [chunk("a", 0, np.ones(DIM))])
    with caplog.at_level(logging.WARNING, logger="docqa.index.opensearch"), pytest.raises(IndexUnavailable) as caught:
        index.count(STORE)
    assert caught.value.message.startswith(
        "index unavailable: OpenSearch count in docqa-contract failed after 3 attempt"
    )
    retries = [r for r in caplog.records if r.name == "docqa.index.opensearch"]
    assert len(retries) == 2 and "retry 1 of 2 in 0.05 s" in retries[0].getMessage()
    with pytest.raises(IndexUnavailable):
        index.upsert(STORE, [chunk("b", 0, np.ones(DIM))])
    index.close()


def test_ping_is_one_quick_attempt_for_readiness(caplog: pytest.LogCaptureFixture) -> None:
    with osmem() as own:
        index = adapter(own.url, max_retries=5, backoff_s=1.0)
        index.ping()  # up: no error
    with caplog.at_level(logging.WARNING, logger="docqa.index.opensearch"), pytest.raises(IndexUnavailable) as caught:
        index.ping()
    assert caught.value.message.startswith("index unavailable: OpenSearch GET / failed after 1 attempt(s): ")
    assert not [r for r in caplog.records if r.name == "docqa.index.opensearch"]  # no retry, no backoff
    index.close()


class _Flaky(http.server.BaseHTTPRequestHandler):
    """Answers ``_count`` like OpenSearch, after the statuses queued in ``faults``."""

    faults: ClassVar[list[int]] = []
    seen: ClassVar[list[str]] = []

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        type(self).seen.append(self.path)
        if type(self).faults:
            status = type(self).faults.pop(0)
            body = {"error": {"type": "es_rejected_execution_exception", "reason": "queue full"}, "status": status}
        else:
            status, body = 200, {"count": 42, "_shards": {"total": 1, "successful": 1, "skipped": 0, "failed": 0}}
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""


@pytest.fixture
def flaky() -> Iterator[type[_Flaky]]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Flaky)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _Flaky.faults, _Flaky.seen = [], []
    _Flaky.url = f"http://127.0.0.1:{server.server_address[1]}"  # type: ignore[attr-defined]
    yield _Flaky
    server.shutdown()
    server.server_close()


def test_429_and_503_are_retried_then_unavailable(flaky: Any) -> None:
    index = adapter(flaky.url, max_retries=3, backoff_s=0.01)
    index._remember(STORE, IndexFacts.parse("docqa-contract", {}))  # the stand-in only counts
    flaky.faults = [429, 503]
    assert index.count(STORE) == 42 and len(flaky.seen) == 3
    flaky.faults, flaky.seen = [429] * 10, []
    with pytest.raises(IndexUnavailable, match=r"after 4 attempt\(s\): HTTP 429 es_rejected_execution_exception"):
        index.count(STORE)
    assert len(flaky.seen) == 4


# -- the CLI with index.backend: opensearch -----------------------------------------------------------


class _KnnFront(http.server.BaseHTTPRequestHandler):
    """Forwards every request to osmem, whose plugin list it extends by the k-NN plugin: the CLI's start-up
    check refuses a server without it, and osmem stores, counts and filters as OpenSearch does all the same."""

    protocol_version = "HTTP/1.1"
    target: ClassVar[str] = ""

    def _forward(self) -> None:
        import http.client
        from urllib.parse import urlsplit

        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        target = urlsplit(type(self).target)
        connection = http.client.HTTPConnection(target.hostname or "", target.port, timeout=60)
        try:
            headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
            connection.request(self.command, self.path, body=body or None, headers=headers)
            answer = connection.getresponse()
            status, data, kind = answer.status, answer.read(), answer.getheader("content-type") or "application/json"
        finally:
            connection.close()
        if self.command == "GET" and self.path.startswith("/_cat/plugins") and status == 200:
            rows = [*json.loads(data), {"name": "osmem-node", "component": "opensearch-knn", "version": "3.8.0.0"}]
            data = json.dumps(rows).encode()
        self.send_response(status)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _forward

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""


@pytest.fixture
def knn_front(url: str) -> Iterator[str]:
    """osmem behind a front that lists the k-NN plugin."""
    handler = type("Front", (_KnnFront,), {"target": url})
    front = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    front.daemon_threads = True
    threading.Thread(target=front.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{front.server_address[1]}"
    front.shutdown()
    front.server_close()


def docqa(data_dir: Path, url: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "DOCQA_DATA_DIR": str(data_dir),
        "DOCQA_INDEX__BACKEND": "opensearch",
        "DOCQA_INDEX__OPENSEARCH__URL": url,
        "DOCQA_INDEX__OPENSEARCH__USERNAME": "docqa",
        "DOCQA_INDEX__OPENSEARCH__PASSWORD": "pw-never-shown-4711",
        "DOCQA_INDEX__OPENSEARCH__REFRESH": "true",
    }
    env.pop("DOCQA_CONFIG", None)
    result = subprocess.run(
        [sys.executable, "-m", "service.api.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=300,
    )
    assert "Traceback" not in result.stderr, result.stderr
    assert "pw-never-shown-4711" not in result.stdout + result.stderr
    return result


@pytest.mark.slow
def test_docqa_index_and_doctor_with_the_opensearch_backend(url: str, knn_front: str, tmp_path: Path) -> None:
    corpus = tmp_path / "acme"
    shutil.copytree(ROOT / "examples" / "acme", corpus)
    data = tmp_path / "data"
    refused = docqa(data, url, "index", str(corpus), "--store", "acme", "--quiet")
    assert refused.returncode == 8 and "the k-NN plugin (opensearch-knn) is not installed" in refused.stderr
    url, osmem_url = knn_front, url  # the CLI's start-up check passes; osmem stores and filters behind it
    first = docqa(data, url, "index", str(corpus), "--store", "acme", "--quiet")
    assert first.returncode == 0, first.stderr
    assert "7 indexed" in first.stdout
    stores = json.loads(docqa(data, url, "stores", "--json").stdout)
    (acme,) = stores
    index = adapter(url)
    try:
        assert index.count("acme") == acme["chunks"] > 0
        assert index.count("acme", acl_filter(["group:finance"])) == index.count(
            "acme", documents_filter(["finance/q3-results.md", "finance/budget-2027.txt"])
        )
        assert index.count("acme", acl_filter(["user:mallory", "group:finance"])) == 0  # deny wins in the index too
        again = docqa(data, url, "index", str(corpus), "--store", "acme", "--quiet")
        assert "0 indexed" in again.stdout and "7 unchanged" in again.stdout
        (corpus / "hr" / "salary-bands.md").unlink()
        removed = docqa(data, url, "index", str(corpus), "--store", "acme", "--quiet")
        assert "1 removed" in removed.stdout
        assert index.count("acme", documents_filter(["hr/salary-bands.md"])) == 0
    finally:
        index.close()
    doctor = docqa(data, osmem_url, "doctor")
    assert doctor.returncode == 1  # osmem has no k-NN plugin
    assert "opensearch reachable     ok    opensearch 3.8.0" in doctor.stdout
    assert "opensearch version       ok    2.19 or later: supported (engine lucene)" in doctor.stdout
    assert "k-NN plugin              FAIL  missing" in doctor.stdout
    assert "store acme               ok    index docqa-acme: dimension 384, lucene, cosinesimil" in doctor.stdout
    ask = docqa(data, url, "ask", "What was the revenue?", "--store", "acme", "--as", "alice", "--no-llm")
    assert ask.returncode == 6 and "unsupported_operation_exception" in ask.stderr  # UNAVAILABLE, no traceback
