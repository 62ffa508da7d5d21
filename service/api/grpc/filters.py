"""``docqa.v1.QueryFilter`` and the indexing API's metadata as domain values (InvalidArgument when malformed)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal, get_args

from indexer.index.attributes import parse_instant
from service.api.grpc.stubs import indexing_pb2, query_pb2
from service.domain.filters import MetadataFilter

_Text = Literal[
    "path_prefix", "path_glob", "title_contains", "modified_from", "modified_to", "indexed_from", "indexed_to"
]
_TEXTS: tuple[_Text, ...] = get_args(_Text)


def query_filter(
    request: query_pb2.VectorQueryRequest | query_pb2.MultiDocumentQueryRequest | query_pb2.DocumentQueryRequest,
) -> MetadataFilter | None:
    """The request's ``filter`` (None when unset or empty)."""
    if not request.HasField("filter"):
        return None
    message = request.filter
    texts = {name: getattr(message, name) if message.HasField(name) else None for name in _TEXTS}
    filters = MetadataFilter.parse(
        **texts,
        content_types=tuple(message.content_types),
        metadata=[(condition.key, tuple(condition.values)) for condition in message.metadata],
    )
    return None if filters.is_empty else filters


def pushed_modified(request: indexing_pb2.UpsertDocumentRequest) -> datetime | None:
    """An ``UpsertDocumentRequest``'s ``modified`` (None when unset)."""
    return parse_instant(request.modified, "modified") if request.HasField("modified") else None
