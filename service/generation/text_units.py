"""The units an extractive answer quotes: sentences, and code blocks, lists and tables kept whole.

A chunk's text is read in blocks (the loaders separate blocks with a blank
line) and lines (``service.generation.text_lines``):

- **code**: lines between ``` fences, indented lines, and lines that look like
  a command, SQL, an option or program text; a block most of whose lines look
  like code (configuration, output) is code as a whole;
- **list**: consecutive items ("- ", "* ", "• ", "1. ", "a) ") with their
  continuation lines, across the blank lines between items;
- **table**: consecutive rows as the loaders write them ("a | b | c");
- everything else is prose, cut into **sentences** — never at an
  abbreviation ("e.g.", "i.e.", "etc.", "Fig. 3", "No. 5"), an initial, a
  version number or a decimal, nor inside a `code span`.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass, field
from typing import Literal

from service.generation.text_lines import SENTENCE_BOUNDARY, block_kinds, blocks, defined

UnitKind = Literal["sentence", "code", "list", "table"]

#: Lines of code between two list items that belong to the item before (a step's command).
_STEP_CODE_LINES = 6
_CODE_SPAN = re.compile(r"`[^`\n]+`")
#: Abbreviations a sentence never ends at.
_ABBREVIATIONS = frozenset(
    """
    e.g. i.e. etc. vs. cf. approx. ca. incl. esp. viz. dr. mr. mrs. ms. prof. st. inc. ltd. co. corp.
    jr. sr. al. resp. dept. min. max. a.m. p.m. u.s. u.k. e.v. z.b. d.h. usw.
    """.split()  # noqa: SIM905
)
#: Abbreviations that precede a number: "Fig. 3", "No. 5", "p. 12".
_NUMBERED = frozenset("fig. figs. no. nos. nr. p. pp. vol. sec. ch. eq. art. tab. ref. ver. v.".split())  # noqa: SIM905
_INITIALS = re.compile(r"^(?:[A-Za-z]\.)+$")
_DOTS = re.compile(r"[.!?…]+")


@dataclass(frozen=True, slots=True)
class Unit:
    """One quotable piece of a chunk, with its place in the chunk (0, 1, …)."""

    kind: UnitKind
    lines: tuple[str, ...]
    position: int
    #: The position of the sentence that states what this unit's definition defines ("checkpoint_timeout
    #: (integer): Maximum time between automatic WAL checkpoints.") when the unit is a later part of it ("The
    #: default is five minutes."); None outside a definition and for that sentence itself.
    head: int | None = None
    text: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "text", "\n".join(self.lines))


def split_units(text: str) -> list[Unit]:
    """The units of a chunk's text, in reading order (see the module)."""
    # (kind, lines, block number): consecutive lines of one kind; lists, tables and code span blocks.
    runs: list[tuple[str, list[str], int]] = []
    definitions: set[int] = set()  # numbers of the blocks that start with a definition's terms
    for number, (fence, block) in enumerate(defined(blocks(text))):
        kinds = ["code"] * len(block) if fence == "fenced" else block_kinds(block)
        if fence == "defined":
            kinds[0] = "prose"
            definitions.add(number)
        elif fence == "fenced":
            block = textwrap.dedent("\n".join(block)).split("\n")
        for kind, line in zip(kinds, block, strict=True):
            if kind == "list+" and runs:
                runs[-1][1][-1] += " " + line.strip()
                continue
            joins = runs and runs[-1][0] == kind and kind != "heading" and (kind != "prose" or runs[-1][2] == number)
            if joins:
                runs[-1][1].append(line)
            else:
                runs.append((kind, [line], number))
    units: list[Unit] = []
    head: int | None = None  # the first sentence of the definition being read
    for kind, lines, number in _steps(runs):
        if kind == "heading":
            head = None
            units.append(Unit("sentence", (lines[0].strip(),), len(units)))
        elif kind == "prose":
            if number in definitions:
                head = len(units)
            for sentence in split_sentences(" ".join(line.strip() for line in lines)):
                position = len(units)
                units.append(Unit("sentence", (sentence,), position, head if head != position else None))
        elif kind == "code":
            units.append(Unit("code", tuple(_dedent(lines)), len(units)))
        else:
            units.append(Unit("list" if kind == "list" else "table", tuple(x.rstrip() for x in lines), len(units)))
    return units


def _steps(runs: list[tuple[str, list[str], int]]) -> list[tuple[str, list[str], int]]:
    """Runs with a list's step commands folded into it: code between two items of the list, or after the
    last item when earlier items had theirs (the loaders write an item's code as a block of its own)."""
    merged: list[tuple[str, list[str], int]] = []
    for i, (kind, lines, number) in enumerate(runs):
        in_list = bool(merged) and merged[-1][0] == "list"
        if in_list and kind == "code" and len(lines) <= _STEP_CODE_LINES:
            next_is_item = i + 1 < len(runs) and runs[i + 1][0] == "list"
            if next_is_item or any(line.startswith(" ") for line in merged[-1][1]):
                merged[-1][1].extend("   " + line for line in _dedent(lines))
                continue
        if in_list and kind == "list" and runs[i - 1][0] == "code":
            merged[-1][1].extend(lines)  # the list goes on after a step's command
            continue
        merged.append((kind, list(lines), number))
    return merged


def _dedent(lines: list[str]) -> list[str]:
    """Code lines without their common indentation.

    A loader strips a block's first line, so the others are dedented by their
    own common indentation, unless the first line opens a block they are inside.
    """
    first = lines[0].strip()
    rest = lines[1:]
    if first.endswith((":", "{", "(", "[", "\\")):
        return [first, *rest]
    cut = min((len(line) - len(line.lstrip()) for line in rest if line.strip()), default=0)
    return [first, *(line[cut:] for line in rest)]


def _ends_sentence(masked: str, dots_end: int, after: str) -> bool:
    """Whether the punctuation ending at ``dots_end`` ends a sentence (not an abbreviation or initial)."""
    start = max(masked.rfind(" ", 0, dots_end), masked.rfind("\n", 0, dots_end)) + 1
    word = masked[start:dots_end].lstrip("\"'“‘([").lower()
    if not word.endswith(".") or word.endswith(".."):
        return True
    if word in _ABBREVIATIONS or (_INITIALS.match(word) and len(word) <= 4):
        return False
    return not (word in _NUMBERED and after[:1].isdigit())


def split_sentences(text: str) -> list[str]:
    """The sentences of prose ``text`` (blocks at blank lines, then sentences), white space normalised."""
    sentences: list[str] = []
    for block in re.split(r"\n\s*\n", text):
        # Boundaries are looked for where code spans are blanked out, so none falls inside one.
        masked = _CODE_SPAN.sub(lambda m: "x" * len(m.group()), block) if "`" in block else block
        start = 0
        for match in SENTENCE_BOUNDARY.finditer(masked):
            dots = _DOTS.match(match.group())
            dots_end = match.start() + (dots.end() if dots else 0)
            if _ends_sentence(masked, dots_end, masked[match.end() :]):
                sentences.append(block[start : match.start() + len(match.group().rstrip())])
                start = match.end()
        sentences.append(block[start:])
    return [" ".join(s.split()) for s in sentences if s.strip()]
