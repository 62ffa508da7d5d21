"""Calibrating a store over real servers on 127.0.0.1: gRPC AdminService.CalibrateStore and GraphQL calibrateStore.

Admins get the report and, when they ask, the proposed scale stored and audited;
anyone else is refused before any work, and bad input is the interface's own
client error.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import grpc
import httpx
import pytest

from service.api.grpc.stubs import Stubs, load
from service.bootstrap import App
from tests.integration.server_world import STORE, Served, bearer, build_world, on_servers, token

EMPTY = "empty"
REPORT_FIELDS = """
  storeId documents documentsSampled chunks titleProbes headingProbes sentenceProbes
  answerable { count min max percentiles { percentile score } }
  offTopic { count percentiles { percentile score } }
  cut separationMethod auc level anchorLevel
  current { minThreshold maxThreshold } proposed { minThreshold maxThreshold }
  proposedSaturated
  predictions { level currentThreshold currentAnswerRate proposedThreshold proposedAnswerRate proposedRefusalRate }
  warnings applied
"""


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[App, Served]]:
    app = build_world(tmp_path_factory.mktemp("calibration"))
    app.admin_without_index().ensure_store(EMPTY, app.embedder().model_name, app.settings.store_defaults)
    with on_servers(app) as served:
        yield app, served
    app.close()


@pytest.fixture(scope="module")
def stubs() -> Stubs:
    return load()


@pytest.fixture
def admin_stub(world: tuple[App, Served], stubs: Stubs) -> Iterator[Any]:
    with grpc.insecure_channel(world[1].channel_target) as channel:
        yield stubs.admin_grpc.AdminServiceStub(channel)


@pytest.fixture
def restore(world: tuple[App, Served]) -> Iterator[None]:
    """Put the store's scale back after a test that applies one."""
    app = world[0]
    before = app.repository.get_store(STORE)
    assert before is not None
    yield
    app.admin_without_index().update_settings(
        STORE, min_threshold=before.min_threshold, max_threshold=before.max_threshold
    )


def _graphql(served: Served, app: App, query: str, user: str = "root", admin: bool = True) -> dict[str, Any]:
    reply = httpx.post(
        served.graphql_url,
        json={"query": query},
        headers={"authorization": f"Bearer {token(app, user, admin=admin)}"},
        timeout=60,
    )
    assert reply.status_code == 200
    body: dict[str, Any] = reply.json()
    return body


def _error_code(body: dict[str, Any]) -> tuple[str, str]:
    [error] = body["errors"]
    return error["extensions"]["code"], error["message"]


# ---------------------------------------------------------------------------------------------- gRPC
def test_grpc_admin_gets_a_report_and_nothing_changes(world: tuple[App, Served], stubs: Stubs, admin_stub: Any) -> None:
    app = world[0]
    before = app.repository.get_store(STORE)
    request = stubs.admin.CalibrateStoreRequest(store_id=STORE)
    reply = admin_stub.CalibrateStore(request, metadata=bearer(app, "root", admin=True), timeout=60)
    assert (reply.store_id, reply.documents, reply.documents_sampled, reply.chunks) == (STORE, 3, 3, 3)
    assert reply.answerable.count == reply.title_probes + reply.heading_probes + reply.sentence_probes > 0
    assert reply.off_topic.count >= 60 and len(reply.answerable.percentiles) == 9
    assert [round(p.level, 1) for p in reply.predictions] == [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]
    assert -1 <= reply.proposed_min_threshold <= reply.proposed_max_threshold <= 1
    assert (reply.current_min_threshold, reply.current_max_threshold) == (before.min_threshold, before.max_threshold)
    assert any("rough" in w for w in reply.warnings) and not reply.applied
    assert app.repository.get_store(STORE) == before


@pytest.mark.usefixtures("restore")
def test_grpc_apply_stores_the_scale_and_the_audit_says_who(
    world: tuple[App, Served], stubs: Stubs, admin_stub: Any
) -> None:
    app = world[0]
    root = bearer(app, "root", admin=True)
    request = stubs.admin.CalibrateStoreRequest(store_id=STORE, apply=True, sample=2)
    reply = admin_stub.CalibrateStore(request, metadata=root, timeout=60)
    assert reply.applied and reply.documents_sampled == 2
    store = app.repository.get_store(STORE)
    assert (store.min_threshold, store.max_threshold) == (reply.proposed_min_threshold, reply.proposed_max_threshold)
    entries = admin_stub.ListAuditEntries(stubs.admin.ListAuditEntriesRequest(user_id="root"), metadata=root).entries
    calibrations = [e for e in entries if e.query_class == "calibrate"]
    assert calibrations and calibrations[0].store_id == STORE and calibrations[0].outcome == "OK"


@pytest.mark.parametrize(
    ("user", "admin", "store", "sample", "code", "says"),
    [
        ("bob", False, STORE, None, grpc.StatusCode.PERMISSION_DENIED, "admin role"),
        ("root", True, "nope", None, grpc.StatusCode.NOT_FOUND, "store 'nope' not found"),
        ("root", True, EMPTY, None, grpc.StatusCode.INVALID_ARGUMENT, "store empty has no indexed chunks"),
        ("root", True, STORE, 0, grpc.StatusCode.INVALID_ARGUMENT, "sample must be an integer between 1 and 5000"),
    ],
    ids=["non-admin", "unknown-store", "empty-store", "bad-sample"],
)
def test_grpc_refusals_change_nothing(
    world: tuple[App, Served],
    stubs: Stubs,
    admin_stub: Any,
    user: str,
    admin: bool,
    store: str,
    sample: int | None,
    code: grpc.StatusCode,
    says: str,
) -> None:
    app = world[0]
    before = app.repository.get_store(STORE)
    request = stubs.admin.CalibrateStoreRequest(store_id=store, apply=True, sample=sample)
    with pytest.raises(grpc.RpcError) as info:
        admin_stub.CalibrateStore(request, metadata=bearer(app, user, admin=admin), timeout=60)
    assert info.value.code() == code and says in info.value.details()
    assert app.repository.get_store(STORE) == before


# ---------------------------------------------------------------------------------------------- GraphQL
def test_graphql_admin_gets_a_typed_report(world: tuple[App, Served]) -> None:
    app, served = world
    before = app.repository.get_store(STORE)
    body = _graphql(served, app, f'mutation {{ calibrateStore(storeId: "{STORE}") {{ {REPORT_FIELDS} }} }}')
    report = body["data"]["calibrateStore"]
    assert report["storeId"] == STORE and report["documents"] == 3 and report["applied"] is False
    assert report["answerable"]["count"] > 0 and report["offTopic"]["count"] >= 60
    assert len(report["predictions"]) == 9 and report["separationMethod"] in {"separated", "balanced-accuracy", "none"}
    assert report["current"] == {"minThreshold": before.min_threshold, "maxThreshold": before.max_threshold}
    assert app.repository.get_store(STORE) == before


@pytest.mark.usefixtures("restore")
def test_graphql_apply_stores_the_scale_and_the_audit_says_who(world: tuple[App, Served]) -> None:
    app, served = world
    fields = "applied proposed { minThreshold maxThreshold }"
    query = f'mutation {{ calibrateStore(storeId: "{STORE}", apply: true, sample: 3) {{ {fields} }} }}'
    report = _graphql(served, app, query)["data"]["calibrateStore"]
    assert report["applied"] is True
    store = app.repository.get_store(STORE)
    assert {"minThreshold": store.min_threshold, "maxThreshold": store.max_threshold} == report["proposed"]
    entries = _graphql(served, app, 'query { auditEntries(userId: "root") { queryClass interface storeId } }')
    assert {"queryClass": "calibrate", "interface": "graphql", "storeId": STORE} in entries["data"]["auditEntries"]


@pytest.mark.parametrize(
    ("user", "admin", "arguments", "code", "says"),
    [
        ("bob", False, f'storeId: "{STORE}", apply: true', "FORBIDDEN", "admin role"),
        ("root", True, 'storeId: "nope"', "NOT_FOUND", "store 'nope' not found"),
        ("root", True, f'storeId: "{EMPTY}"', "BAD_USER_INPUT", "store empty has no indexed chunks to calibrate from"),
        ("root", True, f'storeId: "{STORE}", sample: 100000', "BAD_USER_INPUT", "sample must be an integer"),
    ],
    ids=["non-admin", "unknown-store", "empty-store", "bad-sample"],
)
def test_graphql_refusals_change_nothing(
    world: tuple[App, Served], user: str, admin: bool, arguments: str, code: str, says: str
) -> None:
    app, served = world
    before = app.repository.get_store(STORE)
    body = _graphql(served, app, f"mutation {{ calibrateStore({arguments}) {{ applied }} }}", user, admin)
    got, message = _error_code(body)
    assert got == code and says in message
    assert app.repository.get_store(STORE) == before
