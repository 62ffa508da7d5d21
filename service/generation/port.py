"""The generator port: a language model turns a ``Prompt`` (``service.generation.prompt``) into a ``Completion``."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass, field

from service.generation.prompt import Prompt


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
