"""The generator port: what the LLM is given and what it gives back."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass, field

from service.generation.prompt_text import new_boundary, render_prompt, render_system, render_user
from service.generation.turns import EarlierTurn


@dataclass(frozen=True, slots=True)
class ContextChunk:
    """One source the generator may use, with the number it is cited by."""

    citation: int
    document_id: str
    title: str
    text: str
    score: float | None
    #: The document's address; the one place besides an allow-list an answer may link to.
    source_uri: str = ""


@dataclass(frozen=True, slots=True)
class Prompt:
    """A question, its context chunks (best first) and the store's template.

    The chunks are quoted material: ``render`` delimits each one with a tag
    named by ``boundary`` (random per prompt) and keeps DocQA's own
    instructions outside them (``service.generation.prompt_text``).
    """

    question: str
    chunks: tuple[ContextChunk, ...]
    template: str
    model_id: str
    boundary: str = field(default_factory=new_boundary)
    #: Earlier turns of the conversation (question and answer text only), quoted before the template.
    earlier: tuple[EarlierTurn, ...] = ()
    #: The store's embedding model (an extractive answer may compare meanings with it); "" = unknown.
    embedding_model: str = ""

    def render(self) -> str:
        """The text a language model is sent: system instructions, then the template filled in."""
        return render_prompt(self)

    def system_text(self) -> str:
        """DocQA's instructions alone (a chat model's system message)."""
        return render_system(self)

    def user_text(self) -> str:
        """The template with the delimited documents and the question (a chat model's user message)."""
        return render_user(self)


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
    #: Whether the text is quoted verbatim from the context (the extractive answerer), not written: then it is
    #: document text shown as text — never HTML-escaped and its addresses kept; the link policy, which guards a
    #: model's *generated* markup, does not apply to it, and ``inert.inert_quotes`` keeps one quote's markup
    #: from reaching into another's text in a client that renders markup.
    quotes_verbatim: bool = False

    @abstractmethod
    def generate(self, prompt: Prompt) -> Completion: ...

    def stream(self, prompt: Prompt) -> Iterator[str]:
        """Answer text in pieces as it is produced; the default yields it whole."""
        yield self.generate(prompt).text
