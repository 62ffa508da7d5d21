"""A document's chunks grouped into sections: consecutive chunks under one heading path, as few as needed."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from indexer.index import ChunkRecord

#: Heading levels a section is told apart by at first (a deeper heading stays inside its section).
SECTION_DEPTH = 2
#: The most sections one document is cut into (a summary makes one map step of each).
MAX_SECTIONS = 120


@dataclass(frozen=True, slots=True)
class Section:
    """Consecutive chunks of one document under one heading path (the path their headings share)."""

    heading_path: tuple[str, ...]
    chunks: tuple[ChunkRecord, ...]

    @property
    def text(self) -> str:
        return "\n\n".join(c.text for c in self.chunks)


def _common(paths: Sequence[tuple[str, ...]]) -> tuple[str, ...]:
    first = paths[0]
    size = 0
    while size < len(first) and all(len(p) > size and p[size] == first[size] for p in paths):
        size += 1
    return first[:size]


def _by_heading(chunks: Sequence[ChunkRecord], depth: int) -> list[list[ChunkRecord]]:
    groups: list[list[ChunkRecord]] = []
    for chunk in chunks:
        if groups and groups[-1][-1].heading_path[:depth] == chunk.heading_path[:depth]:
            groups[-1].append(chunk)
        else:
            groups.append([chunk])
    return groups


def sections(chunks: Sequence[ChunkRecord], limit: int = MAX_SECTIONS) -> list[Section]:
    """``chunks`` (one document's, in order) as sections grouped by heading path: by the first
    ``SECTION_DEPTH`` heading levels, fewer levels when that makes more than ``limit`` sections, and
    consecutive sections merged evenly when even the top level makes too many."""
    if not chunks:
        return []
    groups = _by_heading(chunks, SECTION_DEPTH)
    depth = SECTION_DEPTH
    while len(groups) > limit and depth > 1:
        depth -= 1
        groups = _by_heading(chunks, depth)
    if len(groups) > limit:
        size = -(-len(groups) // limit)
        groups = [[c for g in groups[i : i + size] for c in g] for i in range(0, len(groups), size)]
    return [Section(_common([c.heading_path for c in g]), tuple(g)) for g in groups]
