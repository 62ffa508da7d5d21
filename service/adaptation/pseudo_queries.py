"""Pseudo-queries: what a store's documents say about themselves, as queries for their own passages.

Two kinds, both from the literature on training rankers without labels:

- **heading**: a chunk's deepest heading read with its parents while short (``probes.heading_probe``:
  "Vacation policy Carry-over"), as the query for that chunk;
- **sentence** (the inverse cloze task): a sentence of prose from the chunk with a quarter of its words
  dropped, as the query for the chunk's *other* text, so the model learns what a passage is about, not
  that it contains the query's words.

Every choice comes from the ``Random`` handed in: a seeded run draws the same queries.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from random import Random

from indexer.index import ChunkRecord
from service.query.probes import DROP_SHARE, MAX_SENTENCE_WORDS, MIN_SENTENCE_WORDS, heading_probe

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n\s*\n")
_WORD = re.compile(r"\S+")
_PROSE_WORD = re.compile(r"(?<!\S)[^\W\d_]{2,}")
#: Headings that name a kind of section, not a subject: alone they would be a query for every page.
_GENERIC = frozenset(
    {
        *("description", "synopsis", "parameters", "options", "notes", "examples", "example", "see", "also"),
        *("introduction", "overview", "return", "value", "compatibility", "files", "environment", "bugs"),
        *("author", "authors", "copyright", "history"),
    }
)


@dataclass(frozen=True, slots=True)
class PseudoQuery:
    """A query, the chunk it was made from, and what the model reads of that chunk as its positive."""

    query: str
    kind: str  # "heading" or "sentence"
    chunk_id: str
    document_id: str
    #: The chunk's text as the positive passage (for a sentence query, without that sentence).
    text: str


def _generic(heading: str) -> bool:
    return not set(re.findall(r"[a-z]+", heading.casefold())) - _GENERIC


def prose_sentences(text: str) -> list[str]:
    """The chunk's sentences of MIN_SENTENCE_WORDS words of prose or more."""
    return [
        s.strip()
        for s in _SENTENCE_END.split(text)
        if len(_PROSE_WORD.findall(s)) >= MIN_SENTENCE_WORDS and "|" not in s
    ]


def chunk_queries(chunk: ChunkRecord, title: str, rng: Random) -> list[PseudoQuery]:
    """Up to one heading query and one sentence query for ``chunk``."""
    found: list[PseudoQuery] = []
    path = chunk.heading_path or ((title,) if title else ())
    heading = heading_probe(path, title)
    if heading and not _generic(heading) and chunk.text.strip():
        found.append(PseudoQuery(heading, "heading", chunk.chunk_id, chunk.document_id, chunk.text))
    sentences = prose_sentences(chunk.text)
    if sentences:
        sentence = rng.choice(sentences)
        words = _WORD.findall(sentence)[:MAX_SENTENCE_WORDS]
        drop = set(rng.sample(range(len(words)), round(len(words) * DROP_SHARE)))
        query = " ".join(w for i, w in enumerate(words) if i not in drop)
        rest = " ".join(chunk.text.replace(sentence, " ").split())
        if query and len(rest.split()) >= MIN_SENTENCE_WORDS:
            found.append(PseudoQuery(query, "sentence", chunk.chunk_id, chunk.document_id, rest))
    return found


def sample_queries(
    documents: Sequence[tuple[str, Sequence[ChunkRecord]]], limit: int, rng: Random
) -> list[PseudoQuery]:
    """At most ``limit`` pseudo-queries spread over the documents (title, chunks): chunks are drawn round the
    documents in turn, so a big manual does not crowd out the small pages; no query text twice."""
    pools = [list(chunks) for _, chunks in documents]
    titles = [title for title, _ in documents]
    for pool in pools:
        rng.shuffle(pool)
    picked: list[PseudoQuery] = []
    seen: set[str] = set()
    while len(picked) < limit and any(pools):
        for title, pool in zip(titles, pools, strict=True):
            if not pool or len(picked) >= limit:
                continue
            for q in chunk_queries(pool.pop(), title, rng):
                key = q.query.casefold()
                if key not in seen and len(picked) < limit:
                    seen.add(key)
                    picked.append(q)
    return picked
