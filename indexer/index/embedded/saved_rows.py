"""A row table as flat arrays, saved in the graph file so a fresh process need not read every row from SQLite.

At a million rows, reading the rows out of SQLite one by one and laying them
out along the graph took about 20 s; rebuilding them from these arrays takes
a fraction of that. The arrays are a cache, like the graph: they record the
change-log entry the rows were current at (``change``), and a process that
opens them re-reads every document changed after it (``OpenStore``), so an
ACL change made after the save is honoured as any other write is.

Strings are stored as one UTF-8 blob and their lengths in characters (a
decoded ``str`` slices in O(1) per character); postings as sorted values with
CSR offsets into one array of row positions.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from indexer.index.embedded.rows import NO_INSTANT, POSTING_FIELDS, IntList, RowAttributes, Rows, RowTable

Sections = dict[str, npt.NDArray[np.generic]]

#: Array sections and their little-endian dtypes; ``posting:<field>:*`` follow for each posting field.
_FIXED = {
    "seqs": "<i8",
    "alive": "|b1",
    "attribute_of": "<i4",
    "attributes": "|u1",  # JSON: [[title, content_type, modified, indexed_at, [metadata...]], ...]
    "chunk_ids": "|u1",
    "chunk_id_lengths": "<i8",
    "tail_vectors": "<f4",
}
_POSTING_PARTS = {"values": "|u1", "value_lengths": "<i8", "ends": "<i8", "rows": "<i8"}


def dtypes() -> dict[str, str]:
    """The dtype of every section a saved row table has."""
    found = dict(_FIXED)
    for field in POSTING_FIELDS:
        for part, dtype in _POSTING_PARTS.items():
            found[f"posting:{field}:{part}"] = dtype
    return found


@dataclass(frozen=True, slots=True)
class ChangeMark:
    """Where the store's change log stood when rows were saved: the entry the rows are current at, and a
    fingerprint of the entries up to it (a store file restored from an older copy has other entries there)."""

    change: int
    digest: str


def encode(rows: RowTable, nodes: int) -> Sections:
    """``rows`` as arrays (hold the store's read lock); rows from ``nodes`` on keep their vectors here,
    those before are the graph's."""
    count = rows.n
    shared: dict[RowAttributes, int] = {}
    attribute_of = np.fromiter(
        (shared.setdefault(a, len(shared)) for a in rows.attributes), dtype=np.int32, count=count
    )
    table = [[a.title, a.content_type, a.modified, a.indexed_at, list(a.metadata)] for a in shared]
    ids, id_lengths = _strings(rows.chunk_ids[:count])
    sections: Sections = {
        "seqs": rows.seqs[:count].copy(),
        "alive": rows.alive[:count].copy(),
        "attribute_of": attribute_of,
        "attributes": np.frombuffer(json.dumps(table).encode(), np.uint8),
        "chunk_ids": ids,
        "chunk_id_lengths": id_lengths,
        "tail_vectors": rows.vectors[nodes:count].copy(),
    }
    for field, postings in rows.postings.items():
        values = sorted(postings)
        blob, lengths = _strings(values)
        parts = [postings[value].view() for value in values]
        sections[f"posting:{field}:values"] = blob
        sections[f"posting:{field}:value_lengths"] = lengths
        sections[f"posting:{field}:ends"] = np.cumsum([len(p) for p in parts], dtype=np.int64)
        sections[f"posting:{field}:rows"] = np.concatenate(parts) if parts else np.empty(0, np.int64)
    return sections


def decode(sections: Sections, dimension: int, nodes: int) -> RowTable:
    """The row table ``encode`` saved, in a new generation, all but the vectors of its first ``nodes``
    rows (the graph's: the caller copies them in).

    Raises ValueError when the sections do not make a consistent table.
    """
    seqs = sections["seqs"]
    count = len(seqs)
    tail = sections["tail_vectors"].reshape(-1, dimension)
    attribute_of = sections["attribute_of"]
    if len(sections["alive"]) != count or len(attribute_of) != count or nodes + len(tail) != count:
        raise ValueError("row sections of different lengths")
    table = [
        RowAttributes(str(title), str(content_type), _instant(modified), _instant(indexed_at), tuple(map(str, meta)))
        for title, content_type, modified, indexed_at, meta in json.loads(bytes(sections["attributes"]))
    ]
    if count and (attribute_of.min() < 0 or attribute_of.max() >= len(table)):
        raise ValueError("row attribute out of range")
    chunk_ids = _decoded(sections["chunk_ids"], sections["chunk_id_lengths"])
    if len(chunk_ids) != count:
        raise ValueError("chunk ids and rows differ in number")

    rows = RowTable(dimension, capacity=max(1024, count))
    rows.n = count
    rows.vectors[nodes:count] = tail
    rows.alive[:count] = sections["alive"]
    rows.dead = count - int(np.count_nonzero(rows.alive[:count]))
    rows.seqs[:count] = seqs
    rows.chunk_ids = chunk_ids
    live = np.flatnonzero(rows.alive[:count]).tolist()
    rows.chunk_rows = {chunk_ids[row]: row for row in live}
    if len(rows.chunk_rows) != len(live):
        raise ValueError("a chunk id held by two live rows")
    rows.attributes = [table[i] for i in attribute_of.tolist()]
    modified = np.array([NO_INSTANT if a.modified is None else a.modified for a in table] or [0], np.int64)
    indexed_at = np.array([NO_INSTANT if a.indexed_at is None else a.indexed_at for a in table] or [0], np.int64)
    rows.modified[:count] = modified[attribute_of]
    rows.indexed_at[:count] = indexed_at[attribute_of]
    for field in POSTING_FIELDS:
        values = _decoded(sections[f"posting:{field}:values"], sections[f"posting:{field}:value_lengths"])
        ends = sections[f"posting:{field}:ends"]
        positions = np.array(sections[f"posting:{field}:rows"], np.int64)  # a copy: the lists are slices of it
        if len(ends) != len(values) or (len(ends) and ends[-1] != len(positions)) or np.any(np.diff(ends) < 0):
            raise ValueError(f"malformed {field} postings")
        if len(positions) and (positions.min() < 0 or positions.max() >= count):
            raise ValueError(f"{field} posting out of range")
        starts = [0, *ends[:-1].tolist()] if len(ends) else []
        rows.postings[field] = {
            value: IntList(positions[start:end])
            for value, start, end in zip(values, starts, ends.tolist(), strict=True)
        }
    return rows


def live_acl(sections: Sections, field: str, sample: Rows) -> dict[int, set[str]]:
    """For each row of ``sample``, the values ``field`` (``acl_allow`` or ``acl_deny``) held when saved."""
    values = _decoded(sections[f"posting:{field}:values"], sections[f"posting:{field}:value_lengths"])
    ends = sections[f"posting:{field}:ends"]
    positions = sections[f"posting:{field}:rows"]
    owner = np.repeat(np.arange(len(ends)), np.diff(ends, prepend=0))
    hit = np.isin(positions, sample)
    found: dict[int, set[str]] = {int(row): set() for row in sample.tolist()}
    for row, value in zip(positions[hit].tolist(), owner[hit].tolist(), strict=True):
        found[row].add(values[value])
    return found


def _strings(values: list[str]) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64]]:
    blob = np.frombuffer("".join(values).encode(), np.uint8)
    return blob, np.fromiter(map(len, values), dtype=np.int64, count=len(values))


def _decoded(blob: npt.NDArray[np.generic], lengths: npt.NDArray[np.generic]) -> list[str]:
    text = bytes(blob).decode()
    ends = np.cumsum(lengths, dtype=np.int64)
    if len(ends) and (ends[-1] != len(text) or lengths.min() < 0):
        raise ValueError("string lengths do not match their text")
    starts = [0, *ends[:-1].tolist()] if len(ends) else []
    return [text[start:end] for start, end in zip(starts, ends.tolist(), strict=True)]


def _instant(millis: object) -> int | None:
    return None if millis is None else int(millis)  # type: ignore[call-overload]
