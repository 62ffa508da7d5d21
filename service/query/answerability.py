"""Whether a question's distinctive terms are spoken of by the readable candidates found for it.

The terms come from ``service.domain.answerability`` (names, versions,
identifiers, commands, years). A term is spoken of when:

- some candidate mentions it (in its text, title or headings) — a name no
  candidate mentions is something the store does not cover (or, if it
  covers it, covers elsewhere than what answers the rest of the question);
- and, for a term of the sentence that asks, the candidates are about it (a
  title or heading names it, or several documents mention it), or what they
  say about it answers the rest of the question about as well as the best
  they say at all: a window of sentences mentioning it holds nearly as much
  of the rest of the question, weighted by rarity among the candidates, as
  the best window. "Hg(Mercurial)" in a
  list of version control systems does not answer how to make a branch in
  Mercurial when other candidates explain making branches in git.

Candidates are the readable chunks that passed the access check and the
threshold: the verdict depends on nothing the caller cannot read.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

from indexer.index import ChunkRecord, SearchHit
from service.domain.answerability import Term, distinctive_terms
from service.generation.extractive import content_terms

#: A term's best window must hold this share of the best window's weight of the rest of the question.
BINDING_RATIO = 0.7
#: Documents among the candidates that, mentioning a term, show it is what the store is about ("PostgreSQL").
_MANY_DOCUMENTS = 3
#: Sentences after a term's own that a window holds.
_AFTER = 3
_PARAGRAPHS = re.compile(r"\n\s*\n")
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z`\"“(<-])")


def unspoken(question: str, hits: Sequence[SearchHit]) -> tuple[str, ...]:
    """The distinctive terms of ``question`` that the candidates ``hits`` do not speak of (see the module)."""
    terms = distinctive_terms(question)
    if not terms:
        return ()
    chunks = [h.chunk for h in hits]
    rest = content_terms(question) - {w for term in terms for w in content_terms(term.text)}
    passages = _passages(chunks)
    windows = [(headings, window) for headings, text in passages for window in _windows(text)]
    weigh = _weights(rest, [words for _, (_, words) in windows])
    best = max((weigh(words) for _, (_, words) in windows), default=0.0)
    missing: list[str] = []
    for term in terms:
        if not any(term.mentioned_in(headings) or term.mentioned_in(text) for headings, text in passages):
            missing.append(term.text)
            continue
        if not term.asked or best <= 0 or _about(term, chunks):
            continue
        held = max((weigh(words) for _, (text, words) in windows if term.mentioned_in(text)), default=0.0)
        if held < BINDING_RATIO * best:
            missing.append(term.text)
    return tuple(missing)


def _about(term: Term, chunks: Sequence[ChunkRecord]) -> bool:
    """Whether the candidates are about ``term``: a title or heading names it, or several documents do."""
    if any(term.mentioned_in(_heading(c)) for c in chunks):
        return True
    return len({c.document_id for c in chunks if term.mentioned_in(c.text)}) >= _MANY_DOCUMENTS


def _heading(chunk: ChunkRecord) -> str:
    return "\n".join((chunk.title, *chunk.heading_path))


def _passages(chunks: Sequence[ChunkRecord]) -> list[tuple[str, str]]:
    """(titles and headings, text) of each run of the candidates that follow each other in one document: a
    chunk boundary may fall between a name and what is said of it."""
    ordered = sorted(chunks, key=lambda c: (c.document_id, c.ordinal))
    runs: list[list[ChunkRecord]] = []
    for chunk in ordered:
        last = runs[-1][-1] if runs else None
        if last is not None and last.document_id == chunk.document_id and chunk.ordinal - last.ordinal <= 1:
            if chunk.ordinal != last.ordinal:
                runs[-1].append(chunk)
            continue
        runs.append([chunk])
    return [
        ("\n".join(dict.fromkeys(h for c in run for h in (c.title, *c.heading_path))), "\n\n".join(c.text for c in run))
        for run in runs
    ]


def _windows(text: str) -> list[tuple[str, frozenset[str]]]:
    """Each sentence of ``text`` with the one before it and the few after it, with the window's content terms:
    a name is often introduced before what is said of it ("Debian 2.1 Slink (March 9th, 1999): Named for …
    The key technical innovation was …")."""
    sentences = [s for paragraph in _PARAGRAPHS.split(text) for s in _SENTENCE.split(paragraph) if s.strip()]
    terms = [content_terms(s) for s in sentences]
    return [
        (" ".join(sentences[i : i + _AFTER + 1]), frozenset().union(*terms[max(0, i - 1) : i + _AFTER + 1]))
        for i in range(len(sentences))
    ]


def _weights(rest: set[str], windows: list[frozenset[str]]):  # type: ignore[no-untyped-def]
    """A window's weight: the rarity (idf among the windows) of the rest's words it holds, as a share."""
    frequency: Counter[str] = Counter()
    for words in windows:
        frequency.update(words & rest)
    total = len(windows)
    idf = {w: math.log((total + 1) / (frequency[w] + 0.5)) for w in rest}
    whole = sum(idf.values()) or 1.0

    def weigh(words: frozenset[str]) -> float:
        return sum(idf[w] for w in words & rest) / whole

    return weigh
