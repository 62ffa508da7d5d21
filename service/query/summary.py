"""The summary query class: one readable document, summarised whole or by sections, citing the sections used.

Access first: the authoritative check answers NOT_FOUND for a document the
caller may not read (the same words as for one that does not exist), and the
chunks are read with the caller's ACL filter and the document filter inside
the index — so no chunk the caller cannot read reaches the generator. Offline
(the extractive generator) the summary quotes the most central sentences of
each section in document order and says so (``extractive``); with a language
model, ``map_reduce.MapReduce`` writes it.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Sequence

from indexer.index import ChunkRecord
from service.domain.analysis import Summary, SummaryLength, SummarySection, evenly, long_document
from service.domain.limits import Limits
from service.domain.queries import group_by_document
from service.domain.source_links import source_link
from service.generation.boilerplate import boilerplate_section
from service.generation.errors import GeneratorUnavailable
from service.generation.extractive import ExtractiveGenerator
from service.generation.extractive_summary import MAX_SENTENCES, ExtractiveSummarizer
from service.generation.port import Generator
from service.query.answering import source_chunk
from service.query.cancellation import Cancellation
from service.query.context import QueryContext
from service.query.llm_calls import LlmCalls
from service.query.map_reduce import MapReduce, cited
from service.query.retrieval import Retrieval
from service.query.sections import Section, sections

log = logging.getLogger("docqa.query")

#: What an extractive summary says of itself.
EXTRACTIVE_NOTE = "extractive summary: sentences quoted from the document, not written by a language model"
EMPTY_DOCUMENT = "The document has no indexed text to summarise."


def readable_chunks(retrieval: Retrieval, ctx: QueryContext, document_id: str) -> list[ChunkRecord]:
    """The document's chunks in order, NotFound unless the caller may read it (authoritative check first; then
    the index read with the caller's ACL and the document inside the filter)."""
    chunks = retrieval.reads(ctx).chunks_of(document_id)
    ctx.clock.lap("chunks")
    return chunks


class Summarizing:
    """Summaries for the engine: sections, then the extractive or the language model's summary."""

    def __init__(self, retrieval: Retrieval, generator: Generator, link_allowlist: Sequence[str] = ()) -> None:
        self._retrieval = retrieval
        self._generator = generator
        self._allowlist = tuple(link_allowlist)

    def summarize(
        self,
        ctx: QueryContext,
        document_id: str,
        length: SummaryLength,
        on_text: Callable[[str], None] | None = None,
        cancel: Cancellation | None = None,
        max_sentences: int = MAX_SENTENCES,
        max_chunks: int = Limits().max_compared_chunks,
    ) -> Summary:
        """``max_sentences``: the most sentences an extractive summary ranks; ``max_chunks``: the most chunks a
        language model's summary reads (each bounds its own path: a longer document is sampled evenly, in order,
        and the summary says so)."""
        chunks = readable_chunks(self._retrieval, ctx, document_id)
        check = None if cancel is None else cancel.check
        if check is not None:
            check()  # reading a long document's chunks may have outlasted its caller
        parts = sections(chunks)
        warnings: list[str] = []
        calls = LlmCalls(self._generator, ctx.store.llm_model_id, self._allowlist, cancel)
        error: str | None = None
        own: tuple[str, ...]
        if not parts:
            text, method, own, extractive = EMPTY_DOCUMENT, "extractive", (), True
        elif isinstance(self._generator, ExtractiveGenerator):
            text, own = _extractive(parts, length, max_sentences, warnings, check)
            method, extractive = "extractive", True
        else:
            title, uri = chunks[0].title, chunks[0].source_uri
            read = parts
            if len(chunks) > max_chunks:  # the model's calls, prompts and memory stay bounded: a sample, in order
                read = sections([chunks[i] for i in evenly(len(chunks), max_chunks)])
                warnings.append(long_document(max_chunks, len(chunks), "chunks"))
            try:
                written = MapReduce(calls, document_id, title, uri).summarize(read, length, on_text)
            except GeneratorUnavailable as exc:  # the caller still gets a summary: the quoted one, and why
                log.warning("summary of %s: the language model failed: %s", document_id, exc.message)
                error = exc.message
                text, own = _extractive(parts, length, max_sentences, warnings, check)
                method, extractive = "extractive", True
            else:
                text, own, method, extractive = written.text, written.section_summaries, written.method, False
                parts = read  # its citations number the sections it read
                warnings.extend(calls.warnings())
            ctx.clock.lap("generate")
        if extractive:
            warnings.insert(0, EXTRACTIVE_NOTE)
        numbers = set(cited(text))
        summary_sections = tuple(
            _section(i + 1, s, own[i] if i < len(own) else "", i + 1 in numbers, ctx.store.source_base_url)
            for i, s in enumerate(parts)
        )
        used = tuple(
            source_chunk(c, ctx.store.source_base_url)
            for i, s in enumerate(parts)
            if i + 1 in numbers
            for c in s.chunks
        )
        return Summary(
            query_id=str(uuid.uuid4()),
            document_id=document_id,
            title=chunks[0].title if chunks else document_id,
            length=length.value,
            summary=text,
            extractive=extractive,
            method=method,
            sections=summary_sections,
            sources=used,
            documents=group_by_document(used, ctx.store.source_base_url),
            model_id=calls.used_model_id,
            llm_called=calls.called,
            input_tokens=calls.input_tokens,
            output_tokens=calls.output_tokens,
            timings_ms=ctx.clock.total(),
            warnings=tuple(warnings),
            generation_error=error,
        )


def _extractive(
    parts: Sequence[Section],
    length: SummaryLength,
    max_sentences: int,
    warnings: list[str],
    check: Callable[[], None] | None,
) -> tuple[str, tuple[str, ...]]:
    """The quoted summary citing its sections, and each section's own quoted summary; a warning joins
    ``warnings`` when the document had more sentences than were ranked."""
    summarizer = ExtractiveSummarizer(max_sentences)
    texts = ["" if boilerplate_section(s.heading_path) else s.text for s in parts]
    ranked = summarizer.rank(texts, length.section_sentences, check)
    if ranked.considered < ranked.total:
        warnings.append(long_document(ranked.considered, ranked.total, "sentences"))
    picks = ranked.sections
    chosen = summarizer.document(picks, length.sentences)
    text = " ".join(f"{picks[i].best} [{i + 1}]" for i in chosen)
    return text or EMPTY_DOCUMENT, tuple(" ".join(p.sentences) for p in picks)


def _section(number: int, section: Section, summary: str, was_cited: bool, base_url: str | None) -> SummarySection:
    first = section.chunks[0]
    pages = tuple(sorted({p for c in section.chunks for p in c.pages}))
    anchor = next((c.anchor for c in section.chunks if c.anchor), "")
    return SummarySection(
        citation=number,
        heading_path=section.heading_path,
        chunk_ids=tuple(c.chunk_id for c in section.chunks),
        pages=pages,
        anchor=anchor,
        link=source_link(first.document_id, first.source_uri, base_url=base_url, anchor=anchor, pages=pages[:1]),
        summary=summary,
        cited=was_cited,
    )
