"""How well a quotable unit answers a question: lexical, question-aware, fast.

A unit's score is the idf-weighted share of the question's content terms it
contains (idf over the units of the context, so a word every sentence shares
counts little), with:

- the same stemming for question and text (Snowball's English stemmer:
  "configured", "configuring", "configure" agree; so do "connected" and
  "connections");
- identifiers (``snake_case``, ``CONFIG_NAMES``, ``--options``, ``call()``,
  ``dotted.names``) and numbers weighing more, and matching whole as well as
  by their parts;
- a bonus for each consecutive pair of question terms found side by side;
- a bonus when the unit has what the question asks for: a number or
  duration for "how many / how much / how long / when", an identifier or
  code for "which command / function / option", a command, an option or an
  instruction verb for "how do I / how to", a modal or permission for "can I /
  is it possible / am I allowed", a reason for "why".

The chunk's rank is applied by the caller.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from itertools import pairwise

import snowballstemmer

_TOKEN = re.compile(
    r"(?<![\w-])--?[A-Za-z][\w-]*"  # an option
    r"|[A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)*(?:\(\))?"  # a word or identifier
    r"|\d+(?:[.,:]\d+)*(?:[A-Za-z%]+)?"  # a number, version or quantity
)
_STOPWORDS = frozenset(
    """
    a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further
    had has have having he her here hers herself him himself his how i if in into is it its
    itself just me more most my myself no nor not now of off on once only or other our ours
    ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself yourselves
    tell please much many may might must shall us get got one use uses using used also allowed possible
    """.split()  # noqa: SIM905 - a word list reads better as text
)
_NUMBER_WORDS = (
    r"one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty|forty|fifty"
    r"|hundred|thousand|million|billion|dozen|half|twice|once|single|double|triple|unlimited"
)
_QUANTITY = re.compile(
    rf"\d|\b(?:{_NUMBER_WORDS})\b|\b(?:daily|weekly|monthly|yearly|annually|hourly)\b", re.IGNORECASE
)
_PERMISSION = re.compile(
    r"\b(?:can|cannot|can't|may|must|allowed|permitted|permission|prohibited|forbidden|possible|impossible"
    r"|required|requires?|only\s+if|unless|need\s+to|needs\s+to|not\s+supported|supported|eligible)\b",
    re.IGNORECASE,
)
_REASON = re.compile(
    r"\b(?:because|since|so\s+that|in\s+order\s+to|to\s+(?:avoid|prevent|ensure)|due\s+to|therefore|otherwise)\b",
    re.IGNORECASE,
)
_IDENTIFIER_IN_TEXT = re.compile(
    r"`[^`]+`|(?<![\w-])--?[A-Za-z][\w-]+|\b[A-Za-z]\w*_\w+\b|\b\w+\(\)|\b[a-z]+[A-Z]\w*\b|\b[a-z]\w*\.[a-z]\w+\b"
)
_WANTS = (
    (
        "quantity",
        re.compile(
            r"\bhow\s+(?:many|much|long|often|far|big|large|old|soon|fast|frequently)\b|\bwhen\b|\bwhat\s+(?:time|date)\b"
            r"|\b(?:number|amount|size|limit|maximum|minimum|duration|timeout|deadline|cost|price|default\s+value)\s+of\b",
            re.IGNORECASE,
        ),
    ),
    (
        "identifier",
        re.compile(
            r"\b(?:which|what)\s+(?:\w+\s+)?(?:commands?|functions?|methods?|parameters?|options?|flags?|settings?"
            r"|variables?|class(?:es)?|modules?|keys?|fields?|files?|packages?|tools?|endpoints?|arguments?|properties)\b"
            r"|\bwhat\s+(?:do\s+i|to)\s+(?:run|type)\b",
            re.IGNORECASE,
        ),
    ),
    ("procedure", re.compile(r"\bhow\s+(?:do|can|should|would)\s+(?:i|you|we|one)\b|\bhow\s+to\b", re.IGNORECASE)),
    (
        "permission",
        re.compile(
            r"^\s*(?:can|could|may|must|am|are|is)\s+(?:i|we|you|one|employees?|users?|staff|it)\b"
            r"|\bis\s+it\s+(?:possible|allowed|permitted)\b|\b(?:allowed|permitted)\s+to\b|\bdo\s+i\s+(?:need|have)\s+to\b",
            re.IGNORECASE,
        ),
    ),
    ("reason", re.compile(r"\bwhy\b|\bwhat\s+for\b|\breason\b", re.IGNORECASE)),
)
#: A step: code, a command or option, or an instruction verb.
_PROCEDURE = re.compile(
    r"`[^`]+`|(?<![\w-])--?[A-Za-z][\w-]+|^\s*\d{1,2}[.)]\s"
    r"|\b(?:run|use|set|call|install|add|create|open|click|select|enter|type|execute|edit|enable|disable|specify"
    r"|choose|go\s+to|log\s+in|sign\s+in|submit|request|send|pass)\b",
    re.IGNORECASE | re.MULTILINE,
)
_CUES = {
    "quantity": _QUANTITY,
    "permission": _PERMISSION,
    "reason": _REASON,
    "identifier": _IDENTIFIER_IN_TEXT,
    "procedure": _PROCEDURE,
}
#: Cues code always shows.
_CODE_CUES = frozenset({"identifier", "procedure"})
#: How much more an identifier or a number weighs than a word.
_SPECIAL_WEIGHT = 1.5
#: How much a word found only inside an identifier counts ("build" in CMAKE_BUILD_TYPE).
_PART_WEIGHT = 0.7
_VOWEL = re.compile(r"[aeiouy]")
_PARTS = re.compile(r"[_.\-()]+|(?<=[a-z])(?=[A-Z])")
#: The bonus for showing what the question asks for, by how surely it marks an answer.
_CUE_BONUS = {"quantity": 0.5, "identifier": 0.5, "permission": 0.3, "reason": 0.3, "procedure": 0.25}
_PAIR_BONUS = 0.1


_SNOWBALL = snowballstemmer.stemmer("english")


@lru_cache(maxsize=1 << 16)
def _stem(word: str) -> str:
    """The word's Snowball (Porter 2) stem: "connected", "connections" and "connecting" agree."""
    return str(_SNOWBALL.stemWord(word.lower()))


def _special(token: str) -> bool:
    """Whether ``token`` is an identifier or a number (they weigh more)."""
    return (
        token[0].isdigit()
        or token.startswith("-")
        or "_" in token
        or "." in token
        or token.endswith("()")
        or (any(c.isupper() for c in token[1:]) and any(c.islower() for c in token))
    )


@lru_cache(maxsize=1 << 16)
def _token_terms(token: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The terms one token gives, and those of them that are parts of an identifier.

    A word gives its stem (nothing for a stop word); an identifier gives itself and the stems of its parts.
    """
    if not _special(token):
        lower = token.lower()
        return ((), ()) if lower in _STOPWORDS or len(token) < 2 else ((_stem(token),), ())
    whole = token.lower()
    if whole in ("e.g", "i.e"):
        return (), ()
    parts = [p for p in _PARTS.split(token) if p]
    if len(parts) == 1 and parts[0].lower() == whole:
        return (whole,), ()
    stems = tuple(_stem(p) for p in parts if len(p) > 1 and p.lower() not in _STOPWORDS and not p.isdigit())
    return (whole, *stems), stems


def term_sequence(text: str) -> list[str]:
    """The normalised content terms of ``text`` in order; an identifier gives itself, then its parts."""
    return [term for token in _TOKEN.findall(text) for term in _token_terms(token)[0]]


@dataclass(frozen=True, slots=True)
class Evidence:
    """A unit's text and its terms (in order, and as a set); code always offers identifiers."""

    text: str
    sequence: tuple[str, ...]
    terms: frozenset[str]
    #: Terms found only as parts of identifiers ("build" in CMAKE_BUILD_TYPE): they count less.
    parts: frozenset[str] = frozenset()
    code: bool = False

    @classmethod
    def of(cls, text: str, *, code: bool = False) -> Evidence:
        sequence: list[str] = []
        parts: set[str] = set()
        words: set[str] = set()
        for token in _TOKEN.findall(text):
            terms, of_parts = _token_terms(token)
            sequence += terms
            if of_parts:
                parts.update(of_parts)
            else:
                words.update(terms)
        return cls(text, tuple(sequence), frozenset(sequence), frozenset(parts - words), code)


@dataclass(frozen=True, slots=True)
class Question:
    """A question read for scoring: its terms with weights, term pairs, and what kind of answer it wants."""

    weights: dict[str, float]
    pairs: frozenset[tuple[str, str]]
    wants: frozenset[str]

    @classmethod
    def read(cls, text: str) -> Question:
        sequence = term_sequence(text)
        weights = {t: (_SPECIAL_WEIGHT if _special(t) else 1.0) for t in sequence}
        pairs = frozenset(pairwise(sequence))
        wants = frozenset(name for name, pattern in _WANTS if pattern.search(text))
        return cls(weights, pairs, wants)


class Scorer:
    """Scores units of one context against one question (idf from that context's units)."""

    def __init__(self, question: Question, context: Iterable[Evidence]) -> None:
        self._question = question
        documents = list(context)
        frequency: Counter[str] = Counter()
        for evidence in documents:
            frequency.update(evidence.terms & question.weights.keys())
        total = len(documents)
        self._idf = {t: math.log((total + 1) / (n + 0.5)) for t, n in frequency.items()}
        self._whole = sum(question.weights[t] * idf for t, idf in self._idf.items())

    def score(self, evidence: Evidence) -> float:
        """0 when the unit shares no term with the question; higher is a better answer."""
        matched = evidence.terms & self._idf.keys()
        if not matched or self._whole <= 0:
            return 0.0
        question = self._question
        weights = question.weights
        share = (
            sum(weights[t] * self._idf[t] * (_PART_WEIGHT if t in evidence.parts else 1.0) for t in matched)
            / self._whole
        )
        pairs = sum(1 for pair in pairwise(evidence.sequence) if pair in question.pairs)
        cues = sum(
            _CUE_BONUS[name]
            for name in question.wants
            if (evidence.code and name in _CODE_CUES) or _CUES[name].search(evidence.text)
        )
        return share * (1.0 + cues + _PAIR_BONUS * min(pairs, 2))
