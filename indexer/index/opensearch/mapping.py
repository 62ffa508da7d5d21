"""What a store's OpenSearch index looks like: its name, settings and mapping, and how to check one.

One index per store, always reached through an alias: the store's name
(``index_name``) is an alias of the concrete index ``<alias>.v<MAPPING_VERSION>``,
created together. Every write asks for ``require_alias``, so a write that
races a ``drop`` fails instead of auto-creating an index with a dynamic
mapping. Its ``knn_vector`` field ``embedding`` is an HNSW graph in cosine space
(``cosinesimil``) built by the configured engine (faiss or lucene); the filter
fields are ``keyword``s with the names the filter language uses; ``text`` and
``title`` are analysed ``text`` (ready for BM25); the rest is stored for the
query result only. ``chunk_count`` (on every chunk, read from chunk 0) says how
many chunks the document has, so stale ones are deleted by ``_id``. The mapping
is ``strict``, so a document with a stray field is rejected instead of
widening the mapping, and ``_source`` must keep every field: an index template
that excludes the vector would make the next partial update (an ACL change)
wipe it (k-NN#1694), so such an index is refused.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any, Literal

from acl.errors import InvalidArgument

VECTOR_FIELD = "embedding"
SPACE_TYPE = "cosinesimil"
#: Bumped when the mapping changes. Version 3 added ``pages`` and ``anchor``, version 4 the metadata filter fields
#: (``content_type``, ``title_folded``, ``modified``, ``indexed_at``, ``metadata``); ``ensure`` (and the first write)
#: add them to an older index in place (``ADDED_FIELDS``), whose concrete name keeps its ``.v2`` / ``.v3``.
MAPPING_VERSION = 4

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
    "chunk_count": {"type": "integer", "index": False, "doc_values": False},
    "pages": {"type": "integer", "index": False, "doc_values": False},
    "anchor": {"type": "keyword", "index": False, "doc_values": False},
    "content_type": {"type": "keyword"},
    # The title lower-cased by DocQA (``filters.fold``), for ``contains`` as a wildcard query.
    "title_folded": {"type": "keyword"},
    "modified": {"type": "date"},
    "indexed_at": {"type": "date"},
    # Custom metadata as ``key=value`` terms (``attributes.metadata_pairs``): one keyword field, however many keys.
    "metadata": {"type": "keyword"},
}
#: Fields added after version 2: an index without them is upgraded with a put-mapping, not refused.
ADDED_FIELDS = ("pages", "anchor", "content_type", "title_folded", "modified", "indexed_at", "metadata")
#: Fields a query filters on: their type must be exactly keyword.
FILTER_FIELDS = (
    "store_id", "document_id", "chunk_id", "acl_allow", "acl_deny", "content_type", "title_folded", "metadata"
)  # fmt: skip

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
    if _INDEX_NAME.fullmatch(name) is None or len(concrete_name(name).encode()) > 255 or name in {".", ".."}:
        raise InvalidArgument(f"store id {store_id!r} with prefix {prefix!r} is not a valid OpenSearch index name")
    return name


def concrete_name(alias: str) -> str:
    """The concrete index behind a store's alias (store ids have no '.', so no store's alias looks like this)."""
    return f"{alias}.v{MAPPING_VERSION}"


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


def index_body(
    store_id: str,
    dimension: int,
    hnsw: HnswSettings,
    alias: str,
    shards: int | None = None,
    replicas: int | None = None,
) -> dict[str, Any]:
    """The body of ``PUT /<concrete index>`` that creates a store's index and its alias in one step
    (``shards``/``replicas``: None keeps the cluster's default)."""
    settings: dict[str, Any] = {"knn": True, "knn.algo_param.ef_search": hnsw.ef_search}
    if shards is not None:
        settings["number_of_shards"] = shards
    if replicas is not None:
        settings["number_of_replicas"] = replicas
    return {
        "aliases": {alias: {"is_write_index": True}},
        "settings": {"index": settings},
        "mappings": {
            "dynamic": "strict",
            "_meta": {"docqa": {"store_id": store_id, "dimension": dimension, "mapping_version": MAPPING_VERSION}},
            "properties": {VECTOR_FIELD: vector_mapping(dimension, hnsw), **FIELDS},
        },
    }


@dataclass(frozen=True, slots=True)
class IndexFacts:
    """What an existing index says about itself (from ``GET /<alias>``)."""

    #: The name asked for (the store's alias).
    name: str
    dimension: int | None
    space_type: str | None
    engine: str | None
    knn_enabled: bool
    field_types: dict[str, str | None]
    store_id: str | None
    #: The concrete index answering to ``name`` (``name`` itself when it is not an alias).
    concrete: str = ""
    #: Whether ``name`` is an alias (every index DocQA creates is reached through one).
    is_alias: bool = True
    #: ``mappings.dynamic`` (``strict`` unless a template or another writer changed it).
    dynamic: str | None = "strict"
    #: ``mappings._source`` when it filters or disables the source (a template can add it).
    source_filter: dict[str, Any] = field(default_factory=dict)
    shards: int = 1
    #: ``index.max_result_window``: the largest ``from + size`` a search may ask for.
    max_result_window: int = 10_000
    #: ``index.version.created`` as OpenSearch reports it (an encoded id).
    created_version: str | None = None
    #: The vector field's ``mode`` / ``compression_level`` / encoder, when set (quantised or on-disk search).
    vector_mode: str | None = None

    @classmethod
    def parse(cls, name: str, response: dict[str, Any]) -> IndexFacts:
        """Read the facts from a ``GET /<alias>`` response (concrete index name -> aliases, mappings, settings)."""
        concrete = name if name in response else next(iter(response), name)
        entry: dict[str, Any] = response.get(concrete) or {}
        mappings = entry.get("mappings") or {}
        properties = mappings.get("properties") or {}
        vector = properties.get(VECTOR_FIELD) or {}
        method = vector.get("method") or {}
        index_settings = ((entry.get("settings") or {}).get("index")) or {}
        knn = index_settings.get("knn")
        meta = ((mappings.get("_meta") or {}).get("docqa")) or {}
        dimension = vector.get("dimension")
        source = mappings.get("_source") or {}
        encoder = ((method.get("parameters") or {}).get("encoder") or {}).get("name")
        modes = [
            f"{key} {value}"
            for key, value in (("mode", vector.get("mode")), ("compression", vector.get("compression_level")))
            if value not in (None, "in_memory", "1x")
        ] + ([f"encoder {encoder}"] if encoder not in (None, "flat") else [])
        version = index_settings.get("version") or {}
        return cls(
            name=name,
            dimension=int(dimension) if dimension is not None else None,
            space_type=method.get("space_type") or vector.get("space_type"),
            engine=method.get("engine"),
            knn_enabled=str(knn).lower() == "true",
            field_types={f: (properties.get(f) or {}).get("type") for f in (VECTOR_FIELD, *FIELDS)},
            store_id=meta.get("store_id"),
            concrete=concrete,
            is_alias=concrete != name and name in (entry.get("aliases") or {}),
            dynamic=None if mappings.get("dynamic") is None else str(mappings["dynamic"]),
            source_filter={k: v for k, v in source.items() if k in ("excludes", "includes", "enabled")},
            shards=int(index_settings.get("number_of_shards") or 1),
            max_result_window=int(index_settings.get("max_result_window") or 10_000),
            created_version=str(version["created"]) if isinstance(version, dict) and "created" in version else None,
            vector_mode=", ".join(modes) or None,
        )

    def describe(self) -> str:
        """One line for ``doctor``: the shape of the index."""
        parts = [f"index {self.concrete or self.name}", f"dimension {self.dimension}", f"{self.engine}"]
        parts += [f"{self.space_type}", f"{self.shards} shard{'s' if self.shards != 1 else ''}"]
        if self.vector_mode:
            parts.append(f"quantised/on-disk ({self.vector_mode}: scores are rescored approximations)")
        return ", ".join(parts)


def mapping_problems(facts: IndexFacts, dimension: int | None, hnsw: HnswSettings) -> list[str]:
    """Why ``facts`` cannot serve a store of ``dimension`` (None: any) under ``hnsw``; empty if it can."""
    problems: list[str] = []
    if facts.field_types[VECTOR_FIELD] != "knn_vector":
        problems.append(f"field {VECTOR_FIELD!r} is {facts.field_types[VECTOR_FIELD]!r}, expected 'knn_vector'")
        return problems
    if not facts.is_alias:
        problems.append(
            f"{facts.name!r} is a concrete index, not the alias DocQA creates (made by an older DocQA, "
            "or auto-created by a write)"
        )
    if dimension is not None and facts.dimension != dimension:
        problems.append(f"vector dimension is {facts.dimension}, expected {dimension}")
    if facts.space_type != SPACE_TYPE:
        problems.append(f"space_type is {facts.space_type!r}, expected {SPACE_TYPE!r}")
    if facts.engine != hnsw.engine:
        problems.append(f"engine is {facts.engine!r}, expected {hnsw.engine!r}")
    if not facts.knn_enabled:
        problems.append("setting index.knn is not true")
    if facts.source_filter:
        problems.append(
            f"mappings._source is {facts.source_filter!r} (an index template?): a partial update would "
            "wipe the fields left out of _source (k-NN#1694); remove it from the template"
        )
    if facts.dynamic != "strict":
        problems.append(f"mappings.dynamic is {facts.dynamic!r}, expected 'strict' (an index template?)")
    for field_name, mapping in FIELDS.items():
        actual = facts.field_types[field_name]
        if actual is None and field_name in ADDED_FIELDS:
            continue  # an older DocQA's index: ``missing_fields`` says what to add
        if actual != mapping["type"]:
            problems.append(f"field {field_name!r} is {actual!r}, expected {mapping['type']!r}")
    return problems


def missing_fields(facts: IndexFacts) -> list[str]:
    """The fields of this version that an index made by an older DocQA lacks (added in place by ``upgrade_body``)."""
    return [name for name in ADDED_FIELDS if facts.field_types.get(name) is None]


def upgrade_body(facts: IndexFacts) -> dict[str, Any]:
    """The body of ``PUT /<concrete index>/_mapping`` that adds ``missing_fields`` and records this version.

    Adding a field to a ``strict`` mapping is allowed; chunks written before
    simply lack it (read back as no pages, no anchor, no content type, instants or
    metadata, so no metadata filter on them matches) until re-indexed.
    """
    body: dict[str, Any] = {"properties": {name: FIELDS[name] for name in missing_fields(facts)}}
    if facts.store_id is not None and facts.dimension is not None:
        meta = {"store_id": facts.store_id, "dimension": facts.dimension, "mapping_version": MAPPING_VERSION}
        body["_meta"] = {"docqa": meta}
    return body
