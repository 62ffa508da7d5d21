"""Identifiers are always found: a question that names an exact code, setting or option that one readable
document spells gets that document among its first three sources, on the embedded index with the default
(offline) reranker, whether the candidates held it or only one more lexical search of it found it.

What the caller may not read changes nothing: a document only finance may read that spells the identifier
never appears, and the sources (ids, order, scores, count) are those of the same store without it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from acl.model import Acl
from service.bootstrap import App, build_app
from service.config import RerankConfig, Settings
from service.domain.queries import Answer, Caller, MultiDocumentQuery, VectorQuery
from tests.fakes_service import FakeEmbedder

pytestmark = pytest.mark.integration

STORE = "handbook"
EVERYONE = Acl.of(["group:everyone"])
FINANCE = Acl.of(["group:finance"])
ALICE = Caller("alice")
CODE = "PPR-9087"
QUESTION = f"Does {CODE} change the refund approval deadline for customer refunds?"
#: The same question with the code misspelt (lower case): the same words to BM25 and the fake embedder, no
#: identifier to keep.
MISSPELT = QUESTION.replace(CODE, CODE.lower())
REFUNDS = ("refund", "approval", "deadline", "customer", "receipt", "manager", "payment", "invoice")


def _refund_document(n: int) -> bytes:
    """A page about refunds: near the question in every word but the code."""
    parts = [f"# Refund rules part {n}\n"]
    for i in range(4):
        a, b, c = REFUNDS[(n + i) % 8], REFUNDS[(n + i + 3) % 8], REFUNDS[(n + i + 5) % 8]
        parts.append(
            f"## Refund {a} section {i}\n\nA customer refund needs {a} and {b} before the refund approval "
            f"deadline; the {c} team checks every refund {a} within the approval deadline of the refund.\n"
        )
    return "\n".join(parts).encode()


LEDGER = (
    b"# Ledger export\n\n## Schedule\n\nThe ledger export runs nightly and the archive keeps it for a year.\n\n"
    b"## Changes\n\nChange request PPR-9087 moved the ledger export to Fridays after the archive migration.\n"
)
SECRET = (
    b"# PPR-9087 board notes\n\n## PPR-9087\n\nPPR-9087 changes the refund approval deadline for customer "
    b"refunds: the board keeps PPR-9087 confidential.\n"
)


def _app(data_dir: Path, *, ledger: bool = True, secret: bool = False, candidates: int = 30) -> App:
    app = build_app(
        Settings(data_dir=data_dir, rerank=RerankConfig(candidates=candidates)),
        embedder_factory=lambda _: FakeEmbedder(),
    )
    ingest = app.ingestor(STORE)
    for n in range(8):
        ingest.upsert_bytes(f"refunds-{n}.md", _refund_document(n), "text/markdown", acl=EVERYONE)
    if ledger:
        ingest.upsert_bytes("ledger.md", LEDGER, "text/markdown", acl=EVERYONE)
    if secret:
        ingest.upsert_bytes("board.md", SECRET, "text/markdown", acl=FINANCE)
    return app


@pytest.fixture
def apps(tmp_path: Path) -> Iterator[list[App]]:
    opened: list[App] = []
    yield opened
    for app in opened:
        app.close()


def _ask(app: App, question: str, caller: Caller = ALICE) -> Answer:
    return app.one_shot_engine.ask(caller, VectorQuery(STORE, question, level=0.0, perform_llm_query=False))


def _documents(answer: Answer) -> list[str]:
    return list(dict.fromkeys(c.document_id for c in answer.chunks))


def _sources(answer: Answer) -> list[tuple[str, float, str]]:
    return [(c.chunk_id, c.score, c.text) for c in answer.chunks]


@pytest.mark.parametrize("candidates", [30, 4], ids=["among-candidates", "one-more-search"])
def test_the_one_document_that_spells_the_identifier_is_among_the_first_three(
    apps: list[App], tmp_path: Path, candidates: int
) -> None:
    app = _app(tmp_path, candidates=candidates)
    apps.append(app)
    # Without the identifier (the code misspelt, the same words otherwise) the ledger is not in the first three.
    assert "ledger.md" not in _documents(_ask(app, MISSPELT))[:3]
    found = _ask(app, QUESTION)
    assert "ledger.md" in _documents(found)[:3]
    assert any(CODE in c.text for c in found.chunks[:3])
    # Nothing else is dropped: the misspelt question's other sources are all still there.
    others = [c.chunk_id for c in _ask(app, MISSPELT).chunks]
    assert set(others) - {c.chunk_id for c in found.chunks} <= {others[-1]}  # at most the last one, for k


def test_the_identifier_within_chosen_documents(apps: list[App], tmp_path: Path) -> None:
    app = _app(tmp_path)
    apps.append(app)
    chosen = (*(f"refunds-{n}.md" for n in range(8)), "ledger.md")
    query = MultiDocumentQuery(STORE, QUESTION, chosen, level=0.0, perform_llm_query=False)
    assert "ledger.md" in _documents(app.one_shot_engine.ask(ALICE, query))[:3]


@pytest.mark.parametrize("ledger", [True, False], ids=["readable-copy-too", "only-unreadable"])
@pytest.mark.parametrize("candidates", [30, 4], ids=["among-candidates", "one-more-search"])
def test_an_identifier_in_a_document_the_caller_may_not_read_changes_nothing(
    apps: list[App], tmp_path: Path, ledger: bool, candidates: int
) -> None:
    with_secret = _app(tmp_path / "with", ledger=ledger, secret=True, candidates=candidates)
    without = _app(tmp_path / "without", ledger=ledger, candidates=candidates)
    apps += [with_secret, without]
    for question in (QUESTION, CODE, f"What is {CODE}?"):
        seen = _ask(with_secret, question)
        assert "board.md" not in _documents(seen)
        assert all("confidential" not in c.text for c in seen.chunks)
        absent = _ask(without, question)
        assert _sources(seen) == _sources(absent)
        assert (seen.no_relevant_document, seen.warnings) == (absent.no_relevant_document, absent.warnings)
    if ledger:  # the readable copy is what the identifier brings up
        assert "ledger.md" in _documents(_ask(with_secret, QUESTION))[:3]
    # A finance reader does get the board's notes: the document is there, and spells the code.
    assert "board.md" in _documents(_ask(with_secret, QUESTION, Caller("carol", ("group:finance",))))[:3]
