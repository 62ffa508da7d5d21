"""The service's domain objects: stores and documents."""

from __future__ import annotations

from dataclasses import dataclass

from indexer.documents import DocumentRecord
from indexer.store_ids import validate_store_id

__all__ = ["DEFAULT_PROMPT_TEMPLATE", "DocumentRecord", "Store", "validate_store_id"]


DEFAULT_PROMPT_TEMPLATE = (
    "Answer the question using only the context below. Cite the sources you use "
    "by their number in square brackets. If the context does not contain the answer, "
    "say that you cannot answer.\n\nContext:\n{context}\n\nQuestion: {question}\nAnswer:"
)


@dataclass(frozen=True, slots=True)
class Store:
    """A repository of documents and its query settings."""

    id: str
    name: str
    embedding_model: str
    level: float
    min_threshold: float
    max_threshold: float
    max_chunks: int
    llm_model_id: str = "extractive"
    prompt_template: str = DEFAULT_PROMPT_TEMPLATE
    fusion: str = "rrf"
    lexical_weight: float = 0.3
    source_base_url: str | None = None
