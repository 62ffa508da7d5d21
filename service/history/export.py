"""A store's ratings as a question file ``docqa eval`` reads (``service.quality.questions``).

What the eval format can say honestly, and so what is written:

- an up-voted answer: its question (the standalone one that was searched, for a follow-up) with the
  documents it cited that the exporting admin may read — retrieving any of them is a hit;
- a down-voted answer whose comment names documents of the store (their ids, as the admin may read them):
  a regression question expecting those documents;
- any other down-voted answer: the format has no "wrong answer" marker and calling the question
  unanswerable would be a guess, so it is written as a commented-out entry marked ``needs review``, with
  the comment, for a person to complete — ``docqa eval`` skips it until then.

Sources pass the same re-check as the feedback listing: the admin's own rights today, so an export never
names a document the admin cannot read. Nothing of a redacted answer's text is written (none is kept here).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import yaml

from acl.checker import AccessChecker
from acl.directory import GroupDirectory
from service.domain.history import MAX_PAGE, Feedback, ShownEntry
from service.domain.queries import Caller
from service.history.service import HistoryService

_TOKEN = re.compile(r"[^\s,;\"'()<>\[\]{}]+")


def _named_documents(comment: str) -> list[str]:
    return list(dict.fromkeys(t.rstrip(".:!?") for t in _TOKEN.findall(comment)))[:50]


def _one_line(text: str) -> str:
    return " ".join(text.split())


def export_feedback(
    history: HistoryService,
    directory: GroupDirectory,
    checker: AccessChecker,
    admin: Caller,
    store_id: str,
) -> str:
    """The question file (YAML text) of ``store_id``'s ratings, as ``admin`` may see them."""
    principals = admin.principals(directory, store_id)
    questions: list[dict[str, object]] = []
    reviews: list[str] = []
    for feedback, shown in _all(history, admin, store_id):
        entry = shown.entry
        question = entry.rewritten_question or entry.question
        ident = f"fb-{entry.query_id}"
        if feedback.rating == "UP":
            documents = list(entry.document_ids)
            if documents:
                questions.append({"id": ident, "question": question, "documents": documents})
            continue
        named = _named_documents(feedback.comment)
        expected = checker.readable(store_id, principals, named) if named else frozenset()
        if expected:
            questions.append({"id": ident, "question": question, "documents": [d for d in named if d in expected]})
        else:
            reviews.append(_review(ident, question, feedback))
    text = f"# Ratings of store {store_id} exported by docqa feedback export; read by docqa eval.\n"
    text += str(yaml.safe_dump({"questions": questions}, sort_keys=False, allow_unicode=True, width=1000))
    if reviews:
        text += "# needs review: down-voted answers whose comment names no readable document.\n"
        text += "# Add documents: [...] (or unanswerable: true) and uncomment to make them regression questions.\n"
        text += "\n".join(reviews) + "\n"
    return text


def _review(ident: str, question: str, feedback: Feedback) -> str:
    entry = str(yaml.safe_dump([{"id": ident, "question": question}], allow_unicode=True, width=1000))
    lines = [f"# {line}" for line in entry.splitlines()]
    if feedback.comment:
        lines.append(f"#   # comment: {_one_line(feedback.comment)}")
    return "\n".join(lines)


def _all(history: HistoryService, admin: Caller, store_id: str) -> Iterator[tuple[Feedback, ShownEntry]]:
    cursor: str | None = None
    while True:
        page = history.feedback(admin, store_id, MAX_PAGE, cursor)
        yield from page.items
        if page.next_cursor is None:
            return
        cursor = page.next_cursor
