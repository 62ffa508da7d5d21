"""History bound to the versions it quoted (in-memory SQLite): rewrites, deletions, follow-ups, summaries."""

from __future__ import annotations

from acl.model import Acl
from service.domain.history import WITHHELD_CHANGED
from service.domain.queries import Caller, VectorQuery
from tests.unit.engine_world import STORE
from tests.unit.history_world import make_history_world

ALICE, ADMIN = Caller("alice"), Caller("root", is_admin=True)
AUDITOR = Caller("audrey", history_auditor=True)
EVERYONE = Acl.of(["group:everyone"])


def test_a_rewrite_withholds_the_old_answer_from_all_but_its_asker_until_and_after_it_is_opened() -> None:
    hw = make_history_world()
    answer = hw.world.engine.ask(ALICE, VectorQuery(STORE, "What was the revenue in the third quarter?", 0.0))
    assert "48 million" in (answer.answer or "") or "48 million" in " ".join(c.text for c in answer.chunks)
    hw.history.rate(ALICE, answer.query_id, "DOWN", "48 million is wrong")
    [before] = hw.history.conversation(AUDITOR, answer.conversation_id)
    assert before.withheld is not None and not before.changed  # the auditor cannot read q3.md: not told more
    hw.world.add("q3.md", ["Revenue in the third quarter is restated.", "Operating costs rose."], EVERYONE)
    [(feedback, shown)] = hw.history.feedback(ADMIN, STORE).items
    assert shown.withheld == WITHHELD_CHANGED and shown.changed and shown.entry.answer is None
    assert feedback.comment == "" and "48 million" not in repr((feedback, shown))
    [turn] = hw.history.conversation(AUDITOR, answer.conversation_id)
    assert turn.withheld == WITHHELD_CHANGED and "48 million" not in repr(turn)
    [mine] = hw.history.page(ALICE).entries
    assert mine.changed and mine.withheld is None and mine.entry.answer == answer.answer
    assert mine.rating is not None and mine.rating.comment == "48 million is wrong"
    # a follow-up quotes no outdated turn
    hw.world.engine.ask(ALICE, VectorQuery(STORE, "and the costs?", 0.0, conversation_id=answer.conversation_id))
    assert hw.world.generator.prompts[-1].earlier == ()


def test_a_current_answer_is_shown_and_a_deleted_document_marks_it_changed() -> None:
    hw = make_history_world()
    bob = Caller("bob")  # not in finance: his answer cites only what everyone reads
    kept = hw.world.engine.ask(bob, VectorQuery(STORE, "How many paid vacation days do employees get?", 0.0))
    [shown] = hw.history.page(bob).entries
    assert not shown.changed and shown.withheld is None and shown.entry.depends_on == ("vacation.md",)
    assert dict(shown.entry.versions or ()).keys() == {"vacation.md"}
    hw.history.rate(bob, kept.query_id, "UP", "right")
    [(feedback, admin_view)] = hw.history.feedback(ADMIN, STORE).items
    assert admin_view.withheld is None and admin_view.entry.answer == kept.answer and feedback.comment == "right"
    hw.world.repo.delete_document(STORE, "vacation.md")
    [gone] = hw.history.page(bob).entries
    assert gone.sources_revoked and gone.withheld is not None  # a deleted document is no longer readable
    [(_, admin_after)] = hw.history.feedback(ADMIN, STORE).items
    assert admin_after.entry.answer is None and admin_after.rating is not None and admin_after.rating.comment == ""


def test_a_summary_is_bound_to_the_whole_document_it_read() -> None:
    from service.domain.analysis import SummaryRequest

    hw = make_history_world()
    hw.world.engine.summarize(ALICE, SummaryRequest(STORE, "vacation.md"))
    [entry] = hw.history.page(ALICE).entries
    assert dict(entry.entry.versions or ()).get("vacation.md") and not entry.changed
    hw.world.add("vacation.md", ["Employees receive 30 days of paid vacation per year."], EVERYONE)
    [after] = hw.history.page(ALICE).entries
    assert after.changed
