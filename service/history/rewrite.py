"""A follow-up question rewritten into a standalone one that retrieval can search.

Offline (``OfflineRewriter``, deterministic): a question is a follow-up when it opens like one ("and for
contractors?", "what about …"), refers back ("how do I drop it?", "does that apply …"), or is too short to
stand alone. Its rewrite keeps the follow-up's own words and adds the first few key terms of the earlier
question that it lacks (``MAX_CARRIED``; names, identifiers and other content words, in their order, stop,
question and referring words left out), in place of the first word that refers back when there is one.
A question that stands alone is searched as it is.

With a language model (``CondensingRewriter``), the earlier questions and the follow-up go through the
generator port as a condense prompt; when the model fails or answers with nothing usable, the offline
rewrite is used. Only the user's own questions are ever sent: no answer and no document text.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import Protocol

from acl.errors import DocQAError
from service.generation.port import ContextChunk, Generator, Prompt

log = logging.getLogger("docqa.history")

#: Earlier key terms a rewrite carries over at most. Few, so that the follow-up's own words keep the lead:
#: on bench/quality/followups/postgresql-15.yaml 2 gave hit@1 0.56 / hit@5 0.94, 3 gave 0.44 / 0.97 and
#: 8 gave 0.38 / 0.94 (the follow-up alone: 0.44 / 0.78) — chosen on that same set, so an optimistic figure.
MAX_CARRIED = 2
#: A question with fewer content words than this cannot stand alone.
_MIN_CONTENT = 3
_WORD = re.compile(r"[A-Za-z0-9_][\w.\-/]*[\w]|[A-Za-z0-9_]")
_OPENERS = (
    "and ", "but ", "or ", "also ", "so ", "then ", "what about", "how about", "what if", "and what", "same for",
    "same ", "ok ", "okay ", "now ", "in that case", "if so", "why not",
)  # fmt: skip
# fmt: off
_REFERRING = frozenset((
    "it", "its", "it's", "itself", "they", "them", "their", "theirs", "themselves", "this", "that", "these",
    "those", "there", "such", "same", "one", "ones", "former", "latter", "above", "he", "she", "him", "her",
))
_QUESTION_WORDS = frozenset(("what", "which", "who", "whom", "whose", "when", "where", "why", "how"))
_STOP = frozenset((
    "a", "an", "the", "and", "or", "but", "if", "then", "else", "so", "of", "to", "in", "on", "at", "by", "for",
    "from", "with", "without", "into", "onto", "over", "under", "about", "as", "is", "are", "was", "were", "be",
    "been", "being", "am", "do", "does", "did", "done", "doing", "have", "has", "had", "having", "can", "could",
    "may", "might", "must", "shall", "should", "will", "would", "i", "me", "my", "mine", "we", "us", "our", "you",
    "your", "yourself", "let", "lets", "let's", "not", "no", "yes", "any", "some", "all", "each", "every",
    "other", "another", "more", "most", "much", "many", "few", "less", "least", "than", "too", "very", "just",
    "only", "also", "even", "still", "again", "here", "get", "got", "make", "makes", "made", "use", "used",
    "using", "need", "needs", "want", "wants", "way", "ways", "thing", "things", "please", "tell", "explain",
    "show", "give", "know", "mean", "means", "instead", "ok", "okay", "now", "whether", "what's", "how's",
)) | _QUESTION_WORDS | _REFERRING
# fmt: on


def _words(text: str) -> list[str]:
    return _WORD.findall(text)


def content_words(text: str) -> list[str]:
    """The words of ``text`` that carry its topic (no stop, question or referring words), in order."""
    return [w for w in _words(text) if w.casefold() not in _STOP and not w.isdigit()]


def is_follow_up(question: str) -> bool:
    """Whether ``question`` leans on what came before (opens like a follow-up, refers back, or is too short)."""
    text = " ".join(question.casefold().split())
    if text.startswith(_OPENERS) or text.startswith(("...", "…")):
        return True
    if any(w.casefold() in _REFERRING for w in _words(question)):
        return True
    return len(content_words(question)) < _MIN_CONTENT


def offline_rewrite(earlier: Sequence[str], question: str) -> str:
    """``question`` made standalone from ``earlier`` (standalone questions, oldest first); unchanged when it
    already stands alone or there is nothing earlier."""
    if not earlier or not is_follow_up(question):
        return question
    present = {w.casefold() for w in _words(question)}
    carried: list[str] = []
    for word in content_words(earlier[-1]):
        key = word.casefold()
        if key not in present and key not in {c.casefold() for c in carried}:
            carried.append(word)
    if not carried:
        return question
    terms = " ".join(carried[:MAX_CARRIED])
    body = question.strip().rstrip("?!. ")
    words = body.split(" ")
    for i, word in enumerate(words):
        if word.casefold().strip(",;:") in _REFERRING - {"there", "such", "same", "one", "ones"}:
            tail = word[len(word.rstrip(",;:")) :]
            words[i] = terms + tail
            return " ".join(words) + "?"
    return f"{body} {terms}?"


class Rewriter(Protocol):
    """Turns a follow-up into a standalone question from the conversation's earlier questions."""

    def rewrite(self, earlier: Sequence[str], question: str, model_id: str) -> str: ...


class OfflineRewriter:
    """The deterministic rewrite (``offline_rewrite``); ``model_id`` is not used."""

    def rewrite(self, earlier: Sequence[str], question: str, model_id: str) -> str:
        return offline_rewrite(earlier, question)


CONDENSE_TEMPLATE = (
    "The documents above are the earlier questions of one conversation, oldest first:\n{context}\n\n"
    "Rewrite the follow-up question below as ONE standalone question that can be searched without the "
    "conversation: keep its meaning, name what it refers to, do not answer it. Reply with the question only, "
    "without citations.\n\nFollow-up question: {question}\nStandalone question:"
)
_CITATION = re.compile(r"\s*\[\d+\]")


class CondensingRewriter:
    """A condense prompt through the generator port; the offline rewrite when the model gives nothing usable."""

    def __init__(self, generator: Generator, max_chars: int = 4000, turns: int = 6) -> None:
        self._generator = generator
        self._max_chars = max_chars
        self._turns = turns

    def rewrite(self, earlier: Sequence[str], question: str, model_id: str) -> str:
        if not earlier:
            return question
        recent = list(earlier)[-self._turns :]
        prompt = Prompt(
            question=question,
            chunks=tuple(
                ContextChunk(i + 1, f"turn-{i + 1}", f"question {i + 1}", q, None) for i, q in enumerate(recent)
            ),
            template=CONDENSE_TEMPLATE,
            model_id=model_id,
        )
        try:
            text = self._generator.generate(prompt).text
        except DocQAError as exc:
            log.warning("the condense prompt failed (%s); the follow-up is rewritten offline", exc.message)
            return offline_rewrite(recent, question)
        lines = [line.strip() for line in _CITATION.sub("", text).splitlines() if line.strip()]
        condensed = lines[0].strip("\"'“”` ") if lines else ""
        condensed = re.sub(r"^(standalone question|question)\s*:\s*", "", condensed, flags=re.IGNORECASE)
        if not condensed or len(condensed) > self._max_chars:
            return offline_rewrite(recent, question)
        return condensed
