"""What an extractive answer is made of: quotes of whole units, each with the sources it came from.

A ``Candidate`` is one unit of one context chunk with its score. A ``Quote``
is what the answer shows: one or more consecutive units of a chunk (a
sentence that ends on "so that" or ":" goes on into what follows it), cited
by that chunk and by every other chunk holding the same text. Rendering keeps
code in a fence and lists and tables line by line, and bounds a long one to
the lines that match the question.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from service.generation.answer_scoring import Evidence, Scorer
from service.generation.planted import looks_like_instruction
from service.generation.text_units import Unit

#: Lines of a code block, list or table quoted whole; a longer one is cut to the lines that match.
MAX_BLOCK_LINES = 12
_MAX_BLOCK_CHARS = 1200
#: Lines of a long block kept: those scoring at least this share of its best line.
_LINE_RATIO = 0.75
_TERMINAL = re.compile(r"[.!?…][\"'”’)\]]*$")
_DANGLING = re.compile(
    r"""(?:[:,;(\-–—]|\b(?:so\s+that|such\s+as|for\s+example|for\s+instance|e\.g\.|i\.e\.|as\s+follows
    |the|a|an|and|or|nor|but|of|to|into|via|per|than|between|including|namely|because|whether|if|when|while
    |with|your|its|their|our|following))\s*$""",
    re.IGNORECASE | re.VERBOSE,
)
#: A sentence that points at the one before it ("It is …" is mostly the dummy "it": not counted).
_REFERS_BACK = re.compile(r"(?:This|These|Those|That|They|Such|Both|Otherwise|It(?!\s+is\b|'s\b))\b")
#: A sentence that starts a definition ("port (integer): The TCP port …", "-n, --numbered: Sort …") or is a
#: defined term alone (a chunk cut after it): never the rest of the sentence before it.
_DEFINITION_START = re.compile(r"^[\w.<>\[\]=|-]+(?:\s\([\w ]+\))?(?::\s|,\s-|$)")
#: "this code", "these options", "such a file" past a sentence's first word, within its first characters.
_POINTS_BACK = re.compile(
    r"(?<=\s)(?:this|these|those|such)\s+(?:an?\s+)?(?!is\b|are\b|was\b|the\b|it\b|you\b)[a-z]{3,}\b"
)
_POINTS_BACK_WITHIN = 60
#: A sentence that announces what follows it ("run the following command.").
_ANNOUNCES = re.compile(r"\b(?:the\s+following|as\s+follows|below)\b|:\s*$", re.IGNORECASE)


def dangling(text: str) -> bool:
    """Whether a sentence ends on a fragment that needs what follows ("so that", "such as", ":", "and")."""
    text = text.rstrip()
    if re.search(r"\b(?:e\.g|i\.e)\.$", text, re.IGNORECASE):
        return True
    return not _TERMINAL.search(text) and _DANGLING.search(text) is not None


def complete(text: str) -> bool:
    """Whether a sentence ends with terminal punctuation."""
    return _TERMINAL.search(text.rstrip()) is not None


def refers_back(text: str) -> bool:
    """Whether a sentence starts by pointing at the one before it ("This …", "It …", "These …")."""
    return _REFERS_BACK.match(text) is not None


def continues_before(text: str) -> bool:
    """Whether a sentence starts inside one that began before it: in lower case ("which will replace the old
    commit …" after "… using" and a command), so it is never quoted without its start."""
    first = text.lstrip("\"'“‘(")[:1]
    return first.islower() and not _DEFINITION_START.match(text)


def points_back(text: str) -> bool:
    """Whether a sentence names something the one before it introduced ("If the script exits with this code,
    …"): a demonstrative early in it, past its first word."""
    return _POINTS_BACK.search(text[:_POINTS_BACK_WITHIN]) is not None


def announces(text: str) -> bool:
    """Whether a sentence introduces the code, list or table after it."""
    return _ANNOUNCES.search(text) is not None


@dataclass(slots=True)
class Candidate:
    """One unit of one context chunk, scored against the question."""

    rank: int
    citation: int
    unit: Unit
    evidence: Evidence
    score: float = 0.0
    #: Per line, for code, lists and tables (the lines that matter when one is too long to quote whole).
    line_scores: tuple[float, ...] = ()
    _planted: bool | None = None

    @property
    def planted(self) -> bool:
        """Whether the unit reads as an instruction to an assistant (asked only of units that may be quoted)."""
        if self._planted is None:
            self._planted = looks_like_instruction(self.unit.text)
        return self._planted

    def score_lines(self, scorer: Scorer) -> None:
        """Score each line of a multi-line unit; a list or table scores as its best line."""
        if self.unit.kind == "sentence" or len(self.unit.lines) < 2:
            return
        self.line_scores = tuple(
            scorer.score(Evidence.of(line, code=self.unit.kind == "code")) for line in self.unit.lines
        )
        if self.unit.kind in ("list", "table"):
            self.score = max(self.line_scores)


def near_duplicates(a: Candidate, b: Candidate) -> bool:
    """The same text twice (chunks overlap), nearly (content-term Jaccard ≥ 0.8), or a cut piece of the other."""
    x, y = " ".join(a.unit.text.lower().split()), " ".join(b.unit.text.lower().split())
    if x == y:
        return True
    small, large = sorted((x, y), key=len)
    if len(small) >= 0.5 * len(large) and small in large:
        return True
    terms, others = a.evidence.terms, b.evidence.terms
    return min(len(terms), len(others)) >= 3 and len(terms & others) >= 0.8 * len(terms | others)


@dataclass(slots=True)
class Quote:
    """Consecutive units of one chunk, quoted together, and every chunk they appear in."""

    parts: list[Candidate]
    citations: set[int]
    score: float

    @property
    def first(self) -> Candidate:
        return self.parts[0]

    def render(self) -> str:
        """The quote's text: sentences joined and cited, code fenced, lists and tables line by line."""
        marks = "".join(f"[{n}]" for n in sorted(self.citations))
        lines: list[str] = []
        sentences: list[str] = []
        cited = False
        previous: Candidate | None = None
        for part in self.parts:
            gap = previous is not None and part.unit.position > previous.unit.position + 1
            previous = part
            if part.unit.kind == "sentence":
                sentences.append(f"… {part.unit.lines[0]}" if gap and sentences else part.unit.lines[0])
                continue
            if sentences:
                lines.append(f"{' '.join(sentences)} {marks}")
                sentences, cited = [], True
            body = _bounded(part)
            if part.unit.kind == "code":
                lines += ["```", *body, "```"]
            else:
                lines += body
        if sentences:
            lines.append(f"{' '.join(sentences)} {marks}")
        elif not cited:
            if self.parts[-1].unit.kind == "code":
                lines.append(marks)
            else:
                lines[-1] = f"{lines[-1]} {marks}"
        return "\n".join(lines)


def _bounded(candidate: Candidate) -> list[str]:
    """A code block, list or table whole while short; else (its header and) the lines that match best."""
    lines = list(candidate.unit.lines)
    if len(lines) <= MAX_BLOCK_LINES and sum(map(len, lines)) <= _MAX_BLOCK_CHARS:
        return lines
    scores = candidate.line_scores or (0.0,) * len(lines)
    best = max(scores)
    if best <= 0:
        return lines[:MAX_BLOCK_LINES]
    ranked = sorted((i for i, s in enumerate(scores) if s >= _LINE_RATIO * best), key=lambda i: -scores[i])
    keep = set(ranked[: MAX_BLOCK_LINES // 3 if candidate.unit.kind == "code" else MAX_BLOCK_LINES - 1])
    if candidate.unit.kind == "code":  # a line of code with the lines around it
        keep |= {j for i in keep for j in (i - 1, i + 1) if 0 <= j < len(lines)}
    if candidate.unit.kind == "table":
        keep.add(0)
    return [lines[i] for i in sorted(keep)]
