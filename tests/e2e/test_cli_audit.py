"""Every query the CLI answers in-process (``--as USER``) is audited as the servers' are: interface ``cli``,
one row per query, written with its history entry; a refused query leaves its failure row; eval keeps nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from service.bootstrap import build_app
from service.config import load_settings
from service.persistence.ports import AuditRecord
from tests.e2e import test_cli
from tests.e2e.test_cli import QUESTION, run

pytestmark = pytest.mark.e2e

corpus = test_cli.corpus  # the CLI suite's fixture: a copy of examples/acme
data_dir = test_cli.data_dir  # indexed once for this module


def _audit(data: Path, user: str) -> list[AuditRecord]:
    """``user``'s audit rows, oldest first, read from the data directory's settings database."""
    app = build_app(load_settings(data_dir=data))
    try:
        return list(reversed(app.repository.audit_records(user, 100)))
    finally:
        app.close()


def _history(data: Path, user: str) -> list[str]:
    listed = json.loads(run(data, "history", "list", "--as", user, "--json").stdout)
    return [entry["query_id"] for entry in listed["entries"]]


def test_every_local_query_leaves_an_audit_row_with_its_history_entry(data_dir: Path) -> None:
    asked = json.loads(run(data_dir, "ask", QUESTION, "--store", "acme", "--as", "alice", "--json").stdout)
    searched = json.loads(run(data_dir, "search", "revenue", "--store", "acme", "--as", "alice", "--json").stdout)
    summary = json.loads(
        run(data_dir, "summarize", "finance/q3-results.md", "--store", "acme", "--as", "alice", "--json").stdout
    )
    pair = ("handbook/vacation-policy.md", "handbook/expenses.md")
    compared = json.loads(run(data_dir, "compare", *pair, "--store", "acme", "--as", "alice", "--json").stdout)
    assert asked["timings_ms"]  # the operator on the server is shown the timings, as before

    rows = _audit(data_dir, "alice")
    ids = [asked["query_id"], searched["query_id"], summary["query_id"], compared["query_id"]]
    assert [r.query_id for r in rows] == ids
    assert {r.interface for r in rows} == {"cli"} and {r.outcome for r in rows} == {"OK"}
    assert [r.query_class for r in rows] == ["vector", "vector", "summary", "comparison"]
    assert rows[0].chunk_ids == tuple(c["chunk_id"] for c in asked["chunks"])
    assert rows[2].document_ids == ("finance/q3-results.md",) and rows[3].document_ids == pair
    assert set(_history(data_dir, "alice")) == set(ids)  # kept in alice's history under the same ids


def test_a_refused_local_query_leaves_a_failure_row_and_eval_keeps_nothing(data_dir: Path) -> None:
    hidden = run(data_dir, "summarize", "finance/q3-results.md", "--store", "acme", "--as", "dave", check=False)
    assert hidden.returncode == 3
    missing = run(data_dir, "ask", QUESTION, "--store", "nope", "--as", "dave", check=False)
    assert missing.returncode == 3
    one = run(data_dir, "compare", "handbook/expenses.md", "--store", "acme", "--as", "dave", check=False)
    assert one.returncode == 2
    rows = _audit(data_dir, "dave")
    assert [(r.query_class, r.outcome, r.interface) for r in rows] == [
        ("summary", "NOT_FOUND", "cli"),
        ("vector", "NOT_FOUND", "cli"),
        ("comparison", "INVALID_ARGUMENT", "cli"),
    ]
    assert rows[0].document_ids == ("finance/q3-results.md",) and not rows[0].chunk_ids
    assert _history(data_dir, "dave") == []

    run(data_dir, "eval", str(test_cli.ROOT / "examples" / "acme-questions.yaml"), "--store", "acme", "--as", "erin")
    assert _audit(data_dir, "erin") == [] and _history(data_dir, "erin") == []


class _InterruptedWhenKept:
    """The data directory's engine, with Ctrl-C arriving as the answer is handed over to be kept (the last
    moment before the audit row and the history entry are written)."""

    def __init__(self, engine: object) -> None:
        self._engine = engine

    def _interrupting(self, name: str, *args: object) -> object:
        def keep(_entry: object) -> None:
            raise KeyboardInterrupt

        return getattr(self._engine, name)(*args[:-1], keep)

    def ask(self, caller: object, query: object, on_text: object, cancel: object, keep: object) -> object:
        return self._interrupting("ask", caller, query, on_text, cancel, keep)

    def summarize(self, caller: object, request: object, on_text: object, cancel: object, keep: object) -> object:
        return self._interrupting("summarize", caller, request, on_text, cancel, keep)


def test_a_local_query_interrupted_by_ctrl_c_is_audited_cancelled_and_not_kept(data_dir: Path) -> None:
    from service.api.cli.audited import CLI_INTERFACE, cli_identity
    from service.api.errors import outcome_of
    from service.domain.analysis import SummaryRequest
    from service.domain.queries import VectorQuery
    from service.observability.metrics import Metrics
    from service.usecases.audit import AuditedQueries
    from service.usecases.audited_analysis import AuditedAnalysis

    app = build_app(load_settings(data_dir=data_dir))
    try:
        interrupted = _InterruptedWhenKept(app.engine)
        queries = AuditedQueries(
            lambda: interrupted,  # type: ignore[arg-type,return-value]
            lambda: app.repository,
            Metrics(),
            operator=True,
            outcome_of=outcome_of,
        )
        identity = cli_identity("carol")
        with pytest.raises(KeyboardInterrupt):
            queries.ask(identity, VectorQuery("acme", QUESTION), CLI_INTERFACE)
        with pytest.raises(KeyboardInterrupt):
            AuditedAnalysis(queries).summarize(identity, SummaryRequest("acme", "finance/q3-results.md"), CLI_INTERFACE)
    finally:
        app.close()
    rows = _audit(data_dir, "carol")
    assert [(r.query_class, r.outcome, r.interface) for r in rows] == [
        ("vector", "CANCELLED", "cli"),
        ("summary", "CANCELLED", "cli"),
    ]
    assert _history(data_dir, "carol") == []  # an answer its caller interrupted is not kept as answered
