"""Which OpenSearch versions the adapter supports, per HNSW engine."""

from __future__ import annotations

#: Oldest OpenSearch per engine: cosine on faiss needs 2.19; ``method_parameters.ef_search`` in the query, 2.16.
MINIMUM_VERSION: dict[str, tuple[int, int]] = {"faiss": (2, 19), "lucene": (2, 16)}


def minimum_version(engine: str) -> tuple[int, int]:
    """The oldest (major, minor) the adapter supports with ``engine``."""
    return MINIMUM_VERSION[engine]
