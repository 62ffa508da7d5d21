"""The service's domain objects: stores and documents."""

from __future__ import annotations

import re
from dataclasses import dataclass

from acl.errors import InvalidArgument
from indexer.documents import DocumentRecord

__all__ = ["DEFAULT_PROMPT_TEMPLATE", "DocumentRecord", "Store", "validate_store_id"]

_STORE_ID = re.compile(r"^[a-z0-9][a-z0-9_\-]{0,62}$")

DEFAULT_PROMPT_TEMPLATE = (
    "Answer the question using only the context below. Cite the sources you use "
    "by their number in square brackets. If the context does not contain the answer, "
    "say that you cannot answer.\n\nContext:\n{context}\n\nQuestion: {question}\nAnswer:"
)


def validate_store_id(store_id: str) -> str:
    """Store ids are lower-case letters, digits, '-' and '_' (they name index files)."""
    if not isinstance(store_id, str) or not _STORE_ID.match(store_id):
        raise InvalidArgument(
            f"invalid store id {store_id!r}: use 1-63 lower-case letters, digits, '-' or '_', "
            "starting with a letter or digit"
        )
    return store_id


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
