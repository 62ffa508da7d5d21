"""The comparison query class: 2-5 readable documents aligned by topic, each statement citing its chunk.

Every id is checked first; one the caller may not read (or that does not
exist) makes the whole request NOT_FOUND, with the same words either way. Each
document's chunks are then read with the caller's ACL inside the filter, their
vectors aligned into topics (``topic_alignment``), ranked by the question when
there is one, and per topic the best chunk of each document is cited. Offline
the comparison quotes one sentence per document and topic; with a language
model it is written from exactly those chunks.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Sequence

import numpy as np

from indexer.index import ChunkRecord
from service.domain.analysis import Comparison, ComparisonTopic, TopicEntry, evenly, long_document
from service.domain.limits import Limits
from service.domain.queries import group_by_document
from service.generation.boilerplate import boilerplate_section
from service.generation.errors import GeneratorUnavailable
from service.generation.extractive import ExtractiveGenerator
from service.generation.port import Generator
from service.generation.prompt import ContextChunk
from service.generation.topic_alignment import AlignedTopic, Matrix, align, rank, statement
from service.query.answering import source_chunk
from service.query.cancellation import Cancellation
from service.query.context import QueryContext
from service.query.llm_calls import LlmCalls
from service.query.retrieval import Retrieval
from service.query.summary import readable_chunks

log = logging.getLogger("docqa.query")

#: Topics a comparison reports at most (the best ranked).
MAX_TOPICS = 12
#: Chunks of one document aligned at most, by default (``analysis.max_chunks``).
MAX_COMPARED_CHUNKS = Limits().max_compared_chunks
EXTRACTIVE_COMPARISON_NOTE = (
    "extractive comparison: statements quoted from the documents, not written by a language model"
)
NOTHING_TO_COMPARE = "The documents have no indexed text to compare."


def _task(question: str | None) -> str:
    ask = f" Focus on what matters for this question: {question}" if question else ""
    return (
        "Compare the documents above topic by topic: where they agree, where they differ, and which topics only "
        "one of them covers. Each document above is one passage of one compared document (its title says which). "
        f"End every sentence with the numbers of the passages it comes from.{ask}"
    )


class Comparing:
    """Comparisons for the engine."""

    def __init__(self, retrieval: Retrieval, generator: Generator, link_allowlist: Sequence[str] = ()) -> None:
        self._retrieval = retrieval
        self._generator = generator
        self._allowlist = tuple(link_allowlist)

    def compare(
        self,
        ctx: QueryContext,
        document_ids: Sequence[str],
        question: str | None,
        on_text: Callable[[str], None] | None = None,
        cancel: Cancellation | None = None,
        max_chunks: int = MAX_COMPARED_CHUNKS,
    ) -> Comparison:
        """``max_chunks``: the most chunks of one document aligned into topics (a longer document is sampled
        evenly, in order, and the comparison says so)."""
        # All ids first: one unreadable id stops the request before any chunk is read.
        self._retrieval.readable_or_not_found(ctx, document_ids)
        check = _still_wanted(cancel)
        warnings: list[str] = []
        chunks = []
        for document_id in document_ids:
            # A man page's SYNOPSIS and "Part of the git(1) suite" are alike in every page: no topic to compare.
            found = _substance(readable_chunks(self._retrieval, ctx, document_id))
            chunks.append([found[i] for i in evenly(len(found), max_chunks)])
            if len(chunks[-1]) < len(found):
                warnings.append(long_document(len(chunks[-1]), len(found), "chunks", document_id))
            check()
        matrices = [_matrix(cs) for cs in chunks]
        asked = self._retrieval.embed(ctx) if question else None
        check()
        topics_found = align(matrices, check=check)
        check()
        ranked = rank(topics_found, None if asked is None else np.asarray(asked, np.float32))[:MAX_TOPICS]
        ctx.clock.lap("align")
        topics, cited = self._topics(chunks, ranked, question, ctx.store.source_base_url)
        sources = tuple(source_chunk(c, ctx.store.source_base_url) for c in cited)
        calls = LlmCalls(self._generator, ctx.store.llm_model_id, self._allowlist, cancel)
        extractive, error = True, None
        text = _extractive_text(topics, chunks) if topics else NOTHING_TO_COMPARE
        if topics and not isinstance(self._generator, ExtractiveGenerator):
            prompt_chunks = [
                ContextChunk(
                    i + 1, c.document_id, f"{c.title}: {' > '.join(c.heading_path)}", c.text, None, c.source_uri
                )
                for i, c in enumerate(cited)
            ]
            try:
                text = calls.run(calls.prompt(_task(question), prompt_chunks), on_text)
            except GeneratorUnavailable as exc:
                log.warning("comparison: the language model failed: %s", exc.message)
                error = exc.message
            else:
                extractive = False
                warnings.extend(calls.warnings())
            ctx.clock.lap("generate")
        if extractive:
            warnings.insert(0, EXTRACTIVE_COMPARISON_NOTE)
        return Comparison(
            query_id=str(uuid.uuid4()),
            document_ids=tuple(document_ids),
            question=question,
            topics=tuple(topics),
            comparison=text,
            extractive=extractive,
            sources=sources,
            documents=group_by_document(sources, ctx.store.source_base_url),
            model_id=calls.used_model_id,
            llm_called=calls.called,
            input_tokens=calls.input_tokens,
            output_tokens=calls.output_tokens,
            timings_ms=ctx.clock.total(),
            warnings=tuple(warnings),
            generation_error=error,
        )

    @staticmethod
    def _topics(
        chunks: Sequence[Sequence[ChunkRecord]],
        ranked: Sequence[tuple[AlignedTopic, float | None]],
        question: str | None,
        base_url: str | None,
    ) -> tuple[list[ComparisonTopic], list[ChunkRecord]]:
        topics: list[ComparisonTopic] = []
        cited: list[ChunkRecord] = []
        for topic, relevance in ranked:
            best = topic.best
            picked = {d: chunks[d][c] for d, (c, _) in sorted(best.items())}
            entries = []
            for d, chunk in picked.items():
                others = [o.text for e, o in picked.items() if e != d]
                cited.append(chunk)
                entries.append(
                    TopicEntry(
                        document_id=chunk.document_id,
                        citation=len(cited),
                        chunk=source_chunk(chunk, base_url),
                        similarity=round(best[d][1], 6),
                        statement=statement(chunk.text, others, question),
                    )
                )
            first = next(iter(picked.values()))
            label = " > ".join(first.heading_path) or first.title
            only_in = first.document_id if len(picked) == 1 else None
            topics.append(ComparisonTopic(label, tuple(entries), only_in, relevance))
        return topics, cited


def _still_wanted(cancel: Cancellation | None) -> Callable[[], None]:
    """What the comparison calls between pieces of work: Cancelled or DeadlineExceeded once its caller left."""
    return cancel.check if cancel is not None else lambda: None


def _substance(chunks: list[ChunkRecord]) -> list[ChunkRecord]:
    """The chunks outside boilerplate sections (all of them when that leaves none)."""
    kept = [c for c in chunks if not boilerplate_section(c.heading_path)]
    return kept or chunks


def _matrix(chunks: Sequence[ChunkRecord]) -> Matrix:
    """The chunks' unit vectors as rows (every adapter returns them with ``document_chunks``)."""
    rows = [np.asarray(c.vector, np.float32) for c in chunks if c.vector is not None]
    return np.stack(rows) if rows else np.zeros((0, 1), np.float32)


def _extractive_text(topics: Sequence[ComparisonTopic], chunks: Sequence[Sequence[ChunkRecord]]) -> str:
    """One line per topic: what each document says (quoted, cited), or which document alone covers it."""
    titles = {cs[0].document_id: cs[0].title for cs in chunks if cs}
    lines = []
    for topic in topics:
        said = "; ".join(f'{titles[e.document_id]} says: "{e.statement}" [{e.citation}]' for e in topic.entries)
        if topic.only_in is not None:
            lines.append(f"{topic.label} — only {titles[topic.only_in]} covers this: {said.split(' says: ', 1)[1]}")
        else:
            lines.append(f"{topic.label} — {said}.")
    return "\n".join(lines)
