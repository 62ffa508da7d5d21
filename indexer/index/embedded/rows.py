"""The embedded index's in-memory half: vectors, tombstones and keyword postings.

Rows are only ever appended; a deleted or replaced chunk leaves a tombstone.
Within one ``generation`` a row's position, vector and keyword values never
change, so a reader that holds positions (or an HNSW graph built over them)
stays valid until ``compacted`` starts a new generation.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

Rows = npt.NDArray[np.int64]
Mask = npt.NDArray[np.bool_]

POSTING_FIELDS = ("document_id", "acl_allow", "acl_deny", "content_type", "title", "metadata")
#: The value of an instant column for a row without that instant.
NO_INSTANT = np.iinfo(np.int64).min


@dataclass(frozen=True, slots=True)
class RowAttributes:
    """What metadata filters read of a row besides its id and ACL (shared by the rows of one document).

    Instants are milliseconds since the epoch (``attributes.to_millis``), None when unknown;
    ``metadata`` is the custom metadata as ``key=value`` terms (``attributes.metadata_pairs``).
    """

    title: str = ""
    content_type: str = ""
    modified: int | None = None
    indexed_at: int | None = None
    metadata: tuple[str, ...] = ()


NO_ATTRIBUTES = RowAttributes()

_generations = itertools.count(1)


class IntList:
    """A growable array of row positions (amortised O(1) append)."""

    __slots__ = ("_data", "size")

    def __init__(self, values: Rows | None = None) -> None:
        """Empty, or holding ``values`` -- not copied: they may be a slice of a larger array, which is never
        written through, since the list is then full and its first ``extend`` moves it to an array of its own."""
        self._data: Rows = np.empty(4, np.int64) if values is None else np.asarray(values, np.int64)
        self.size = 0 if values is None else len(values)

    def extend(self, values: Sequence[int] | Rows) -> None:
        needed = self.size + len(values)
        if needed > len(self._data):
            grown = np.empty(max(needed, 2 * len(self._data)), np.int64)
            grown[: self.size] = self._data[: self.size]
            self._data = grown
        self._data[self.size : needed] = values
        self.size = needed

    def view(self) -> Rows:
        """The positions appended so far (a view: do not keep it across writes)."""
        return self._data[: self.size]


class RowTable:
    """One store's rows: a float32 matrix, tombstones, and keyword → rows postings.

    Not thread-safe: the owner holds a write lock around every mutating call
    and a read lock around reads.
    """

    def __init__(self, dimension: int, capacity: int = 1024) -> None:
        self.dimension = dimension
        self.generation = next(_generations)
        self.n = 0
        self.dead = 0
        self.vectors = np.zeros((capacity, dimension), np.float32)
        self.alive: Mask = np.zeros(capacity, np.bool_)
        self.seqs: Rows = np.zeros(capacity, np.int64)
        self.chunk_ids: list[str] = []
        self.chunk_rows: dict[str, int] = {}
        self.postings: dict[str, dict[str, IntList]] = {f: {} for f in POSTING_FIELDS}
        self.attributes: list[RowAttributes] = []
        #: Per row, milliseconds since the epoch (``NO_INSTANT`` when unknown).
        self.modified: Rows = np.full(capacity, NO_INSTANT, np.int64)
        self.indexed_at: Rows = np.full(capacity, NO_INSTANT, np.int64)

    @property
    def live(self) -> int:
        """Number of rows that are not tombstones."""
        return self.n - self.dead

    def append(
        self,
        seqs: Sequence[int],
        chunk_ids: Sequence[str],
        document_ids: Sequence[str],
        allows: Sequence[Iterable[str]],
        denies: Sequence[Iterable[str]],
        vectors: npt.NDArray[np.float32],
        attributes: Sequence[RowAttributes] | None = None,
    ) -> None:
        """Add rows at the end. Chunk ids must not belong to a live row."""
        count = len(seqs)
        if count == 0:
            return
        self._reserve(self.n + count)
        start, stop = self.n, self.n + count
        self.vectors[start:stop] = vectors
        self.alive[start:stop] = True
        self.seqs[start:stop] = seqs
        self.chunk_ids.extend(chunk_ids)
        attributes = [NO_ATTRIBUTES] * count if attributes is None else list(attributes)
        self.attributes.extend(attributes)
        self.modified[start:stop] = [NO_INSTANT if a.modified is None else a.modified for a in attributes]
        self.indexed_at[start:stop] = [NO_INSTANT if a.indexed_at is None else a.indexed_at for a in attributes]
        for offset, chunk_id in enumerate(chunk_ids):
            self.chunk_rows[chunk_id] = start + offset
        groups: dict[str, dict[str, list[int]]] = {f: defaultdict(list) for f in POSTING_FIELDS}
        for offset in range(count):
            row = start + offset
            groups["document_id"][document_ids[offset]].append(row)
            for value in allows[offset]:
                groups["acl_allow"][value].append(row)
            for value in denies[offset]:
                groups["acl_deny"][value].append(row)
            attribute = attributes[offset]
            groups["content_type"][attribute.content_type].append(row)
            groups["title"][attribute.title].append(row)
            for value in attribute.metadata:
                groups["metadata"][value].append(row)
        for field, values in groups.items():
            postings = self.postings[field]
            for value, rows in values.items():
                postings.setdefault(value, IntList()).extend(rows)
        self.n = stop

    def tombstone(self, rows: Rows) -> None:
        """Mark rows deleted (rows already dead are ignored)."""
        rows = rows[self.alive[rows]]
        if len(rows) == 0:
            return
        self.alive[rows] = False
        self.dead += len(rows)
        for row in rows.tolist():
            chunk_id = self.chunk_ids[row]
            if self.chunk_rows.get(chunk_id) == row:
                del self.chunk_rows[chunk_id]

    def rows_of(self, field: str, values: Iterable[str]) -> Rows:
        """Positions (live or dead) whose ``field`` holds any of ``values``."""
        if field == "chunk_id":
            found = [self.chunk_rows[v] for v in values if v in self.chunk_rows]
            return np.asarray(found, np.int64)
        postings = self.postings[field]
        parts = [postings[v].view() for v in values if v in postings]
        if not parts:
            return np.empty(0, np.int64)
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def live_rows_of(self, field: str, values: Iterable[str]) -> Rows:
        """Sorted live positions whose ``field`` holds any of ``values``."""
        rows = np.unique(self.rows_of(field, values))
        return rows[self.alive[rows]]

    def compacted(self) -> RowTable:
        """A copy without tombstones, in a new generation (positions change)."""
        keep = np.flatnonzero(self.alive[: self.n])
        table = RowTable(self.dimension, capacity=max(1024, len(keep)))
        count = len(keep)
        table.vectors[:count] = self.vectors[keep]
        table.alive[:count] = True
        table.seqs[:count] = self.seqs[keep]
        table.chunk_ids = [self.chunk_ids[row] for row in keep.tolist()]
        table.attributes = [self.attributes[row] for row in keep.tolist()]
        table.modified[:count] = self.modified[keep]
        table.indexed_at[:count] = self.indexed_at[keep]
        table.chunk_rows = {chunk_id: row for row, chunk_id in enumerate(table.chunk_ids)}
        remap = np.full(self.n, -1, np.int64)
        remap[keep] = np.arange(count, dtype=np.int64)
        for field, postings in self.postings.items():
            for value, rows in postings.items():
                moved = remap[rows.view()]
                moved = moved[moved >= 0]
                if len(moved):
                    table.postings[field][value] = IntList(moved)
        table.n = count
        return table

    def _reserve(self, needed: int) -> None:
        capacity = len(self.alive)
        if needed <= capacity:
            return
        capacity = max(needed, 2 * capacity)
        # Fresh arrays rather than in-place resize: a reader (or a graph builder)
        # may still hold the old matrix, whose first ``n`` rows stay valid.
        vectors = np.zeros((capacity, self.dimension), np.float32)
        vectors[: self.n] = self.vectors[: self.n]
        alive = np.zeros(capacity, np.bool_)
        alive[: self.n] = self.alive[: self.n]
        seqs = np.zeros(capacity, np.int64)
        seqs[: self.n] = self.seqs[: self.n]
        self.vectors, self.alive, self.seqs = vectors, alive, seqs
        self.modified, self.indexed_at = (self._grown(column, capacity) for column in (self.modified, self.indexed_at))

    def _grown(self, column: Rows, capacity: int) -> Rows:
        grown = np.full(capacity, NO_INSTANT, np.int64)
        grown[: self.n] = column[: self.n]
        return grown
