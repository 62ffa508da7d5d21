"""History bound to what it cited, over real GraphQL and gRPC servers on loopback and the CLI.

Alice asks and her answer quotes SECRET-FIN-9902; finance rewrites the document without it and an admin opens
the document to everyone: nobody but Alice may see her old answer (or her comment on it) again, on any view,
and Alice is told that it changed. The feedback export names no document its reader cannot read and says
how many ratings it left out. ``--as`` on the CLI gets exactly the servers' rules.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import grpc
import httpx
import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.exc import OperationalError

from acl.checker import AccessChecker
from acl.model import Acl
from service.api.cli.main import main
from service.api.grpc.stubs import Stubs, load
from service.bootstrap import App
from service.domain.history import CHANGED_NOTE, WITHHELD_CHANGED, WITHHELD_UNREADABLE
from service.domain.queries import Caller
from service.generation.prompt import Prompt
from service.history.recheck import Recheck
from service.persistence import schema
from service.persistence.sql_history import SqlHistoryRepository
from service.persistence.sql_history_versions import SqlDocumentVersions
from service.persistence.sql_settings import SqlSettingsRepository
from service.security.tokens import mint_token
from tests.integration.server_world import STORE, Served, SlowGenerator, build_world, on_servers

pytestmark = pytest.mark.integration

SECRET = "SECRET-FIN-9902"
ASK = """query($q: String!, $c: String) {
  vectorQuery(storeId: "acme", question: $q, level: 0, conversationId: $c) {
    queryId conversationId answer chunks { documentId text }
  }
}"""
HISTORY = """query { history(first: 20) { edges { node { queryId answer changed withheld sourcesRevoked
  ratingComment sources { documentId } } } } }"""
CONVERSATION = """query($id: String!) { conversation(id: $id) { turns { queryId answer changed withheld
  ratingComment sources { documentId } } } }"""
RATE = """mutation($id: String!, $r: Rating!, $c: String) { rateAnswer(queryId: $id, rating: $r, comment: $c) {
  comment } }"""
FEEDBACK = """query { feedback(storeId: "acme") { edges { node { userId rating comment
  entry { question answer changed withheld sourcesRevoked ratingComment sources { documentId } } } } } }"""


class QuotingGenerator(SlowGenerator):
    """A language model that restates what it is given: the chunks, and the earlier turns' answers."""

    def __init__(self) -> None:
        super().__init__()
        self.prompts: list[Prompt] = []

    def generate(self, prompt: Prompt) -> Any:
        self.prompts.append(prompt)
        return super().generate(prompt)

    def stream(self, prompt: Prompt) -> Iterator[str]:
        self.prompts.append(prompt)
        return super().stream(prompt)

    @staticmethod
    def _text(prompt: Prompt) -> str:
        earlier = " ".join(t.answer for t in prompt.earlier)
        return " ".join([*(c.text for c in prompt.chunks), earlier]).strip()


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[App, Served, QuotingGenerator]]:
    generator = QuotingGenerator()
    app = build_world(tmp_path, generator=generator)
    monkeypatch.setenv("DOCQA_DATA_DIR", str(tmp_path))  # the CLI runs on the same data directory
    monkeypatch.delenv("DOCQA_CONFIG", raising=False)
    with on_servers(app) as served:
        yield app, served, generator
    app.close()


def _gql(world: tuple[App, Served, Any], query: str, user: str, variables: dict[str, Any] | None = None,
         **roles: bool) -> Any:  # fmt: skip
    app, served, _ = world
    reply = httpx.post(
        served.graphql_url,
        json={"query": query, "variables": variables or {}},
        headers={"authorization": f"Bearer {_token(app, user, **roles)}"},
        timeout=10,
    )
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert "errors" not in body, body
    return body["data"]


def _token(app: App, user: str, *, admin: bool = False, history_auditor: bool = False) -> str:
    return mint_token(app.settings, user, ttl_s=300, admin=admin, history_auditor=history_auditor)


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _finance_document(app: App, text: str) -> None:
    app.ingestor(STORE).upsert_bytes(
        "q3-report", text.encode(), "text/plain", acl=Acl.of(["group:finance"]), title="Q3 report"
    )


def test_a_rewritten_document_opened_to_everyone_shows_the_old_answer_to_nobody_but_its_asker(
    world: tuple[App, Served, QuotingGenerator], capsys: pytest.CaptureFixture[str]
) -> None:
    app, served, generator = world
    _finance_document(app, f"The Q3 merger code is {SECRET}. Quarterly revenue rose by nine percent.")
    app.admin_without_index().add_member("group:finance", "user:alice", "test")
    app.admin_without_index().reset_member("group:hr", "user:alice")  # what she cites, root may read once opened
    asked = _gql(world, ASK, "alice", {"q": "What is the Q3 merger code?"})["vectorQuery"]
    assert SECRET in asked["answer"] and "q3-report" in {c["documentId"] for c in asked["chunks"]}
    _gql(world, RATE, "alice", {"id": asked["queryId"], "r": "DOWN", "c": f"{SECRET} is the old code"})

    # finance rewrites the document without the secret; an admin opens it to everyone (the CLI's acl set)
    _finance_document(app, "The Q3 merger code is withdrawn. Quarterly revenue rose by nine percent.")
    code, _, err = _cli(capsys, "acl", "set", "q3-report", "--store", STORE, "--allow", "group:everyone")
    assert code == 0, err
    opened = _gql(world, ASK, "root", {"q": "What is the Q3 merger code?"}, admin=True)["vectorQuery"]
    assert "q3-report" in {c["documentId"] for c in opened["chunks"]} and SECRET not in json.dumps(opened)

    # GraphQL: the admin's feedback list, an auditor's view of the conversation
    feedback = _gql(world, FEEDBACK, "root", admin=True)["feedback"]["edges"]
    [item] = [e["node"] for e in feedback]
    assert item["userId"] == "alice" and item["comment"] == "" and item["entry"]["answer"] is None
    assert item["entry"]["withheld"] == WITHHELD_CHANGED and item["entry"]["changed"]
    audited = _gql(world, CONVERSATION, "audrey", {"id": asked["conversationId"]}, history_auditor=True)
    assert audited["conversation"]["turns"][0]["withheld"] == WITHHELD_CHANGED
    assert SECRET not in json.dumps(feedback) and SECRET not in json.dumps(audited)

    # gRPC: the same
    stubs: Stubs = load()
    with grpc.insecure_channel(served.channel_target) as channel:
        history = stubs.history_grpc.HistoryServiceStub(channel)

        def meta(user: str, **roles: bool) -> tuple[tuple[str, str]]:
            return (("authorization", f"Bearer {_token(app, user, **roles)}"),)

        listed = history.ListFeedback(
            stubs.history.ListFeedbackRequest(store_id=STORE), metadata=meta("root", admin=True)
        )
        [fb] = listed.feedback
        assert fb.comment == "" and not fb.entry.HasField("answer") and fb.entry.withheld == WITHHELD_CHANGED
        turns = history.GetConversation(
            stubs.history.GetConversationRequest(conversation_id=asked["conversationId"]),
            metadata=meta("audrey", history_auditor=True),
        )
        assert SECRET not in str(listed) and SECRET not in str(turns)
        mine = history.ListHistory(stubs.history.ListHistoryRequest(), metadata=meta("alice"))
        assert mine.entries[0].changed and SECRET in mine.entries[0].answer and not mine.entries[0].HasField("withheld")

    # the CLI: feedback list and export as the admin, the conversation as an auditor
    for argv in (
        ("feedback", "list", "--store", STORE, "--as", "root", "--admin"),
        ("feedback", "list", "--store", STORE, "--as", "root", "--admin", "--json"),
        ("feedback", "export", "--store", STORE, "--as", "root", "--admin", "--out", "-"),
        ("history", "show", asked["conversationId"], "--as", "audrey", "--audit", "--json"),
    ):
        code, out, err = _cli(capsys, *argv)
        assert code == 0, err
        assert SECRET not in out and SECRET not in err, argv
    assert (
        f"Left out: 1 rated answers; 1 {WITHHELD_CHANGED}."
        in _cli(capsys, "feedback", "export", "--store", STORE, "--as", "root", "--admin", "--out", "-")[1]
    )

    # Alice, the asker, keeps her answer and comment and is told that the document changed
    [entry] = [e["node"] for e in _gql(world, HISTORY, "alice")["history"]["edges"]]
    assert entry["changed"] and entry["withheld"] is None and SECRET in entry["answer"]
    assert entry["ratingComment"] == f"{SECRET} is the old code"
    code, out, _ = _cli(capsys, "history", "list", "--as", "alice")
    assert code == 0 and f"note: {CHANGED_NOTE}" in out

    # her follow-up does not feed the old answer to the model again
    follow = _gql(world, ASK, "alice", {"q": "and the code?", "c": asked["conversationId"]})["vectorQuery"]
    assert all(SECRET not in t.answer for t in generator.prompts[-1].earlier)
    assert SECRET not in follow["answer"]
    # nor does the admin's view of her newer entry (it quoted nothing old) leak it
    assert SECRET not in json.dumps(_gql(world, FEEDBACK, "root", admin=True))


def test_the_export_names_no_unreadable_document_and_counts_what_it_left_out(
    world: tuple[App, Served, QuotingGenerator], capsys: pytest.CaptureFixture[str]
) -> None:
    # bob's answer cites bob-notes (bob's alone): withheld from the admin, comment and all
    bobs = _gql(world, ASK, "bob", {"q": "How many vacation days do I still have?"})["vectorQuery"]
    assert "bob-notes" in {c["documentId"] for c in bobs["chunks"]}
    _gql(world, RATE, "bob", {"id": bobs["queryId"], "r": "DOWN", "c": "bob-notes says 12, keep it private"})
    # carol's answer cites what everyone reads; her comment names executive-pay, which root may not read
    carols = _gql(world, ASK, "carol", {"q": "How many days of paid vacation leave?"})["vectorQuery"]
    assert {c["documentId"] for c in carols["chunks"]} == {"handbook"}
    _gql(world, RATE, "carol", {"id": carols["queryId"], "r": "DOWN", "c": "expected executive-pay here"})

    code, out, err = _cli(capsys, "feedback", "export", "--store", STORE, "--as", "root", "--admin", "--out", "-")
    assert code == 0, err
    assert "bob-notes" not in out and "executive-pay" not in out and "keep it private" not in out
    assert f"# Left out: 1 rated answers; 1 {WITHHELD_UNREADABLE}." in out
    assert "#   # comment: expected [withheld document] here" in out
    listed = json.dumps(_gql(world, FEEDBACK, "root", admin=True))
    assert "keep it private" not in listed and WITHHELD_UNREADABLE in listed


def test_cli_as_gets_the_servers_rules(
    world: tuple[App, Served, QuotingGenerator], capsys: pytest.CaptureFixture[str]
) -> None:
    asked = _gql(world, ASK, "bob", {"q": "How many days of paid vacation leave?"})["vectorQuery"]
    _gql(world, RATE, "bob", {"id": asked["queryId"], "r": "UP", "c": "fine"})
    app, served, _ = world
    refused = httpx.post(
        served.graphql_url,
        json={"query": FEEDBACK},
        headers={"authorization": f"Bearer {mint_token(app.settings, 'gina', ttl_s=300)}"},
        timeout=10,
    ).json()
    assert refused["errors"][0]["message"] == "this operation needs the admin role"
    for action in (("list",), ("list", "--json"), ("export", "--out", "-")):
        code, out, err = _cli(capsys, "feedback", *action, "--store", STORE, "--as", "gina")
        assert (code, out) == (4, ""), action
        assert err == "error: this operation needs the admin role\n"
    code, out, _ = _cli(capsys, "feedback", "list", "--store", STORE, "--as", "gina", "--admin")
    assert code == 0 and "How many days of paid vacation leave?" in out


# ------------------------------------------------------------------------------------- the migration
ADMIN_URL = os.environ.get("DOCQA_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres")


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'settings.sqlite'}"
        return
    admin = create_engine(ADMIN_URL, isolation_level="AUTOCOMMIT")
    name = f"docqa_versions_{uuid.uuid4().hex[:12]}"
    try:
        with admin.connect() as connection:
            connection.execute(text(f'CREATE DATABASE "{name}"'))
    except OperationalError as exc:
        admin.dispose()
        pytest.skip(f"PostgreSQL is not reachable at {ADMIN_URL} ({exc.orig.__class__.__name__})")
    try:
        yield admin.url.set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def test_entries_kept_before_0006_are_shown_to_their_asker_alone(database_url: str) -> None:
    from alembic import command

    from indexer.documents import DocumentRecord
    from service.domain.store import Store

    engine = create_engine(database_url)
    try:
        schema.upgrade(engine, "0005")
        with engine.begin() as connection:
            connection.execute(
                text(
                    "INSERT INTO query_history (query_id, user_id, store_id, query_class, conversation_id, question,"
                    " answer, sources, quoted_documents, created_at) VALUES ('q1', 'alice', 's', 'vector', 'c1',"
                    " 'code?', :answer, :sources, '[]', :at)"
                ),
                {
                    "answer": f"The code is {SECRET}.",
                    "sources": json.dumps(
                        [{"document_id": "d", "chunk_id": "d#0", "title": "D", "score": 1.0, "relevance": 1.0}]
                    ),
                    "at": datetime(2026, 11, 1, tzinfo=UTC),
                },
            )
        assert schema.upgrade(engine) == schema.head_revision()
    finally:
        engine.dispose()
    repo = SqlSettingsRepository.from_url(database_url)
    try:
        repo.create_store(Store("s", "S", "fake", 0.5, 0.1, 0.6, 4))
        repo.save_document(
            DocumentRecord("s", "d", "D", "", "h1", "The code is withdrawn.", Acl.of(["group:everyone"]))
        )
        history = SqlHistoryRepository(repo.engine)
        [old] = history.entries("alice", 10)
        assert old.versions is None
        recheck = Recheck(repo, AccessChecker(repo), SqlDocumentVersions(repo.engine))
        [mine] = recheck.show(Caller("alice"), [old])
        [theirs] = recheck.show(Caller("root", is_admin=True), [old])
        assert mine.changed and mine.withheld is None and mine.entry.answer == f"The code is {SECRET}."
        assert theirs.withheld == WITHHELD_CHANGED and theirs.entry.answer is None
        with repo.engine.begin() as connection:  # and back down: the column goes, the rows stay
            command.downgrade(schema._config(connection), "0005")
        assert schema.upgrade(repo.engine) == schema.head_revision()
        assert [e.query_id for e in history.entries("alice", 10)] == ["q1"]
    finally:
        repo.close()
