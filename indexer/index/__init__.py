"""The index port, its filter language, and the adapters."""

from indexer.index.filters import Filter, acl_filter, and_, documents_filter
from indexer.index.port import ChunkRecord, Index, SearchHit, StoreSpec

__all__ = [
    "ChunkRecord",
    "Filter",
    "Index",
    "SearchHit",
    "StoreSpec",
    "acl_filter",
    "and_",
    "documents_filter",
]
