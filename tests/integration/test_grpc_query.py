"""QueryService, AdminService and IndexingService end to end over loopback with the generated stubs."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import jwt
import pytest

from service.api.grpc.server import GrpcServer, services_for, start_grpc
from service.api.grpc.stubs import Stubs, load
from service.bootstrap import App
from service.observability.metrics import Metrics
from tests.integration.server_world import (
    QUESTION,
    SECRET,
    STORE,
    VAULT,
    SlowGenerator,
    add_vault,
    bearer,
    build_world,
    serve_grpc,
    token,
)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[App, GrpcServer, grpc.Channel]]:
    yield from serve_grpc(tmp_path_factory.mktemp("grpc"))


@pytest.fixture(scope="module")
def stubs() -> Stubs:
    return load()


def _query(world: Any, stubs: Stubs) -> Any:
    return stubs.query_grpc.QueryServiceStub(world[2])


def _admin(world: Any, stubs: Stubs) -> Any:
    return stubs.admin_grpc.AdminServiceStub(world[2])


def _code(call: Any) -> grpc.StatusCode:
    with pytest.raises(grpc.RpcError) as info:
        call()
    return info.value.code()


def _error(call: Any) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as info:
        call()
    return info.value


def test_two_users_same_question_get_differently_filtered_sources(world: Any, stubs: Stubs) -> None:
    app = world[0]
    request = stubs.query.VectorQueryRequest(store_id=STORE, question=QUESTION, level=0.0)
    alice = _query(world, stubs).VectorQuery(request, metadata=bearer(app, "alice"), timeout=10)
    bob = _query(world, stubs).VectorQuery(request, metadata=bearer(app, "bob"), timeout=10)
    carol = _query(world, stubs).VectorQuery(request, metadata=bearer(app, "carol"), timeout=10)
    assert {c.document_id for c in alice.chunks} == {"handbook", "executive-pay"}
    assert {c.document_id for c in bob.chunks} == {"handbook", "bob-notes"}
    assert {c.document_id for c in carol.chunks} == {"handbook"}
    assert alice.answer and alice.query_id and alice.query_class == "vector"
    for chunk in alice.chunks:
        assert chunk.HasField("score") and chunk.HasField("relevance")


def test_token_groups_claim_is_ignored_unless_configured(world: Any, stubs: Stubs) -> None:
    app = world[0]
    forged_group = token(app, "carol", groups=["hr"])
    request = stubs.query.VectorQueryRequest(store_id=STORE, question=QUESTION, level=0.0)
    reply = _query(world, stubs).VectorQuery(request, metadata=(("authorization", f"Bearer {forged_group}"),))
    assert {c.document_id for c in reply.chunks} == {"handbook"}


def test_retrieval_only_and_multi_and_document_queries(world: Any, stubs: Stubs) -> None:
    app = world[0]
    service = _query(world, stubs)
    meta = bearer(app, "alice")
    only = service.VectorQuery(
        stubs.query.VectorQueryRequest(store_id=STORE, question=QUESTION, level=0.0, perform_llm_query=False),
        metadata=meta,
    )
    assert not only.HasField("answer") and not only.llm_called and only.chunks
    multi = service.MultiDocumentQuery(
        stubs.query.MultiDocumentQueryRequest(store_id=STORE, question=QUESTION, document_ids=["handbook"], level=0.0),
        metadata=meta,
    )
    assert {c.document_id for c in multi.chunks} == {"handbook"}
    single = service.DocumentQuery(
        stubs.query.DocumentQueryRequest(store_id=STORE, question=QUESTION, document_id="executive-pay"), metadata=meta
    )
    assert single.query_class == "document" and single.chunks[0].chunk_id == "executive-pay#all"


def test_nothing_relevant_in_one_document_allows_retry(world: Any, stubs: Stubs) -> None:
    app = world[0]
    reply = _query(world, stubs).MultiDocumentQuery(
        stubs.query.MultiDocumentQueryRequest(
            store_id=STORE, question="quantum chromodynamics lattice", document_ids=["handbook"], level=1.0
        ),
        metadata=bearer(app, "alice"),
    )
    assert reply.no_relevant_document and reply.retry_without_threshold_allowed and not reply.chunks
    assert reply.answer.startswith("I'm unable to answer your question")


def test_invalid_argument(world: Any, stubs: Stubs) -> None:
    app = world[0]
    service = _query(world, stubs)
    meta = bearer(app, "alice")
    vq = stubs.query.VectorQueryRequest
    assert _code(lambda: service.VectorQuery(vq(store_id=STORE, question=QUESTION, level=1.5), metadata=meta)) == (
        grpc.StatusCode.INVALID_ARGUMENT
    )
    assert _code(
        lambda: service.VectorQuery(vq(store_id=STORE, question=QUESTION, level=float("nan")), metadata=meta)
    ) == (grpc.StatusCode.INVALID_ARGUMENT)
    assert _code(lambda: service.VectorQuery(vq(store_id=STORE, question="   "), metadata=meta)) == (
        grpc.StatusCode.INVALID_ARGUMENT
    )
    error = _error(lambda: service.VectorQuery(vq(store_id=STORE, question="x" * 4001), metadata=meta))
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT and "4000" in (error.details() or "")
    service.VectorQuery(vq(store_id=STORE, question="x" * 4000), metadata=meta)  # the limit itself is fine
    bad_ids = stubs.query.MultiDocumentQueryRequest(store_id=STORE, question=QUESTION, document_ids=[""])
    assert _code(lambda: service.MultiDocumentQuery(bad_ids, metadata=meta)) == grpc.StatusCode.INVALID_ARGUMENT


def test_not_found_is_the_same_for_unknown_and_unreadable(world: Any, stubs: Stubs) -> None:
    app = world[0]
    service = _query(world, stubs)
    meta = bearer(app, "carol")
    dq = stubs.query.DocumentQueryRequest
    assert (
        _code(
            lambda: service.VectorQuery(
                stubs.query.VectorQueryRequest(store_id="nope", question=QUESTION), metadata=meta
            )
        )
        == grpc.StatusCode.NOT_FOUND
    )
    hidden = _error(
        lambda: service.DocumentQuery(dq(store_id=STORE, question=QUESTION, document_id="bob-notes"), metadata=meta)
    )
    missing = _error(
        lambda: service.DocumentQuery(dq(store_id=STORE, question=QUESTION, document_id="no-such"), metadata=meta)
    )
    assert hidden.code() == missing.code() == grpc.StatusCode.NOT_FOUND
    assert (hidden.details() or "").replace("bob-notes", "X") == (missing.details() or "").replace("no-such", "X")


@pytest.mark.parametrize(
    "header",
    [
        None,
        "Bearer not-a-jwt",
        "Basic YWxpY2U6cGFzcw==",
        "Bearer " + jwt.encode({"sub": "alice", "exp": int(time.time()) + 60}, "x" * 64, algorithm="HS256"),
        "Bearer " + jwt.encode({"sub": "alice", "exp": int(time.time()) + 60}, None, algorithm="none"),
        "Bearer " + jwt.encode({"sub": "alice", "exp": int(time.time()) - 3600}, SECRET, algorithm="HS256"),
        "Bearer " + jwt.encode({"sub": "alice"}, SECRET, algorithm="HS256"),  # no expiry
        "Bearer " + jwt.encode({"sub": "alice", "exp": int(time.time()) + 60}, SECRET, algorithm="HS512"),
    ],
    ids=["missing", "garbage", "basic", "wrong-secret", "alg-none", "expired", "no-exp", "wrong-alg"],
)
def test_unauthenticated(world: Any, stubs: Stubs, header: str | None) -> None:
    metadata = () if header is None else (("authorization", header),)
    error = _error(
        lambda: _query(world, stubs).VectorQuery(
            stubs.query.VectorQueryRequest(store_id=STORE, question=QUESTION), metadata=metadata
        )
    )
    assert error.code() == grpc.StatusCode.UNAUTHENTICATED
    assert SECRET not in (error.details() or "") and "Traceback" not in (error.details() or "")


def test_body_cannot_change_the_caller(world: Any, stubs: Stubs) -> None:
    # There is no user field in any request: the only identity is the token's subject.
    for message in (
        stubs.query.VectorQueryRequest,
        stubs.query.MultiDocumentQueryRequest,
        stubs.query.DocumentQueryRequest,
    ):
        assert not {"user", "user_id", "groups", "caller"} & set(message.DESCRIPTOR.fields_by_name)


def test_admin_only_settings(world: Any, stubs: Stubs) -> None:
    app = world[0]
    admin = _admin(world, stubs)
    change = stubs.admin.SetStoreSettingsRequest(store_id=STORE, level=0.3, max_chunks=5)
    assert (
        _code(lambda: admin.SetStoreSettings(change, metadata=bearer(app, "alice")))
        == grpc.StatusCode.PERMISSION_DENIED
    )
    updated = admin.SetStoreSettings(change, metadata=bearer(app, "root", admin=True))
    assert updated.level == pytest.approx(0.3) and updated.max_chunks == 5 and updated.documents == 3
    seen = admin.GetStoreSettings(stubs.admin.GetStoreSettingsRequest(store_id=STORE), metadata=bearer(app, "alice"))
    assert seen.level == pytest.approx(0.3)
    bad = stubs.admin.SetStoreSettingsRequest(store_id=STORE, level=2.0)
    assert (
        _code(lambda: admin.SetStoreSettings(bad, metadata=bearer(app, "root", admin=True)))
        == grpc.StatusCode.INVALID_ARGUMENT
    )
    unknown = stubs.admin.SetStoreSettingsRequest(store_id="nope", level=0.2)
    assert (
        _code(lambda: admin.SetStoreSettings(unknown, metadata=bearer(app, "root", admin=True)))
        == grpc.StatusCode.NOT_FOUND
    )
    stores = admin.ListStores(stubs.admin.ListStoresRequest(), metadata=bearer(app, "alice"))
    assert [s.store_id for s in stores.stores] == [STORE]
    assert stores.stores[0].documents == 2 and not stores.stores[0].prompt_template
    admin.SetStoreSettings(
        stubs.admin.SetStoreSettingsRequest(store_id=STORE, level=0.5, max_chunks=8),
        metadata=bearer(app, "root", admin=True),
    )


def test_store_listings_and_settings_per_caller(world: Any, stubs: Stubs) -> None:
    app = world[0]
    add_vault(app)
    admin = _admin(world, stubs)
    chunks = {d.id: d.chunk_count for d in app.repository.list_documents(STORE)}

    def listed(user: str, *, is_admin: bool = False) -> dict[str, Any]:
        reply = admin.ListStores(stubs.admin.ListStoresRequest(), metadata=bearer(app, user, admin=is_admin))
        return {s.store_id: s for s in reply.stores}

    alice = listed("alice")
    assert list(alice) == [STORE] and alice[STORE].documents == 2
    assert alice[STORE].chunks == chunks["handbook"] + chunks["executive-pay"]
    assert not alice[STORE].prompt_template and not alice[STORE].llm_model_id and not alice[STORE].embedding_model
    bob = listed("bob")
    assert sorted(bob) == [STORE, VAULT] and bob[STORE].documents == 2 and bob[VAULT].documents == 1
    assert listed("zed")[STORE].documents == 1
    root = listed("root", is_admin=True)
    assert root[STORE].documents == 3 and root[STORE].chunks == sum(chunks.values())
    assert "{context}" in root[STORE].prompt_template and root[STORE].embedding_model and root[VAULT].llm_model_id
    get = stubs.admin.GetStoreSettingsRequest
    assert admin.GetStoreSettings(get(store_id=VAULT), metadata=bearer(app, "bob")).documents == 1
    hidden = _error(lambda: admin.GetStoreSettings(get(store_id=VAULT), metadata=bearer(app, "alice")))
    unknown = _error(lambda: admin.GetStoreSettings(get(store_id="nope"), metadata=bearer(app, "alice")))
    assert hidden.code() == unknown.code() == grpc.StatusCode.NOT_FOUND
    assert hidden.details().replace(VAULT, "X") == unknown.details().replace("nope", "X")


def test_admin_group_removal_is_a_tombstone_until_reset(world: Any, stubs: Stubs) -> None:
    app, admin = world[0], _admin(world, stubs)
    request = stubs.query.VectorQueryRequest(store_id=STORE, question=QUESTION, level=0.0)

    def alice() -> set[str]:
        return {c.document_id for c in _query(world, stubs).VectorQuery(request, metadata=bearer(app, "alice")).chunks}

    pair = stubs.admin.GroupMemberRequest(group="hr", member="user:alice")
    assert (
        _code(lambda: admin.RemoveGroupMember(pair, metadata=bearer(app, "alice"))) == grpc.StatusCode.PERMISSION_DENIED
    )
    root = bearer(app, "root", admin=True)
    assert admin.RemoveGroupMember(pair, metadata=root).changed
    assert "executive-pay" not in alice()
    [view] = [v for v in app.admin_without_index().membership_views() if v.member == "user:alice"]
    assert view.tombstone is not None and view.tombstone.removed_by == "grpc:root"
    assert admin.ResetGroupMember(pair, metadata=root).changed  # back to the manifests: none has alice
    assert "executive-pay" not in alice()
    assert _code(lambda: admin.ResetGroupMember(pair, metadata=root)) == grpc.StatusCode.NOT_FOUND
    assert admin.AddGroupMember(pair, metadata=root).changed
    assert "executive-pay" in alice()


def test_audit_entries_are_per_user_unless_admin(world: Any, stubs: Stubs) -> None:
    app = world[0]
    service = _query(world, stubs)
    request = stubs.query.VectorQueryRequest(store_id=STORE, question=QUESTION, level=0.0)
    mine = service.VectorQuery(request, metadata=bearer(app, "dave"))
    service.VectorQuery(request, metadata=bearer(app, "erin"))
    admin = _admin(world, stubs)
    own = admin.ListAuditEntries(stubs.admin.ListAuditEntriesRequest(), metadata=bearer(app, "dave")).entries
    assert {e.user_id for e in own} == {"dave"}
    entry = next(e for e in own if e.query_id == mine.query_id)
    assert entry.store_id == STORE and entry.query_class == "vector" and entry.outcome == "OK"
    assert list(entry.chunk_ids) == [c.chunk_id for c in mine.chunks] and entry.timings_ms["total"] > 0
    other = stubs.admin.ListAuditEntriesRequest(user_id="erin")
    assert (
        _code(lambda: admin.ListAuditEntries(other, metadata=bearer(app, "dave"))) == grpc.StatusCode.PERMISSION_DENIED
    )
    everyone = admin.ListAuditEntries(
        stubs.admin.ListAuditEntriesRequest(limit=1000), metadata=bearer(app, "r", admin=True)
    )
    assert {"dave", "erin"} <= {e.user_id for e in everyone.entries}
    failed = _error(
        lambda: service.VectorQuery(
            stubs.query.VectorQueryRequest(store_id=STORE, question=" "), metadata=bearer(app, "dave")
        )
    )
    assert failed.code() == grpc.StatusCode.INVALID_ARGUMENT
    newest = admin.ListAuditEntries(stubs.admin.ListAuditEntriesRequest(limit=1), metadata=bearer(app, "dave")).entries
    assert newest[0].outcome == "INVALID_ARGUMENT"


def test_oversized_request_is_refused_cleanly(world: Any, stubs: Stubs) -> None:
    app = world[0]
    huge = stubs.query.VectorQueryRequest(store_id=STORE, question="x" * (300 * 1024))
    error = _error(lambda: _query(world, stubs).VectorQuery(huge, metadata=bearer(app, "alice"), timeout=10))
    assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    # the server is still fine afterwards
    ok = _query(world, stubs).VectorQuery(
        stubs.query.VectorQueryRequest(store_id=STORE, question=QUESTION), metadata=bearer(app, "alice"), timeout=10
    )
    assert ok.query_id


def test_unavailable_when_the_index_is_down(tmp_path: Path, stubs: Stubs) -> None:
    from indexer.errors import IndexUnavailable
    from tests.fakes import FakeIndex

    class DownIndex(FakeIndex):
        def knn(self, *args: Any, **kwargs: Any) -> Any:
            raise IndexUnavailable("the index is unavailable")

    app = build_world(tmp_path)
    app._index = DownIndex()
    server = start_grpc(services_for(app, Metrics()), "127.0.0.1", 0)
    try:
        with grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel:
            stub = stubs.query_grpc.QueryServiceStub(channel)
            error = _error(
                lambda: stub.VectorQuery(
                    stubs.query.VectorQueryRequest(store_id=STORE, question=QUESTION),
                    metadata=bearer(app, "alice"),
                    timeout=10,
                )
            )
            assert error.code() == grpc.StatusCode.UNAVAILABLE and error.details() == "the index is unavailable"
    finally:
        server.stop(0)
        app.close()


def test_deadline_exceeded(tmp_path: Path, stubs: Stubs) -> None:
    app = build_world(tmp_path, generator=SlowGenerator(delay_s=1.0))
    server = start_grpc(services_for(app, Metrics()), "127.0.0.1", 0)
    try:
        with grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel:
            stub = stubs.query_grpc.QueryServiceStub(channel)
            error = _error(
                lambda: stub.VectorQuery(
                    stubs.query.VectorQueryRequest(store_id=STORE, question=QUESTION, level=0.0),
                    metadata=bearer(app, "alice"),
                    timeout=0.3,
                )
            )
            assert error.code() == grpc.StatusCode.DEADLINE_EXCEEDED  # the generator needs 1 s, the deadline is 0.3
    finally:
        server.stop(0)
        app.close()
