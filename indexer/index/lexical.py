"""A question as words for lexical (BM25) search, the same for every index adapter.

The question is user text. It never reaches a search engine as query syntax:
it becomes a bounded list of plain words (Unicode letters and digits, lower
case, a small English stopword list dropped, each word once, in order of first
appearance), which each adapter then quotes or sends as analysed text. A
question with no such word has no lexical search at all.
"""

from __future__ import annotations

import re

#: Most words of one question that a lexical search uses (the first ones).
MAX_QUERY_TERMS = 32
#: A longer "word" is junk (a hash, a base64 run), not something a person asks about.
MAX_TERM_CHARS = 40

_WORD = re.compile(r"[^\W_]+")

#: Function words that match nearly every chunk and carry no evidence of their own.
_STOPWORDS = """
a about above after again against all am an and any are as at be because been before being below between
both but by can could did do does doing down during each few for from further had has have having he her
here hers herself him himself his how i if in into is it its itself just me more most my myself no nor not
now of off on once only or other our ours ourselves out over own same she should so some such than that the
their theirs them themselves then there these they this those through to too under until up very was we
were what when where which while who whom why will with would you your yours yourself yourselves
"""
STOPWORDS = frozenset(_STOPWORDS.split())


def query_terms(text: str) -> list[str]:
    """The searchable words of ``text``: lower case, no stopword, each once, at most ``MAX_QUERY_TERMS``."""
    if not isinstance(text, str):
        return []
    terms: list[str] = []
    seen: set[str] = set()
    for match in _WORD.finditer(text.lower()):
        word = match.group(0)
        if word in STOPWORDS or word in seen or len(word) > MAX_TERM_CHARS:
            continue
        seen.add(word)
        terms.append(word)
        if len(terms) == MAX_QUERY_TERMS:
            break
    return terms
