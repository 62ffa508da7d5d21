"""GraphQL resolvers run on ``server.graphql_workers`` threads, so that many questions are answered at once.

asyncio's default executor has min(32, CPUs + 4) threads: six on a 2-core machine, which capped the
questions in flight (and what the question batcher could join) at six whatever the load. Each test
holds N questions inside the embedder on a barrier of N parties: they pass only if N resolvers run
at the same time; a pool too small leaves the barrier short and it breaks.
"""

from __future__ import annotations

import json
import threading
import urllib.request
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from acl.model import Acl
from service.bootstrap import App, build_app
from tests.fakes_service import FakeEmbedder
from tests.integration.server_world import QUESTION, STORE, on_servers, settings_for, token

QUERY = (
    f'query Q($q: String!) {{ vectorQuery(storeId: "{STORE}", question: $q, performLlmQuery: false) {{ queryId }} }}'
)


class BarrierEmbedder(FakeEmbedder):
    """Once armed, every question waits until ``parties`` questions are inside the embedder at once."""

    def __init__(self) -> None:
        super().__init__()
        self.barrier: threading.Barrier | None = None

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        if self.barrier is not None:
            self.barrier.wait()
        return super().embed_documents(texts)


def ask_all(url: str, bearer: str, count: int) -> list[dict[str, object]]:
    def ask(_: int) -> dict[str, object]:
        body = json.dumps({"query": QUERY, "variables": {"q": QUESTION}}).encode()
        request = urllib.request.Request(
            url, body, {"Content-Type": "application/json", "Authorization": f"Bearer {bearer}"}
        )
        with urllib.request.urlopen(request, timeout=60) as reply:
            payload: dict[str, object] = json.loads(reply.read())
            return payload

    with ThreadPoolExecutor(count) as clients:
        return list(clients.map(ask, range(count)))


def world(data_dir: Path, workers: int | None) -> tuple[App, BarrierEmbedder]:
    embedder = BarrierEmbedder()
    server = {} if workers is None else {"graphql_workers": workers}
    app = build_app(settings_for(data_dir, server=server), embedder_factory=lambda _: embedder)
    app.ingestor(STORE).upsert_bytes(
        "handbook", b"Everyone gets 25 days of paid vacation leave.", "text/plain", acl=Acl.of(["group:everyone"])
    )
    return app, embedder


@pytest.mark.parametrize(("workers", "parties"), [(None, 12), (10, 10)])
def test_as_many_questions_run_at_once_as_there_are_graphql_workers(
    tmp_path: Path, workers: int | None, parties: int
) -> None:
    app, embedder = world(tmp_path, workers)
    embedder.barrier = threading.Barrier(parties, timeout=30)
    try:
        with on_servers(app, with_grpc=False) as served:
            replies = ask_all(served.graphql_url, token(app, "bob"), parties)
    finally:
        app.close()
    assert all("errors" not in reply for reply in replies), replies
    assert not embedder.barrier.broken


def test_a_pool_smaller_than_the_questions_makes_them_wait_their_turn(tmp_path: Path) -> None:
    """With 2 workers, 4 questions cannot all be inside at once: the barrier of 4 breaks (the test's
    counter-proof), and the questions still get a typed error or an answer, never a hang."""
    app, embedder = world(tmp_path, 2)
    embedder.barrier = threading.Barrier(4, timeout=2)
    try:
        with on_servers(app, with_grpc=False) as served:
            ask_all(served.graphql_url, token(app, "bob"), 4)
    finally:
        app.close()
    assert embedder.barrier.broken
