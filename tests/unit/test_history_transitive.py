"""A follow-up's answer may restate an earlier turn's answer (the model sees it quoted). Its entry therefore
records the documents behind the turns it quoted, and revoking one of them redacts the follow-up too: in the
history, in an admin's feedback listing, and in the next prompt, at every hop of the conversation."""

from __future__ import annotations

from service.domain.queries import Caller, VectorQuery
from service.generation.port import Completion
from service.generation.prompt import Prompt
from tests.fakes_service import RecordingGenerator
from tests.unit.engine_world import STORE
from tests.unit.history_world import make_history_world

ALICE = Caller("alice")
ADMIN = Caller("root", is_admin=True)


class EchoingGenerator(RecordingGenerator):
    """Like a real chat model: restates what it was given, earlier turns included."""

    def generate(self, prompt: Prompt) -> Completion:
        self.prompts.append(prompt)
        own = " ".join(f"{c.text} [{c.citation}]" for c in prompt.chunks)
        recap = " ".join(t.answer for t in prompt.earlier)
        text = f"{own} As said before: {recap}" if recap else own
        return Completion(text=text, model_id=self.model_id, used_citations=tuple(c.citation for c in prompt.chunks))


def test_revoked_content_survives_in_a_follow_up_answer() -> None:
    hw = make_history_world()
    echo = EchoingGenerator()
    hw.world.engine._answering._generator = echo  # the model used for answers
    first = hw.world.engine.ask(
        ALICE, VectorQuery(STORE, "What was the revenue in the third quarter?", 0.9, max_chunks=1)
    )
    assert {c.document_id for c in first.chunks} == {"q3.md"}
    assert "48 million" in (first.answer or "")
    second = hw.world.engine.ask(
        ALICE,
        VectorQuery(
            STORE,
            "How many paid vacation days do employees get per year?",
            0.9,
            max_chunks=1,
            conversation_id=first.conversation_id,
        ),
    )
    assert {c.document_id for c in second.chunks} == {"vacation.md"}
    assert "48 million" in (second.answer or "")  # the model restated the earlier turn
    rating = hw.history.rate(ALICE, second.query_id, "UP")

    # alice loses access to q3.md
    hw.world.access.remove_member("group:finance", "user:alice", "test")

    page = hw.history.page(ALICE)
    leaked_history = [s.entry.answer for s in page.entries if s.entry.answer and "48 million" in s.entry.answer]
    # next turn's prompt
    hw.world.engine.ask(
        ALICE, VectorQuery(STORE, "And contractors?", 0.9, max_chunks=1, conversation_id=first.conversation_id)
    )
    leaked_prompt = [t.answer for t in echo.prompts[-1].earlier if "48 million" in t.answer]
    # an admin who is not in finance reads the feedback listing
    fb = hw.history.feedback(ADMIN, STORE)
    leaked_feedback = [s.entry.answer for _, s in fb.items if s.entry.answer and "48 million" in s.entry.answer]
    assert rating is not None
    assert (leaked_history, leaked_prompt, leaked_feedback) == ([], [], []), (
        f"history: {len(leaked_history)}, next prompt: {len(leaked_prompt)}, admin feedback: {len(leaked_feedback)}"
    )
