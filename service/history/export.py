"""A store's ratings as a question file ``docqa eval`` reads (``service.quality.questions``).

What the eval format can say honestly, and so what is written:

- an up-voted answer: its question (the standalone one that was searched, for a follow-up) with the
  documents it cited that the exporting admin may read — retrieving any of them is a hit;
- a down-voted answer whose comment names documents of the store (their ids, as the admin may read them):
  a regression question expecting those documents;
- any other down-voted answer: the format has no "wrong answer" marker and calling the question
  unanswerable would be a guess, so it is written as a commented-out entry marked ``needs review``, with
  the comment, for a person to complete — ``docqa eval`` skips it until then.

Entries pass the same re-check as the feedback listing: the admin's own rights today and the versions the
answers quoted. A rating whose answer is withheld from the admin (a cited document they cannot read, or one
changed since) is left out, comment and all, and the file says how many were and why. Document ids the
question or comment names that the admin may not read are written as ``[withheld document]``, so an export
never names a document its reader cannot read.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator

import yaml

from service.domain.history import MAX_PAGE, Feedback, ShownEntry
from service.domain.queries import Caller
from service.history.service import HistoryService

_TOKEN = re.compile(r"[^\s,;\"'()<>\[\]{}]+")
#: What stands for a document id the exporting admin may not read.
WITHHELD_DOCUMENT = "[withheld document]"


def _named_documents(comment: str) -> list[str]:
    return list(dict.fromkeys(t.rstrip(".:!?") for t in _TOKEN.findall(comment)))[:50]


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _without_unreadable(text: str, unreadable: frozenset[str]) -> str:
    if not unreadable:
        return text
    return _TOKEN.sub(lambda m: WITHHELD_DOCUMENT if m.group(0).rstrip(".:!?") in unreadable else m.group(0), text)


def export_feedback(history: HistoryService, admin: Caller, store_id: str) -> str:
    """The question file (YAML text) of ``store_id``'s ratings, as ``admin`` may see them (admin only)."""
    questions: list[dict[str, object]] = []
    reviews: list[str] = []
    left_out: Counter[str] = Counter()
    for feedback, shown in _all(history, admin, store_id):
        if shown.withheld is not None:
            left_out[shown.withheld] += 1
            continue
        entry = shown.entry
        asked = entry.rewritten_question or entry.question
        question = _without_unreadable(asked, history.documents_named(admin, store_id, _named_documents(asked))[1])
        ident = f"fb-{entry.query_id}"
        if feedback.rating == "UP":
            documents = list(entry.document_ids)
            if documents:
                questions.append({"id": ident, "question": question, "documents": documents})
            continue
        named = _named_documents(feedback.comment)
        expected, unreadable = history.documents_named(admin, store_id, named)
        if expected:
            questions.append({"id": ident, "question": question, "documents": [d for d in named if d in expected]})
        else:
            comment = _without_unreadable(feedback.comment, unreadable)
            reviews.append(_review(ident, question, comment))
    text = f"# Ratings of store {store_id} exported by docqa feedback export; read by docqa eval.\n"
    text += f"# Left out: {sum(left_out.values())} rated answers"
    text += "".join(f"; {count} {why}" for why, count in sorted(left_out.items())) + ".\n"
    text += str(yaml.safe_dump({"questions": questions}, sort_keys=False, allow_unicode=True, width=1000))
    if reviews:
        text += "# needs review: down-voted answers whose comment names no readable document.\n"
        text += "# Add documents: [...] (or unanswerable: true) and uncomment to make them regression questions.\n"
        text += "\n".join(reviews) + "\n"
    return text


def _review(ident: str, question: str, comment: str) -> str:
    entry = str(yaml.safe_dump([{"id": ident, "question": question}], allow_unicode=True, width=1000))
    lines = [f"# {line}" for line in entry.splitlines()]
    if comment:
        lines.append(f"#   # comment: {_one_line(comment)}")
    return "\n".join(lines)


def _all(history: HistoryService, admin: Caller, store_id: str) -> Iterator[tuple[Feedback, ShownEntry]]:
    cursor: str | None = None
    while True:
        page = history.feedback(admin, store_id, MAX_PAGE, cursor)
        yield from page.items
        if page.next_cursor is None:
            return
        cursor = page.next_cursor
