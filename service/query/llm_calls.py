"""The language-model calls of one summary or comparison: fit checks, sanitized text, citations, token counts."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import closing
from dataclasses import dataclass, field

from service.generation.citations import CitationCheck, check_citations
from service.generation.inert import inert_quotes
from service.generation.link_policy import LinkPolicy
from service.generation.port import Generator
from service.generation.prompt import ContextChunk, Prompt
from service.generation.prompting import Budgeted, estimate_tokens
from service.generation.sanitize import sanitize_answer, sanitized_stream, verbatim_stream
from service.query.cancellation import Cancellation

#: The user part of every summary and comparison prompt: DocQA's own, never a store's question template.
ANALYSIS_TEMPLATE = "Documents:\n{context}\n\nTask: {question}"


@dataclass
class LlmCalls:
    """Sends prompts through the generator port and keeps count; every chunk given was already access-checked."""

    generator: Generator
    model_id: str
    link_allowlist: Sequence[str] = ()
    cancel: Cancellation | None = None
    called: bool = False
    input_tokens: int = 0
    output_tokens: int = 0
    used_model_id: str | None = None
    checks: list[CitationCheck] = field(default_factory=list)

    def prompt(self, task: str, chunks: Sequence[ContextChunk]) -> Prompt:
        return Prompt(question=task, chunks=tuple(chunks), template=ANALYSIS_TEMPLATE, model_id=self.model_id)

    def fits(self, prompt: Prompt) -> bool:
        """Whether the rendered prompt fits the model's window with room for its answer."""
        if isinstance(self.generator, Budgeted):
            budget = self.generator.token_budget()
            return budget.count(prompt.render()) <= budget.prompt_tokens
        return estimate_tokens(prompt.render()) <= self.generator.context_tokens

    def run(self, prompt: Prompt, on_text: Callable[[str], None] | None = None) -> str:
        """The model's text for ``prompt``: sanitized (links only to its sources), citations outside its chunks
        removed; streamed piece by piece to ``on_text`` when given (then as it was shown)."""
        if self.cancel is not None:
            self.cancel.check()
        links = LinkPolicy((c.source_uri for c in prompt.chunks), self.link_allowlist, (c.text for c in prompt.chunks))
        self.called = True
        if on_text is None:
            completion = self.generator.generate(prompt)
            self.input_tokens += completion.input_tokens
            self.output_tokens += completion.output_tokens
            self.used_model_id = completion.model_id
            verbatim = self.generator.quotes_verbatim
            text = inert_quotes(completion.text) if verbatim else sanitize_answer(completion.text, links)
            checked = check_citations(text, len(prompt.chunks))
            self.checks.append(checked)
            return checked.text
        pieces: list[str] = []
        produced = self.generator.stream(prompt)
        verbatim = self.generator.quotes_verbatim
        with closing(verbatim_stream(produced) if verbatim else sanitized_stream(produced, links)) as stream:
            for piece in stream:
                if self.cancel is not None:
                    self.cancel.check()
                pieces.append(piece)
                on_text(piece)
        self.used_model_id = self.generator.model_id
        text = "".join(pieces)
        self.checks.append(check_citations(text, len(prompt.chunks)))
        return text

    def warnings(self) -> tuple[str, ...]:
        """The citation warnings of the last call (the text the caller reads)."""
        return self.checks[-1].warnings(removed=True) if self.checks else ()
