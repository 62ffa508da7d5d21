"""Every request body the OpenSearch adapter sends, built as plain data.

Kept apart from the client so that each body can be checked against the
official OpenSearch API specification in unit tests, with no server.

Scores. Searches run in OpenSearch's ``cosinesimil`` space, and OpenSearch
turns cosine similarity ``cos`` into a non-negative score:

- the ``knn`` query (lucene and faiss engines): ``score = (1 + cos) / 2``,
  so ``cos = 2 * score - 1``;
- the exact ``knn_score`` script with ``space_type: cosinesimil``:
  ``score = 1 + cos``, so ``cos = score - 1``.

``opensearch_responses`` converts back, so ``SearchHit.score`` is the cosine
similarity on every adapter and one store's thresholds mean the same whether
its chunks live in the embedded index or in OpenSearch.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from acl.model import Acl
from indexer.index.opensearch.filters import Query
from indexer.index.opensearch.mapping import SPACE_TYPE, VECTOR_FIELD
from indexer.index.port import ChunkRecord

Body = dict[str, Any]

#: Stored with the chunk but never needed in a search result.
_SOURCE = {"excludes": [VECTOR_FIELD]}
#: The k-NN plugin's exact scoring script and its parameter names.
KNN_SCRIPT = {"source": "knn_score", "lang": "knn"}
#: Largest ``_id`` OpenSearch accepts, in bytes.
_MAX_ID_BYTES = 512
#: Painless: replace the ACL copy of a chunk.
SET_ACL_SCRIPT = "ctx._source.acl_allow = params.allow; ctx._source.acl_deny = params.deny"


def document_id_of_chunk(chunk_id: str) -> str:
    """The deterministic ``_id`` of a chunk: its chunk id, or a hash of it when too long."""
    if len(chunk_id.encode()) <= _MAX_ID_BYTES:
        return chunk_id
    return "sha256:" + hashlib.sha256(chunk_id.encode()).hexdigest()


def _floats(vector: Any) -> list[float]:
    return [float(x) for x in np.asarray(vector, dtype=np.float32)]


def chunk_source(store_id: str, chunk: ChunkRecord, vector: Any) -> Body:
    """The ``_source`` of one chunk (its vector is the L2-normalised float32 one)."""
    return {
        "store_id": store_id,
        "document_id": chunk.document_id,
        "chunk_id": chunk.chunk_id,
        "ordinal": chunk.ordinal,
        "text": chunk.text,
        "title": chunk.title,
        "source_uri": chunk.source_uri,
        "heading_path": list(chunk.heading_path),
        "start": chunk.start,
        "end": chunk.end,
        "acl_allow": sorted(chunk.acl.allow),
        "acl_deny": sorted(chunk.acl.deny),
        VECTOR_FIELD: _floats(vector),
    }


def bulk_actions(index: str, store_id: str, chunks: Sequence[ChunkRecord], vectors: Any) -> list[Body]:
    """Actions for ``opensearchpy.helpers.streaming_bulk``: one ``index`` per chunk, ``_id`` = chunk id."""
    return [
        {
            "_op_type": "index",
            "_index": index,
            "_id": document_id_of_chunk(chunk.chunk_id),
            "_source": chunk_source(store_id, chunk, vector),
        }
        for chunk, vector in zip(chunks, vectors, strict=True)
    ]


def knn_body(vector: Any, k: int, filter_query: Query | None, ef_search: int) -> Body:
    """Approximate search: the ``knn`` query with the filter inside it (efficient filtering)."""
    clause: Body = {"vector": _floats(vector), "k": k}
    if filter_query is not None:
        clause["filter"] = filter_query
    # Lucene reads ef_search from the query only; at least k candidates are needed for k hits.
    clause["method_parameters"] = {"ef_search": max(ef_search, k)}
    return {"size": k, "_source": _SOURCE, "query": {"knn": {VECTOR_FIELD: clause}}}


def exact_body(vector: Any, size: int, filter_query: Query, search_after: list[Any] | None = None) -> Body:
    """Exact search: ``script_score`` with ``knn_score`` over a ``bool`` filter, best first, ties by chunk id."""
    body: Body = {
        "size": size,
        "_source": _SOURCE,
        "track_scores": True,
        "track_total_hits": False,
        "query": {
            "script_score": {
                "query": {"bool": {"filter": [filter_query]}},
                "script": {
                    **KNN_SCRIPT,
                    "params": {"field": VECTOR_FIELD, "query_value": _floats(vector), "space_type": SPACE_TYPE},
                },
            }
        },
        "sort": [{"_score": "desc"}, {"chunk_id": "asc"}],
    }
    if search_after is not None:
        body["search_after"] = search_after
    return body


def count_body(filter_query: Query) -> Body:
    return {"query": filter_query}


def delete_document_body(document_id: str) -> Body:
    """``_delete_by_query`` of every chunk of one document."""
    return {"query": {"bool": {"filter": [{"term": {"document_id": document_id}}]}}}


def delete_documents_body(document_ids: Sequence[str]) -> Body:
    """``_delete_by_query`` of every chunk of several documents."""
    return {"query": {"bool": {"filter": [{"terms": {"document_id": sorted(set(document_ids))}}]}}}


def delete_stale_body(document_ids: Sequence[str], keep_chunk_ids: Sequence[str]) -> Body:
    """``_delete_by_query`` of the chunks of ``document_ids`` that are not in ``keep_chunk_ids``."""
    return {
        "query": {
            "bool": {
                "filter": [{"terms": {"document_id": sorted(set(document_ids))}}],
                "must_not": [{"terms": {"chunk_id": sorted(set(keep_chunk_ids))}}],
            }
        }
    }


def set_acl_body(document_id: str, acl: Acl) -> Body:
    """``_update_by_query`` that replaces the ACL copy in every chunk of one document."""
    return {
        "query": {"bool": {"filter": [{"term": {"document_id": document_id}}]}},
        "script": {
            "source": SET_ACL_SCRIPT,
            "lang": "painless",
            "params": {"allow": sorted(acl.allow), "deny": sorted(acl.deny)},
        },
    }
