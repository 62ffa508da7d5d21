"""What an index holds: shards routed by ``_id``, a realtime version map, and refreshed segments.

Writes land in the version map at once (``GET``/``_mget`` are realtime) and in a per-shard buffer; a
refresh turns each shard's buffer into one new segment and deletes the replaced copies from older
segments. Search sees segments only. No merges happen, so segments only accumulate, except that a
segment whose every document was deleted is dropped, as Lucene's IndexWriter drops it.
"""

from __future__ import annotations

import uuid
import zlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tests.fakes_opensearch import hnsw
from tests.fakes_opensearch.mapping import Mapping
from tests.fakes_opensearch.settings import Flat
from tests.fakes_opensearch.versions import Version

PRIMARY_TERM = 1


@dataclass(frozen=True, slots=True)
class Indexed:
    """One document as a segment holds it: stored ``_source``, searchable values and vectors."""

    id: str
    source: dict[str, Any]
    values: dict[str, list[Any]]
    vectors: dict[str, np.ndarray]
    version: int
    seq_no: int


@dataclass(slots=True)
class Current:
    """The latest state of an ``_id`` (realtime): the document, or a tombstone that keeps its version."""

    doc: Indexed | None
    version: int
    seq_no: int


@dataclass(slots=True)
class Segment:
    """Documents written between two refreshes, in write order; ``live[i]`` is False once deleted."""

    docs: list[Indexed]
    live: list[bool]
    #: Field -> (positions of documents with the vector, their vectors, the graph), built on first search.
    graphs: dict[str, tuple[list[int], np.ndarray, hnsw.Graph]] = field(default_factory=dict)

    def live_docs(self) -> list[tuple[int, Indexed]]:
        return [(position, doc) for position, doc in enumerate(self.docs) if self.live[position]]


@dataclass(slots=True)
class Shard:
    number: int
    segments: list[Segment] = field(default_factory=list)
    current: dict[str, Current] = field(default_factory=dict)
    #: ``_id`` -> its state after the last write since the previous refresh.
    buffer: dict[str, Current] = field(default_factory=dict)
    next_seq_no: int = 0
    #: Highest ``_seq_no`` a search can see.
    visible_seq_no: int = -1
    created_segments: int = 0

    def write(self, doc_id: str, doc: Indexed | None, version: int) -> Current:
        """Record a write (``doc`` None: a delete) with the next ``_seq_no``."""
        state = Current(doc=doc, version=version, seq_no=self.next_seq_no)
        self.next_seq_no += 1
        self.current[doc_id] = state
        self.buffer[doc_id] = state
        return state

    def refresh(self) -> bool:
        """Make buffered writes searchable; True when there was something to refresh."""
        if not self.buffer:
            return False
        for segment in self.segments:
            for position, doc in enumerate(segment.docs):
                if segment.live[position] and doc.id in self.buffer:
                    segment.live[position] = False
        written = [state.doc for state in self.buffer.values() if state.doc is not None]
        if written:
            self.segments.append(Segment(docs=written, live=[True] * len(written)))
            self.created_segments += 1
        self.segments = [segment for segment in self.segments if any(segment.live)]
        self.buffer.clear()
        self.visible_seq_no = self.next_seq_no - 1
        return True


@dataclass(slots=True)
class IndexState:
    """One concrete index."""

    name: str
    settings: Flat
    mapping: Mapping
    created: Version
    shards: list[Shard]
    #: Alias name -> its properties (``is_write_index``).
    aliases: dict[str, dict[str, Any]] = field(default_factory=dict)
    uuid: str = field(default_factory=lambda: uuid.uuid4().hex[:22])

    def setting(self, key: str, default: str | None = None) -> str | None:
        return self.settings.get(key, default)

    def shard_of(self, doc_id: str) -> Shard:
        """Routing: a stable hash of ``_id`` (the real server uses murmur3; any stable spread will do)."""
        return self.shards[zlib.crc32(doc_id.encode()) % len(self.shards)]

    def get(self, doc_id: str) -> Current | None:
        state = self.shard_of(doc_id).current.get(doc_id)
        return state if state is not None and state.doc is not None else None

    def last_version(self, doc_id: str) -> int:
        state = self.shard_of(doc_id).current.get(doc_id)
        return state.version if state is not None else 0

    def refresh(self) -> bool:
        refreshed = [shard.refresh() for shard in self.shards]
        return any(refreshed)

    def has_buffered(self) -> bool:
        return any(shard.buffer for shard in self.shards)
