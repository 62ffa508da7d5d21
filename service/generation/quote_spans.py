"""What one quote of an extractive answer spans: where it must start and what completes it.

A quote starts at a scored unit and takes along what the unit cannot be read
without — the start of the sentence it continues ("… you can replace the most
recent commit using" / "$ git commit --amend" / "which will replace …"), the
sentence it points back at ("This …"), the term its definition defines — and
what completes it (the rest of a sentence left open, the code or list it
announces). A sentence that would end cut short is not quoted at all.
"""

from __future__ import annotations

import re

from service.generation.quotes import (
    Candidate,
    Quote,
    announces,
    complete,
    continues_before,
    dangling,
    near_duplicates,
    points_back,
    refers_back,
)

#: Units one quote holds at most (a sentence, the command that interrupts it, its rest, what it refers to).
MAX_PARTS = 4
#: Chunks of the context a sentence is repeated in to be boilerplate.
BOILERPLATE_CHUNKS = 3
_SENTENCE_ENDS = frozenset(".!?\"'”:")
#: A section number with at least one dot inside ("5.15.5 ", "3.7.2. "), and the words a numbered heading has.
_NUMBERED_HEADING = re.compile(r"^\d+(?:\.\d+)+\.?\s+\S")
_HEADING_WORDS = 16


def quotable(candidate: Candidate) -> bool:
    """A unit worth quoting: code, a list, a table, or a sentence that is not a bare heading or fragment."""
    unit = candidate.unit
    if unit.kind != "sentence":
        return len(unit.text.strip()) >= 4
    sentence = unit.lines[0]
    words = sentence.split()
    if _NUMBERED_HEADING.match(sentence) and len(words) <= _HEADING_WORDS:
        return False  # "5.15.5 How long must a package be maintained …?": a section's title, not its answer
    return len(sentence) >= 12 and (sentence.rstrip()[-1:] in _SENTENCE_ENDS or len(words) >= 8)


def build_quote(
    candidate: Candidate, chunks: list[list[Candidate]], everything: list[Candidate], used: set[int]
) -> Quote | None:
    """The quote that starts at ``candidate``, completed; None when it would end on a fragment."""
    units = chunks[candidate.rank]
    parts = [candidate]
    citations = {candidate.citation}
    position = candidate.unit.position
    if position > 0 and candidate.unit.kind == "sentence":
        parts[:0] = _start(candidate, units, used)
    following = position + 1
    while len(parts) < MAX_PARTS and following < len(units):
        last, after = parts[-1], units[following]
        if after.planted or id(after) in used or not _completes(last, after):
            break
        parts.append(after)
        following += 1
    last = parts[-1]
    if last.unit.kind == "sentence" and not complete(last.unit.lines[0]) and following >= len(units):
        # The chunk ends inside the sentence: an overlapping chunk may hold all of it.
        whole = _longer_version(last, everything)
        if whole is not None:
            parts[-1] = whole
            citations.add(whole.citation)
    if parts[-1].unit.kind == "sentence" and dangling(parts[-1].unit.lines[0]):
        return None
    if following < len(units) and _completes(parts[-1], units[following]) and not complete(parts[-1].unit.text):
        return None  # what completes it is quoted elsewhere (or planted): never a sentence cut short
    for part in parts:
        used.add(id(part))
        for other in everything:
            # A near-duplicate shares the part's words with the question: it scores too (unless nothing does).
            if id(other) in used or other.unit.kind != part.unit.kind or (part.score > 0 and other.score <= 0):
                continue
            if near_duplicates(part, other) and not other.planted:
                used.add(id(other))
                citations.add(other.citation)
    return Quote(parts, citations, max(p.score for p in parts))


def boilerplate(everything: list[Candidate]) -> set[str]:
    """Sentences that many of the context's chunks repeat ("Only superusers … can change this setting.", under
    every setting of a page): they say nothing about this question in particular."""
    chunks: dict[str, set[int]] = {}
    for candidate in everything:
        if candidate.unit.kind == "sentence":
            chunks.setdefault(" ".join(candidate.unit.text.split()).casefold(), set()).add(candidate.rank)
    return {text for text, ranks in chunks.items() if len(ranks) >= BOILERPLATE_CHUNKS}


def orphan(candidate: Candidate, units: list[Candidate]) -> bool:
    """A sentence that points back ("This shows …") at nothing that can be quoted with it: read alone, it does not
    say what it speaks of."""
    unit = candidate.unit
    if unit.kind != "sentence" or not refers_back(unit.lines[0]):
        return False
    return unit.position == 0 or not quotable(units[unit.position - 1])


def _completes(last: Candidate, after: Candidate) -> bool:
    """Whether ``after`` belongs in the quote that ends with ``last``: what a sentence left open ("…, then run"
    and its command; "so that" and the rest), the code or list a sentence announces, a sentence that goes on
    from it ("This …" when it matches too), or the rest of a sentence a command interrupted ("which will …")."""
    if last.unit.kind != "sentence":
        return after.unit.kind == "sentence" and continues_before(after.unit.lines[0])
    sentence = last.unit.lines[0]
    if after.unit.kind != "sentence":
        return announces(sentence) or not complete(sentence)
    goes_on = after.score > 0 and refers_back(after.unit.lines[0])
    return dangling(sentence) or goes_on or continues_before(after.unit.lines[0])


def _start(candidate: Candidate, units: list[Candidate], used: set[int]) -> list[Candidate]:
    """What must be quoted before ``candidate`` for it to be read: the start of a sentence it continues ("… you
    can replace the most recent commit using" / "$ git commit --amend" / "which will replace …"), or the sentence
    it refers to ("This …", "… with this code, …"), and so on back while that one needs its start too."""
    parts: list[Candidate] = []
    first = candidate
    while first.unit.position > 0 and len(parts) < MAX_PARTS - 1:
        before = units[first.unit.position - 1]
        if id(before) in used or before.planted:
            break
        if first.unit.kind != "sentence":
            lead = before.unit.lines[0]
            needs = before.unit.kind == "sentence" and (announces(lead) or not complete(lead))
        elif continues_before(first.unit.lines[0]):
            needs = True
        else:
            text = first.unit.lines[0]
            needs = (refers_back(text) or points_back(text)) and before.unit.kind == "sentence" and quotable(before)
        if not needs:
            break
        parts.insert(0, before)
        first = before
    head = candidate.unit.head
    if head is not None and head < first.unit.position and id(units[head]) not in used:
        parts.insert(0, units[head])  # what the definition defines, then "…" and the sentence (``Quote.render``)
    return parts


def _longer_version(fragment: Candidate, everything: list[Candidate]) -> Candidate | None:
    text = fragment.unit.lines[0]
    for other in everything:
        sentence = other.unit.lines[0]
        longer = other.unit.kind == "sentence" and len(sentence) > len(text) and sentence.startswith(text)
        if longer and complete(sentence) and not other.planted:
            return other
    return None
