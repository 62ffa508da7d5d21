"""What a store's OpenSearch index looks like: its name, settings and mapping, and how to check one.

One index per store. Its ``knn_vector`` field ``embedding`` is an HNSW graph in
cosine space (``cosinesimil``) built by the configured engine (faiss or
lucene); the filter fields are ``keyword``s with the names the filter language
uses; ``text`` and ``title`` are analysed ``text`` (ready for BM25 later); the
rest is stored for the query result only. The mapping is ``strict``, so a
document with a stray field is rejected instead of widening the mapping.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any, Literal

from acl.errors import InvalidArgument

VECTOR_FIELD = "embedding"
SPACE_TYPE = "cosinesimil"
#: Bumped when the mapping changes in a way older indexes cannot serve.
MAPPING_VERSION = 1

Engine = Literal["faiss", "lucene"]

#: Field name -> the mapping of every field except the vector.
FIELDS: dict[str, dict[str, Any]] = {
    "store_id": {"type": "keyword"},
    "document_id": {"type": "keyword"},
    "chunk_id": {"type": "keyword"},
    "acl_allow": {"type": "keyword"},
    "acl_deny": {"type": "keyword"},
    "ordinal": {"type": "integer"},
    "text": {"type": "text"},
    "title": {"type": "text"},
    "source_uri": {"type": "keyword", "index": False, "doc_values": False},
    "heading_path": {"type": "keyword", "index": False, "doc_values": False},
    "start": {"type": "integer", "index": False, "doc_values": False},
    "end": {"type": "integer", "index": False, "doc_values": False},
}
#: Fields a query filters on: their type must be exactly keyword.
FILTER_FIELDS = ("store_id", "document_id", "chunk_id", "acl_allow", "acl_deny")

_INDEX_NAME = re.compile(r"[a-z0-9][a-z0-9._-]*")


@dataclass(frozen=True, slots=True)
class HnswSettings:
    """The configurable part of the vector field and the search."""

    engine: Engine = "lucene"
    m: int = 16
    ef_construction: int = 128
    ef_search: int = 100


def index_name(prefix: str, store_id: str) -> str:
    """The index of ``store_id``: ``prefix + store_id``, lower-cased.

    OpenSearch index names are lower case; a store id with capitals gets a
    short hash of its exact spelling appended, so ``Docs`` and ``docs`` never
    share an index.
    """
    name = f"{prefix}{store_id}"
    if store_id != store_id.lower():
        digest = hashlib.sha256(store_id.encode()).hexdigest()[:8]
        name = f"{name.lower()}-{digest}"
    if _INDEX_NAME.fullmatch(name) is None or len(name.encode()) > 255 or name in {".", ".."}:
        raise InvalidArgument(f"store id {store_id!r} with prefix {prefix!r} is not a valid OpenSearch index name")
    return name


def vector_mapping(dimension: int, hnsw: HnswSettings) -> dict[str, Any]:
    return {
        "type": "knn_vector",
        "dimension": dimension,
        "method": {
            "name": "hnsw",
            "space_type": SPACE_TYPE,
            "engine": hnsw.engine,
            "parameters": {"m": hnsw.m, "ef_construction": hnsw.ef_construction},
        },
    }


def index_body(store_id: str, dimension: int, hnsw: HnswSettings) -> dict[str, Any]:
    """The body of ``PUT /<index>`` that creates a store's index."""
    return {
        "settings": {"index": {"knn": True, "knn.algo_param.ef_search": hnsw.ef_search}},
        "mappings": {
            "dynamic": "strict",
            "_meta": {"docqa": {"store_id": store_id, "dimension": dimension, "mapping_version": MAPPING_VERSION}},
            "properties": {VECTOR_FIELD: vector_mapping(dimension, hnsw), **FIELDS},
        },
    }


@dataclass(frozen=True, slots=True)
class IndexFacts:
    """What an existing index says about itself (from ``GET /<index>``)."""

    name: str
    dimension: int | None
    space_type: str | None
    engine: str | None
    knn_enabled: bool
    field_types: dict[str, str | None]
    store_id: str | None

    @classmethod
    def parse(cls, name: str, response: dict[str, Any]) -> IndexFacts:
        """Read the facts from a ``GET /<index>`` response (index name -> mappings, settings)."""
        entry: dict[str, Any] = response.get(name) or next(iter(response.values()), {})
        mappings = entry.get("mappings") or {}
        properties = mappings.get("properties") or {}
        vector = properties.get(VECTOR_FIELD) or {}
        method = vector.get("method") or {}
        index_settings = ((entry.get("settings") or {}).get("index")) or {}
        knn = index_settings.get("knn")
        meta = ((mappings.get("_meta") or {}).get("docqa")) or {}
        dimension = vector.get("dimension")
        return cls(
            name=name,
            dimension=int(dimension) if dimension is not None else None,
            space_type=method.get("space_type") or vector.get("space_type"),
            engine=method.get("engine"),
            knn_enabled=str(knn).lower() == "true",
            field_types={f: (properties.get(f) or {}).get("type") for f in (VECTOR_FIELD, *FIELDS)},
            store_id=meta.get("store_id"),
        )


def mapping_problems(facts: IndexFacts, dimension: int | None, hnsw: HnswSettings) -> list[str]:
    """Why ``facts`` cannot serve a store of ``dimension`` (None: any) under ``hnsw``; empty if it can."""
    problems: list[str] = []
    if facts.field_types[VECTOR_FIELD] != "knn_vector":
        problems.append(f"field {VECTOR_FIELD!r} is {facts.field_types[VECTOR_FIELD]!r}, expected 'knn_vector'")
        return problems
    if dimension is not None and facts.dimension != dimension:
        problems.append(f"vector dimension is {facts.dimension}, expected {dimension}")
    if facts.space_type != SPACE_TYPE:
        problems.append(f"space_type is {facts.space_type!r}, expected {SPACE_TYPE!r}")
    if facts.engine != hnsw.engine:
        problems.append(f"engine is {facts.engine!r}, expected {hnsw.engine!r}")
    if not facts.knn_enabled:
        problems.append("setting index.knn is not true")
    for field, mapping in FIELDS.items():
        actual = facts.field_types[field]
        if actual != mapping["type"]:
            problems.append(f"field {field!r} is {actual!r}, expected {mapping['type']!r}")
    return problems
