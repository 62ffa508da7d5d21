"""Fakes for the embedder and the generator ports (the index fake is in tests/fakes.py)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from indexer.embedder import Embedder, Tokenizer
from service.generation.extractive import content_terms
from service.generation.port import Completion, Generator
from service.generation.prompt import Prompt

_TOKEN = re.compile(r"\w+|[^\w\s]")


class WordTokenizer:
    """One token per word or punctuation mark; [CLS] and [SEP] around every input."""

    special_tokens = 2

    def token_spans(self, text: str) -> list[tuple[int, int]]:
        return [m.span() for m in _TOKEN.finditer(text)]


class FakeEmbedder(Embedder):
    """Hashes stemmed content words into a fixed-size vector: similar words, similar vectors.

    Deterministic and instant, so unit tests can reason about scores: two texts
    sharing content words have positive cosine similarity, unrelated texts ~0.
    """

    def __init__(self, dimension: int = 64, max_tokens: int = 64, model_name: str = "fake") -> None:
        self.model_name = model_name
        self.dimension = dimension
        self.max_tokens = max_tokens
        self._tokenizer = WordTokenizer()
        self.calls = 0
        self.embedded = 0

    @property
    def tokenizer(self) -> Tokenizer:
        return self._tokenizer

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.calls += 1
        self.embedded += len(texts)
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            for term in content_terms(text):
                digest = hashlib.blake2b(term.encode(), digest_size=8).digest()
                out[row, int.from_bytes(digest[:4], "little") % self.dimension] += 1.0
            norm = float(np.linalg.norm(out[row]))
            if norm == 0:
                out[row, 0] = 1.0
            else:
                out[row] /= norm
        return out


class RecordingGenerator(Generator):
    """Records every prompt; answers with the citations it was given."""

    def __init__(self, context_tokens: int = 8192) -> None:
        self.model_id = "recording"
        self.context_tokens = context_tokens
        self.prompts: list[Prompt] = []

    def generate(self, prompt: Prompt) -> Completion:
        self.prompts.append(prompt)
        cited = " ".join(f"[{c.citation}]" for c in prompt.chunks)
        return Completion(
            text=f"answer from {cited}", model_id=self.model_id, used_citations=tuple(c.citation for c in prompt.chunks)
        )
