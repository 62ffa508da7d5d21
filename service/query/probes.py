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
#: Fewest words a sentence probe starts from (shorter sentences are skipped while longer ones exist).
MIN_SENTENCE_WORDS = 6
#: Share of a sentence's words dropped.
DROP_SHARE = 0.25
#: Headings per document.
HEADINGS_PER_DOCUMENT = 2

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n\s*\n|\n(?=\s*[-*#|>]|\s*\d+[.)]\s)")
# Markup a chunk may keep at a line's start: list bullets, heading hashes, quote marks, table bars.
_LEADING_MARKUP = re.compile(r"^[\s\-*#>|+•]+")
_WORD = re.compile(r"\S+")


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_PROBE_CHARS else text[:MAX_PROBE_CHARS].rsplit(" ", 1)[0]


def heading_probe(path: Sequence[str]) -> str | None:
    """The deepest heading, with its parent when it is short ("Carry-over" → "Vacation policy Carry-over")."""
    parts = [p.strip() for p in path if p.strip()]
    if not parts:
        return None
    text = parts[-1] if len(parts) == 1 or len(parts[-1].split()) >= 4 else f"{parts[-2]} {parts[-1]}"
    return _clip(text) or None


def sentence_probe(text: str, rng: Random) -> str | None:
    """The chunk's first sentence of some length, cut to MAX_SENTENCE_WORDS, a quarter of its words dropped."""
    sentences = [_LEADING_MARKUP.sub("", s).strip() for s in _SENTENCE_END.split(text)]
    worded = [_WORD.findall(s) for s in sentences if s]
    if not worded:
        return None
    words = next((w for w in worded if len(w) >= MIN_SENTENCE_WORDS), max(worded, key=len))
    words = words[:MAX_SENTENCE_WORDS]
    if len(words) < 3:
        return None
    drop = set(rng.sample(range(len(words)), round(len(words) * DROP_SHARE)))
    return _clip(" ".join(w for i, w in enumerate(words) if i not in drop)) or None


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
    headings = [p for p in (heading_probe(path) for path in picked) if p is not None and fresh(p)]
    texts = [c for c in sorted(chunks, key=lambda c: c.ordinal) if c.text.strip()]
    sentences = []
    if texts:
        sentence = sentence_probe(rng.choice(texts).text, rng)
        if sentence is not None and fresh(sentence):
            sentences.append(sentence)
    return titles, headings, sentences
