"""The CLI's human output of sources: per document, with its link or path, pages and best relevance."""

from __future__ import annotations

import io

import pytest

from service.api.cli.sources import page_span, print_sources
from service.domain.queries import Answer, SourceChunk, group_by_document

BASE = "https://intranet.example/docs"


def _chunk(document_id: str, n: int, score: float | None, **extra: object) -> SourceChunk:
    fields: dict[str, object] = {
        "document_id": document_id,
        "chunk_id": f"{document_id}#{n}",
        "title": f"Title of {document_id}",
        "source_uri": f"file:///srv/docs/{document_id}",
        "text": f"chunk {n} text   with\nspaces",
        "heading_path": ("Guide", f"Part {n}"),
        "score": score,
        "relevance": score,
        "start": 0,
        "end": 10,
    }
    return SourceChunk(**{**fields, **extra})  # type: ignore[arg-type]


def _answer(chunks: list[SourceChunk], base_url: str | None, *, grouped: bool = True) -> Answer:
    return Answer(
        query_id="q",
        query_class="vector",
        answer="x [1] [2] [3]",
        chunks=tuple(chunks),
        threshold=None,
        level=0.0,
        no_relevant_document=False,
        retry_without_threshold_allowed=False,
        documents=group_by_document(chunks, base_url) if grouped else (),
    )


def _printed(answer: Answer) -> list[str]:
    out = io.StringIO()
    print_sources(answer, out)
    return out.getvalue().splitlines()


def test_documents_then_their_chunks_numbered_by_rank() -> None:
    chunks = [
        _chunk("a.pdf", 0, 0.9, pages=(3, 4), link=f"{BASE}/a.pdf#page=3"),
        _chunk("b.html", 1, 0.8, anchor="install", link=f"{BASE}/b.html#install"),
        _chunk("a.pdf", 5, 0.7, pages=(9,), link=f"{BASE}/a.pdf#page=9"),
    ]
    lines = _printed(_answer(chunks, BASE))
    assert lines == [
        "Sources:",
        "  a.pdf — Title of a.pdf",
        f"      {BASE}/a.pdf  ·  pages 3–4, 9  ·  best relevance 0.90",
        "      [1] Guide › Part 0 (pages 3–4) — score 0.900  relevance 0.90",
        f"          {BASE}/a.pdf#page=3",
        "          chunk 0 text with spaces",
        "      [3] Guide › Part 5 (p. 9) — score 0.700  relevance 0.70",
        f"          {BASE}/a.pdf#page=9",
        "          chunk 5 text with spaces",
        "  b.html — Title of b.html",
        f"      {BASE}/b.html  ·  best relevance 0.80",
        "      [2] Guide › Part 1 — score 0.800  relevance 0.80",
        f"          {BASE}/b.html#install",
        "          chunk 1 text with spaces",
    ]


def test_without_a_link_the_cli_shows_the_local_path_at_the_place() -> None:
    chunks = [_chunk("a.pdf", 0, 0.5, pages=(2,)), _chunk("c.md", 1, None)]
    lines = _printed(_answer(chunks, None, grouped=False))  # built here when an answer carries no groups
    assert lines[2] == "      file:///srv/docs/a.pdf  ·  p. 2  ·  best relevance 0.50"
    assert lines[4] == "          file:///srv/docs/a.pdf#page=2"
    assert lines[7] == "      file:///srv/docs/c.md  ·  best relevance n/a"
    assert lines[8] == "      [2] Guide › Part 1 — score n/a  relevance n/a"


@pytest.mark.parametrize(
    ("pages", "shown"),
    [((7,), "p. 7"), ((3, 4), "pages 3–4"), ((9, 3, 4, 5, 4), "pages 3–5, 9"), ((1, 3, 5), "pages 1, 3, 5")],
)
def test_page_spans(pages: tuple[int, ...], shown: str) -> None:
    assert page_span(pages) == shown
