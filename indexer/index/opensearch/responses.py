"""Reading what OpenSearch answers: search hits, scores, bulk items, counts, server facts.

Every reader checks the shape it relies on and raises ``IndexUnavailable``
("unexpected response") rather than a ``KeyError`` deep inside a query. Error
summaries carry only OpenSearch's error *types* and status codes: a ``reason``
may quote a document's text, so it never reaches a message or a log line.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from acl.errors import InvalidArgument
from acl.model import Acl
from indexer.errors import IndexUnavailable
from indexer.index.attributes import pairs_metadata, parse_instant
from indexer.index.port import ChunkRecord


@dataclass(frozen=True, slots=True)
class RawHit:
    """One search hit as OpenSearch returns it."""

    id: str | None
    score: float
    source: dict[str, Any]
    sort: list[Any] | None


def _unexpected(what: str) -> IndexUnavailable:
    return IndexUnavailable(f"index unavailable: unexpected OpenSearch response ({what})")


def search_hits(response: Any) -> list[RawHit]:
    """The hits of a ``_search`` response, in the order OpenSearch ranked them."""
    if not isinstance(response, Mapping) or not isinstance(response.get("hits"), Mapping):
        raise _unexpected("no hits object")
    hits = response["hits"].get("hits")
    if not isinstance(hits, list):
        raise _unexpected("hits.hits is not a list")
    parsed: list[RawHit] = []
    for hit in hits:
        if not isinstance(hit, Mapping) or not isinstance(hit.get("_source"), Mapping):
            raise _unexpected("a hit without _source")
        score = hit.get("_score")
        sort = hit.get("sort")
        if score is None and isinstance(sort, list) and sort:
            score = sort[0]  # sorted by _score without track_scores
        if not isinstance(score, int | float) or isinstance(score, bool) or not math.isfinite(score):
            raise _unexpected("a hit without a numeric _score")
        parsed.append(
            RawHit(hit.get("_id"), float(score), dict(hit["_source"]), sort if isinstance(sort, list) else None)
        )
    return parsed


def cosine_from_knn_score(score: float) -> float:
    """Cosine similarity from a ``knn`` query score in ``cosinesimil`` space: ``score = (1 + cos) / 2``."""
    return _clamp(2.0 * score - 1.0)


def cosine_from_script_score(score: float) -> float:
    """Cosine similarity from the exact search's Painless score ``1.0 + cosineSimilarity(...)``: ``score = 1 + cos``."""
    return _clamp(score - 1.0)


def _clamp(cos: float) -> float:
    return min(1.0, max(-1.0, cos))


def chunk_from_source(source: Mapping[str, Any]) -> ChunkRecord:
    """The chunk stored in a hit's ``_source`` (its vector is not returned)."""
    try:
        return ChunkRecord(
            chunk_id=str(source["chunk_id"]),
            document_id=str(source["document_id"]),
            ordinal=int(source["ordinal"]),
            text=str(source["text"]),
            title=str(source["title"]),
            source_uri=str(source["source_uri"]),
            heading_path=tuple(str(h) for h in _as_list(source.get("heading_path"))),
            start=int(source["start"]),
            end=int(source["end"]),
            acl=Acl(
                frozenset(str(p) for p in _as_list(source.get("acl_allow"))),
                frozenset(str(p) for p in _as_list(source.get("acl_deny"))),
            ),
            # Absent from chunks written before mapping version 3: no pages, no anchor.
            pages=tuple(int(p) for p in _as_list(source.get("pages"))),
            anchor=str(source.get("anchor") or ""),
            # Absent from chunks written before mapping version 4.
            content_type=str(source.get("content_type") or ""),
            modified=_instant(source.get("modified")),
            indexed_at=_instant(source.get("indexed_at")),
            metadata=pairs_metadata([str(pair) for pair in _as_list(source.get("metadata"))]),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise _unexpected(f"a chunk without a valid {exc.args[0] if exc.args else 'field'}") from None


def _instant(value: Any) -> datetime | None:
    if value in (None, ""):
        return None
    try:
        return parse_instant(str(value), "stored date")
    except InvalidArgument:
        raise ValueError("date") from None


def vector_from_source(source: Mapping[str, Any], field: str) -> npt.NDArray[np.float32]:
    """The chunk's unit vector stored in a hit's ``_source`` under ``field``."""
    value = source.get(field)
    try:
        vector = np.asarray(value, dtype=np.float32)
    except (TypeError, ValueError):
        raise _unexpected("a chunk with a vector that is not numbers") from None
    norm = float(np.linalg.norm(vector)) if vector.ndim == 1 and vector.size else 0.0
    if not math.isfinite(norm) or norm == 0.0:
        raise _unexpected("a chunk without its vector")
    unit: npt.NDArray[np.float32] = (vector / np.float32(norm)).astype(np.float32)
    return unit


def _as_list(value: Any) -> list[Any]:
    """OpenSearch returns a single-valued array field as it was sent; accept a scalar too."""
    if value is None:
        return []
    return list(value) if isinstance(value, list | tuple) else [value]


@dataclass(frozen=True, slots=True)
class ChunkCounts:
    """What an ``_mget`` of documents' first chunks says: ``_id`` -> ``chunk_count`` of those found."""

    counts: dict[str, int]
    #: The index (alias) is not there: the store does not exist.
    index_missing: bool = False


def chunk_counts(response: Any) -> ChunkCounts:
    """Read an ``_mget`` of first chunks (``_source: [chunk_count]``); a missing index is reported, not raised."""
    docs = response.get("docs") if isinstance(response, Mapping) else None
    if not isinstance(docs, list):
        raise _unexpected("an _mget answer without docs")
    counts: dict[str, int] = {}
    for doc in docs:
        if not isinstance(doc, Mapping):
            raise _unexpected("an _mget doc that is not an object")
        error = doc.get("error")
        if error is not None:
            kind = error.get("type") if isinstance(error, Mapping) else None
            if kind == "index_not_found_exception":
                return ChunkCounts({}, index_missing=True)
            raise _unexpected(f"an _mget error {kind or 'error'}")
        if not doc.get("found"):
            continue
        source = doc.get("_source")
        count = source.get("chunk_count") if isinstance(source, Mapping) else None
        if not isinstance(count, int) or isinstance(count, bool) or count < 1:
            raise _unexpected("a first chunk without a chunk_count")
        counts[str(doc.get("_id"))] = count
    return ChunkCounts(counts)


def total_count(response: Any) -> int:
    """The ``count`` of a ``_count`` response."""
    count = response.get("count") if isinstance(response, Mapping) else None
    if not isinstance(count, int) or isinstance(count, bool):
        raise _unexpected("no count")
    return count


@dataclass(frozen=True, slots=True)
class ByQueryResult:
    """The outcome of ``_delete_by_query`` / ``_update_by_query``."""

    total: int
    changed: int
    version_conflicts: int
    failures: tuple[str, ...]
    timed_out: bool

    @property
    def complete(self) -> bool:
        return not self.failures and not self.timed_out and self.version_conflicts == 0


def by_query_result(response: Any) -> ByQueryResult:
    if not isinstance(response, Mapping):
        raise _unexpected("not an object")
    failures = tuple(_failure_type(f) for f in response.get("failures") or ())
    return ByQueryResult(
        total=int(response.get("total") or 0),
        changed=int(response.get("deleted") or 0) + int(response.get("updated") or 0),
        version_conflicts=int(response.get("version_conflicts") or 0),
        failures=failures,
        timed_out=bool(response.get("timed_out")),
    )


def _failure_type(failure: Any) -> str:
    if isinstance(failure, Mapping):
        cause = failure.get("cause") or failure.get("error") or failure
        if isinstance(cause, Mapping) and cause.get("type"):
            return str(cause["type"])
        if failure.get("status"):
            return f"status {failure['status']}"
    return "failure"


@dataclass(frozen=True, slots=True)
class BulkFailure:
    """One rejected bulk item: which chunk, HTTP status, OpenSearch error type."""

    id: str
    status: int
    error_type: str


def bulk_failure(item: Any) -> BulkFailure:
    """Read a failed item yielded by ``streaming_bulk`` (``{op_type: {_id, status, error}}``)."""
    if not isinstance(item, Mapping) or len(item) != 1:
        raise _unexpected("a bulk item that is not {operation: result}")
    (result,) = item.values()
    if not isinstance(result, Mapping):
        raise _unexpected("a bulk item result that is not an object")
    error = result.get("error")
    error_type = str(error.get("type") or "error") if isinstance(error, Mapping) else "error"
    status = result.get("status", 500)
    return BulkFailure(str(result.get("_id")), int(status) if isinstance(status, int) else 500, error_type)


def failed_documents(failures: Iterable[BulkFailure], document_of: Mapping[str, str]) -> dict[str, list[BulkFailure]]:
    """Failures grouped by document id (``document_of`` maps ``_id`` to document id)."""
    grouped: dict[str, list[BulkFailure]] = {}
    for failure in failures:
        grouped.setdefault(document_of.get(failure.id, "?"), []).append(failure)
    return grouped


@dataclass(frozen=True, slots=True)
class ServerFacts:
    """What ``doctor`` reports about the server."""

    distribution: str
    version: str
    knn_plugin: bool

    def version_tuple(self) -> tuple[int, ...]:
        parts = []
        for part in self.version.split("-")[0].split("."):
            if not part.isdigit():
                break
            parts.append(int(part))
        return tuple(parts)


def server_facts(info: Any, plugins: Any) -> ServerFacts:
    """From ``GET /`` and ``GET /_cat/plugins?format=json``."""
    if not isinstance(info, Mapping) or not isinstance(info.get("version"), Mapping):
        raise _unexpected("no version in GET /")
    version = info["version"]
    rows = plugins if isinstance(plugins, list) else []
    knn = any(isinstance(row, Mapping) and str(row.get("component", "")) == "opensearch-knn" for row in rows)
    return ServerFacts(
        distribution=str(version.get("distribution") or "elasticsearch"),
        version=str(version.get("number") or "?"),
        knn_plugin=knn,
    )
