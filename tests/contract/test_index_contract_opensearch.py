"""The index contract against a live OpenSearch, whenever ``OPENSEARCH_URL`` is set.

Needs OpenSearch 2.19+ or 3.x with the k-NN plugin (the official image has
it). Besides the contract, ``OpenSearchChecks``: score calibration (cosine 1 /
0.5 / 0 / -1 through ``knn``, the server's exact path, ``exact`` and
``best_per_document``), a three-shard index with an empty shard, and writes in
quick succession with no refresh between them. Settings, all optional but the URL::

    OPENSEARCH_URL=https://localhost:9200     the cluster
    OPENSEARCH_USERNAME / OPENSEARCH_PASSWORD basic auth (or OPENSEARCH_API_KEY)
    OPENSEARCH_CA_CERTS=/path/root-ca.pem     CA bundle of the cluster's certificate
    OPENSEARCH_VERIFY=false                   skip the certificate check (throw-away local cluster only)
    OPENSEARCH_ENGINE=faiss                   HNSW engine (default lucene)

Each test works under its own random index prefix, and every index with that
prefix is deleted at teardown. This module may connect to the host of
``OPENSEARCH_URL`` (and loopback), nothing else.
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Iterator
from typing import Any, Literal, cast
from urllib.parse import urlsplit

import pytest

from indexer.index.port import Index
from tests.contract.index_contract import IndexContract
from tests.contract.opensearch_checks import MakeIndex, OpenSearchChecks, close_all

URL = os.environ.get("OPENSEARCH_URL", "")
VERIFY = os.environ.get("OPENSEARCH_VERIFY", "true").lower() not in ("0", "false", "no")

pytestmark = [
    pytest.mark.skipif(
        not URL,
        reason="OPENSEARCH_URL is not set: this suite needs a live OpenSearch 2.19+/3.x with the k-NN plugin "
        "(docs/production.md, section OpenSearch)",
    ),
    # Only when OPENSEARCH_VERIFY=false was asked for: the client then warns on every request.
    pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning"),
    pytest.mark.filterwarnings("ignore:Connecting to .* verify_certs=False is insecure"),
]


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Overrides the shared guard for this module: the OpenSearch host and loopback only."""
    allowed = {urlsplit(URL).hostname or "", "localhost", "::1"}
    original = socket.socket.connect

    def guarded(self: socket.socket, address: Any) -> Any:
        host = str(address[0]) if isinstance(address, tuple) else str(address)
        if self.family != socket.AF_UNIX and host not in allowed and not host.startswith("127."):
            try:
                resolved = {info[4][0] for info in socket.getaddrinfo(urlsplit(URL).hostname, None)}
            except OSError:
                resolved = set()
            if host not in resolved:
                raise RuntimeError(f"the OpenSearch contract suite may only connect to {URL} (not {host})")
        return original(self, address)

    monkeypatch.setattr(socket.socket, "connect", guarded)
    yield


class TestOpenSearchIndex(IndexContract, OpenSearchChecks):
    @pytest.fixture
    def make_index(self) -> Iterator[MakeIndex]:
        from indexer.index.opensearch.client import connect
        from indexer.index.opensearch.index import OpenSearchIndex, OpenSearchOptions
        from indexer.index.opensearch.mapping import HnswSettings

        engine = cast(Literal["faiss", "lucene"], os.environ.get("OPENSEARCH_ENGINE", "lucene"))
        prefix = f"docqa-contract-{uuid.uuid4().hex[:12]}-"
        opened: list[OpenSearchIndex] = []

        def make(**options: Any) -> OpenSearchIndex:
            settings: dict[str, Any] = {"refresh": "true", "backoff_s": 0.2, **options}
            index = connect(
                URL,
                username=os.environ.get("OPENSEARCH_USERNAME"),
                password=os.environ.get("OPENSEARCH_PASSWORD"),
                api_key=os.environ.get("OPENSEARCH_API_KEY"),
                ca_certs=os.environ.get("OPENSEARCH_CA_CERTS"),
                verify=VERIFY,
                timeout_s=60.0,
                options=OpenSearchOptions(hnsw=HnswSettings(engine=engine), index_prefix=prefix, **settings),
            )
            opened.append(index)
            return index

        yield make
        close_all(opened, prefix)

    @pytest.fixture
    def index(self, make_index: MakeIndex) -> Index:
        return make_index()
