"""Which OpenSearch versions the adapter supports, per HNSW engine, and which auth modes need a newer one."""

from __future__ import annotations

#: Oldest OpenSearch per engine: 2.19 for both. k-NN 2.17 and 2.18 return wrong results for filtered
#: searches on indices of more than one shard (k-NN#2339, fixed in 2.19 by #2359); cosine on faiss
#: needs 2.19 as well.
MINIMUM_VERSION: dict[str, tuple[int, int]] = {"faiss": (2, 19), "lucene": (2, 19)}

#: ``Authorization: ApiKey <key>`` is understood by the security plugin from 3.7 on.
API_KEY_MINIMUM_VERSION: tuple[int, int] = (3, 7)


def minimum_version(engine: str) -> tuple[int, int]:
    """The oldest (major, minor) the adapter supports with ``engine``."""
    return MINIMUM_VERSION[engine]


def dotted(version: tuple[int, ...]) -> str:
    """``(2, 19)`` as ``"2.19"``."""
    return ".".join(map(str, version))
