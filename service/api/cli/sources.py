"""The CLI's human presentation of an answer's sources: grouped per document, numbered as the answer cites them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TextIO

from service.domain.queries import Answer, SourceChunk, SourceDocument, group_by_document
from service.domain.source_links import source_link

#: Characters of a chunk's text shown under it.
SNIPPET_CHARS = 200


def print_sources(answer: Answer, out: TextIO) -> None:
    """Each document (title, link or path, pages, best relevance), then its chunks with the numbers
    ``[n]`` the answer cites them by (their rank in ``answer.chunks``)."""
    numbers = {chunk.chunk_id: n for n, chunk in enumerate(answer.chunks, start=1)}
    print("Sources:", file=out)
    for document in answer.documents or group_by_document(answer.chunks, None):
        where = _document_link(document)
        facts = [where or "(no link)"]
        if document.pages:
            facts.append(page_span(document.pages))
        facts.append(f"best relevance {_fixed(document.best_relevance, 2)}")
        print(f"  {document.document_id} — {document.title}", file=out)
        print(f"      {'  ·  '.join(facts)}", file=out)
        for chunk in document.chunks:
            _print_chunk(numbers.get(chunk.chunk_id, 0), chunk, where, out)


def page_span(pages: Sequence[int]) -> str:
    """``p. 3`` or ``pages 3–5, 9``: sorted pages, runs of consecutive ones joined."""
    ordered = sorted(set(pages))
    runs: list[list[int]] = []
    for page in ordered:
        if runs and page == runs[-1][-1] + 1:
            runs[-1].append(page)
        else:
            runs.append([page])
    text = ", ".join(str(r[0]) if len(r) == 1 else f"{r[0]}–{r[-1]}" for r in runs)
    return f"p. {text}" if len(ordered) == 1 else f"pages {text}"


def _print_chunk(number: int, chunk: SourceChunk, document_link: str | None, out: TextIO) -> None:
    where = " › ".join(chunk.heading_path) or chunk.title
    place = f" ({page_span(chunk.pages)})" if chunk.pages else ""
    print(
        f"      [{number}] {where}{place} — score {_fixed(chunk.score, 3)}  relevance {_fixed(chunk.relevance, 2)}",
        file=out,
    )
    link = _chunk_link(chunk)
    if link and link != document_link:  # the chunk's own place in the document
        print(f"          {link}", file=out)
    snippet = " ".join(chunk.text.split())
    print(f"          {snippet[:SNIPPET_CHARS]}{'…' if len(snippet) > SNIPPET_CHARS else ''}", file=out)


def _document_link(document: SourceDocument) -> str | None:
    # The CLI runs on the indexing host: a file: path is useful here, though never shown remotely.
    return document.link or source_link(document.document_id, document.source_uri, base_url=None, local=True)


def _chunk_link(chunk: SourceChunk) -> str | None:
    return chunk.link or source_link(
        chunk.document_id, chunk.source_uri, base_url=None, anchor=chunk.anchor, pages=chunk.pages, local=True
    )


def _fixed(value: float | None, digits: int) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"
