"""Exact identifiers keep the documents that spell them among a query's first sources.

A question that names an identifier — a setting (``max_wal_senders``), an option (``--soft``), a code
(``PPR-9087``), an error condition (``ERRCODE_UNIQUE_VIOLATION``), a command (``git cherry-pick``) — asks
about the documents that spell it. The dense search barely sees such a token (one of many, cut into word
pieces), BM25 sees only its parts (``max``, ``wal``, ``senders``), and fusion and the reranker weigh it like
any other word, so the one document that names it may rank far down. Two steps keep it up, both over the
candidates the caller may read (``service.domain.answerability.identifiers`` reads the tokens):

- ``unnamed``: the identifiers no candidate names; ``Retrieval.candidates`` searches each once more, lexically,
  through the caller's ``CallerIndex`` (ACL inside, ``checked`` after), and adds the best chunk that names it
  exactly and passes the threshold;
- ``pinned``: after the reranker, the best-ranked chunk naming each rare identifier moves into the first
  ``PINNED_WITHIN`` sources; nothing is dropped and the others keep their order. An identifier that many of the
  candidates' documents name tells them apart no better than any word: the order is left alone.
"""

from __future__ import annotations

from collections.abc import Sequence

from indexer.index import ChunkRecord, SearchHit
from service.domain.answerability import Term, identifiers

#: The first sources a rare identifier's best chunk is kept within.
PINNED_WITHIN = 3
#: An identifier is rare when at most this share of the candidates' documents (and at least one) name it.
RARE_SHARE = 1 / 3
#: Identifiers searched for once more, per query, when no candidate names them (each one lexical search).
SEARCHED_AT_MOST = 3
#: Hits each of those searches asks for: BM25 ranks the identifier's parts, the exact spelling is checked after.
SEARCH_HITS = 20


def names(term: Term, chunk: ChunkRecord) -> bool:
    """Whether ``chunk`` spells ``term`` exactly, in its text, title or headings."""
    return term.mentioned_in(chunk.text) or term.mentioned_in("\n".join((chunk.title, *chunk.heading_path)))


def unnamed(question: str, hits: Sequence[SearchHit]) -> tuple[Term, ...]:
    """The identifiers of ``question`` that none of ``hits`` names (at most ``SEARCHED_AT_MOST``)."""
    terms = [t for t in identifiers(question) if not any(names(t, h.chunk) for h in hits)]
    return tuple(terms[:SEARCHED_AT_MOST])


def pinned(question: str, ranked: Sequence[SearchHit]) -> list[SearchHit]:
    """``ranked`` with the best chunk naming each rare identifier of ``question`` among its first
    ``PINNED_WITHIN`` (in the order they had, beside the best of the others), everything else after in its order.
    Nothing is dropped or added."""
    if len(ranked) <= PINNED_WITHIN:
        return list(ranked)
    terms = identifiers(question)
    documents = len({h.chunk.document_id for h in ranked})
    pins: list[str] = []
    for term in terms:
        naming = [h for h in ranked if names(term, h.chunk)]
        if not naming or len({h.chunk.document_id for h in naming}) > max(1.0, RARE_SHARE * documents):
            continue
        best = naming[0].chunk.chunk_id
        if best not in pins:
            pins.append(best)
        if len(pins) == PINNED_WITHIN:
            break
    if not pins:
        return list(ranked)
    others = [h.chunk.chunk_id for h in ranked if h.chunk.chunk_id not in pins][: PINNED_WITHIN - len(pins)]
    first = {*pins, *others}
    return [h for h in ranked if h.chunk.chunk_id in first] + [h for h in ranked if h.chunk.chunk_id not in first]
