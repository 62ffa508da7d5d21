"""``evaluate``: ranks, answers and refusals counted as a user meets them; bad files change nothing."""

from __future__ import annotations

import pytest

from acl.errors import InvalidArgument, NotFound
from acl.model import Acl
from service.domain.queries import Caller
from service.generation.extractive import ExtractiveGenerator
from service.quality.evaluation import QuestionResult, evaluate, summarize
from service.quality.questions import parse_questions
from service.query.engine import QueryEngine
from tests.unit.engine_world import STORE, make_world

pytestmark = pytest.mark.unit

EVERYONE = Acl(allow=frozenset({"group:everyone"}))
SECRET = Acl(allow=frozenset({"user:alice"}))

QUESTIONS = """\
questions:
  - id: a1
    question: vacation days allowance per year
    documents: [vacation]
    terms: [twenty]
  - id: a2
    question: expense claims receipts deadline
    documents: [expenses]
    terms: [nowhere]
  - id: a3
    question: salary bands engineers
    documents: [salaries]
  - id: u1
    question: football world cup winner
    unanswerable: true
"""


def world():  # type: ignore[no-untyped-def]
    w = make_world(level=0.5, min_threshold=0.1, max_threshold=0.5)
    w.add("vacation", ["Employees get twenty vacation days allowance per year."], EVERYONE)
    w.add("expenses", ["Expense claims need receipts and are filed before the deadline."], EVERYONE)
    w.add("salaries", ["Salary bands for engineers are reviewed yearly."], SECRET)
    # The offline answerer, so that answers quote the sources' words.
    w.engine = QueryEngine(
        repository=w.repo, index=w.index, embedder_for=lambda _: w.embedder, generator=ExtractiveGenerator()
    )
    return w


def result(rank: int | None, *, unanswerable: bool = False, answered: bool = True, term: bool | None = None):  # type: ignore[no-untyped-def]
    return QuestionResult("q", 1, "q", unanswerable, (), (), rank, answered, None, term, None, 1.0)


def test_metrics_follow_their_definitions() -> None:
    summary = summarize(
        [result(1, term=True), result(2, term=False), result(None), result(None, unanswerable=True, answered=False)]
    )
    assert (summary.answerable, summary.unanswerable) == (3, 1)
    assert summary.hit_at_1 == pytest.approx(1 / 3)
    assert summary.hit_at_5 == pytest.approx(2 / 3)
    assert summary.mrr == pytest.approx((1 + 0.5) / 3)
    assert summary.refused == 1.0 and summary.answered == 1.0
    assert summary.terms == pytest.approx(0.5)


def test_evaluate_scores_what_the_caller_may_read() -> None:
    w = world()
    questions = parse_questions(QUESTIONS, "q.yaml")
    bob = evaluate(w.engine, w.repo, Caller("bob"), STORE, questions)
    by_id = {r.id: r for r in bob.results}
    assert by_id["a1"].rank == 1 and by_id["a1"].answered and by_id["a1"].term_found
    assert by_id["a2"].rank == 1 and by_id["a2"].term_found is False
    # bob may not read the salary page: it is never ranked, and never shown in the report.
    assert by_id["a3"].rank is None and "salaries" not in by_id["a3"].ranked
    assert not by_id["u1"].answered and by_id["u1"].rank is None
    assert bob.summary.hit_at_1 == pytest.approx(2 / 3) and bob.summary.refused == 1.0
    alice = evaluate(w.engine, w.repo, Caller("alice"), STORE, questions)
    assert {r.id: r.rank for r in alice.results}["a3"] == 1


def test_unknown_store_and_unknown_documents_stop_before_any_question() -> None:
    w = make_world()
    before = len(w.generator.prompts)
    w.add("expenses", ["Expense claims need receipts."], EVERYONE)
    with pytest.raises(NotFound):
        evaluate(w.engine, w.repo, Caller("bob"), "nope", parse_questions(QUESTIONS, "q.yaml"))
    bad = QUESTIONS.replace("documents: [expenses]", "documents: [expenses, missing.md]")
    bad = bad.replace("documents: [vacation]", "documents: [expenses]")
    with pytest.raises(InvalidArgument, match=r"q.yaml:6: question 'a2' expects document 'missing.md'"):
        evaluate(w.engine, w.repo, Caller("bob"), STORE, parse_questions(bad, "q.yaml"))
    assert len(w.generator.prompts) == before


def test_a_question_the_engine_refuses_is_named_by_its_line() -> None:
    w = world()
    long = "questions:\n  - id: a1\n    question: " + "word " * 900 + "\n    documents: [vacation]\n"
    with pytest.raises(InvalidArgument, match=r"^q.yaml:2: "):
        evaluate(w.engine, w.repo, Caller("bob"), STORE, parse_questions(long, "q.yaml"))


def test_passages_near_misses_and_debris_are_counted() -> None:
    from service.quality.evaluation import has_debris

    near = QuestionResult("n", 1, "q", True, (), (), None, False, None, None, None, 1.0, near=True)
    off = QuestionResult("u", 1, "q", True, (), (), None, True, "x", None, None, 1.0)
    found = QuestionResult("a", 1, "q", False, (), (), 1, True, "x", None, None, 1.0, passage_found=True)
    missed = QuestionResult(
        "b", 1, "q", False, (), (), 1, True, "&lt;x>", None, None, 1.0, passage_found=False, debris=True
    )
    summary = summarize([near, off, found, missed])
    assert (summary.refused_near, summary.refused_off, summary.passages, summary.debris) == (1.0, 0.0, 0.5, 1)
    for text in ("named &lt;new-branch> starting", "A r c h i t e c t u r e", "Thisdocumentmaybeusedunderthetermsof"):
        assert has_debris(text), text
    assert not has_debris("git clean -f -d removes untracked files & directories; see git-clean(1).")


def test_identifier_hit_at_3_counts_the_identifier_questions_only() -> None:
    def asked(rank: int | None, identifier: bool) -> QuestionResult:
        return QuestionResult("q", 1, "q", False, (), (), rank, True, None, None, None, 1.0, identifier=identifier)

    summary = summarize([asked(1, True), asked(3, True), asked(4, True), asked(None, True), asked(9, False)])
    assert summary.identifier_hit_at_3 == pytest.approx(2 / 4)
    assert summary.identifier_questions == 4
    assert summary.hit_at_5 == pytest.approx(3 / 5)  # the other metrics count every answerable question
    none = summarize([asked(1, False), result(None, unanswerable=True, answered=False)])
    assert (none.identifier_hit_at_3, none.identifier_questions) == (None, 0)


def test_evaluate_reports_identifier_questions() -> None:
    w = world()
    questions = parse_questions(
        QUESTIONS.replace("    documents: [vacation]\n", "    documents: [vacation]\n    identifier: true\n"), "q.yaml"
    )
    report = evaluate(w.engine, w.repo, Caller("bob"), STORE, questions)
    [marked] = [r for r in report.results if r.identifier]
    assert marked.id == "a1" and report.summary.identifier_questions == 1
    assert marked.rank == 1 and report.summary.identifier_hit_at_3 == 1.0
    assert report.to_dict()["summary"]["identifier_hit_at_3"] == report.summary.identifier_hit_at_3
