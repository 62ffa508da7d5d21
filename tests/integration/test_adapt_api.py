"""Adapting a store through real servers on 127.0.0.1: GraphQL ``startAdaptation`` / ``adaptation`` and gRPC
``AdminService.StartAdaptation`` / ``GetAdaptation``.

An admin starts a run, which goes on in the background (the server's base options train a one-layer model in
seconds), and polls it until it has installed the store's model; the start is in the audit trail. Anyone
else is refused before anything starts, an unknown store is NOT_FOUND, bad options are the interface's own
client error, and a store some run holds (here or the CLI's, simulated by holding its lock) is
RESOURCE_EXHAUSTED. A run that fails says why in a sentence, never with a traceback or a path.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import grpc
import httpx
import pytest

from acl.model import Acl
from service.adaptation.background import ELSEWHERE, AdaptState, AdaptStatus
from service.adaptation.lock import store_lock
from service.adaptation.options import AdaptOptions
from service.api.grpc.stubs import Stubs, load
from service.bootstrap import App, build_app
from service.ranking.adapted_model import MANIFEST_FILE, MODEL_FILE, model_folder
from tests.fakes_service import FakeEmbedder
from tests.integration.server_world import Served, bearer, on_servers, settings_for, token

pytestmark = [pytest.mark.integration, pytest.mark.slow]

STORE = "handbook"
#: A store no run of this server's touches: the CLI's run on it is simulated by holding its lock.
QUIET = "quiet"
TOPICS = {
    "vacation": ("vacation", "leave", "holiday", "carry-over"),
    "expenses": ("expense", "receipt", "reimbursement", "mileage"),
    "security": ("password", "badge", "laptop", "encryption"),
    "onboarding": ("mentor", "orientation", "equipment", "induction"),
    "travel": ("flight", "hotel", "booking", "per-diem"),
    "payroll": ("salary", "payslip", "bonus", "deduction"),
    "wellbeing": ("gym", "counselling", "ergonomics", "sick-day"),
}
SECTIONS = ("Eligibility rules", "Request procedure", "Approval deadlines", "Exceptions and appeals")
#: The server's base options: a one-layer model on a few dozen pairs in seconds, installed even when it loses
#: (so that a run's end is the same every time).
TINY = AdaptOptions(
    layers=1,
    max_tokens=48,
    max_queries=24,
    negatives=3,
    groups=4,
    candidates=8,
    depth=4,
    checkpoint_every=2,
    force=True,
)
#: How often a test reads the status, and for how many reads at most (a generous bound, never asserted on).
POLL_S = 0.5
POLLS = 2400
FIELDS = "storeId state phase done total startedAt finishedAt startedBy message installed error"
BUSY = f"another docqa adapt is running on store {STORE!r}"


def _document(topic: str, words: tuple[str, ...], secret: str = "") -> bytes:
    parts = [f"# {topic.title()} policy\n"]
    for i, section in enumerate(SECTIONS):
        a, b = words[i % 4], words[(i + 1) % 4]
        parts.append(
            f"## {topic.title()} {section}\n\n"
            f"Every employee who asks about {a} must read the {b} section of the {topic} handbook first. "
            f"The {topic} team answers questions about {a} and {b} within three working days of the request.\n"
        )
    if secret:
        parts.append(f"## Confidential notes\n\nThe board decided {secret} for the coming financial year in private.\n")
    return "\n".join(parts).encode()


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[App, Served]]:
    app = build_app(
        settings_for(tmp_path_factory.mktemp("adapt-api")),
        embedder_factory=lambda _: FakeEmbedder(),
        adapt_options=TINY,
    )
    ingest = app.ingestor(STORE)
    for topic, words in TOPICS.items():
        ingest.upsert_bytes(f"{topic}.md", _document(topic, words), "text/markdown", acl=Acl.of(["group:everyone"]))
    ingest.upsert_bytes(
        "hr-only.md",
        _document("reorganisation", TOPICS["payroll"], "restructuring plans"),
        "text/markdown",
        acl=Acl.of(["group:hr"]),
    )
    app.ingestor(QUIET).upsert_bytes(
        "travel.md", _document("travel", TOPICS["travel"]), "text/markdown", acl=Acl.of(["group:everyone"])
    )
    with on_servers(app) as served:
        yield app, served
    _wait(lambda: app.adapt_jobs.status(STORE).state.value.upper())  # no run outlives the world
    app.close()


@pytest.fixture(scope="module")
def stubs() -> Stubs:
    return load()


@pytest.fixture
def admin_stub(world: tuple[App, Served], stubs: Stubs) -> Iterator[Any]:
    with grpc.insecure_channel(world[1].channel_target) as channel:
        yield stubs.admin_grpc.AdminServiceStub(channel)


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


def _wait(state: Callable[[], str]) -> None:
    """Read ``state`` until it is not RUNNING (bounded: a run that never ends fails the test)."""
    for _ in range(POLLS):
        if state() != "RUNNING":
            return
        time.sleep(POLL_S)
    pytest.fail(f"the adaptation was still running after {POLLS} reads")


def _poll_graphql(served: Served, app: App) -> dict[str, Any]:
    seen: list[dict[str, Any]] = []

    def state() -> str:
        body = _graphql(served, app, f'query {{ adaptation(storeId: "{STORE}") {{ {FIELDS} }} }}')
        seen.append(body["data"]["adaptation"])
        return str(seen[-1]["state"])

    _wait(state)
    return seen[-1]


def _audited_starts(served: Served, app: App, interface: str) -> list[dict[str, Any]]:
    """root's audited starts of adaptations over ``interface``, newest first."""
    query = 'query { auditEntries(userId: "root") { queryId queryClass interface storeId outcome } }'
    entries = _graphql(served, app, query)["data"]["auditEntries"]
    return [e for e in entries if e["queryClass"] == "adapt" and e["interface"] == interface]


def _installed(app: App) -> dict[str, Any]:
    folder = model_folder(app.settings.data_dir, STORE)
    assert (folder / MODEL_FILE).is_file()
    manifest: dict[str, Any] = json.loads((folder / MANIFEST_FILE).read_text())
    return manifest


def _unchanged(app: App) -> Iterator[None]:
    before = app.adapt_jobs.status(STORE), app.repository.audit_records(None, 1000, None, None)
    yield
    assert (app.adapt_jobs.status(STORE), app.repository.audit_records(None, 1000, None, None)) == before


@pytest.fixture
def nothing_starts(world: tuple[App, Served]) -> Iterator[None]:
    """The store's adaptation and the audit trail are as they were: no run started, no start recorded."""
    yield from _unchanged(world[0])


# ---------------------------------------------------------------------------------------------- GraphQL
def test_graphql_admin_starts_a_run_and_polls_it_until_the_model_is_installed(world: tuple[App, Served]) -> None:
    app, served = world
    audited = len(_audited_starts(served, app, "graphql"))
    options = 'options: {principals: ["group:everyone"], maxQueries: 24, layers: 1, epochs: 1}'
    body = _graphql(served, app, f'mutation {{ startAdaptation(storeId: "{STORE}", {options}) {{ {FIELDS} }} }}')
    first = body["data"]["startAdaptation"]
    assert (first["storeId"], first["state"], first["startedBy"]) == (STORE, "RUNNING", "root")
    assert first["startedAt"] and first["finishedAt"] is None and first["installed"] is False

    again = _graphql(served, app, f'mutation {{ startAdaptation(storeId: "{STORE}") {{ state }} }}')
    code, message = _error_code(again)
    assert code == "RESOURCE_EXHAUSTED" and BUSY in message and "started by root" in message

    last = _poll_graphql(served, app)
    assert last["state"] == "SUCCEEDED", last
    assert last["installed"] is True and last["error"] is None and last["finishedAt"]
    assert last["message"].startswith(f"installed the adapted reranker for store {STORE!r}")
    manifest = _installed(app)
    assert manifest["store_id"] == STORE and manifest["layers"] == 1
    starts = _audited_starts(served, app, "graphql")
    assert len(starts) == audited + 1, "the start is audited once; the refused second start is not"
    assert (starts[0]["storeId"], starts[0]["outcome"]) == (STORE, "OK")


def test_a_failed_run_says_why_in_a_sentence(world: tuple[App, Served]) -> None:
    """A principal that may read nothing passes the options' checks; the run then fails on reading."""
    app, served = world
    options = 'options: {principals: ["group:nobody"]}'
    body = _graphql(served, app, f'mutation {{ startAdaptation(storeId: "{STORE}", {options}) {{ state }} }}')
    assert body["data"]["startAdaptation"]["state"] == "RUNNING", body
    last = _poll_graphql(served, app)
    assert last["state"] == "FAILED" and last["installed"] is False and last["message"] is None
    assert last["error"].startswith(f"store {STORE!r} has no documents readable by group:nobody to learn from")
    assert "Traceback" not in last["error"] and str(app.settings.data_dir) not in last["error"]


@pytest.mark.usefixtures("nothing_starts")
@pytest.mark.parametrize(
    ("user", "admin", "arguments", "code", "says"),
    [
        ("bob", False, f'storeId: "{STORE}"', "FORBIDDEN", "admin role"),
        ("bob", False, f'storeId: "{STORE}", options: {{layers: 0}}', "FORBIDDEN", "admin role"),
        ("root", True, 'storeId: "nope"', "NOT_FOUND", "store 'nope' not found"),
        ("root", True, f'storeId: "{STORE}", options: {{layers: 0}}', "BAD_USER_INPUT", "layers must be between"),
        ("root", True, f'storeId: "{STORE}", options: {{epochs: 21}}', "BAD_USER_INPUT", "epochs must be between"),
        (
            "root",
            True,
            f'storeId: "{STORE}", options: {{maxQueries: 5}}',
            "BAD_USER_INPUT",
            "max-queries must be between",
        ),
        ("root", True, f'storeId: "{STORE}", options: {{principals: ["hr"]}}', "BAD_USER_INPUT", "invalid principal"),
        ("root", True, f'storeId: "{STORE}", options: {{principals: []}}', "BAD_USER_INPUT", "at least one principal"),
        (
            "root",
            True,
            f'storeId: "{STORE}", options: {{allContent: true, principals: ["group:hr"]}}',
            "BAD_USER_INPUT",
            "exclude each other",
        ),
    ],
    ids=[
        "non-admin",
        "non-admin-bad-options",
        "unknown-store",
        "layers",
        "epochs",
        "max-queries",
        "principal",
        "no-principal",
        "all-content-and-principals",
    ],
)
def test_graphql_refusals_start_nothing(
    world: tuple[App, Served], user: str, admin: bool, arguments: str, code: str, says: str
) -> None:
    app, served = world
    body = _graphql(served, app, f"mutation {{ startAdaptation({arguments}) {{ state }} }}", user, admin)
    got, message = _error_code(body)
    assert got == code and says in message, message


@pytest.mark.parametrize(
    ("user", "admin", "store", "code", "says"),
    [("bob", False, STORE, "FORBIDDEN", "admin role"), ("root", True, "nope", "NOT_FOUND", "store 'nope' not found")],
    ids=["non-admin", "unknown-store"],
)
def test_graphql_status_refusals(
    world: tuple[App, Served], user: str, admin: bool, store: str, code: str, says: str
) -> None:
    app, served = world
    body = _graphql(served, app, f'query {{ adaptation(storeId: "{store}") {{ state }} }}', user, admin)
    got, message = _error_code(body)
    assert got == code and says in message


def test_a_run_elsewhere_holds_the_store(world: tuple[App, Served], stubs: Stubs, admin_stub: Any) -> None:
    """The CLI's ``docqa adapt`` holds the store's lock (held here by the test): both transports refuse a start
    in the lock's words, and the status says a run this server did not start is going on, until it ends."""
    app, served = world
    root = bearer(app, "root", admin=True)
    audit = app.repository.audit_records(None, 1000, None, None)
    status = f'query {{ adaptation(storeId: "{QUIET}") {{ state message }} }}'
    assert _graphql(served, app, status)["data"]["adaptation"] == {"state": "IDLE", "message": None}
    with store_lock(app.settings.data_dir, QUIET):
        body = _graphql(served, app, f'mutation {{ startAdaptation(storeId: "{QUIET}") {{ state }} }}')
        code, message = _error_code(body)
        assert code == "RESOURCE_EXHAUSTED" and f"another docqa adapt is running on store {QUIET!r}" in message
        with pytest.raises(grpc.RpcError) as info:
            admin_stub.StartAdaptation(stubs.admin.StartAdaptationRequest(store_id=QUIET), metadata=root)
        assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED and info.value.details() == message
        assert _graphql(served, app, status)["data"]["adaptation"] == {"state": "RUNNING", "message": ELSEWHERE}
        reply = admin_stub.GetAdaptation(stubs.admin.GetAdaptationRequest(store_id=QUIET), metadata=root)
        assert (reply.state, reply.message) == (stubs.admin.ADAPTATION_STATE_RUNNING, ELSEWHERE)
    reply = admin_stub.GetAdaptation(stubs.admin.GetAdaptationRequest(store_id=QUIET), metadata=root)
    assert (reply.store_id, reply.state, reply.started_at, reply.installed) == (
        QUIET,
        stubs.admin.ADAPTATION_STATE_IDLE,
        "",
        False,
    )
    assert app.adapt_jobs.status(QUIET) == AdaptStatus(store_id=QUIET, state=AdaptState.IDLE)
    assert app.repository.audit_records(None, 1000, None, None) == audit, "a refused start is not audited"


def test_a_run_elsewhere_after_a_run_here_is_told_while_it_holds_the_store(world: tuple[App, Served]) -> None:
    app, served = world
    status = f'query {{ adaptation(storeId: "{STORE}") {{ state message startedAt }} }}'
    before = _graphql(served, app, status)["data"]["adaptation"]
    assert before["state"] != "RUNNING"
    with store_lock(app.settings.data_dir, STORE):
        during = _graphql(served, app, status)["data"]["adaptation"]
        assert during == {"state": "RUNNING", "message": ELSEWHERE, "startedAt": None}
    assert _graphql(served, app, status)["data"]["adaptation"] == before, "then the last run here again"


# ---------------------------------------------------------------------------------------------- gRPC
def test_grpc_admin_starts_a_run_and_polls_it_until_the_model_is_installed(
    world: tuple[App, Served], stubs: Stubs, admin_stub: Any
) -> None:
    app, served = world
    root = bearer(app, "root", admin=True)
    options = stubs.admin.AdaptationOptions(principals=["group:everyone"], layers=1, epochs=1)
    first = admin_stub.StartAdaptation(
        stubs.admin.StartAdaptationRequest(store_id=STORE, options=options), metadata=root
    )
    assert (first.store_id, first.state, first.started_by) == (STORE, stubs.admin.ADAPTATION_STATE_RUNNING, "root")
    assert first.started_at and not first.finished_at

    with pytest.raises(grpc.RpcError) as info:
        admin_stub.StartAdaptation(stubs.admin.StartAdaptationRequest(store_id=STORE), metadata=root)
    assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED and BUSY in info.value.details()

    replies: list[Any] = []

    def state() -> str:
        replies.append(admin_stub.GetAdaptation(stubs.admin.GetAdaptationRequest(store_id=STORE), metadata=root))
        return str(stubs.admin.AdaptationState.Name(replies[-1].state)).removeprefix("ADAPTATION_STATE_")

    _wait(state)
    last = replies[-1]
    assert last.state == stubs.admin.ADAPTATION_STATE_SUCCEEDED, last
    assert last.installed and not last.error and last.finished_at and last.started_at == first.started_at
    assert _installed(app)["store_id"] == STORE
    assert [(e["storeId"], e["outcome"]) for e in _audited_starts(served, app, "grpc")] == [(STORE, "OK")]
    # The same run as GraphQL tells it.
    seen = _graphql(served, app, f'query {{ adaptation(storeId: "{STORE}") {{ state startedAt installed }} }}')
    assert seen["data"]["adaptation"] == {"state": "SUCCEEDED", "startedAt": first.started_at, "installed": True}


@pytest.mark.usefixtures("nothing_starts")
@pytest.mark.parametrize(
    ("user", "admin", "store", "options", "code", "says"),
    [
        ("bob", False, STORE, {}, grpc.StatusCode.PERMISSION_DENIED, "admin role"),
        ("root", True, "nope", {}, grpc.StatusCode.NOT_FOUND, "store 'nope' not found"),
        ("root", True, STORE, {"layers": 49}, grpc.StatusCode.INVALID_ARGUMENT, "layers must be between"),
        ("root", True, STORE, {"max_queries": 0}, grpc.StatusCode.INVALID_ARGUMENT, "max-queries must be between"),
        ("root", True, STORE, {"principals": ["user:"]}, grpc.StatusCode.INVALID_ARGUMENT, "invalid principal"),
        (
            "root",
            True,
            STORE,
            {"principals": [f"group:g{i}" for i in range(101)]},
            grpc.StatusCode.INVALID_ARGUMENT,
            "at most 100 principals",
        ),
    ],
    ids=["non-admin", "unknown-store", "layers", "max-queries", "principal", "too-many-principals"],
)
def test_grpc_refusals_start_nothing(
    world: tuple[App, Served],
    stubs: Stubs,
    admin_stub: Any,
    user: str,
    admin: bool,
    store: str,
    options: dict[str, Any],
    code: grpc.StatusCode,
    says: str,
) -> None:
    app = world[0]
    request = stubs.admin.StartAdaptationRequest(store_id=store, options=stubs.admin.AdaptationOptions(**options))
    with pytest.raises(grpc.RpcError) as info:
        admin_stub.StartAdaptation(request, metadata=bearer(app, user, admin=admin))
    assert info.value.code() == code and says in info.value.details()


@pytest.mark.parametrize(
    ("user", "admin", "store", "code"),
    [("bob", False, STORE, grpc.StatusCode.PERMISSION_DENIED), ("root", True, "nope", grpc.StatusCode.NOT_FOUND)],
    ids=["non-admin", "unknown-store"],
)
def test_grpc_status_refusals(
    world: tuple[App, Served], stubs: Stubs, admin_stub: Any, user: str, admin: bool, store: str, code: Any
) -> None:
    app = world[0]
    with pytest.raises(grpc.RpcError) as info:
        admin_stub.GetAdaptation(
            stubs.admin.GetAdaptationRequest(store_id=store), metadata=bearer(app, user, admin=admin)
        )
    assert info.value.code() == code
