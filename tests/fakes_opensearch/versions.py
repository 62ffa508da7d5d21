"""OpenSearch versions: parsing, comparing, and the integer id an index stores as ``index.version.created``."""

from __future__ import annotations

import re

Version = tuple[int, int, int]

#: OpenSearch flips bit 28 of a version id to tell itself apart from legacy Elasticsearch ids
#: (``Version.java``: ``this.id = id ^ MASK`` with ``MASK = 0x08000000``).
_MASK = 0x08000000
_VERSION = re.compile(r"(\d+)\.(\d+)\.(\d+)")
#: Lucene shipped with each OpenSearch minor (reported by ``GET /``); later minors repeat the last one.
_LUCENE = {
    (2, 17): "9.11.1",
    (2, 18): "9.12.0",
    (2, 19): "9.12.1",
    (3, 0): "10.1.0",
    (3, 1): "10.2.1",
    (3, 2): "10.2.2",
    (3, 3): "10.3.1",
}

V_2_12_0: Version = (2, 12, 0)
V_2_17_0: Version = (2, 17, 0)
V_2_18_0: Version = (2, 18, 0)
V_2_19_0: Version = (2, 19, 0)
V_3_0_0: Version = (3, 0, 0)
V_3_7_0: Version = (3, 7, 0)


def parse_version(text: str) -> Version:
    """``"2.19.1"`` -> ``(2, 19, 1)``; ValueError on anything else."""
    match = _VERSION.fullmatch(text)
    if match is None:
        raise ValueError(f"not an OpenSearch version: {text!r} (expected MAJOR.MINOR.REVISION)")
    major, minor, revision = (int(part) for part in match.groups())
    return major, minor, revision


def version_text(version: Version) -> str:
    return ".".join(str(part) for part in version)


def version_id(version: Version) -> int:
    """The id a real server stores in ``index.version.created`` (e.g. 2.19.1 -> ``2190199 ^ 0x08000000``)."""
    major, minor, revision = version
    return (major * 1_000_000 + minor * 10_000 + revision * 100 + 99) ^ _MASK


def lucene_version(version: Version) -> str:
    known = [minor for minor in _LUCENE if minor <= version[:2]]
    return _LUCENE[max(known)] if known else "9.11.1"
