"""What a store starts with and what one query, summary or comparison may ask; users' history."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from service.config.base import _Section, finite
from service.domain.limits import MAX_STORE_CHUNKS
from service.domain.retrieval_settings import DEFAULT_FUSION, DEFAULT_LEXICAL_WEIGHT, RetrievalDefaults


class StoreDefaults(_Section):
    """Settings a new store starts with; an admin changes them per store."""

    level: float = Field(0.5, ge=0.0, le=1.0)
    #: Cosine similarity that level 0 maps to, for the packaged MiniLM (level 0.5 maps to 0.35).
    min_threshold: float = Field(0.00, ge=-1.0, le=1.0)
    #: Cosine similarity that level 1 maps to: where relevance reads 1.00 (0.60 saturated most answers).
    max_threshold: float = Field(0.70, ge=-1.0, le=1.0)
    max_chunks: int = Field(8, ge=1, le=MAX_STORE_CHUNKS)
    #: How dense and lexical results are fused (``service.domain.retrieval_settings``).
    fusion: Literal["rrf", "weighted", "dense", "lexical"] = DEFAULT_FUSION
    #: The lexical ranking's share in ``rrf`` and ``weighted`` fusion.
    lexical_weight: float = Field(DEFAULT_LEXICAL_WEIGHT, ge=0.0, le=1.0)

    @field_validator("level", "min_threshold", "max_threshold", "lexical_weight")
    @classmethod
    def _finite(cls, value: float) -> float:
        return finite(value)

    @model_validator(mode="after")
    def _ordered(self) -> StoreDefaults:
        if self.min_threshold > self.max_threshold:
            raise ValueError("min_threshold must not exceed max_threshold")
        return self

    def retrieval(self) -> RetrievalDefaults:
        """What a store without its own retrieval settings reads as."""
        return RetrievalDefaults(self.fusion, self.lexical_weight)


class QueryConfig(_Section):
    #: Longest question accepted, in characters.
    max_question_chars: int = Field(4000, ge=1, le=100_000)
    #: Largest k a search may ask for.
    max_k: int = Field(100, ge=1, le=1000)
    #: Most documents a MultiDocumentQuery may name.
    max_documents: int = Field(1000, ge=1)


class AnalysisConfig(_Section):
    """What one summary or comparison may consider: a longer document is sampled evenly, in order, and the
    result carries a warning saying how much of it was considered."""

    #: Sentences an extractive summary ranks at most (its similarity graph holds this many squared × 8 bytes:
    #: 32 MB at 2,000, 800 MB at the most allowed).
    max_sentences: int = Field(2000, ge=50, le=10_000)
    #: Chunks of each document a comparison aligns into topics, and a language model's summary reads (its map
    #: and reduce calls, prompts and memory), at most.
    max_chunks: int = Field(400, ge=10, le=10_000)


class HistoryConfig(_Section):
    """Users' query history, conversations and ratings (``service.history``)."""

    #: Days an answered query is kept; older entries (and their ratings) are purged at start-up
    #: and hourly by ``docqa serve``, and by ``docqa history purge``.
    retention_days: int = Field(90, ge=1, le=36_500)
    #: Earlier turns of a conversation read for a follow-up (the rewrite and the prompt).
    turns: int = Field(6, ge=1, le=50)
    #: The token role (in ``auth.admin_claim``) that may read other users' conversations, read-only, their
    #: sources re-checked against the auditor's own rights. The admin role alone does not.
    audit_role: str = Field("docqa-history-auditor", min_length=1, max_length=200)
