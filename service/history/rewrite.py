"""A follow-up question rewritten into a standalone one that retrieval can search.

Offline (``OfflineRewriter``, deterministic): a question is a follow-up when it opens like one ("and for
contractors?", "what about …"), refers back ("how do I drop it?", "does that apply …"), or is too short to
stand alone. Its rewrite keeps the follow-up's own words and adds what the earlier question was about
(``subject``): the thing it acted on ("uncommitted changes" in "How do I temporarily save uncommitted changes
with git stash?") and the tools and names it named ("git stash"), not its verb or adverbs — in place of the
first word that refers back when there is one ("and how do I get uncommitted changes back later with git
stash?"). A follow-up with no verb of its own ("and the copy on the remote?", "And BRIN?") also gets the
earlier question's action. A question that stands alone is searched as it is.

With a language model (``CondensingRewriter``), the earlier questions and the follow-up go through the
generator port as a condense prompt; when the model fails or answers with nothing usable, the offline
rewrite is used. Only the user's own questions are ever sent: no answer and no document text.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from acl.errors import DocQAError
from service.generation.port import Generator
from service.generation.prompt import ContextChunk, Prompt

log = logging.getLogger("docqa.history")

#: Earlier words a rewrite carries over at most: the subject (a noun phrase) and the tools named. Few, so that
#: the follow-up's own words keep the lead (carrying the first content words of the earlier question, 2 gave
#: hit@1 0.56 / hit@5 0.94 on bench/quality/followups/postgresql-15.yaml, 3 gave 0.44 / 0.97, 8 gave 0.38 / 0.94).
MAX_CARRIED = 5
#: A question with fewer content words than this cannot stand alone.
_MIN_CONTENT = 3
_WORD = re.compile(r"[A-Za-z0-9_][\w.\-/'’]*[\w]|[A-Za-z0-9_]")
_OPENERS = (
    "and ", "but ", "or ", "also ", "so ", "then ", "what about", "how about", "what if", "and what", "same for",
    "same ", "ok ", "okay ", "now ", "in that case", "if so", "why not",
)  # fmt: skip
_OPENING = re.compile(
    r"^(?:(?:and|but|so|ok|okay|now)\s*,?\s+)?"
    r"(?:(?P<verb_follows>(?:how|where|when|why)\s+(?:do|does|did|can|could|should|would|will|must|may)\s+"
    r"(?:i|we|you|one|they)|how\s+to|(?:can|could|should|may|must)\s+(?:i|we|you|one))\b"
    r"|(?:what|which|who|where|when|why|how)\b)",
    re.IGNORECASE,
)
_FILLER_VERBS = frozenset((
    "want", "need", "have", "try", "to", "still", "just", "also", "then", "really", "going", "trying", "able", "be",
))  # fmt: skip
_LY_VERBS = frozenset(("apply", "reply", "supply", "imply", "comply", "rely", "multiply", "fly", "ally"))
_SUBJECTS = frozenset(("i", "we", "you", "they", "i'm", "i've", "we're", "you're"))
_ASKS_WHAT_IT_DOES = re.compile(r"^\s*(?:what|which)\s+(?:\w+\s+)?(?:does|do|did)\b", re.IGNORECASE)
_PARTICLES = frozenset(("up", "out", "off", "rid", "of", "back", "down", "over", "away", "on"))
_BOUNDARY_WORDS = frozenset((
    "in", "on", "at", "with", "for", "from", "into", "onto", "to", "by", "without", "that", "which", "who",
    "so", "but", "and", "or", "while", "when", "after", "before", "instead", "than", "via", "using", "does",
    "do", "is", "are", "can", "should", "if",
))  # fmt: skip
_PROGRAMS = frozenset(("git", "docker", "kubectl", "apt", "apt-get", "dpkg", "pip", "npm", "systemctl", "psql"))
_AUXILIARIES = frozenset((
    "do", "does", "did", "can", "could", "should", "would", "will", "is", "are", "was", "were", "has", "have",
    "must", "may", "might",
))  # fmt: skip
# fmt: off
_REFERRING = frozenset((
    "it", "its", "it's", "itself", "they", "them", "their", "theirs", "themselves", "this", "that", "these",
    "those", "there", "such", "same", "one", "ones", "former", "latter", "above", "he", "she", "him", "her",
))
_QUESTION_WORDS = frozenset(("what", "which", "who", "whom", "whose", "when", "where", "why", "how"))
#: Words that carry no topic even where they are no stop words: interjections, thanks, greetings.
_FILLERS = frozenset((
    "hmm", "hm", "hmmm", "huh", "uh", "um", "er", "eh", "ah", "oh", "wow", "yeah", "yep", "nope", "sure", "right",
    "well", "thanks", "thank", "thx", "cheers", "hi", "hello", "hey", "lol", "ok", "okay", "fine", "great", "cool",
))  # fmt: skip
#: Referring words a rewrite replaces with the subject (not "there", "such", "same", …: they are no noun).
_PRONOUNS = frozenset(("it", "its", "it's", "itself", "they", "them", "their", "this", "that", "these", "those"))
_STOP = frozenset((
    "a", "an", "the", "and", "or", "but", "if", "then", "else", "so", "of", "to", "in", "on", "at", "by", "for",
    "from", "with", "without", "into", "onto", "over", "under", "about", "as", "is", "are", "was", "were", "be",
    "been", "being", "am", "do", "does", "did", "done", "doing", "have", "has", "had", "having", "can", "could",
    "may", "might", "must", "shall", "should", "will", "would", "i", "i'm", "i've", "i'd", "it's", "that's",
    "don't", "doesn't", "me", "my", "mine", "we", "us", "our", "you",
    "your", "yourself", "let", "lets", "let's", "not", "no", "yes", "any", "some", "all", "each", "every",
    "other", "another", "more", "most", "much", "many", "few", "less", "least", "than", "too", "very", "just",
    "only", "also", "even", "still", "again", "here", "get", "got", "make", "makes", "made", "use", "used",
    "using", "need", "needs", "want", "wants", "way", "ways", "thing", "things", "please", "tell", "explain",
    "show", "give", "know", "mean", "means", "instead", "ok", "okay", "now", "whether", "what's", "how's",
)) | _QUESTION_WORDS | _REFERRING
# fmt: on


def _words(text: str) -> list[str]:
    return _WORD.findall(text)


def content_words(text: str) -> list[str]:
    """The words of ``text`` that carry its topic (no stop, question or referring words), in order."""
    return [w for w in _words(text) if w.casefold() not in _STOP and not w.isdigit()]


def says_nothing(question: str) -> bool:
    """Whether ``question`` holds no word to search for ("hmm", "and?", "why?", "ok thanks"): alone, outside a
    conversation, it can only be answered with a random quote."""
    words = re.findall(r"\w+", question)  # any script; a number is something to search for
    return not [w for w in words if w.casefold() not in _IDLE]


_IDLE = _FILLERS | _STOP


def is_follow_up(question: str) -> bool:
    """Whether ``question`` leans on what came before (opens like a follow-up, refers back, or is too short)."""
    text = " ".join(question.casefold().split())
    if text.startswith(_OPENERS) or text.startswith(("...", "…")):
        return True
    if any(w.casefold() in _REFERRING for w in _words(question)):
        return True
    return len(content_words(question)) < _MIN_CONTENT


@dataclass(frozen=True, slots=True)
class Subject:
    """What a question is about: its action (verb words), the thing acted on, and the tools and names it names."""

    action: tuple[str, ...]
    thing: tuple[str, ...]
    tools: tuple[str, ...]


def subject(question: str) -> Subject:
    """The parts of ``question`` a follow-up leans on (a reading of its words, not a parse).

    After an opening like "How do I" / "How can we" / "How to", adverbs and
    the verb (with its particle: "get rid of", "set up") are the action and
    the words up to the next preposition or clause are the thing; after
    "What/Which …", the words up to the verb. Tools are a program with its
    command ("git stash"), identifiers (``pg_dump``, ``format-patch``,
    ``/var/tmp``, ``work_mem``) and names in capitals (``FHS``, ``BRIN``,
    ``Debian``).
    """
    words = _words(question)
    lowered = [w.casefold() for w in words]
    tools = _tools(words)
    tool_words = {w.casefold() for t in tools for w in t.split()}
    start, action = 0, []
    opening = _OPENING.match(question.strip())
    if opening is not None:
        start = len(_words(opening.group(0)))
        while start < len(words) and (_adverb(lowered[start]) or lowered[start] in _FILLER_VERBS):
            start += 1  # "temporarily", "quickly"; "want to", "need to"
        if opening.group("verb_follows") and start < len(words):
            action = [words[start]]
            start += 1
            while start < len(words) and (lowered[start] in _PARTICLES or lowered[start].endswith("ing")):
                action.append(words[start])  # "get rid of", "set up", "start hunting"
                start += 1
    thing: list[str] = []
    for word, low in zip(words[start:], lowered[start:], strict=True):
        if thing and (low in _BOUNDARY_WORDS or low.endswith(("ed", "ing"))):
            break  # a preposition or a clause: "a remote called upstream", "branches, including …"
        if low in tool_words or low in _STOP or low in _BOUNDARY_WORDS or low.isdigit() or _adverb(low):
            continue
        thing.append(word)
        if len(thing) == 3:
            break
    if thing and _ASKS_WHAT_IT_DOES.match(question) and lowered[-1] == thing[-1].casefold():
        thing.pop()  # "What does the work_mem setting limit?": the last word is the verb
    return Subject(tuple(action), tuple(thing), tuple(tools))


def _adverb(word: str) -> bool:
    return len(word) > 4 and word.endswith("ly") and word not in _LY_VERBS


def offline_rewrite(earlier: Sequence[str], question: str) -> str:
    """``question`` made standalone from ``earlier`` (standalone questions, oldest first); unchanged when it
    already stands alone or there is nothing earlier."""
    if not earlier or not is_follow_up(question):
        return question
    present = {w.casefold() for w in _words(question)}
    first = earlier[-1].strip()
    about = subject(first)
    # A word capitalised only because it opened the earlier question is no name in the middle of this one.
    opening = _words(first)[:1]
    thing = [_uncapitalised(w, opening) for w in about.thing if w.casefold() not in present]
    tools = [t for t in about.tools if not all(w.casefold() in present for w in t.split())]
    action = [w for w in about.action if w.casefold() not in present] if _elliptic(question) else []
    if not (thing or tools or action):
        return question
    room = max(1, MAX_CARRIED - sum(len(t.split()) for t in tools))
    body = question.strip().rstrip("?!. ")
    words = body.split(" ")
    for i, word in enumerate(words):
        key = word.casefold().strip(",;:")
        if key in _PRONOUNS and not _determiner(words, i) and (thing or tools):
            # The pronoun stands for the thing (or the tools): the earlier action is not what "it" is.
            tail = word[len(word.rstrip(",;:")) :]
            words[i] = (" ".join(thing[:room]) or " ".join(tools)) + tail
            rest = [t for t in tools if t not in words[i]]
            added = " ".join((*action, *(["with", " and ".join(rest)] if rest else [])))
            return " ".join(words) + (f" {added}" if added else "") + "?"
    added = " ".join(w for w in (" ".join([*action, *thing][:room]), *tools) if w)
    return f"{body} {added}?"


def _uncapitalised(word: str, opening: list[str]) -> str:
    """``word`` in lower case when it only opened the earlier question with a capital ("Vacation days …")."""
    if opening and word == opening[0] and word[:1].isupper() and word[1:].islower():
        return word.lower()
    return word


def _tools(words: list[str]) -> list[str]:
    """Programs with their command ("git stash"), identifiers and names in capitals, in order, once each."""
    found: list[str] = []
    for i, word in enumerate(words):
        low = word.casefold()
        if low in _PROGRAMS and i + 1 < len(words) and words[i + 1].isalpha() and words[i + 1].islower():
            found.append(f"{word} {words[i + 1]}")
        elif _named(words, i):
            found.append(word)
    seen: set[str] = set()
    out: list[str] = []
    for tool in found:
        inside = any(tool.casefold() in other.casefold().split() for other in found if other != tool)
        if tool.casefold() not in seen and not inside:
            seen.add(tool.casefold())
            out.append(tool)
    return out[:2]


def _named(words: list[str], i: int) -> bool:
    """Whether word ``i`` names a tool or a thing: the last word after "with"/"using"/"via" ("… with bisect?"),
    an identifier (``pg_dump``, ``format-patch``, ``/var/tmp``), an acronym, or a capitalised word past the first."""
    word, low = words[i], words[i].casefold()
    if low in _STOP:
        return False
    if i >= 1 and i == len(words) - 1 and words[i - 1].casefold() in ("with", "using", "via"):
        return True
    if any(c in word for c in "_/.-") and len(word) > 2 and not word.startswith("-"):
        return True
    return (word.isupper() and len(word) >= 2) or (i > 0 and word[:1].isupper() and any(c.isalpha() for c in word))


def _elliptic(question: str) -> bool:
    """A follow-up with no action of its own: a short noun phrase ("and the copy on the remote?", "And BRIN?")."""
    text = " ".join(question.casefold().split())
    rest = _words(next((text[len(o) :] for o in _OPENERS if text.startswith(o)), text))
    clause = any(w in _QUESTION_WORDS or w in _AUXILIARIES or w in _SUBJECTS for w in rest)
    return len(rest) <= 7 and not clause


def _determiner(words: list[str], i: int) -> bool:
    """Whether the referring word at ``i`` goes with a noun ("those changes"), so it is not replaced."""
    key = words[i].casefold().strip(",;:")
    if key not in ("this", "that", "these", "those") or i + 1 >= len(words):
        return False
    following = words[i + 1].casefold().strip(",;:?")
    return following not in _STOP and following.isalpha()


class Rewriter(Protocol):
    """Turns a follow-up into a standalone question from the conversation's earlier questions."""

    def rewrite(self, earlier: Sequence[str], question: str, model_id: str) -> str: ...


class OfflineRewriter:
    """The deterministic rewrite (``offline_rewrite``); ``model_id`` is not used."""

    def rewrite(self, earlier: Sequence[str], question: str, model_id: str) -> str:
        return offline_rewrite(earlier, question)


CONDENSE_TEMPLATE = (
    "The documents above are the earlier questions of one conversation, oldest first:\n{context}\n\n"
    "Rewrite the follow-up question below as ONE standalone question that can be searched without the "
    "conversation: keep its meaning, name what it refers to, do not answer it. Reply with the question only, "
    "without citations.\n\nFollow-up question: {question}\nStandalone question:"
)
_CITATION = re.compile(r"\s*\[\d+\]")


class CondensingRewriter:
    """A condense prompt through the generator port; the offline rewrite when the model gives nothing usable."""

    def __init__(self, generator: Generator, max_chars: int = 4000, turns: int = 6) -> None:
        self._generator = generator
        self._max_chars = max_chars
        self._turns = turns

    def rewrite(self, earlier: Sequence[str], question: str, model_id: str) -> str:
        if not earlier:
            return question
        recent = list(earlier)[-self._turns :]
        prompt = Prompt(
            question=question,
            chunks=tuple(
                ContextChunk(i + 1, f"turn-{i + 1}", f"question {i + 1}", q, None) for i, q in enumerate(recent)
            ),
            template=CONDENSE_TEMPLATE,
            model_id=model_id,
        )
        try:
            text = self._generator.generate(prompt).text
        except DocQAError as exc:
            log.warning("the condense prompt failed (%s); the follow-up is rewritten offline", exc.message)
            return offline_rewrite(recent, question)
        lines = [line.strip() for line in _CITATION.sub("", text).splitlines() if line.strip()]
        condensed = lines[0].strip("\"'“”` ") if lines else ""
        condensed = re.sub(r"^(standalone question|question)\s*:\s*", "", condensed, flags=re.IGNORECASE)
        if not condensed or len(condensed) > self._max_chars:
            return offline_rewrite(recent, question)
        return condensed
