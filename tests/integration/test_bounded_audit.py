"""A rejected 15 MB request leaves an audit row of a few kilobytes: counts, the first ids, each cut short.

A real gRPC server on 127.0.0.1 that accepts 16 MB messages; the row is read
back from the SQLite settings database itself.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from acl.model import Acl
from service.api.grpc.server import GrpcServer, services_for, start_grpc
from service.api.grpc.stubs import load
from service.bootstrap import App, build_app
from service.config import Settings
from service.observability.metrics import Metrics
from service.usecases.audit import AUDIT_DOCUMENT_IDS, AUDIT_ID_CHARS
from tests.fakes_service import FakeEmbedder
from tests.integration.server_world import AUDIENCE, ISSUER, QUESTION, SECRET, STORE, bearer


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[App, GrpcServer, grpc.Channel, Path]]:
    data_dir = tmp_path_factory.mktemp("audit")
    settings = Settings(
        data_dir=data_dir,
        auth={"hs256_secret": SECRET, "issuer": ISSUER, "audience": AUDIENCE},
        server={"grpc_port": 0, "http_port": 0, "max_message_bytes": 16 * 1024 * 1024},
    )
    app = build_app(settings, embedder_factory=lambda _: FakeEmbedder())
    app.ingestor(STORE).upsert_bytes(
        "handbook", b"25 days of paid vacation leave.", "text/plain", acl=Acl.of(["group:everyone"])
    )
    server = start_grpc(services_for(app, Metrics()), "127.0.0.1", 0)
    channel = grpc.insecure_channel(f"127.0.0.1:{server.port}")
    yield app, server, channel, data_dir
    channel.close()
    server.stop(0)
    app.close()


def _rows(data_dir: Path) -> list[tuple[Any, ...]]:
    with sqlite3.connect(data_dir / "settings.sqlite") as db:
        return db.execute(
            "SELECT user_id, store_id, document_ids, chunk_ids, timings_ms, outcome, document_count,"
            " length(user_id) + length(store_id) + length(document_ids) + length(chunk_ids) + length(timings_ms)"
            " FROM query_audit ORDER BY seq"
        ).fetchall()


def test_a_rejected_15_mb_request_leaves_a_small_audit_row(world: Any) -> None:
    app, _, channel, data_dir = world
    stubs = load()
    ids = [f"doc-{i:05d}-" + "x" * 7_500 for i in range(2_000)]  # 15 MB of document ids
    request = stubs.query.MultiDocumentQueryRequest(store_id=STORE, question=QUESTION, document_ids=ids)
    assert request.ByteSize() > 15_000_000
    query = stubs.query_grpc.QueryServiceStub(channel)
    with pytest.raises(grpc.RpcError) as info:
        query.MultiDocumentQuery(request, metadata=bearer(app, "mallory"), timeout=60)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    huge_store = stubs.query.VectorQueryRequest(store_id="s" * 1_000_000, question=QUESTION)
    with pytest.raises(grpc.RpcError) as info:
        query.VectorQuery(huge_store, metadata=bearer(app, "mallory"), timeout=60)
    # The message echoes the caller's store id, cut short: it still fits a gRPC status (16 KiB at most).
    assert info.value.code() == grpc.StatusCode.NOT_FOUND
    assert info.value.details().startswith("store 'sss") and len(info.value.details()) <= 1000

    (user, store, _, chunks, _, outcome, count, size), (_, long_store, *_, small) = _rows(data_dir)
    assert (user, store, outcome, count, chunks) == ("mallory", STORE, "INVALID_ARGUMENT", 2_000, "[]")
    assert size < 8_000 and small < 1_000 and len(long_store) <= 63
    # What the row keeps: the first ids, in order, each cut to a bounded length that says it was cut.
    kept = app.repository.audit_records("mallory", 10)[-1]
    assert len(kept.document_ids) == AUDIT_DOCUMENT_IDS and kept.counts() == (2_000, 0)
    assert all(len(d) == AUDIT_ID_CHARS and d.endswith("…") for d in kept.document_ids)
    assert [d[:10] for d in kept.document_ids] == [i[:10] for i in ids[:AUDIT_DOCUMENT_IDS]]
    # And an admin reads it back with its counts.
    admin = stubs.admin_grpc.AdminServiceStub(channel)
    entries = admin.ListAuditEntries(
        stubs.admin.ListAuditEntriesRequest(user_id="mallory"), metadata=bearer(app, "root", admin=True)
    ).entries
    assert [(e.document_count, len(e.document_ids)) for e in entries] == [(0, 0), (2_000, AUDIT_DOCUMENT_IDS)]
