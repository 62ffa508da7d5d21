"""What a question names that an answer must be about: its distinctive terms, and whether a text mentions them.

A vector score says a text is *near* a question; it cannot tell "create a
branch in Mercurial" from "create a branch in git", nor "packages in Ubuntu
22.04" from "packages in Debian 3.1". The names in a question can: a product,
a version, an identifier. A question whose distinctive term appears in
nothing the caller can read is not answered from what they can read, however
near it scores (``service.query.retrieval.Retrieval.unmentioned``).

Distinctive terms, read from the question's own spelling:

- a name: a capitalised word that does not start the question or one of its
  sentences ("in Mercurial", "on Fedora"), or a word with capitals inside
  ("InnoDB", "GitHub", "PostgreSQL"), or an acronym ("RPM", "SSDs");
- a version with the name before it, as one phrase ("Ubuntu 22.04",
  "Python 3.12"), and a bare dotted version ("22.04");
- an identifier: an option (``--force-with-lease``), ``snake_case``,
  ``dotted.names``, ``call()``, a quoted `code span`, a program's
  subcommand named as a command ("the git sync command");
- a year ("elected in 2024");
- a name of several capitalised words, as one phrase ("Oracle RAC", "SQL
  Server Always On"), and a name in lower camel case ("pgAdmin 4").

Common words a question capitalises for emphasis or by habit ("I", "OK",
weekday and month names, "FAQ") are not names. A term is mentioned by a text
when the text holds it as a whole word, case-insensitively, a plural "s" or
a possessive "'s" aside; a phrase when its words follow each other.

``identifiers`` reads the exact tokens a question names, for ranking
(``service.query.identifiers``): the identifiers and commands above, and
shapes that are no distinctive term of their own here because an acronym or a
capitalised word names a kind of thing as often as a thing: a code with
letters and digits (``PPR-9087``, ``42P01``), a short option (``-m``), a
CamelCase name (``AccessExclusiveLock``), a word in capitals of four letters
or more (``SIGHUP``), a quoted message. An identifier is mentioned by a text
that spells it exactly: case-sensitively (``-m`` is not ``-M``), as a whole
token; a quoted message (retyped by a person) in any case.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: Words a question capitalises that name nothing in particular.
_NOT_NAMES = frozenset(
    """
    i i'm i've i'd i'll ok okay faq hi hello thanks please yes no
    monday tuesday wednesday thursday friday saturday sunday
    january february march april may june july august september october november december
    english
    """.split()  # noqa: SIM905 - a word list reads better as text
)
#: Words that are never names, capitalised or not ("Do", "With", "The" in a title-cased question).
_FUNCTION_WORDS = frozenset(
    """
    a an and are as at be by can could did do does for from has have how in into is it its may might must my
    not of on or our should so than that the their then there these they this to was we were what when where
    which who why will with would you your
    """.split()  # noqa: SIM905 - a word list reads better as text
)
#: Words that start a clause (after a comma, a colon, a parenthesis) and are capitalised only there.
_SENTENCE_END = re.compile(r"[.!?:;]\s*$|^\s*$")
_WORD = re.compile(r"[A-Za-z][\w'’]*(?:[.+#][A-Za-z0-9][\w'’]*)*[+#]*")
_VERSION = re.compile(r"(?<![\w.])v?\d+(?:\.\d+)+(?![\w.]*\w)")
_NAMED_VERSION = re.compile(r"\b([A-Z][\w+#-]*|[a-z]{2,}[A-Z]\w*)\s+(v?\d+(?:\.\d+)*)(?![\w.]*\w)")
#: Capitalised words in a row: a name of several words ("Oracle RAC", "SQL Server Always On").
_NAME_RUN = re.compile(r"\b[A-Z][\w+#-]*(?:\s+[A-Z][\w+#-]*)+")
_IDENTIFIER = re.compile(
    r"`([^`\n]{2,80})`"  # a code span
    r"|(?<![\w-])(--[A-Za-z][\w-]+)"  # a long option
    r"|(?<![\w%$])([%$][A-Za-z_]\w+)"  # a macro or a variable: %files, $HOME
    r"|\b([A-Za-z]\w*_\w+)\b"  # snake_case
    r"|\b(\w+)\(\)"  # a call
    r"|\b([a-z][\w-]*(?:\.[a-z][\w-]*)+)\b"  # dotted.names (config keys, files, modules)
    r"|\b([a-z]{2,}[A-Z][A-Za-z0-9]*)\b"  # lowerCamel names: pgAdmin, pgAgent
)
#: A program's subcommand named as a command: "the git sync command", "`git sync`", "git-sync".
_PROGRAMS = r"git|apt|apt-get|dpkg|docker|kubectl|pip|npm|systemctl|helm|cargo|brew|svn|hg"
_COMMAND = re.compile(rf"\b({_PROGRAMS})[\s-]([a-z][a-z-]+)(?=`|\s+(?:sub)?command\b)")
#: A program and the word after it, for ``identifiers``: "git reflog", "git cherry-pick".
_SUBCOMMAND = re.compile(rf"\b({_PROGRAMS})[\s-]([a-z][a-z-]+)(?![\w-])")
_YEAR = re.compile(r"(?<![\w.-])(?:19|20)\d\d(?![\w.]*\w)")
_EXAMPLE = re.compile(
    r"'[^'\n]{1,80}'|\"[^\"\n]{1,80}\"|“[^”\n]{1,80}”"
    r"|\b(?:e\.g\.|i\.e\.|such\s+as|like|say|for\s+example|for\s+instance)\s*,?\s+(?:\w+\s+)?[^\s,;?]+",
    re.IGNORECASE,
)
_ABBREVIATIONS = frozenset({"e.g", "i.e", "etc", "vs", "cf"})
#: Identifier shapes that are not distinctive terms (see the module): a code (letters and digits, dashes
#: between), a short option, a CamelCase name, a word in capitals.
_CODE = re.compile(
    r"(?<![\w.-])((?=[A-Za-z\d-]*\d)(?=[A-Za-z\d-]*[A-Za-z])[A-Za-z\d]+(?:-[A-Za-z\d]+)*)(?![\w-]|\.\w)"
    r"|(?<![\w-])(-[A-Za-z][\w-]*)(?![\w-])"  # a short option: -m, -rf
    r"|(?<![\w-])([A-Z][a-z\d]+(?:[A-Z][a-z\d]*)+)(?![\w-])"  # CamelCase: AccessExclusiveLock
    r"|(?<![\w-])([A-Z]{4,})(?![\w-])"  # capitals: SIGHUP, VACUUM
)
#: A quantity or an ordinal ("100ms", "2nd", "64GB"): digits and a unit, no code.
_QUANTITY = re.compile(r"\d+[A-Za-z]{1,3}")
#: A dotted name with an underscore, whole: pg_catalog.pg_class, pg_stat.activity.
_DOTTED = re.compile(r"(?<![\w.-])(?=[\w.]*_)[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+(?![\w-]|\.\w)")
#: A quoted message: "duplicate key value violates unique constraint".
_QUOTED = re.compile(r"(?<!\w)(?:\"([^\"\n]{2,80})\"|“([^”\n]{2,80})”|'([^'\n]{2,80})')(?!\w)")
#: Terms a question is held to at most, and the characters of it they are read from.
MAX_TERMS = 12
MAX_READ_CHARS = 1000
_SENTENCES = re.compile(r"(?<=[.!?])\s+(?=[A-Z`\"“(])|\n+")
_POSSESSIVE = re.compile(r"['’]s$")


@dataclass(frozen=True, slots=True)
class Term:
    """A distinctive term of a question: its text as the question writes it, and how a text mentions it.

    ``asked``: the term is in the sentence that asks (the question's last), not in one that sets the scene
    ("We moved the database to fast SSDs. Which planner cost …?")."""

    text: str
    pattern: re.Pattern[str]
    asked: bool = True
    #: An identifier or a command (an exact token), not a name, a version or a year.
    identifier: bool = False

    def mentioned_in(self, text: str) -> bool:
        return self.pattern.search(text) is not None

    def sentences(self, text: str) -> list[str]:
        """The sentences (and lines) of ``text`` that mention the term."""
        return [part for part in _SENTENCES.split(text) if self.pattern.search(part)]


def distinctive_terms(question: str) -> tuple[Term, ...]:
    """The question's names, versions and identifiers, in the order they appear (see the module): at most
    ``MAX_TERMS``, read from its first ``MAX_READ_CHARS`` characters (a question is short; a long one costs no
    more than that)."""
    question = question[:MAX_READ_CHARS]
    shouting = _title_cased(question)
    found: dict[str, Term] = {}
    asking = _last_sentence_start(question)

    def add(text: str, pattern: str, identifier: bool = False) -> None:
        key = text.casefold()
        if key not in found:
            at = question.find(text)
            asked = at < 0 or at >= asking
            found[key] = Term(text, re.compile(pattern, re.IGNORECASE), asked=asked, identifier=identifier)

    # Quoted values and examples ("like 'john.smith@example.com'", "e.g. set address.city") are the asker's, not
    # names the documents must use.
    covered: list[tuple[int, int]] = [m.span() for m in _EXAMPLE.finditer(question)]
    for match in _IDENTIFIER.finditer(question):
        if any(s <= match.start() < e for s, e in covered):
            continue
        text = next(group for group in match.groups() if group)
        if _VERSION.fullmatch(text) or text.casefold() in _ABBREVIATIONS:
            continue
        add(text, rf"(?<![\w-]){re.escape(text)}(?![\w-])", identifier=True)
        covered.append(match.span())
    for match in _NAMED_VERSION.finditer(question):
        name, version = match.group(1), match.group(2)
        named = _is_name(question, match.start(1), name) or not name[:1].isupper()
        if named or "." in version or _acronym(name):
            add(f"{name} {version}", rf"(?<![\w-]){re.escape(name)}\W{{1,3}}{re.escape(version)}(?![\w.]*\w)")
            covered.append(match.span())
    for match in _COMMAND.finditer(question):
        phrase = f"{match.group(1)} {match.group(2)}"
        command = rf"(?<![\w-]){re.escape(match.group(1))}[\s-]{re.escape(match.group(2))}(?![\w-])"
        add(phrase, command, identifier=True)
        covered.append(match.span())
    for match in _YEAR.finditer(question):
        add(match.group(), rf"(?<![\w.-]){match.group()}(?![\w.]*\w)")
    for match in _VERSION.finditer(question):
        if not any(s <= match.start() < e for s, e in covered):
            add(match.group(), rf"(?<![\w.]){re.escape(match.group())}(?![\w.]*\w)")
    for match in _NAME_RUN.finditer(question):
        if any(s <= match.start() < e for s, e in covered):
            continue
        words = [(m.start() + match.start(), m.group()) for m in re.finditer(r"\S+", match.group())]
        names = [_is_name(question, at, _POSSESSIVE.sub("", w)) for at, w in words]
        acronyms = [_acronym(w) for _, w in words]
        if not shouting and (names[0] or acronyms[0]) and any(names):
            phrase = r"\s+".join(re.escape(_POSSESSIVE.sub("", w)) for _, w in words)
            add(" ".join(w for _, w in words), rf"(?<![\w-]){phrase}(?![\w-])")
    for match in _WORD.finditer(question):
        word = _POSSESSIVE.sub("", match.group())
        if any(s <= match.start() < e for s, e in covered) or not _is_name(question, match.start(), word):
            continue
        if shouting and not any(c.isupper() for c in word[1:]):
            continue  # "How Do I Create A New Branch": every word has a capital, so a capital names nothing
        add(word, _word_pattern(word))
    return tuple(found.values())[:MAX_TERMS]


def identifiers(question: str) -> tuple[Term, ...]:
    """The exact tokens ``question`` names (see the module), in the order they are found, each once, at most
    ``MAX_TERMS``: dotted names with an underscore whole (``pg_catalog.pg_class``), the identifier terms of
    ``distinctive_terms``, then commands, codes, short options, CamelCase names, words in capitals and quoted
    messages. Each ``Term.pattern`` matches case-sensitively, a quoted message's case-insensitively."""
    question = question[:MAX_READ_CHARS]
    found: dict[str, Term] = {}
    covered: list[tuple[int, int]] = []
    asking = _last_sentence_start(question)
    words = re.findall(r"\b[A-Za-z]{2,}\b", question)
    shouting = sum(w.isupper() for w in words) * 2 >= len(words) > 2

    def add(text: str, pattern: re.Pattern[str], spans: list[tuple[int, int]]) -> None:
        spans = [(s, e) for s, e in spans if not any(a <= s < b for a, b in covered)]
        if spans and text not in found:
            found[text] = Term(text, pattern, asked=spans[0][0] >= asking, identifier=True)
            covered.extend(spans)

    def token(text: str) -> re.Pattern[str]:
        return re.compile(rf"(?<![\w-]){re.escape(text)}(?![\w-])")

    for match in _DOTTED.finditer(question):
        add(match.group(), token(match.group()), [match.span()])
    for term in distinctive_terms(question):
        if term.identifier:
            exact = re.compile(term.pattern.pattern)
            add(term.text, exact, [m.span() for m in exact.finditer(question)])
    for match in _SUBCOMMAND.finditer(question):
        program, word = match.groups()
        if word not in _FUNCTION_WORDS:  # "git to", "git is"
            command = rf"(?<![\w-]){re.escape(program)}[\s-]{re.escape(word)}(?![\w-])"
            add(f"{program} {word}", re.compile(command), [match.span()])
    for match in _CODE.finditer(question):
        text = next(group for group in match.groups() if group)
        if _QUANTITY.fullmatch(text) or _VERSION.fullmatch(text):
            continue
        if match.group(4) and (shouting or text.casefold() in _FUNCTION_WORDS | _NOT_NAMES):
            continue  # a shouted question's words are no identifiers
        add(text, token(text), [match.span()])
    for match in _QUOTED.finditer(question):
        text = next(group for group in match.groups() if group).strip()
        phrase = r"\s+".join(re.escape(word) for word in text.split())
        if phrase:
            add(text, re.compile(rf"(?<!\w){phrase}(?!\w)", re.IGNORECASE), [match.span()])
    return tuple(found.values())[:MAX_TERMS]


def _title_cased(question: str) -> bool:
    """Whether most of the question's words start with a capital (a title-cased question)."""
    words = [w for w in re.findall(r"[A-Za-z]+", question) if len(w) > 1]
    return len(words) >= 4 and sum(w[0].isupper() for w in words) * 3 >= len(words) * 2


def _last_sentence_start(question: str) -> int:
    """Where the question's last sentence starts (0 when it has one)."""
    ends = [m.end() for m in _SENTENCES.finditer(question.rstrip(" ?!.\n"))]
    return ends[-1] if ends else 0


def _is_name(question: str, start: int, word: str) -> bool:
    """Whether ``word`` at ``start`` is spelled as a name: capitals inside, an acronym, or a capital initial
    where a sentence does not start."""
    if word.casefold() in _NOT_NAMES or word.casefold() in _FUNCTION_WORDS or len(word) < 2:
        return False
    letters = [c for c in word if c.isalpha()]
    if not letters or not letters[0].isupper():
        return False
    if _acronym(word):
        return False  # an acronym ("USB", "CI", "HTTPS", "SSDs") names a kind of thing more often than a product
    if any(c.isupper() for c in letters[1:]):
        return True  # "InnoDB", "GitHub", "PostgreSQL"
    return _SENTENCE_END.search(question[:start]) is None


def _acronym(word: str) -> bool:
    letters = [c for c in word if c.isalpha()]
    return len(letters) >= 2 and sum(c.isupper() for c in letters) * 2 > len(letters)


def _word_pattern(word: str) -> str:
    """A whole word, case-insensitively, with or without a plural "s" ("SSDs" mentions "SSD" and back)."""
    stem = word[:-1] if len(word) > 3 and word[-1] == "s" and word[-2].isupper() else word
    return rf"(?<![\w-]){re.escape(stem)}(?:s|es)?(?:['’]s)?(?![\w-])"
