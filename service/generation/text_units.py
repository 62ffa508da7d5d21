"""The units an extractive answer quotes: sentences, and code blocks, lists and tables kept whole.

A chunk's text is read in blocks (the loaders separate blocks with a blank
line) and lines:

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

UnitKind = Literal["sentence", "code", "list", "table"]

_FENCE = re.compile(r"^\s*(?:```|~~~)")
_LIST_ITEM = re.compile(r"^\s*(?:[-*•+‣◦]|\d{1,3}[.)]|[a-z][)])\s+\S")
_TABLE_ROW = re.compile(r"\S \| \S|^\|.*\|\s*$")
_INDENTED = re.compile(r"^(?: {4}|\t)\s*\S")
_COMMANDS = frozenset(
    """
    sudo apt apt-get dpkg yum dnf brew pip pip3 pipx uv python python3 git docker podman kubectl helm
    curl wget npm npx yarn systemctl journalctl psql mysql sqlite3 ssh scp rsync tar chmod chown mkdir rm
    cp mv ls cd grep sed awk docqa alembic pytest openssl ln echo export unzip gzip make cmake gcc java
    mvn gradle cargo go node ruby perl bash sh zsh ps kill tail head cat less vim nano
    """.split()  # noqa: SIM905 - a word list reads better as text
)
#: Commands that are also English words: code only with an argument that looks like code.
_AMBIGUOUS = frozenset({"make", "go", "cat", "less", "head", "tail", "kill", "export", "echo", "ps"})
# Both are matched at the start of a stripped line (``match``, not ``search``: it is much faster).
_STRONG_CODE = re.compile(
    r"""
      (?:\$|%|>>>|PS>|[A-Za-z]:\\>|\#)\s+\S                      # a shell or interpreter prompt
    | (?:SELECT|INSERT\s+INTO|UPDATE|DELETE\s+FROM|CREATE|ALTER|DROP|GRANT|REVOKE|WHERE|ORDER\s+BY
        |GROUP\s+BY|LEFT\s+JOIN|INNER\s+JOIN|VALUES)\s+\S          # SQL
    | --?[A-Za-z][\w-]*(?:[ =]\S|$)                            # an option: --port 8080, -v
    | (?:def|class|import|from|return|function|const|let|var|public|private|fn|func)\s+[\w.]+
        (?:\s+import\s|[\s(:=<{]|$)                            # program text
    | \#include\b | \#!/ | [{}\])]+[;,]?$                       # C-like punctuation, a shebang
    | <[A-Za-z/!?][^>]*>                                       # markup
    | .*\S\s*\{$                                               # a block opens
    """,
    re.VERBOSE,
)
_WEAK_CODE = re.compile(
    r"""
      .*;$                                                     # a statement
    | [A-Za-z_][\w.\-]*\s*=\s*\S                               # KEY=value, key = value
    | [a-z_][\w.\-]*:\s*\S+$                                    # key: value
    | [\w.]+\([^()]*\)\s*;?$                                    # a call on its own
    """,
    re.VERBOSE,
)
#: Plainly prose (the common case, decided at once): a capitalised word, then words, a full stop.
_PLAIN_PROSE = re.compile(r"^[A-Z][a-z]+[ ,][^;{}=$<>|`\\]*[a-z0-9)][.!?]$")
_PROGRAM = re.compile(r"[a-z][\w.+-]*(?:\s+[^\s-]\S*){0,2}\s+--?[A-Za-z][\w-]*(?:[\s=]|$)")
#: Lines of code between two list items that belong to the item before (a step's command).
_STEP_CODE_LINES = 6
_LEAD_IN = re.compile(r"^[A-Z][^:]*\s[^:]*:$")
_CODE_SPAN = re.compile(r"`[^`\n]+`")
# A candidate sentence end: terminal punctuation, closing quotes or brackets, white space,
# then what a sentence starts with.
_BOUNDARY = re.compile(r"[.!?…]+[\"'”’)\]]*\s+(?=[\"'“‘(\[`]?[A-Z0-9])")
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
    text: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "text", "\n".join(self.lines))


def _strong_code(line: str) -> bool:
    stripped = line.strip()
    if _PLAIN_PROSE.match(stripped):
        return False
    if _STRONG_CODE.match(stripped):
        return True
    first, _, rest = stripped.partition(" ")
    if stripped.endswith((".", "?", "!", ",", ":")) or not first[:1].islower():
        return False
    if first in _COMMANDS:
        return bool(rest) and (first not in _AMBIGUOUS or re.search(r"(?:^|\s)-|[/=_|>]", rest) is not None)
    # Any program with an option: "zstd --train samples/* -o dict".
    return _PROGRAM.match(stripped) is not None


def _code_like(line: str) -> bool:
    stripped = line.strip()
    if _PLAIN_PROSE.match(stripped):
        return False
    return _strong_code(stripped) or _WEAK_CODE.match(stripped) is not None


def _line_kind(line: str) -> str:
    if _LIST_ITEM.match(line):
        return "list"
    if _INDENTED.match(line):
        return "code"
    if (" | " in line or line.startswith("|")) and _TABLE_ROW.search(line):
        return "table"
    return "code" if _strong_code(line) else "prose"


def _block_kinds(block: list[str]) -> list[str]:
    """The kind of each line of one block (no blank lines in it)."""
    if len(block) == 1:
        kind = _line_kind(block[0])
        return ["code" if kind == "prose" and _WEAK_CODE.match(block[0].strip()) else kind]
    if _LEAD_IN.match(block[0]) and not _code_like(block[0]):  # "Run these commands:" above code in one block
        return ["prose", *_block_kinds(block[1:])]
    if sum(_code_like(line) or bool(_INDENTED.match(line)) for line in block) * 5 >= len(block) * 3:
        return ["code"] * len(block)
    kinds: list[str] = []
    for line in block:
        kind = _line_kind(line)
        if kinds and kinds[-1] in ("list", "list+") and kind in ("prose", "code") and not _strong_code(line):
            kind = "list+"  # a wrapped list item
        kinds.append(kind)
    return kinds


def _blocks(text: str) -> list[tuple[str, list[str]]]:
    """The chunk as (``"fenced"`` or ``"plain"``, lines) blocks, fences and blank lines left out."""
    blocks: list[tuple[str, list[str]]] = []
    current: list[str] = []
    fenced = False

    def close(kind: str) -> None:
        if current:
            blocks.append((kind, current.copy()))
            current.clear()

    for line in text.split("\n"):
        if _FENCE.match(line):
            close("fenced" if fenced else "plain")
            fenced = not fenced
        elif not line.strip():
            if not fenced:
                close("plain")
        else:
            current.append(line.rstrip())
    close("fenced" if fenced else "plain")
    return blocks


def split_units(text: str) -> list[Unit]:
    """The units of a chunk's text, in reading order (see the module)."""
    # (kind, lines, block number): consecutive lines of one kind; lists, tables and code span blocks.
    runs: list[tuple[str, list[str], int]] = []
    for number, (fence, block) in enumerate(_blocks(text)):
        kinds = ["code"] * len(block) if fence == "fenced" else _block_kinds(block)
        if fence == "fenced":
            block = textwrap.dedent("\n".join(block)).split("\n")
        for kind, line in zip(kinds, block, strict=True):
            if kind == "list+" and runs:
                runs[-1][1][-1] += " " + line.strip()
                continue
            joins = runs and runs[-1][0] == kind and (kind != "prose" or runs[-1][2] == number)
            if joins:
                runs[-1][1].append(line)
            else:
                runs.append((kind, [line], number))
    units: list[Unit] = []
    for kind, lines, _ in _steps(runs):
        if kind == "prose":
            for sentence in split_sentences(" ".join(line.strip() for line in lines)):
                units.append(Unit("sentence", (sentence,), len(units)))
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
        for match in _BOUNDARY.finditer(masked):
            dots = _DOTS.match(match.group())
            dots_end = match.start() + (dots.end() if dots else 0)
            if _ends_sentence(masked, dots_end, masked[match.end() :]):
                sentences.append(block[start : match.start() + len(match.group().rstrip())])
                start = match.end()
        sentences.append(block[start:])
    return [" ".join(s.split()) for s in sentences if s.strip()]
