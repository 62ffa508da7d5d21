"""The tail of every query: sources with relevance, the prompt within budget, the generator, the answer."""

from __future__ import annotations

import logging
import math
import uuid
from collections.abc import Callable, Sequence
from contextlib import closing
from dataclasses import replace

from indexer.index import ChunkRecord, SearchHit
from service.domain.queries import (
    NO_ANSWER_GENERATED,
    NO_RELEVANT_DOCUMENT,
    Answer,
    Caller,
    SourceChunk,
    group_by_document,
    unmentioned_warning,
)
from service.domain.source_links import source_link
from service.domain.threshold import Threshold
from service.generation.citations import check_citations
from service.generation.errors import GeneratorUnavailable
from service.generation.inert import inert_quotes
from service.generation.link_policy import LinkPolicy
from service.generation.port import Completion, Generator
from service.generation.prompt import ContextChunk, Prompt
from service.generation.prompting import Budgeted, estimate_tokens, fit_prompt
from service.generation.sanitize import sanitize_answer, sanitized_stream, verbatim_stream
from service.generation.turns import TURNS_SHARE, EarlierTurn, fit_turns
from service.query.cancellation import Cancellation
from service.query.context import QueryContext, Scope

log = logging.getLogger("docqa.query")


class Answering:
    """Turns a query's readable, scored chunks into its answer."""

    def __init__(self, generator: Generator, link_allowlist: Sequence[str] = ()) -> None:
        self._generator = generator
        self._link_allowlist = tuple(link_allowlist)

    def answer(
        self,
        ctx: QueryContext,
        caller: Caller,
        name: str,
        scope: Scope,
        perform_llm_query: bool,
        on_text: Callable[[str], None] | None = None,
        cancel: Cancellation | None = None,
        earlier: Sequence[EarlierTurn] = (),
    ) -> Answer:
        """The answer of a query from its scope: the generator's text (unless not asked for) and the sources.

        ``earlier``: turns of the conversation the prompt may quote (the newest that fit a share of the window).

        With ``cancel``, no generation starts once the caller went away, and a
        streamed one stops at the next piece (the generator's stream is closed).
        """
        store, question, clock = ctx.store, ctx.question, ctx.clock
        scale = Threshold(store.min_threshold, store.max_threshold)
        # A question naming what no readable document mentions is not answered from documents about
        # something else: no sources, no generator, the refusal, and which name was missing.
        off_subject = bool(scope.unmentioned) and perform_llm_query
        hits = () if off_subject else scope.hits
        chunks = tuple(_source(hit, scale, store.source_base_url) for hit in hits)
        query_id = str(uuid.uuid4())
        nothing = not chunks
        answer: str | None = None
        model_id: str | None = None
        input_tokens = output_tokens = 0
        llm_called = False
        generation_error: str | None = None
        warnings: tuple[str, ...] = (unmentioned_warning(scope.unmentioned),) if scope.unmentioned else ()
        if nothing and perform_llm_query:
            answer = NO_RELEVANT_DOCUMENT
        elif perform_llm_query:
            prompt = Prompt(
                question=question,
                chunks=tuple(
                    ContextChunk(i + 1, c.document_id, c.title, c.text, c.score, c.source_uri)
                    for i, c in enumerate(chunks)
                ),
                template=store.prompt_template,
                model_id=store.llm_model_id,
                earlier=self._turns(earlier),
                embedding_model=store.embedding_model,
            )
            used = chunks
            if isinstance(self._generator, Budgeted):
                # Leave out the lowest-scored chunks, whole, until the prompt fits the model's window;
                # the answer then lists exactly the chunks it was given (renumbered to match).
                fitted = fit_prompt(prompt, self._generator.token_budget())
                prompt, used = fitted.prompt, tuple(chunks[c - 1] for c in fitted.kept)
                if not fitted.fits:
                    generation_error = "not even the best source fits the language model's context window"
            if generation_error is None:
                if cancel is not None:
                    cancel.check()
                # Links and images in the answer may point only to these sources or the allow-list.
                links = LinkPolicy((c.source_uri for c in used), self._link_allowlist, (c.text for c in used))
                try:
                    completion = self._generate(prompt, on_text, cancel, links)
                except GeneratorUnavailable as exc:
                    # The caller still gets the scored sources, with a plain statement instead of an answer.
                    generation_error = exc.message
                    model_id = self._generator.model_id
                    log.warning("query %s: no answer generated: %s", query_id, exc.message)
                else:
                    # Citations must name the sources sent; a streamed answer was already shown as it was.
                    checked = check_citations(completion.text, len(prompt.chunks))
                    streamed = on_text is not None
                    warnings = (*warnings, *checked.warnings(removed=not streamed))
                    answer = (completion.text if streamed else checked.text) or NO_ANSWER_GENERATED
                    model_id = completion.model_id
                    input_tokens, output_tokens = completion.input_tokens, completion.output_tokens
                    chunks = used
                llm_called = True
                clock.lap("generate")
            if generation_error is not None:
                answer = NO_ANSWER_GENERATED
        result = Answer(
            query_id=query_id,
            query_class=name,
            answer=answer,
            chunks=chunks,
            threshold=scope.threshold,
            level=scope.level,
            no_relevant_document=nothing,
            retry_without_threshold_allowed=(
                nothing and not off_subject and scope.one_document and scope.threshold is not None
            ),
            model_id=model_id,
            llm_called=llm_called,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            timings_ms=clock.total(),
            generation_error=generation_error,
            documents=group_by_document(chunks, store.source_base_url),
            warnings=(*scope.warnings, *warnings),
        )
        log.info(
            "query %s class=%s store=%s user=%s chunks=%d llm=%s total_ms=%.1f",
            query_id,
            name,
            store.id,
            caller.user_id,
            len(chunks),
            llm_called,
            result.timings_ms["total"],
        )
        return result

    def _turns(self, earlier: Sequence[EarlierTurn]) -> tuple[EarlierTurn, ...]:
        if not earlier:
            return ()
        generator = self._generator
        if isinstance(generator, Budgeted):
            budget = generator.token_budget()
            return fit_turns(earlier, int(budget.prompt_tokens * TURNS_SHARE), budget.count)
        return fit_turns(earlier, int(generator.context_tokens * TURNS_SHARE), estimate_tokens)

    def _generate(
        self,
        prompt: Prompt,
        on_text: Callable[[str], None] | None,
        cancel: Cancellation | None,
        links: LinkPolicy,
    ) -> Completion:
        """The generator's completion (sanitized unless quoted verbatim); streamed piece by piece to ``on_text``
        when given.

        The stream is closed whenever this returns or raises (a cancelled caller,
        an error in ``on_text``), so a generator that reads from a language model
        stops reading (and paying) at once.
        """
        verbatim = self._generator.quotes_verbatim
        if on_text is None:
            completion = self._generator.generate(prompt)
            clean = inert_quotes(completion.text) if verbatim else sanitize_answer(completion.text, links)
            return replace(completion, text=clean)
        pieces: list[str] = []
        produced = self._generator.stream(prompt)
        with closing(verbatim_stream(produced) if verbatim else sanitized_stream(produced, links)) as stream:
            for piece in stream:
                if cancel is not None:
                    cancel.check()
                pieces.append(piece)
                on_text(piece)
        return Completion(text="".join(pieces), model_id=self._generator.model_id, stop_reason="streamed")


def _source(hit: SearchHit, scale: Threshold, base_url: str | None) -> SourceChunk:
    known = not math.isnan(hit.score)
    return source_chunk(
        hit.chunk,
        base_url,
        score=hit.score if known else None,
        relevance=scale.relevance(hit.score) if known else None,
    )


def source_chunk(
    chunk: ChunkRecord, base_url: str | None, *, score: float | None = None, relevance: float | None = None
) -> SourceChunk:
    """A chunk as an answer cites it; a summary or comparison cites it with no score (there is no question)."""
    return SourceChunk(
        document_id=chunk.document_id,
        chunk_id=chunk.chunk_id,
        title=chunk.title,
        source_uri=chunk.source_uri,
        text=chunk.text,
        heading_path=chunk.heading_path,
        score=score,
        relevance=relevance,
        start=chunk.start,
        end=chunk.end,
        pages=chunk.pages,
        anchor=chunk.anchor,
        link=source_link(
            chunk.document_id, chunk.source_uri, base_url=base_url, anchor=chunk.anchor, pages=chunk.pages
        ),
    )
