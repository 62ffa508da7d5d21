"""The service's domain objects: stores and documents.

A store's per-store settings are declared here, once each (``setting(...)``):
``STORE_SETTINGS`` is the table the SQL columns, the GraphQL and gRPC fields,
the CLI flags and ``docs/store-settings.md`` are derived from or checked against.
"""

from __future__ import annotations

from dataclasses import dataclass

from indexer.documents import DocumentRecord
from indexer.store_ids import validate_store_id
from service.domain.limits import MAX_STORE_CHUNKS
from service.domain.retrieval_settings import (
    DEFAULT_FUSION,
    DEFAULT_LEXICAL_WEIGHT,
    FUSION_METHODS,
    MAX_SOURCE_BASE_URL_CHARS,
    validate_fusion,
    validate_lexical_weight,
    validate_source_base_url,
)
from service.domain.setting import StoreSetting, bounded_int, cosine, setting, settings_of
from service.domain.store_settings import (
    MAX_MODEL_ID_CHARS,
    MAX_PROMPT_TEMPLATE_CHARS,
    validate_model_id,
    validate_prompt_template,
)
from service.domain.threshold import parse_level

__all__ = [
    "DEFAULT_PROMPT_TEMPLATE",
    "STORE_SETTINGS",
    "DocumentRecord",
    "Store",
    "StoreSetting",
    "store_setting",
    "validate_store_id",
]


DEFAULT_PROMPT_TEMPLATE = (
    "Answer the question using only the context below. Every sentence of your answer cites the "
    "sources it uses by their number in square brackets, like [1] or [2][3]. If the context does "
    "not contain the answer, say that you cannot answer.\n\nContext:\n{context}\n\nQuestion: {question}\nAnswer:"
)


@dataclass(frozen=True, slots=True)
class Store:
    """A repository of documents and its query settings (each ``setting(...)`` field is one store setting)."""

    id: str
    name: str
    embedding_model: str
    level: float = setting(
        0.5,
        description="Default relevancy level (0 = no threshold); a question may ask for another.",
        validate=parse_level,
        minimum=0.0,
        maximum=1.0,
        proto=(4, 2),
    )
    min_threshold: float = setting(
        0.0,
        description="The cosine similarity that relevancy level 0 maps to.",
        validate=cosine("min_threshold"),
        minimum=-1.0,
        maximum=1.0,
        proto=(5, 3),
    )
    max_threshold: float = setting(
        0.7,
        description="The cosine similarity that relevancy level 1 maps to (not below min_threshold).",
        validate=cosine("max_threshold"),
        minimum=-1.0,
        maximum=1.0,
        proto=(6, 4),
    )
    max_chunks: int = setting(
        8,
        description="Chunks per answer (a question may ask for fewer).",
        validate=bounded_int("max_chunks", 1, MAX_STORE_CHUNKS),
        minimum=1,
        maximum=MAX_STORE_CHUNKS,
        proto=(7, 5),
        metavar="N",
    )
    llm_model_id: str = setting(
        "extractive",
        description="The language model of this store (a watsonx.ai model id, or extractive).",
        validate=validate_model_id,
        max_length=MAX_MODEL_ID_CHARS,
        column_length=300,
        seen_by="admin",
        proto=(9, 7),
        metavar="ID",
    )
    prompt_template: str = setting(
        DEFAULT_PROMPT_TEMPLATE,
        description="The prompt: {context} and {question} once each, nothing else in braces "
        "({{ and }} for literal ones).",
        validate=validate_prompt_template,
        max_length=MAX_PROMPT_TEMPLATE_CHARS,
        seen_by="admin",
        proto=(8, 6),
        metavar="T",
    )
    fusion: str = setting(
        DEFAULT_FUSION,
        description="How vector and BM25 results are merged: rrf, weighted, dense (no BM25) or lexical (BM25 only).",
        validate=validate_fusion,
        choices=FUSION_METHODS,
        max_length=16,
        null_is_default=True,
        proto=(12, 8),
        metavar="METHOD",
    )
    lexical_weight: float = setting(
        DEFAULT_LEXICAL_WEIGHT,
        description="The BM25 ranking's share in rrf and weighted fusion.",
        validate=validate_lexical_weight,
        minimum=0.0,
        maximum=1.0,
        null_is_default=True,
        proto=(13, 9),
        metavar="W",
    )
    source_base_url: str | None = setting(
        None,
        description="The http(s) URL that indexed paths are joined to for links (no user, query or fragment); "
        "none at first.",
        validate=validate_source_base_url,
        max_length=MAX_SOURCE_BASE_URL_CHARS,
        proto=(14, 10),
        metavar="URL",
    )
    max_chunks_per_document: int = setting(
        0,
        description="The most chunks of any one document among a whole-store question's sources "
        "(0 = no cap), so that one long document does not crowd out the others.",
        validate=bounded_int("max_chunks_per_document", 0, 50),
        minimum=0,
        maximum=50,
        server_default=True,
        proto=(15, 11),
        metavar="N",
    )


#: Every per-store setting, in ``Store``'s field order.
STORE_SETTINGS: tuple[StoreSetting, ...] = settings_of(Store)
_BY_NAME = {s.name: s for s in STORE_SETTINGS}


def store_setting(name: str) -> StoreSetting | None:
    """The declaration of the setting ``name``; None if no store setting has that name."""
    return _BY_NAME.get(name)
