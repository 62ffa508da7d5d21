"""The token budget: which of a prompt's context chunks fit the model's window.

A language model reads at most ``context_window`` tokens, its answer
included, so the rendered prompt (template, question, context) may use
``context_window - max_new_tokens``. When the chunks don't all fit, the
lowest-scored ones are left out whole — a chunk is never cut — and the kept
ones are renumbered 1..n in their original order, so the citations in the
answer match the chunks the answer lists.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Protocol, runtime_checkable

from service.generation.prompt import ContextChunk, Prompt, render_chunk

_PIECE = re.compile(r"\w+|[^\w\s]")
#: Characters of a word that one token covers at least, for the estimate below.
_CHARS_PER_TOKEN = 4


def estimate_tokens(text: str) -> int:
    """A cautious estimate of the tokens of ``text`` for a sub-word (BPE) tokenizer.

    Every punctuation mark counts one, every word one per started four
    characters: at least what common sub-word tokenizers produce for
    English prose, so a prompt that fits by this count fits the model.
    """
    return sum(1 + (len(piece) - 1) // _CHARS_PER_TOKEN for piece in _PIECE.findall(text))


@dataclass(frozen=True, slots=True)
class TokenBudget:
    """A model's window and the share of it kept for the answer."""

    context_window: int
    max_new_tokens: int
    count: Callable[[str], int] = estimate_tokens

    def __post_init__(self) -> None:
        if self.max_new_tokens < 1 or self.max_new_tokens >= self.context_window:
            raise ValueError("max_new_tokens must be at least 1 and smaller than context_window")

    @property
    def prompt_tokens(self) -> int:
        """Tokens the rendered prompt may have."""
        return self.context_window - self.max_new_tokens


@runtime_checkable
class Budgeted(Protocol):
    """A generator whose model has a finite window the engine must respect."""

    def token_budget(self) -> TokenBudget: ...


@dataclass(frozen=True, slots=True)
class Fitted:
    """A prompt trimmed to its budget, and what was kept and left out."""

    #: The prompt to send: kept chunks only, renumbered 1..n.
    prompt: Prompt
    #: Original citation numbers of the kept chunks, in prompt order
    #: (``kept[i]`` is now cited as ``i + 1``).
    kept: tuple[int, ...]
    #: Original citation numbers of the chunks left out.
    dropped: tuple[int, ...]
    #: Tokens of the rendered prompt by the budget's counter.
    tokens: int

    @property
    def fits(self) -> bool:
        """Whether at least one chunk fits (else there is nothing worth sending)."""
        return bool(self.kept)


def _drop_order(chunks: tuple[ContextChunk, ...]) -> list[int]:
    """Positions of ``chunks``, the first to leave out first: lowest score, then latest."""
    return sorted(range(len(chunks)), key=lambda i: (chunks[i].score is not None, chunks[i].score or 0.0, -i))


def _with(prompt: Prompt, chunks: list[ContextChunk]) -> Prompt:
    renumbered = tuple(replace(c, citation=n) for n, c in enumerate(chunks, start=1))
    return replace(prompt, chunks=renumbered)


def fit_prompt(prompt: Prompt, budget: TokenBudget) -> Fitted:
    """Leave out the lowest-scored chunks, whole, until the rendered prompt fits ``budget``.

    If not even the best chunk fits with the template and question, no chunk
    is kept (``Fitted.fits`` is false): a prompt without its sources is not
    worth sending.
    """
    limit = budget.prompt_tokens
    whole = budget.count(prompt.render())
    if whole <= limit:
        return Fitted(prompt, tuple(c.citation for c in prompt.chunks), (), whole)
    # Estimate each chunk's share once (counts of the pieces add up closely),
    # then confirm with the real rendered prompt and drop more if needed.
    base = budget.count(_with(prompt, []).render())
    cost = [budget.count(render_chunk(c, prompt.boundary)) + 1 for c in prompt.chunks]
    keep = set(range(len(prompt.chunks)))
    total = base + sum(cost)
    order = _drop_order(prompt.chunks)
    for position in order:
        if total <= limit:
            break
        keep.discard(position)
        total -= cost[position]
    remaining = [p for p in order if p in keep]
    while True:
        kept_positions = sorted(keep)
        trimmed = _with(prompt, [prompt.chunks[p] for p in kept_positions])
        tokens = budget.count(trimmed.render())
        if (tokens <= limit and kept_positions) or not remaining:
            break
        keep.discard(remaining.pop(0))
    kept = tuple(prompt.chunks[p].citation for p in kept_positions)
    dropped = tuple(c.citation for c in prompt.chunks if c.citation not in kept)
    return Fitted(trimmed, kept, dropped, tokens)
