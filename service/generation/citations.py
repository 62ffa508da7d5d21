"""Whether a generated answer's citations point at its sources, and which sentences cite none.

The prompt numbers the context documents 1..n and asks for every sentence to
cite its sources as ``[n]``. A citation is a bracketed number or group:
``[2]``, ``[1][3]``, ``[1, 3]``, ``[1-3]`` (a range, with a hyphen or a
dash). Not citations: a link's text (``[1](…)``), a reference definition
(``[1]: …`` at the start of a line), an index (``items[0]``, a word before
the bracket), a reference link's label (``[text][1]``) and anything in code
(a fenced block or a `span`).

``check_citations`` says which citations are valid, which point outside
1..n, and which sentences cite nothing; its ``text`` is the answer with the
citations that point outside removed (a group keeps its valid members).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from service.generation.text_units import split_sentences

_GROUP = re.compile(r"\[\s*(\d{1,6}(?:\s*(?:,|;|-|–|—|and)\s*\d{1,6})*)\s*\](?!\s*\()")
_MEMBER = re.compile(r"(\d+)(?:\s*[-–—]\s*(\d+))?")
_FENCE = re.compile(r"^\s*(?:```|~~~)")
_CODE_SPAN = re.compile(r"`[^`\n]*`")
_ITEM = re.compile(r"^\s*(?:[-*•+]|\d{1,3}[.)])\s+\S|\S \| \S|^\s*\|")
#: A sentence that introduces a list: it ends with a colon (and perhaps its citations).
_LEAD_IN = re.compile(r":\s*(?:\[[^\]\n]*\]\s*)*$")
_DEFINITION = re.compile(r"^\s*\[[^\]\n]+\]:\s*\S")
_LEADING_MARKS = re.compile(r"^(?:\[[^\]\n]*\]\s*)+[.,;:!?]?\s*")
#: A range wider than this is not a citation anyone meant.
_MAX_RANGE = 100


@dataclass(frozen=True, slots=True)
class CitationCheck:
    """What ``check_citations`` found in one answer."""

    #: The answer with every citation outside 1..sources removed.
    text: str
    #: The source numbers cited, each once, ascending.
    valid: tuple[int, ...]
    #: The citations that point outside 1..sources, as written ("[0]", "[9]", "[2, 3]").
    invalid: tuple[str, ...]
    #: The source numbers cited that do not exist, each once, ascending.
    missing: tuple[int, ...]
    #: The sentences that cite no source, as written.
    uncited: tuple[str, ...]
    #: Sentences in the answer (code and lead-ins ending in ":" not counted).
    sentences: int
    sources: int

    @property
    def ok(self) -> bool:
        """Every citation valid and every sentence cited."""
        return not self.invalid and not self.uncited

    def warnings(self, *, removed: bool = True) -> tuple[str, ...]:
        """What a reader of the answer should know; ``removed`` says whether ``text`` is what they got."""
        found: list[str] = []
        if self.invalid:
            absurd = [mark for mark in self.invalid if _members(mark.strip("[]")) is None]
            listed = ", ".join([f"[{n}]" for n in self.missing] + absurd)
            scope = f"[1] to [{self.sources}]" if self.sources else "none"
            verb = "removed citations of" if removed else "the answer cites"
            found.append(f"{verb} sources that do not exist: {listed} (its sources are {scope})")
        if self.uncited:
            if len(self.uncited) == self.sentences:
                found.append("the answer cites no source")
            else:
                found.append(f"{len(self.uncited)} of {self.sentences} sentences of the answer cite no source")
        return tuple(found)


def _members(group: str) -> list[int] | None:
    """The numbers a citation group names; None when a range is absurd."""
    numbers: list[int] = []
    for match in _MEMBER.finditer(group):
        first = int(match.group(1))
        last = int(match.group(2)) if match.group(2) else first
        low, high = min(first, last), max(first, last)
        if high - low > _MAX_RANGE:
            return None
        numbers.extend(range(low, high + 1))
    return numbers


def _code_mask(answer: str) -> str:
    """``answer`` with code (fenced blocks, spans) blanked out to spaces, offsets unchanged."""
    lines = answer.split("\n")
    fenced = False
    for i, line in enumerate(lines):
        if _FENCE.match(line):
            fenced = not fenced
            lines[i] = " " * len(line)
        elif fenced:
            lines[i] = " " * len(line)
        else:
            lines[i] = _CODE_SPAN.sub(lambda m: " " * len(m.group()), line)
    return "\n".join(lines)


def _is_citation(masked: str, start: int, end: int, previous_end: int) -> bool:
    before = masked[start - 1] if start else "\n"
    if before == "]":
        return previous_end == start  # "[1][3]" yes; "[text][1]" (a reference link) no
    if before.isalnum() or before in "_!\\":
        return False
    line_start = masked.rfind("\n", 0, start) + 1
    return not (masked[line_start:start].strip() == "" and masked[end : end + 1] == ":")


def _citations(masked: str) -> Iterator[re.Match[str]]:
    """The citation groups of ``masked`` (code already blanked out)."""
    previous_end = -1
    for match in _GROUP.finditer(masked):
        if _is_citation(masked, match.start(), match.end(), previous_end):
            previous_end = match.end()
            yield match


def check_citations(answer: str, sources: int) -> CitationCheck:
    """Check ``answer``'s citations against sources numbered 1..``sources`` (see the module)."""
    if sources < 0:
        raise ValueError("sources must be 0 or more")
    valid: set[int] = set()
    missing: set[int] = set()
    invalid: list[str] = []
    pieces: list[str] = []
    kept = 0  # end of the answer text already copied to pieces
    for match in _citations(_code_mask(answer)):
        start, end = match.span()
        numbers = _members(match.group(1))
        good = [n for n in dict.fromkeys(numbers or ()) if 1 <= n <= sources]
        valid.update(good)
        if numbers is not None and len(good) == len(set(numbers)):
            continue
        missing.update(n for n in numbers or () if not 1 <= n <= sources)
        invalid.append(answer[start:end])
        cut = start
        if not good:  # the whole group goes, with the space before it (or after it, at a line's start)
            while cut > kept and answer[cut - 1] in " \t":
                cut -= 1
            if cut == 0 or answer[cut - 1] == "\n":
                end = len(answer) - len(answer[end:].lstrip(" \t"))
        pieces += [answer[kept:cut], "".join(f"[{n}]" for n in good)]
        kept = end
    pieces.append(answer[kept:])
    text = "".join(pieces)
    sentences, uncited = _uncited(text, sources)
    return CitationCheck(
        text, tuple(sorted(valid)), tuple(invalid), tuple(sorted(missing)), uncited, sentences, sources
    )


def _uncited(text: str, sources: int) -> tuple[int, tuple[str, ...]]:
    """How many sentences ``text`` has, and those that cite none of 1..sources (code is not read).

    A list or a table, with the lead-in before it ("You need:"), counts as one
    sentence, cited when any of its lines cites.
    """
    sentences: list[str] = []
    items: list[str] = []  # the list or table being read
    fenced = False
    for line in [*text.split("\n"), ""]:
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if fenced or _DEFINITION.match(line) or line.lstrip().startswith(("#", "|-", "---")):
            continue
        if _ITEM.search(line):
            if not items and sentences and _LEAD_IN.search(sentences[-1]):
                items.append(sentences.pop())
            items.append(line.strip())
            continue
        if items:
            sentences.append(" ".join(items))
            items = []
        for sentence in split_sentences(line):
            leading = _LEADING_MARKS.match(sentence)
            if leading and sentences:  # "… fell. [2]": the marks belong to the sentence before
                sentences[-1] += " " + leading.group().strip()
                sentence = sentence[leading.end() :]
            if sentence.strip():
                sentences.append(sentence)
    # A lead-in ("You can:") introduces what follows; it need not cite anything itself.
    counted = [s for s in sentences if not s.rstrip().endswith(":") and re.search(r"[A-Za-z]", s)]
    return len(counted), tuple(s for s in counted if not _cites(s, sources))


def _cites(sentence: str, sources: int) -> bool:
    masked = _CODE_SPAN.sub(lambda m: " " * len(m.group()), sentence)
    return any(any(1 <= n <= sources for n in _members(m.group(1)) or ()) for m in _citations(masked))
