"""Cleaning the text of PDF pages: what the printer added for a reader of paper, not for a reader of text.

Works on the lines of each page as pypdf extracts them, and removes:

- running headers and footers: a line at the top or bottom of a page whose
  form (digits and a trailing or leading roman numeral counted as one) repeats
  at the same edge of other pages, or that carries the page's printed number
  at the same offset from its place in the file as on other pages
  ("Chapter 7: Reference 14" on page 19, "… 15" on page 20);
- bare page numbers at an edge ("12", "- 12 -", "Page 12 of 40", "xiv");
- table-of-contents lines with dot leaders ("Introduction ........ 3");

and repairs words hyphenated at a line end ("manip-" / "ulation"), across
pages too, unless the document itself writes the hyphenated form elsewhere
and never the joined one ("well-known"); a word in capitals or camel case
("ELE-" / "MENT", "Mul-" / "ByPowD") is joined only when the document writes
it whole elsewhere.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence

Page = list[str]

#: Lines looked at on each edge of a page, from the outside in.
EDGE_LINES = 3
_DIGITS = re.compile(r"\d+")
_SPACES = re.compile(r"[\s\u00a0]+")
ROMAN = _ROMAN = r"(?=[mdclxvi])m{0,3}(?:cm|cd|d?c{0,3})(?:xc|xl|l?x{0,3})(?:ix|iv|v?i{0,3})"
_LOWER_ROMAN = re.compile(_ROMAN)
_UPPER_ROMAN = re.compile(r"(?=[IVX]{2})X{0,3}(?:IX|IV|V?I{0,3})")
_ROMAN_EDGE = re.compile(rf"^{_ROMAN}\b|\b{_ROMAN}$")
_PAGE_NUMBER = re.compile(
    r"""^(?:
        [-–—]?\s*\d{1,5}\s*[-–—]?                                                # 12, - 12 -
        | (?:page|p\.|pg\.?|seite|página|pagina)\s*\d{1,5}(?:\s*(?:of|/|von|de|di)\s*\d{1,5})?  # Page 12 of 40
        | \d{1,5}\s*(?:/|of)\s*\d{1,5}                                             # 12 / 40
    )$""",
    re.VERBOSE,
)
#: A table-of-contents entry: a title (possibly on the line before), four or more leader dots, a page number.
_LEADER = re.compile(rf"(?:(?:\.\s*){{4,}}|(?:·\s*){{4,}}|(?:…\s*){{2,}})(?:\d{{1,5}}|{_ROMAN})\s*$", re.IGNORECASE)
_NUMBERING = re.compile(r"^(?:(?:chapter|appendix|part|section)\s+)?(?:\d+|[a-z])(?:\.\d+)*\.?:?\s+")
_EDGE_NUMBER = re.compile(r"^(\d{1,5})\b|\b(\d{1,5})$")
#: A line ending in a word broken by a hyphen: a letter, then the hyphen (not a dash "--").
_BROKEN = re.compile(r"(?<![-‐])([^\W\d_]*[^\W\d_])[-‐\u00ad]$")
_WORD = re.compile(r"[^\W\d_]+(?:[-‐][^\W\d_]+)*")
#: The longest line a table of contents' entry has, and the longest word a line end breaks (both bound the work
#: a planted line costs).
_MAX_LEADER_CHARS = 400
_MAX_WORD_CHARS = 100
_LETTERS = re.compile(r"[^\W\d_]+")


def page_lines(text: str) -> Page:
    """A page's text as stripped lines ("" for a blank line)."""
    return [line.strip() for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")]


def normalise(line: str) -> str:
    """A line as compared with others: whitespace collapsed, lower case."""
    return _SPACES.sub(" ", line).strip().lower()


def running_form(line: str) -> str:
    """What a running header keeps from page to page: numbers (arabic, or roman at an end) become ``#``."""
    return _ROMAN_EDGE.sub("#", _DIGITS.sub("#", normalise(line)))


def heading_key(text: str) -> str:
    """A heading as compared with an outline title: normalised, without its numbering ("2.2", "Chapter 3:")."""
    text = normalise(text)
    return _NUMBERING.sub("", text, count=1) or text


def is_page_number(line: str) -> bool:
    """A line that is only a page number: "12", "- 12 -", "Page 12 of 40", "12 / 40", "xiv" (front matter;
    in capitals only from two letters of I, V, X on: "CV" or "I" at a page's edge are words)."""
    text = _SPACES.sub(" ", line).strip()
    core = text.strip("-–— ")
    if _LOWER_ROMAN.fullmatch(core) or _UPPER_ROMAN.fullmatch(core):
        return True
    return bool(_PAGE_NUMBER.fullmatch(text.lower()))


def is_leader_line(line: str) -> bool:
    """A table-of-contents line with dot leaders (or a wrapped entry's leaders alone)."""
    # A contents line is short; a long one is no such line and is not searched (the pattern would backtrack).
    return len(line) <= _MAX_LEADER_CHARS and bool(_LEADER.search(line))


def clean_pages(pages: Sequence[Page], keep: Sequence[Iterable[str]] = ()) -> list[Page]:
    """The pages without running headers/footers, edge page numbers and dot-leader lines, hyphenation repaired.

    ``keep[i]`` holds the ``heading_key`` of each heading known to be on
    page ``i`` (from the outline): such a line at an edge is kept, unless the
    same text follows it closely (a running header right above its own
    chapter's heading); at an edge of a later page, the same text is a
    running header.
    """
    edges = _Edges(pages)
    cleaned: list[Page] = []
    earlier: set[str] = set()  # outline headings of the pages before: a chapter's title repeated as its header
    for i, lines in enumerate(pages):
        protected = set(keep[i]) if i < len(keep) else set()
        body = edges.strip(i, list(lines), protected, earlier)
        cleaned.append([line for line in body if not is_leader_line(line)])
        earlier |= protected
    return repair_hyphenation(cleaned)


class _Edges:
    """What repeats at the edges of pages: running forms, and edge numbers at a fixed offset from the page.

    A form counts as running where it is dense: on at least ``repeats`` pages
    and on three in four of the pages from its first to its last (or of every
    other page, for the left/right headers of two-sided printing). A line
    that merely recurs ("Possible return values:" near the foot of a few
    reference pages) is not that dense.
    """

    def __init__(self, pages: Sequence[Page]) -> None:
        texted = [p for p in pages if any(p)]
        self._repeats = 2 if len(texted) <= 4 else 3
        seen: dict[tuple[str, str], list[int]] = {}
        offsets: dict[str, Counter[int]] = {"top": Counter(), "bottom": Counter()}
        for index, lines in enumerate(pages):
            for side in ("top", "bottom"):
                edge = _edge(lines, side)
                for form in {running_form(line) for line in edge}:
                    seen.setdefault((side, form), []).append(index)
                offsets[side].update({n - index for line in edge if (n := _edge_number(line)) is not None})
        self._running = {key for key, at in seen.items() if _letters(key[1]) >= 3 and self._dense(at)}
        self._offset = {side: self._dominant(offsets[side]) for side in ("top", "bottom")}

    def _dense(self, at: list[int]) -> bool:
        for subset, step in ((at, 1), ([i for i in at if i % 2 == 0], 2), ([i for i in at if i % 2 == 1], 2)):
            if len(subset) >= self._repeats and len(subset) >= 0.75 * ((subset[-1] - subset[0]) // step + 1):
                return True
        return False

    def _dominant(self, offsets: Counter[int]) -> int | None:
        if not offsets:
            return None
        offset, count = offsets.most_common(1)[0]
        return offset if count >= self._repeats else None

    def running(self, side: str, index: int, line: str) -> bool:
        if (side, running_form(line)) in self._running:
            return True
        number = _edge_number(line)
        offset = self._offset[side]
        return offset is not None and number is not None and number - index == offset

    def strip(self, index: int, lines: Page, protected: set[str], earlier: set[str]) -> Page:
        for side in ("top", "bottom"):
            seen: set[str] = set()
            for _ in range(EDGE_LINES):
                at = _outermost(lines, side)
                if at is None:
                    break
                line = lines[at]
                form = running_form(line)
                key = heading_key(line)
                if form in seen or not (is_page_number(line) or key in earlier or self.running(side, index, line)):
                    break
                if key in protected and not _repeated_nearby(lines, at, side):
                    break
                seen.add(form)
                del lines[at]
        return lines


def _letters(text: str) -> int:
    return sum(ch.isalpha() for ch in text)


def _edge(lines: Page, side: str) -> list[str]:
    texted = [line for line in lines if line]
    return texted[:EDGE_LINES] if side == "top" else texted[-EDGE_LINES:]


def _outermost(lines: Page, side: str) -> int | None:
    """Index of the first (top) or last (bottom) non-blank line."""
    order = range(len(lines)) if side == "top" else range(len(lines) - 1, -1, -1)
    return next((i for i in order if lines[i]), None)


def _repeated_nearby(lines: Page, at: int, side: str) -> bool:
    step = 1 if side == "top" else -1
    nearby = [lines[j] for j in range(at + step, at + step * (EDGE_LINES + 1), step) if 0 <= j < len(lines)]
    return normalise(lines[at]) in {normalise(line) for line in nearby}


def _edge_number(line: str) -> int | None:
    """The number a line starts or ends with, if it has text besides (a bare number is a page number)."""
    match = _EDGE_NUMBER.search(line.strip())
    if match is None or is_page_number(line):
        return None
    return int(match.group(1) or match.group(2))


def repair_hyphenation(pages: list[Page]) -> list[Page]:
    """Join words broken at a line end ("manip-" + "ulation"), also from one page to the next.

    A broken word is joined when the next line of the paragraph starts with a
    lowercase letter. The hyphen stays ("well-" + "known") when the document
    writes ``well-known`` elsewhere and never ``wellknown``. Blank lines stay
    only between lines of text (paragraph breaks), never at a page's edge.
    """
    words = Counter(m.group(0).lower() for lines in pages for line in lines for m in _WORD.finditer(line))
    emptied: set[tuple[int, int]] = set()
    last: tuple[int, int] | None = None  # the previous line of text of the running paragraph
    for p, lines in enumerate(pages):
        for i, line in enumerate(lines):
            if not line:
                if _keep_blank(lines, i):
                    last = None  # a paragraph break; blank lines at a page's edges are none
                continue
            if last is not None and _join(pages, last, (p, i), words) and not pages[p][i]:
                emptied.add((p, i))
                continue
            last = (p, i)
    return [
        [line for j, line in enumerate(lines) if (p, j) not in emptied and (line or _keep_blank(lines, j))]
        for p, lines in enumerate(pages)
    ]


def _keep_blank(lines: Page, j: int) -> bool:
    return any(lines[:j]) and any(lines[j + 1 :])


def _join(pages: list[Page], before: tuple[int, int], after: tuple[int, int], words: Counter[str]) -> bool:
    """Join the word broken at the end of line ``before`` with the start of line ``after``; whether it did."""
    first, second = pages[before[0]][before[1]], pages[after[0]][after[1]]
    ends_broken = first.endswith(("-", "‐", "\u00ad"))
    broken = _BROKEN.search(first, max(0, len(first) - _MAX_WORD_CHARS)) if ends_broken else None
    tail_match = _LETTERS.match(second)
    if broken is None or tail_match is None:
        return False
    head, tail = broken.group(1), tail_match.group(0)
    hyphenated, joined = words[f"{head}-{tail}".lower()], words[f"{head}{tail}".lower()]
    if head[-1].islower() and tail[0].islower():
        keep = hyphenated > 0 and joined == 0
    elif joined > hyphenated:
        keep = False  # a name in capitals or camel case broken in two ("ELE-" "MENT"), written whole elsewhere
    else:
        return False
    # The word moves up with what sticks to it ("ulation." or "ulation),"), so no lone "." is left behind.
    moved = second.split(maxsplit=1)[0]
    pages[before[0]][before[1]] = first[: broken.start(1)] + head + ("-" if keep else "") + moved
    pages[after[0]][after[1]] = second[len(moved) :].lstrip()
    return True
