"""A forged cursor whose instant overflows when moved to UTC is INVALID_ARGUMENT, never a traceback."""

from __future__ import annotations

import base64
import json

import pytest

from acl.errors import InvalidArgument
from service.domain.queries import Caller
from tests.unit.engine_world import STORE
from tests.unit.history_world import make_history_world


def _cursor(when: str) -> str:
    raw = json.dumps([when, "q"]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


@pytest.mark.parametrize("when", ["9999-12-31T23:00:00-14:00", "0001-01-01T00:00:00+14:00"])
def test_history_page_with_overflowing_cursor(when: str) -> None:
    hw = make_history_world()
    with pytest.raises(InvalidArgument):
        hw.history.page(Caller("alice"), 5, _cursor(when))


@pytest.mark.parametrize("when", ["9999-12-31T23:00:00-14:00", "0001-01-01T00:00:00+14:00"])
def test_feedback_page_with_overflowing_cursor(when: str) -> None:
    hw = make_history_world()
    with pytest.raises(InvalidArgument):
        hw.history.feedback(Caller("root", is_admin=True), STORE, 5, _cursor(when))


@pytest.mark.parametrize("question", ["paid\x00vacation?", "\x1b[2Jdays?", "days\x7f?"])
def test_a_question_with_control_characters_is_refused(question: str) -> None:
    from service.domain.limits import Limits

    with pytest.raises(InvalidArgument, match="control characters"):
        Limits().question(question)
    assert Limits().question("how many\tdays?\r\nper year") == "how many\tdays?\r\nper year"


@pytest.mark.parametrize("text", ["days\ud800?", "\udfff", "paid \ud83d vacation"])
def test_a_question_or_document_id_with_a_lone_surrogate_is_refused(text: str) -> None:
    """JSON may carry "\\ud800"; no database's text can store it, so it is refused before any work."""
    from service.domain.limits import Limits

    with pytest.raises(InvalidArgument, match="lone surrogate"):
        Limits().question(text)
    with pytest.raises(InvalidArgument, match="lone surrogate"):
        Limits().document_ids(["handbook", text])
    assert Limits().question("vacation 🏖 days?") == "vacation 🏖 days?"  # a real astral character is fine
