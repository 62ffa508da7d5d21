"""Cut a loaded document into chunks that fit the embedding model, following its structure.

A heading starts a new chunk; within a section whole paragraphs are packed up
to the token limit; a paragraph too long for one chunk is cut at sentence
boundaries, and a sentence too long at token boundaries (a line break or a
space when there is one). Consecutive chunks of one section share a few whole
sentences. Each block is tokenised once; each finished chunk is tokenised once
more to check it, because a cut inside a word can tokenise differently.

Each chunk also says where a reader finds it: the pages of the blocks its text
spans (PDFs) and the anchor of its nearest enclosing heading that has one (HTML).
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections import deque
from dataclasses import dataclass, field, replace
from typing import Literal

from indexer.documents import Block, LoadedDocument
from indexer.embedder import MAX_CHUNK_TOKENS, Tokenizer

# The end of a sentence: terminal punctuation, closing quotes or brackets, then whitespace.
_SENTENCE_END = re.compile(r"[.!?…。！？]+[\"'”’»)\]]*(?=\s)")
_BLANK_LINES = re.compile(r"\n[ \t\r\f\v]*\n\s*")
_WHITESPACE = re.compile(r"\s+")

Span = tuple[int, int]
UnitKind = Literal["heading", "sentence", "piece"]


@dataclass(frozen=True, slots=True)
class ChunkDraft:
    """One chunk before embedding: ``text == document.text[start:end]``.

    ``heading_path`` holds the texts of the enclosing headings, outermost first.
    ``pages`` are the sorted distinct pages of the blocks the text spans (``()``
    for a document without pages); ``anchor`` is the anchor of the nearest
    enclosing heading that has one (``""`` when none does).
    """

    ordinal: int
    text: str
    start: int
    end: int
    heading_path: tuple[str, ...]
    pages: tuple[int, ...] = ()
    anchor: str = ""


@dataclass(frozen=True, slots=True)
class _Unit:
    """The smallest thing packed: a heading, a whole sentence, or a piece of either.

    ``spans`` are the token spans (document offsets) of the unit's block, of
    which tokens ``t0`` up to ``t1`` (exclusive) start inside the unit.
    """

    start: int
    end: int
    spans: list[Span]
    t0: int
    t1: int
    kind: UnitKind

    @property
    def tokens(self) -> int:
        return self.t1 - self.t0


@dataclass(slots=True)
class _Section:
    path: tuple[str, ...]
    level: int
    heading: Block | None
    anchor: str = ""
    paragraphs: list[Block] = field(default_factory=list)


class Chunker:
    """Chunks documents for a model whose inputs hold at most ``max_tokens`` tokens.

    ``max_tokens`` includes the model's special tokens and is capped at 512.
    """

    def __init__(self, tokenizer: Tokenizer, max_tokens: int, overlap_tokens: int = 32) -> None:
        budget = min(max_tokens, MAX_CHUNK_TOKENS) - tokenizer.special_tokens
        if budget < 1:
            raise ValueError(f"max_tokens={max_tokens} leaves no room for text")
        if overlap_tokens < 0:
            raise ValueError(f"overlap_tokens must not be negative, got {overlap_tokens}")
        self._tokenizer = tokenizer
        self._budget = budget
        self._overlap = overlap_tokens

    @property
    def content_tokens(self) -> int:
        """Most tokens of text one chunk holds (special tokens not counted)."""
        return self._budget

    def chunk(self, doc: LoadedDocument) -> list[ChunkDraft]:
        """The document's chunks, in document order, numbered from 0.

        Every chunk is non-blank, is exactly ``doc.text[start:end]``, and
        tokenises to at most ``content_tokens`` tokens.
        """
        blocks = _blocks(doc)
        return _Run(self._tokenizer, self._budget, self._overlap, doc.text, blocks).chunk(blocks)


def _blocks(doc: LoadedDocument) -> list[Block]:
    """The document's non-blank blocks, trimmed of whitespace; paragraphs if it has none."""
    text = doc.text
    blocks = list(doc.blocks)
    if not blocks:
        pieces, pos = [], 0
        for gap in _BLANK_LINES.finditer(text):
            pieces.append(Block("paragraph", pos, gap.start()))
            pos = gap.end()
        blocks = [*pieces, Block("paragraph", pos, len(text))]
    trimmed: list[Block] = []
    for block in sorted(blocks, key=lambda b: b.start):
        start, end = max(block.start, 0), min(block.end, len(text))
        while start < end and text[start].isspace():
            start += 1
        while end > start and text[end - 1].isspace():
            end -= 1
        if start < end:
            trimmed.append(replace(block, start=start, end=end))
    return trimmed


def _sections(text: str, blocks: list[Block]) -> list[_Section]:
    """Blocks grouped under their headings, each with its path of heading texts and its anchor."""
    sections: list[_Section] = []
    stack: list[tuple[int, str, str]] = []  # (level, text, anchor) of the open headings
    current = _Section((), 0, None)
    for block in blocks:
        if block.kind != "heading":
            current.paragraphs.append(block)
            continue
        if current.heading is not None or current.paragraphs:
            sections.append(current)
        level = max(block.level, 1)
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, _WHITESPACE.sub(" ", text[block.start : block.end]), block.anchor))
        anchor = next((a for _, _, a in reversed(stack) if a), "")
        current = _Section(tuple(title for _, title, _ in stack), level, block, anchor)
    if current.heading is not None or current.paragraphs:
        sections.append(current)
    return sections


def _cut(text: str, spans: list[Span], lo: int, hi: int) -> int:
    """A token index in (lo, hi] to cut before: a line break, else a space, else ``hi``.

    Only the upper half of the range is searched, so pieces stay reasonably full.
    """
    floor = lo + max(1, (hi - lo) // 2)
    for at_line_break in (True, False):
        for k in range(hi, floor - 1, -1):
            gap = text[spans[k - 1][1] : spans[k][0]]
            if ("\n" in gap) if at_line_break else (gap != "" and gap.isspace()):
                return k
    k = hi
    while k > lo + 1 and spans[k][0] <= spans[k - 1][0]:  # never inside one character
        k -= 1
    return k


class _Run:
    """The state of chunking one document."""

    def __init__(self, tokenizer: Tokenizer, budget: int, overlap: int, text: str, blocks: list[Block]) -> None:
        self._tokenizer = tokenizer
        self._budget = budget
        self._overlap = overlap
        self._text = text
        self._out: list[ChunkDraft] = []
        self._path: tuple[str, ...] = ()
        self._anchor = ""
        # Blocks are sorted and disjoint, so their ends are sorted too: where a span's blocks begin.
        self._paged = [b for b in blocks if b.page > 0]
        self._paged_ends = [b.end for b in self._paged]

    def chunk(self, blocks: list[Block]) -> list[ChunkDraft]:
        sections = _sections(self._text, blocks)
        carried: list[_Unit] = []  # headings of empty parent sections, joined to the child
        for i, section in enumerate(sections):
            heading = self._units(section.heading, "heading") if section.heading else []
            nxt = sections[i + 1] if i + 1 < len(sections) else None
            if not section.paragraphs and nxt is not None and nxt.level > section.level:
                carried += heading
                continue
            self._path = section.path
            self._anchor = section.anchor
            groups = [heading] if heading else []
            groups += [self._units(block, "sentence") for block in section.paragraphs]
            self._pack(carried, groups)
            carried = []
        return self._out

    # -- units -----------------------------------------------------------------------

    def _units(self, block: Block, kind: UnitKind) -> list[_Unit]:
        """The block as units of at most ``budget`` tokens: sentences, or one heading."""
        start, end = block.start, block.end
        spans = [(s + start, e + start) for s, e in self._tokenizer.token_spans(self._text[start:end])]
        starts = [s for s, _ in spans]
        ranges = [(start, end)] if kind == "heading" else self._sentences(start, end)
        units: list[_Unit] = []
        for a, b in ranges:
            unit = _Unit(a, b, spans, bisect_left(starts, a), bisect_left(starts, b), kind)
            while unit.tokens > self._budget:
                first, unit = self._split(unit, self._budget)
                units.append(first)
            units.append(unit)
        return units

    def _sentences(self, start: int, end: int) -> list[Span]:
        text, ranges, pos = self._text, [], start
        for match in _SENTENCE_END.finditer(text, start, end):
            ranges.append((pos, match.end()))
            pos = match.end()
            while pos < end and text[pos].isspace():
                pos += 1
        if pos < end:
            ranges.append((pos, end))
        return ranges

    def _split(self, unit: _Unit, size: int) -> tuple[_Unit, _Unit]:
        """The unit cut into a first part of at most ``size`` (>= 1) tokens and the rest."""
        k = _cut(self._text, unit.spans, unit.t0, min(unit.t0 + size, unit.t1 - 1))
        cut = unit.spans[k][0]
        end = unit.start + len(self._text[unit.start : cut].rstrip())
        kind: UnitKind = "heading" if unit.kind == "heading" else "piece"
        first = _Unit(unit.start, end, unit.spans, unit.t0, k, kind)
        return first, _Unit(cut, unit.end, unit.spans, k, unit.t1, kind)

    # -- packing ---------------------------------------------------------------------

    def _pack(self, current: list[_Unit], groups: list[list[_Unit]]) -> None:
        """Pack one section's groups (heading, then paragraphs) into chunks."""
        budget = self._budget
        size = sum(u.tokens for u in current)
        for group in groups:
            whole = sum(u.tokens for u in group) <= budget
            queue = deque([group] if whole else [[u] for u in group])
            while queue:
                item = queue.popleft()
                need = sum(u.tokens for u in item)
                if size + need <= budget:
                    current += item
                    size += need
                    continue
                if current and all(u.kind == "heading" for u in current):
                    # A chunk that would hold only headings takes what fits of the text.
                    if len(item) > 1:
                        queue.extendleft([u] for u in reversed(item))
                        continue
                    if size < budget:
                        first, rest = self._split(item[0], budget - size)
                        self._emit([*current, first])
                        current, size = [], 0
                        queue.appendleft([rest])
                        continue
                self._emit(current)
                current = [*self._overlap_of(current, need), *item]
                size = sum(u.tokens for u in current)
        if current:
            self._emit(current)

    def _overlap_of(self, previous: list[_Unit], need: int) -> list[_Unit]:
        """Whole trailing sentences of ``previous`` that fit beside ``need`` more tokens."""
        limit = min(self._overlap, self._budget - need)
        taken: list[_Unit] = []
        size = 0
        for unit in reversed(previous[1:]):  # never all of it: that would repeat the chunk
            if unit.kind != "sentence" or size + unit.tokens > limit:
                break
            taken.append(unit)
            size += unit.tokens
        return taken[::-1]

    # -- output ----------------------------------------------------------------------

    def _emit(self, units: list[_Unit]) -> None:
        """Add the text from the first unit to the last as chunks, cut again if it is too long."""
        pending = [(units[0].start, units[-1].end)]
        while pending:
            start, end = pending.pop()
            text = self._text[start:end]
            if not text.strip():
                continue
            spans = self._tokenizer.token_spans(text)
            # One character can be several tokens (byte-level BPE); such a chunk cannot shrink.
            if len(spans) <= self._budget or spans[0][1] >= len(text.rstrip()):
                chunk = ChunkDraft(len(self._out), text, start, end, self._path, self._pages(start, end), self._anchor)
                self._out.append(chunk)
                continue
            cut = start + spans[_cut(text, spans, 0, self._budget)][0]
            if cut <= start:  # many tokens on one character: cut after that character
                cut = start + max(spans[0][1], 1)
            first_end = start + len(self._text[start:cut].rstrip())
            pending.append((cut, end))
            pending.append((start, first_end))

    def _pages(self, start: int, end: int) -> tuple[int, ...]:
        """The sorted distinct pages of the blocks that ``text[start:end]`` overlaps."""
        pages: set[int] = set()
        for block in self._paged[bisect_right(self._paged_ends, start) :]:
            if block.start >= end:
                break
            pages.add(block.page)
        return tuple(sorted(pages))
