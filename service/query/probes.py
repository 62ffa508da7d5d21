"""Answerable probes drawn from a store's own content: a title, headings, a sentence with words dropped.

A probe stands for a question the store can answer. Titles and headings are
what people ask about; a sentence with a few words dropped stands for a
question phrased close to the text without copying it. All choices come from
the ``Random`` handed in, so a seeded calibration draws the same probes.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from random import Random

from indexer.index import ChunkRecord

#: Longest probe, in characters (headings and titles can be long; a question is not).
MAX_PROBE_CHARS = 300
#: Words a sentence probe keeps at most, before dropping some.
MAX_SENTENCE_WORDS = 24
#: Fewest words of prose (two letters or more) a sentence needs to become a probe.
MIN_SENTENCE_WORDS = 8
#: Share of a sentence's words dropped.
DROP_SHARE = 0.25
#: Chunks of a document tried for a sentence of prose.
SENTENCE_TRIES = 5
#: Headings per document.
HEADINGS_PER_DOCUMENT = 2
#: A heading of fewer words is read with its parent heading (or the title).
SHORT_HEADING_WORDS = 4

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n\s*\n|\n(?=\s*[-*#|>]|\s*\d+[.)]\s)")
# Markup a chunk may keep at a line's start: list bullets, heading hashes, quote marks, table bars.
_LEADING_MARKUP = re.compile(r"^[\s\-*#>|+•]+")
_WORD = re.compile(r"\S+")
# A word of prose: two letters or more (not a number, a bar of a table, a lone symbol).
_PROSE_WORD = re.compile(r"(?<!\S)[^\W\d_]{2,}")
# A section number before a heading: "9.23.4. ", "F.2. ", "Chapter 9. ".
_NUMBERING = re.compile(r"^(?:(?:chapter|appendix)\s+)?(?:\d+|[A-Z])(?:\.\d+)*\.\s+(?=\S)", re.IGNORECASE)


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_PROBE_CHARS else text[:MAX_PROBE_CHARS].rsplit(" ", 1)[0]


def heading_probe(path: Sequence[str], title: str = "") -> str | None:
    """The deepest heading, after its parents (then the title) while it is short: "Vacation policy Carry-over".

    A short heading alone ("Description", "See Also") could belong to any document; with its parents it
    reads like what people ask about. Section numbers ("9.23.4.") are dropped.
    """
    parts = [t for t in (_NUMBERING.sub("", p).strip() for p in path) if t]
    if not parts:
        return None
    text = parts[-1]
    for parent in [*reversed(parts[:-1]), _NUMBERING.sub("", title).strip()]:
        if len(text.split()) >= SHORT_HEADING_WORDS:
            break
        if parent and parent.casefold() not in text.casefold():
            text = f"{parent} {text}"
    return _clip(text) or None


def sentence_probe(text: str, rng: Random) -> str | None:
    """The chunk's first sentence of MIN_SENTENCE_WORDS words or more, cut to MAX_SENTENCE_WORDS, a quarter
    of its words dropped; None when the chunk has no such sentence (a table, a navigation line, code)."""
    sentences = [_LEADING_MARKUP.sub("", s).strip() for s in _SENTENCE_END.split(text)]
    for sentence in sentences:
        if len(_PROSE_WORD.findall(sentence)) >= MIN_SENTENCE_WORDS:
            words = _WORD.findall(sentence)[:MAX_SENTENCE_WORDS]
            drop = set(rng.sample(range(len(words)), round(len(words) * DROP_SHARE)))
            return _clip(" ".join(w for i, w in enumerate(words) if i not in drop)) or None
    return None


def document_probes(title: str, chunks: Sequence[ChunkRecord], rng: Random) -> tuple[list[str], list[str], list[str]]:
    """One document's probes: ([title], up to two headings, [one sentence]), none repeated."""
    seen: set[str] = set()

    def fresh(probe: str | None) -> bool:
        if probe is None or probe.casefold() in seen:
            return False
        seen.add(probe.casefold())
        return True

    titles = [p for p in [_clip(title)] if p and fresh(p)]
    paths = sorted({c.heading_path for c in chunks if any(h.strip() for h in c.heading_path)})
    picked = rng.sample(paths, min(HEADINGS_PER_DOCUMENT, len(paths)))
    headings = [p for p in (heading_probe(path, title) for path in picked) if p is not None and fresh(p)]
    texts = [c for c in sorted(chunks, key=lambda c: c.ordinal) if c.text.strip()]
    sentences = []
    # A random chunk; the next ones when it has no sentence of prose.
    for chunk in rng.sample(texts, min(SENTENCE_TRIES, len(texts))):
        sentence = sentence_probe(chunk.text, rng)
        if sentence is not None:
            if fresh(sentence):
                sentences.append(sentence)
            break
    return titles, headings, sentences
