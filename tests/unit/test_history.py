"""Conversations, history and ratings through the engine and the history service (in-memory SQLite)."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acl.errors import InvalidArgument, NotFound, PermissionDenied
from acl.model import Acl
from service.domain.history import MAX_COMMENT_CHARS, parse_cursor
from service.domain.queries import Caller, DocumentQuery, MultiDocumentQuery, VectorQuery
from tests.unit.engine_world import STORE
from tests.unit.history_world import HistoryWorld, make_history_world

ALICE, BOB = Caller("alice"), Caller("bob")
ADMIN = Caller("root", is_admin=True)
AUDITOR = Caller("auditor", history_auditor=True)
REVENUE = "What was the revenue in the third quarter?"


@pytest.fixture
def hw() -> HistoryWorld:
    return make_history_world()


def ask(hw: HistoryWorld, caller: Caller, question: str, conversation: str | None = None) -> object:
    return hw.world.engine.ask(caller, VectorQuery(STORE, question, 0.0, conversation_id=conversation))


def test_a_query_starts_a_conversation_and_a_follow_up_is_rewritten_and_kept(hw: HistoryWorld) -> None:
    first = hw.world.engine.ask(ALICE, VectorQuery(STORE, "How many paid vacation days do employees get?", 0.0))
    assert first.conversation_id is not None and uuid.UUID(first.conversation_id)
    assert first.rewritten_question is None
    follow = hw.world.engine.ask(
        ALICE, VectorQuery(STORE, "And contractors?", 0.0, conversation_id=first.conversation_id)
    )
    assert follow.conversation_id == first.conversation_id
    assert follow.rewritten_question is not None
    assert "contractors" in follow.rewritten_question and "vacation" in follow.rewritten_question
    assert follow.to_dict()["rewritten_question"] == follow.rewritten_question
    page = hw.history.page(ALICE)
    assert [s.entry.query_id for s in page.entries] == [follow.query_id, first.query_id]
    assert page.entries[0].entry.question == "And contractors?"
    assert page.next_cursor is None
    # the prompt of the follow-up quoted the earlier turn (question and answer text, no chunks of it)
    prompt = hw.world.generator.prompts[-1]
    assert [t.question for t in prompt.earlier] == ["How many paid vacation days do employees get?"]
    assert "<turn-" in prompt.render()


def test_another_users_or_an_unknown_conversation_is_not_found_and_nothing_is_kept(hw: HistoryWorld) -> None:
    first = hw.world.engine.ask(ALICE, VectorQuery(STORE, REVENUE, 0.0))
    for caller in (BOB, ADMIN, AUDITOR):
        with pytest.raises(NotFound, match=r"^conversation not found$"):
            hw.world.engine.ask(caller, VectorQuery(STORE, "and costs?", 0.0, conversation_id=first.conversation_id))
    for unknown in (str(uuid.uuid4()), "nope", "", "x" * 5000):
        with pytest.raises(NotFound, match=r"^conversation not found$"):
            hw.world.engine.ask(BOB, VectorQuery(STORE, "and costs?", 0.0, conversation_id=unknown))
    assert hw.history.page(BOB).entries == ()
    assert len(hw.history.page(ALICE).entries) == 1


def test_history_after_revocation_is_redacted_for_the_owner(hw: HistoryWorld) -> None:
    answer = hw.world.engine.ask(ALICE, VectorQuery(STORE, REVENUE, 0.0))
    assert "q3.md" in {c.document_id for c in answer.chunks}
    hw.world.access.remove_member("group:finance", "user:alice", "test")
    [shown] = hw.history.page(ALICE).entries
    assert shown.sources_revoked and shown.entry.answer is None
    assert "q3.md" not in shown.entry.document_ids
    leaked = repr(shown)
    assert "48 million" not in leaked and "Q3.MD" not in leaked and "q3.md" not in leaked
    [turn] = hw.history.conversation(ALICE, answer.conversation_id)
    assert turn.sources_revoked and turn.entry.answer is None
    # readable again: shown whole again (redaction is decided on every read)
    hw.world.access.add_member("group:finance", "user:alice", "test")
    [again] = hw.history.page(ALICE).entries
    assert not again.sources_revoked and again.entry.answer == answer.answer


def test_the_prompt_of_a_follow_up_never_quotes_a_revoked_earlier_answer(hw: HistoryWorld) -> None:
    first = hw.world.engine.ask(ALICE, VectorQuery(STORE, REVENUE, 0.0))
    second = hw.world.engine.ask(
        ALICE,
        MultiDocumentQuery(
            STORE, "How many paid vacation days?", ("vacation.md",), 0.0, conversation_id=first.conversation_id
        ),
    )
    assert {c.document_id for c in second.chunks} == {"vacation.md"}
    hw.world.access.override_acl(STORE, "q3.md", Acl.of(["user:nobody"]), "test")
    hw.world.engine.ask(ALICE, VectorQuery(STORE, "and for contractors?", 0.0, conversation_id=first.conversation_id))
    prompt = hw.world.generator.prompts[-1]
    # The second turn's prompt quoted the first, so its answer may restate the revoked one: neither is quoted.
    assert prompt.earlier == ()
    rendered = prompt.render()
    assert "48 million" not in rendered and "third quarter" not in rendered.split("<document-")[0]
    # A turn that drew on nothing revoked is still quoted.
    hw.world.engine.ask(
        ALICE, VectorQuery(STORE, "Vacation days per year for employees?", 0.0, conversation_id=first.conversation_id)
    )
    hw.world.engine.ask(ALICE, VectorQuery(STORE, "and for contractors?", 0.0, conversation_id=first.conversation_id))
    quoted = [t.question for t in hw.world.generator.prompts[-1].earlier]
    assert "Vacation days per year for employees?" in quoted
    assert REVENUE not in quoted and "How many paid vacation days?" not in quoted
    assert "48 million" not in hw.world.generator.prompts[-1].render().split("<document-")[0]


def test_a_search_only_query_is_kept_without_an_answer(hw: HistoryWorld) -> None:
    answer = hw.world.engine.ask(ALICE, VectorQuery(STORE, REVENUE, 0.0, perform_llm_query=False))
    [shown] = hw.history.page(ALICE).entries
    assert shown.entry.query_id == answer.query_id and shown.entry.answer is None and shown.entry.sources


def test_delete_entry_and_conversation_only_by_their_owner(hw: HistoryWorld) -> None:
    first = hw.world.engine.ask(ALICE, VectorQuery(STORE, REVENUE, 0.0))
    hw.world.engine.ask(ALICE, VectorQuery(STORE, "and the costs?", 0.0, conversation_id=first.conversation_id))
    for caller in (BOB, ADMIN):
        with pytest.raises(NotFound, match=r"^query not found$"):
            hw.history.delete_entry(caller, first.query_id)
        with pytest.raises(NotFound, match=r"^conversation not found$"):
            hw.history.delete_conversation(caller, first.conversation_id)
        with pytest.raises(NotFound, match=r"^conversation not found$"):
            hw.history.conversation(caller, first.conversation_id)
    assert len(hw.history.page(ALICE).entries) == 2
    assert len(hw.history.conversation(AUDITOR, first.conversation_id)) == 2  # read-only audit
    hw.history.delete_entry(ALICE, first.query_id)
    with pytest.raises(NotFound, match=r"^query not found$"):
        hw.history.delete_entry(ALICE, first.query_id)
    assert hw.history.delete_conversation(ALICE, first.conversation_id) == 1
    assert hw.history.page(ALICE).entries == ()
    with pytest.raises(NotFound):  # a deleted conversation cannot be continued
        hw.world.engine.ask(ALICE, VectorQuery(STORE, "and?", 0.0, conversation_id=first.conversation_id))


def test_an_auditor_sees_sources_by_their_own_rights(hw: HistoryWorld) -> None:
    first = hw.world.engine.ask(ALICE, VectorQuery(STORE, REVENUE, 0.0))
    [shown] = hw.history.conversation(AUDITOR, first.conversation_id)
    assert shown.sources_revoked and shown.entry.answer is None and "q3.md" not in shown.entry.document_ids


def test_ratings_owner_only_one_per_query_and_bounded(hw: HistoryWorld) -> None:
    answer = hw.world.engine.ask(ALICE, VectorQuery(STORE, REVENUE, 0.0))
    for caller in (BOB, ADMIN):
        with pytest.raises(NotFound, match=r"^query not found$"):
            hw.history.rate(caller, answer.query_id, "UP")
    with pytest.raises(NotFound, match=r"^query not found$"):
        hw.history.rate(ALICE, str(uuid.uuid4()), "UP")
    for rating, comment in (("MEH", ""), ("UP", "x" * (MAX_COMMENT_CHARS + 1)), (None, ""), ("UP", 5)):
        with pytest.raises(InvalidArgument):
            hw.history.rate(ALICE, answer.query_id, rating, comment)
    assert hw.history.feedback(ADMIN, STORE).items == ()
    hw.history.rate(ALICE, answer.query_id, "up", "good")
    hw.history.rate(ALICE, answer.query_id, "DOWN", "x" * MAX_COMMENT_CHARS)
    [(feedback, shown)] = hw.history.feedback(ADMIN, STORE).items
    assert feedback.rating == "DOWN" and feedback.user_id == "alice"
    # the admin cannot read q3.md: the rated entry is redacted for them too
    assert shown.sources_revoked and shown.entry.answer is None and "q3.md" not in shown.entry.document_ids
    with pytest.raises(PermissionDenied):
        hw.history.feedback(ALICE, STORE)
    with pytest.raises(NotFound):
        hw.history.feedback(ADMIN, "nope")
    # the comment is part of the answer it rates: withheld from the admin with it, kept for its author
    assert feedback.comment == "" and shown.withheld == "withheld: you cannot read a cited document"
    mine = hw.history.page(ALICE).entries[0].rating
    assert mine is not None and mine.comment == "x" * MAX_COMMENT_CHARS and mine.query_id == feedback.query_id


def test_purge_drops_entries_past_the_retention(hw: HistoryWorld) -> None:
    old = hw.world.engine.ask(ALICE, VectorQuery(STORE, REVENUE, 0.0))
    hw.history.rate(ALICE, old.query_id, "UP")
    hw.clock.now += timedelta(days=91)
    new = hw.world.engine.ask(ALICE, VectorQuery(STORE, REVENUE, 0.0))
    assert hw.history.purge() == 1
    assert [s.entry.query_id for s in hw.history.page(ALICE).entries] == [new.query_id]
    assert hw.history.feedback(ADMIN, STORE).items == ()


def test_document_query_and_failures_leave_no_entry(hw: HistoryWorld) -> None:
    with pytest.raises(NotFound):
        hw.world.engine.ask(BOB, DocumentQuery(STORE, REVENUE, "q3.md"))
    with pytest.raises(InvalidArgument):
        hw.world.engine.ask(BOB, VectorQuery(STORE, REVENUE, 7.0))
    assert hw.history.page(BOB).entries == ()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(count=st.integers(0, 12), size=st.integers(1, 5))
def test_pages_walk_the_whole_history_newest_first_once(count: int, size: int) -> None:
    hw = make_history_world()
    asked = [
        hw.world.engine.ask(ALICE, VectorQuery(STORE, f"vacation days {i}", 0.0, perform_llm_query=False))
        for i in range(count)
    ]
    hw.world.engine.ask(BOB, VectorQuery(STORE, "vacation days", 0.0, perform_llm_query=False))
    seen: list[str] = []
    cursor = None
    while True:
        page = hw.history.page(ALICE, size, cursor)
        seen += [s.entry.query_id for s in page.entries]
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert seen == [a.query_id for a in reversed(asked)]


@given(st.text(max_size=300))
def test_any_cursor_is_a_position_or_invalid_argument(text: str) -> None:
    try:
        position = parse_cursor(text)
    except InvalidArgument as exc:
        assert "cursor" in exc.message
    else:
        assert position is None or position.created_at.tzinfo is not None


@pytest.mark.parametrize("first", [0, 101, -1, True, "5", 2.5])
def test_page_size_out_of_range_is_invalid(hw: HistoryWorld, first: object) -> None:
    with pytest.raises(InvalidArgument):
        hw.history.page(ALICE, first)


def test_summaries_and_comparisons_are_kept_and_redacted_like_answers(hw: HistoryWorld) -> None:
    from service.domain.analysis import ComparisonRequest, SummaryRequest

    summary = hw.world.engine.summarize(ALICE, SummaryRequest(STORE, "q3.md", "short"))
    comparison = hw.world.engine.compare(ALICE, ComparisonRequest(STORE, ("q3.md", "vacation.md"), None))
    entries = {s.entry.query_id: s for s in hw.history.page(ALICE).entries}
    kept = entries[summary.query_id]
    assert kept.entry.query_class == "summary" and kept.entry.answer == summary.summary
    assert "q3" not in kept.entry.question  # the label names no document
    assert entries[comparison.query_id].entry.query_class == "comparison"
    hw.history.rate(ALICE, summary.query_id, "UP", "")  # a summary can be rated like an answer
    hw.world.access.remove_member("group:finance", "user:alice", "test")
    for query_id in (summary.query_id, comparison.query_id):
        shown = next(s for s in hw.history.page(ALICE).entries if s.entry.query_id == query_id)
        assert shown.sources_revoked and shown.entry.answer is None
        assert "48 million" not in repr(shown) and "q3.md" not in repr(shown)
