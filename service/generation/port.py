"""The generator port: what the LLM is given and what it gives back."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass, field

from service.domain.store_settings import fill_template


@dataclass(frozen=True, slots=True)
class ContextChunk:
    """One source the generator may use, with the number it is cited by."""

    citation: int
    document_id: str
    title: str
    text: str
    score: float | None


@dataclass(frozen=True, slots=True)
class Prompt:
    """A question, its context chunks (best first) and the store's template."""

    question: str
    chunks: tuple[ContextChunk, ...]
    template: str
    model_id: str

    def render(self) -> str:
        """The template filled in: the text a language model is sent."""
        context = "\n\n".join(f"[{c.citation}] {c.title}\n{c.text}" for c in self.chunks)
        return fill_template(self.template, {"context": context, "question": self.question})


@dataclass(frozen=True, slots=True)
class Completion:
    """What a generator produced."""

    text: str
    model_id: str
    input_tokens: int = 0
    output_tokens: int = 0
    stop_reason: str = "eos_token"
    #: Citation numbers of the chunks the answer actually used.
    used_citations: tuple[int, ...] = field(default_factory=tuple)


class Generator(ABC):
    """Turns a prompt with context into an answer."""

    model_id: str
    #: Tokens of prompt + context the generator accepts.
    context_tokens: int

    @abstractmethod
    def generate(self, prompt: Prompt) -> Completion: ...

    def stream(self, prompt: Prompt) -> Iterator[str]:
        """Answer text in pieces as it is produced; the default yields it whole."""
        yield self.generate(prompt).text
