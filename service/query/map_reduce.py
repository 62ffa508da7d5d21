"""A document summarised by a language model: the whole text in one prompt while it fits, else map-reduce.

Map: each section (consecutive chunks under one heading path) is summarised on
its own, in parts when it does not fit one prompt. Reduce: the section
summaries, each quoted as a numbered document, are summarised into one text
whose sentences cite the sections; when they do not fit one prompt, they are
reduced in consecutive batches first and the final text's citations of a
batch stand for the sections that batch covered.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from service.domain.analysis import SummaryLength
from service.generation.prompt import ContextChunk
from service.query.llm_calls import LlmCalls
from service.query.sections import Section

_CITATION = re.compile(r"\[(\d{1,4})\]")
_CITATIONS = re.compile(r"\s*(?:\[\d{1,4}\])+")


def heading_label(section: Section, number: int) -> str:
    return " > ".join(section.heading_path) or f"Section {number}"


def map_task(length: SummaryLength) -> str:
    return (
        f"Summarise the document section above in at most {length.section_sentences * 2} sentences. "
        "State only what it says."
    )


def reduce_task(length: SummaryLength, what: str) -> str:
    return (
        f"Write a summary of the whole document from the {what} above, in at most {length.sentences} sentences "
        f"(about {length.tokens} words), in the document's order. Each document above is one part of the same "
        "document: end every sentence with the numbers of the parts it comes from."
    )


def cited(text: str) -> list[int]:
    """The citation numbers in ``text``, each once, in order of first appearance."""
    return list(dict.fromkeys(int(n) for n in _CITATION.findall(text)))


def without_citations(text: str) -> str:
    return _CITATIONS.sub("", text).strip()


@dataclass(frozen=True, slots=True)
class Written:
    """A model-written summary: its text (citing sections 1..n), and each section's own summary ("" if none)."""

    text: str
    method: str
    section_summaries: tuple[str, ...]


class MapReduce:
    """Summarises sections with ``calls`` (see the module)."""

    def __init__(self, calls: LlmCalls, document_id: str, title: str, source_uri: str) -> None:
        self._calls = calls
        self._document_id = document_id
        self._title = title
        self._uri = source_uri

    def _chunk(self, number: int, label: str, text: str) -> ContextChunk:
        return ContextChunk(number, self._document_id, f"{self._title}: {label}", text, None, self._uri)

    def summarize(
        self, sections: Sequence[Section], length: SummaryLength, on_text: Callable[[str], None] | None
    ) -> Written:
        whole = [self._chunk(i + 1, heading_label(s, i + 1), s.text) for i, s in enumerate(sections)]
        prompt = self._calls.prompt(reduce_task(length, "sections"), whole)
        if self._calls.fits(prompt):
            return Written(self._calls.run(prompt, on_text), "whole", ("",) * len(sections))
        mapped = tuple(self._map(i + 1, s, length) for i, s in enumerate(sections))
        items: list[tuple[str, tuple[int, ...]]] = [(text, (i + 1,)) for i, text in enumerate(mapped)]
        return Written(self._reduce(items, length, on_text), "map_reduce", mapped)

    def _map(self, number: int, section: Section, length: SummaryLength) -> str:
        """The section's summary: one prompt, or one per part that fits, joined."""
        label = heading_label(section, number)
        parts: list[list[str]] = []
        for chunk in section.chunks:
            candidate = [*parts[-1], chunk.text] if parts else [chunk.text]
            if parts and self._calls.fits(
                self._calls.prompt(map_task(length), [self._chunk(1, label, "\n\n".join(candidate))])
            ):
                parts[-1] = candidate
            else:
                parts.append([chunk.text])
        texts = []
        for part in parts:
            prompt = self._calls.prompt(map_task(length), [self._chunk(1, label, "\n\n".join(part))])
            if not self._calls.fits(prompt):  # one chunk over the window: its start is what fits
                prompt = self._calls.prompt(map_task(length), [self._chunk(1, label, part[0][:2000])])
            texts.append(without_citations(self._calls.run(prompt)))
        return " ".join(t for t in texts if t)

    def _reduce(
        self,
        items: list[tuple[str, tuple[int, ...]]],
        length: SummaryLength,
        on_text: Callable[[str], None] | None,
    ) -> str:
        """Items (text, sections it covers) reduced to one text citing sections."""
        while True:
            chunks = [self._chunk(i + 1, f"Part {i + 1}", t) for i, (t, _) in enumerate(items)]
            prompt = self._calls.prompt(reduce_task(length, "section summaries"), chunks)
            if self._calls.fits(prompt) or len(items) == 1:
                text = self._calls.run(prompt, on_text)
                return _to_sections(text, [covered for _, covered in items])
            items = self._batches(items, length)

    def _batches(
        self, items: list[tuple[str, tuple[int, ...]]], length: SummaryLength
    ) -> list[tuple[str, tuple[int, ...]]]:
        """Consecutive items reduced in batches that fit one prompt (at least two per batch: each round halves)."""
        reduced: list[tuple[str, tuple[int, ...]]] = []
        batch: list[tuple[str, tuple[int, ...]]] = []

        def flush() -> None:
            chunks = [self._chunk(i + 1, f"Part {i + 1}", t) for i, (t, _) in enumerate(batch)]
            text = self._calls.run(self._calls.prompt(reduce_task(length, "section summaries"), chunks))
            reduced.append((without_citations(text), tuple(s for _, covered in batch for s in covered)))
            batch.clear()

        for item in items:
            trial = [*batch, item]
            chunks = [self._chunk(i + 1, f"Part {i + 1}", t) for i, (t, _) in enumerate(trial)]
            if len(batch) >= 2 and not self._calls.fits(self._calls.prompt(reduce_task(length, "x"), chunks)):
                flush()
            batch.append(item)
        if batch:
            flush()
        return reduced


def _to_sections(text: str, covered: Sequence[tuple[int, ...]]) -> str:
    """``text`` with each citation of an item replaced by the citations of the sections it covers."""

    def replace(match: re.Match[str]) -> str:
        number = int(match.group(1))
        if not 1 <= number <= len(covered):
            return ""
        return "".join(f"[{s}]" for s in covered[number - 1])

    return _CITATION.sub(replace, text)
