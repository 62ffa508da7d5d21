"""The embedded index's durable half: one store's chunks in one SQLite database.

SQLite is the source of truth; the in-memory rows (``embedded_rows``) are a
cache rebuilt from it. Every write is one transaction, so a process killed
mid-write leaves each document fully old or fully new. Files use WAL mode, so a
second process (the CLI) reads committed data while a server writes.
"""

from __future__ import annotations

import functools
import json
import logging
import sqlite3
import threading
from collections.abc import Generator, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from acl.errors import InvalidArgument
from acl.model import Acl
from indexer.errors import IndexUnavailable
from indexer.index.attributes import from_millis, frozen_metadata, metadata_pairs, to_millis
from indexer.index.embedded import changes
from indexer.index.embedded.fulltext import ensure_fulltext, ranked
from indexer.index.embedded.lexicon import Lexicon, postings_in, read_lexicon
from indexer.index.embedded.postings import phrase_postings, row_sizes
from indexer.index.embedded.rows import RowAttributes
from indexer.index.embedded.saved_rows import ChangeMark
from indexer.index.port import ChunkRecord, Vector
from indexer.private_files import private_file

log = logging.getLogger(__name__)

SCHEMA_VERSION = "1"
#: Distinct encoded heading paths, page lists, ACLs and metadata kept decoded (each a few hundred bytes).
_DECODED = 4096

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    """CREATE TABLE IF NOT EXISTS chunks (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        chunk_id TEXT NOT NULL UNIQUE,
        document_id TEXT NOT NULL,
        ordinal INTEGER NOT NULL,
        text TEXT NOT NULL,
        title TEXT NOT NULL,
        source_uri TEXT NOT NULL,
        heading_path TEXT NOT NULL,
        start_offset INTEGER NOT NULL,
        end_offset INTEGER NOT NULL,
        acl_allow TEXT NOT NULL,  -- principals separated by spaces
        acl_deny TEXT NOT NULL,
        vector BLOB
    )""",
    "CREATE INDEX IF NOT EXISTS chunks_by_document ON chunks (document_id)",
)

#: Columns added after version 1, each added to an older database when it is opened (no version bump:
#: an older DocQA ignores them). Rows written before have the defaults: no pages, no anchor.
_ADDED_COLUMNS = (
    ("pages", "TEXT NOT NULL DEFAULT '[]'"),  # a JSON list of 1-based PDF pages
    ("anchor", "TEXT NOT NULL DEFAULT ''"),
    # What metadata filters read; rows written before have none (no type, no instants, no metadata).
    ("content_type", "TEXT NOT NULL DEFAULT ''"),
    ("modified", "INTEGER"),  # milliseconds since the epoch, UTC
    ("indexed_at", "INTEGER"),
    ("metadata", "TEXT NOT NULL DEFAULT '{}'"),  # a JSON object of strings
)

_META_COLUMNS = (
    "seq, chunk_id, document_id, ordinal, text, title, source_uri, heading_path,"
    " start_offset, end_offset, acl_allow, acl_deny, pages, anchor, content_type, modified, indexed_at, metadata"
)


@dataclass(frozen=True, slots=True)
class StoredRows:
    """Columns of every chunk of a store, in ``seq`` order (what a reload needs)."""

    seqs: list[int]
    chunk_ids: list[str]
    document_ids: list[str]
    allows: list[list[str]]
    denies: list[list[str]]
    vectors: npt.NDArray[np.float32]
    attributes: list[RowAttributes]


def _principals(principals: frozenset[str]) -> str:
    # Principals never hold whitespace (acl.model validates them), and split()
    # decodes ten times faster than JSON on the query path.
    return " ".join(sorted(principals))


def encode_row(chunk: ChunkRecord, vector: bytes | None) -> tuple[object, ...]:
    """The SQL parameters that store ``chunk`` (a separate function so tests can fail it)."""
    return (
        chunk.chunk_id,
        chunk.document_id,
        chunk.ordinal,
        chunk.text,
        chunk.title,
        chunk.source_uri,
        json.dumps(list(chunk.heading_path)),
        chunk.start,
        chunk.end,
        _principals(chunk.acl.allow),
        _principals(chunk.acl.deny),
        json.dumps(list(chunk.pages)),
        chunk.anchor,
        chunk.content_type,
        None if chunk.modified is None else to_millis(chunk.modified),
        None if chunk.indexed_at is None else to_millis(chunk.indexed_at),
        json.dumps(dict(chunk.metadata), sort_keys=True),
        vector,
    )


def _instant(millis: object) -> datetime | None:
    return None if millis is None else from_millis(int(str(millis)))


def _decode_meta(row: sqlite3.Row | tuple[object, ...], vector: Vector | None = None) -> ChunkRecord:
    (_, chunk_id, document_id, ordinal, text, title, uri, heading, start, end, allow, deny, pages, anchor) = row[:14]
    content_type, modified, indexed_at, metadata = row[14:]
    return ChunkRecord(
        chunk_id=str(chunk_id),
        document_id=str(document_id),
        ordinal=int(str(ordinal)),
        text=str(text),
        title=str(title),
        source_uri=str(uri),
        heading_path=_headings(str(heading)),
        start=int(str(start)),
        end=int(str(end)),
        acl=_acl(str(allow), str(deny)),
        pages=_pages(str(pages)),
        anchor=str(anchor),
        content_type=str(content_type),
        modified=_instant(modified),
        indexed_at=_instant(indexed_at),
        metadata=_metadata(str(metadata)),
        vector=vector,
    )


# A search decodes every hit's row (about 20 µs each, a third of it JSON), and the same heading paths,
# page lists, ACLs and metadata recur across a document's chunks: each distinct encoded value is decoded
# once and shared. Safe because each decoded value is immutable (tuples, frozensets, a read-only mapping).
@functools.lru_cache(maxsize=_DECODED)
def _headings(encoded: str) -> tuple[str, ...]:
    return tuple(json.loads(encoded))


@functools.lru_cache(maxsize=_DECODED)
def _pages(encoded: str) -> tuple[int, ...]:
    return tuple(int(page) for page in json.loads(encoded))


@functools.lru_cache(maxsize=_DECODED)
def _acl(allow: str, deny: str) -> Acl:
    return Acl(frozenset(allow.split()), frozenset(deny.split()))


@functools.lru_cache(maxsize=_DECODED)
def _metadata(encoded: str) -> Mapping[str, str]:
    return frozen_metadata(json.loads(encoded))


class ChunkTable:
    """One store's chunks in one SQLite database: a file, or memory when ``path`` is None.

    Not thread-safe by itself: the caller serialises use of one table.
    """

    def __init__(self, conn: sqlite3.Connection, dimension: int, persistent: bool) -> None:
        self._conn = conn
        self.dimension = dimension
        self.persistent = persistent
        self._known_version = self._data_version()
        self._foreign_write_seen = False
        self._known_change = changes.newest(conn)

    @classmethod
    def create(cls, path: Path | None, dimension: int) -> ChunkTable:
        """Open the store's database, creating it for ``dimension`` if missing.

        Raises InvalidArgument if it exists with another dimension.
        """
        conn = _connect(path, create=True)
        try:
            with _transaction(conn):
                for statement in _SCHEMA:
                    conn.execute(statement)
                changes.ensure(conn)
                _add_columns(conn)
                conn.execute(
                    "INSERT OR IGNORE INTO meta (key, value) VALUES ('schema_version', ?)",
                    (SCHEMA_VERSION,),
                )
                conn.execute(
                    "INSERT OR IGNORE INTO meta (key, value) VALUES ('dimension', ?)",
                    (str(dimension),),
                )
                ensure_fulltext(conn)
                conn.execute(
                    "INSERT OR IGNORE INTO meta (key, value) VALUES ('store_uuid', lower(hex(randomblob(16))))"
                )
            existing = _read_dimension(conn)
            if existing != dimension:
                raise InvalidArgument(
                    f"store exists with vector dimension {existing}, not {dimension}; "
                    "drop the store and re-index it to change its embedding model"
                )
        except BaseException:
            conn.close()
            raise
        return cls(conn, dimension, persistent=path is not None)

    @classmethod
    def open(cls, path: Path) -> ChunkTable | None:
        """Open an existing store database, or return None if there is none."""
        if not path.exists():
            return None
        try:
            conn = _connect(path, create=False)
        except sqlite3.OperationalError:
            return None
        try:
            dimension = _read_dimension(conn)
        except sqlite3.OperationalError:  # created by a process that has not committed yet
            conn.close()
            return None
        if dimension is None:
            conn.close()
            return None
        try:
            with _transaction(conn):
                if _missing_columns(conn):
                    _add_columns(conn)
                ensure_fulltext(conn)  # a file made before full-text search existed
                changes.ensure(conn)  # a file made before the change log
                conn.execute(
                    "INSERT OR IGNORE INTO meta (key, value) VALUES ('store_uuid', lower(hex(randomblob(16))))"
                )
        except sqlite3.Error as exc:
            conn.close()
            raise IndexUnavailable(f"cannot upgrade the embedded index at {path}: {exc}") from exc
        except BaseException:
            conn.close()
            raise
        return cls(conn, dimension, persistent=True)

    def close(self) -> None:
        self._conn.close()

    def _data_version(self) -> int:
        return int(self._conn.execute("PRAGMA data_version").fetchone()[0])

    def is_current(self) -> bool:
        """False when another connection committed since the last ``load`` (or open)."""
        return not self._foreign_write_seen and self._data_version() == self._known_version

    def load(self) -> StoredRows:
        """Every chunk's filter fields and vector, and mark this state as current."""
        self._foreign_write_seen = False
        with _transaction(self._conn, "BEGIN"):
            self._known_change = changes.newest(self._conn)
            # Inside a read transaction data_version is the snapshot's: a commit after it shows.
            self._known_version = self._data_version()
            return self._read_rows("", ())

    def catch_up(self) -> tuple[list[str], StoredRows] | None:
        """(documents changed since the last ``load`` or ``catch_up``, their rows now), marking this
        state as current; None when the change log cannot say and only a full ``load`` is safe."""
        with _transaction(self._conn, "BEGIN"):
            changed = changes.changed_since(self._conn, self._known_change)
            version = self._data_version()  # the snapshot's (see ``load``)
            if changed is None:
                return None
            last, documents = changed
            rows = self._read_rows("WHERE document_id IN (SELECT value FROM json_each(?))", (json.dumps(documents),))
        self._known_version, self._known_change, self._foreign_write_seen = version, last, False
        return documents, rows

    @classmethod
    def snapshot(cls, path: Path, dimension: int) -> tuple[int, StoredRows]:
        """Every row of the store at ``path`` as one read transaction saw them, with the id of the
        newest change-log entry then; over a connection of its own, so no other is held meanwhile."""
        conn = _connect(path, create=False)
        try:
            table = cls(conn, dimension, persistent=True)
            stored = table.load()
            return table._known_change, stored
        finally:
            conn.close()

    def rewind(self, change: int) -> None:
        """Take the caller's rows to be those of change-log entry ``change`` (a ``snapshot``):
        the next ``catch_up`` re-reads every document changed after it."""
        self._known_change, self._foreign_write_seen = change, True

    def change_mark(self) -> ChangeMark | None:
        """The change-log entry the rows read so far are current at, fingerprinted (rows saved with it are
        caught up from there by a later process: ``resume``); None when the log no longer holds it."""
        with _transaction(self._conn, "BEGIN"):
            found = changes.digest(self._conn, self._known_change)
        return None if found is None else ChangeMark(self._known_change, found)

    def resume(self, mark: ChangeMark) -> bool:
        """Take the caller's rows to be rows saved at ``mark``: the next ``catch_up`` re-reads every document
        changed after it. False, changing nothing, when this file's log does not hold that entry as it was
        (pruned, or another history: a file restored from an older copy)."""
        with _transaction(self._conn, "BEGIN"):
            if changes.digest(self._conn, mark.change) != mark.digest:
                return False
        self.rewind(mark.change)
        return True

    def sample(self, seqs: Sequence[int]) -> dict[int, tuple[str, list[str], list[str], bytes]]:
        """(chunk id, allow, deny, vector) of the rows with these seqs that exist (a few: one statement)."""
        return {
            int(seq): (chunk_id, allow.split(), deny.split(), vector)
            for seq, chunk_id, allow, deny, vector in self._by_seq("seq, chunk_id, acl_allow, acl_deny, vector", seqs)
        }

    def _by_seq(self, columns: str, seqs: Sequence[int]) -> Iterator[tuple[Any, ...]]:
        """``columns`` of the rows with these seqs that exist, 500 seqs a statement (SQLite before 3.32
        takes at most 999 parameters)."""
        for start in range(0, len(seqs), 500):
            batch = [int(s) for s in seqs[start : start + 500]]
            marks = ",".join("?" * len(batch))
            yield from self._conn.execute(f"SELECT {columns} FROM chunks WHERE seq IN ({marks})", batch)

    def store_uuid(self) -> str:
        """A random id given to the file when it was made (a graph file names the store it indexes)."""
        return _store_uuid(self._conn)

    def _read_rows(self, where: str, params: Sequence[object]) -> StoredRows:
        seqs: list[int] = []
        chunk_ids: list[str] = []
        document_ids: list[str] = []
        allows: list[list[str]] = []
        denies: list[list[str]] = []
        blobs: list[bytes] = []
        attributes: list[RowAttributes] = []
        shared: dict[tuple[object, ...], RowAttributes] = {}  # one object per document, not per row
        cursor = self._conn.execute(
            "SELECT seq, chunk_id, document_id, acl_allow, acl_deny, vector,"
            f" title, content_type, modified, indexed_at, metadata FROM chunks {where} ORDER BY seq",
            params,
        )
        for seq, chunk_id, document_id, allow, deny, vector, *attribute in cursor:
            seqs.append(seq)
            chunk_ids.append(chunk_id)
            document_ids.append(document_id)
            allows.append(allow.split())
            denies.append(deny.split())
            blobs.append(vector)
            key = tuple(attribute)
            if key not in shared:
                shared[key] = _row_attributes(*attribute)
            attributes.append(shared[key])
        matrix = np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(-1, self.dimension)
        return StoredRows(seqs, chunk_ids, document_ids, allows, denies, matrix, attributes)

    def replace_documents(self, chunks: Sequence[ChunkRecord], vectors: npt.NDArray[np.float32]) -> list[int]:
        """Make ``chunks`` the complete set of their documents, in one transaction.

        Rows of those documents, and rows holding any of the chunk ids, are
        removed first. Returns the new rows' ``seq`` values in input order.
        """
        document_ids = sorted({c.document_id for c in chunks})
        with self._write():
            base = self._conn.execute("SELECT COALESCE(MAX(seq), 0) FROM chunks").fetchone()[0]
            self._conn.executemany("DELETE FROM chunks WHERE document_id = ?", [(d,) for d in document_ids])
            self._conn.executemany("DELETE FROM chunks WHERE chunk_id = ?", [(c.chunk_id,) for c in chunks])
            self._conn.executemany(
                "INSERT INTO chunks (chunk_id, document_id, ordinal, text, title, source_uri,"
                " heading_path, start_offset, end_offset, acl_allow, acl_deny, pages, anchor,"
                " content_type, modified, indexed_at, metadata, vector)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (encode_row(c, v.tobytes() if self.persistent else None) for c, v in zip(chunks, vectors, strict=True)),
            )
            # AUTOINCREMENT: new seqs are above every seq ever used.
            seq_of = dict(self._conn.execute("SELECT chunk_id, seq FROM chunks WHERE seq > ?", (base,)).fetchall())
        return [int(seq_of[c.chunk_id]) for c in chunks]

    def delete_document(self, document_id: str) -> None:
        """Remove the document's rows in one transaction."""
        with self._write():
            self._conn.execute("DELETE FROM chunks WHERE document_id = ?", (document_id,))

    def set_acl(self, document_id: str, acl: Acl) -> None:
        """Replace the ACL of the document's rows in one transaction."""
        with self._write():
            self._conn.execute(
                "UPDATE chunks SET acl_allow = ?, acl_deny = ? WHERE document_id = ?",
                (_principals(acl.allow), _principals(acl.deny), document_id),
            )

    def fetch(self, seqs: Sequence[int], vectors: Mapping[int, Vector] | None = None) -> dict[int, ChunkRecord]:
        """Metadata of the rows with these seqs that still exist; each with its vector from ``vectors`` (by seq)
        when given, else none."""
        vectors = vectors or {}
        return {(seq := int(row[0])): _decode_meta(row, vectors.get(seq)) for row in self._by_seq(_META_COLUMNS, seqs)}

    def lexicon(self, max_postings: int, cancel: threading.Event) -> Lexicon | None:
        """The FTS5 index in memory (``lexicon``); None when it holds more than ``max_postings`` pairs."""
        return _read_lexicon(self._conn, max_postings, cancel, None)

    @classmethod
    def lexicon_of(cls, path: Path, store_uuid: str, max_postings: int, cancel: threading.Event) -> Lexicon | None:
        """``lexicon`` of the store at ``path``, over a connection of its own (no other is held meanwhile);
        None as well when the file there is no longer the store ``store_uuid`` (dropped and made again)."""
        conn = _connect(path, create=False)
        try:
            return _read_lexicon(conn, max_postings, cancel, store_uuid)
        finally:
            conn.close()

    def row_sizes(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
        """Every row's seq (sorted) and length in tokens, as FTS5's ``bm25()`` reads it (``postings``)."""
        return row_sizes(self._conn)

    def phrase_postings(
        self, phrases: Sequence[Sequence[str]], among: Sequence[int] | None
    ) -> list[tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]]:
        """Per phrase, its rows' seqs and weighted frequencies, ``among`` these seqs if given (``postings``)."""
        return phrase_postings(self._conn, phrases, among)

    def ranked(self, match: str, limit: int) -> Generator[list[tuple[int, float]], None, None]:
        """Batches of (seq, BM25 score) of the best ``limit`` rows for the FTS5 query ``match``
        (``fulltext.ranked``)."""
        return ranked(self._conn, match, limit)

    @contextmanager
    def _write(self) -> Iterator[None]:
        """A write transaction (the triggers of ``changes`` log the documents it touches)."""
        with _transaction(self._conn):
            if self._data_version() != self._known_version or changes.newest(self._conn) != self._known_change:
                self._foreign_write_seen = True
            yield
            last = changes.prune(self._conn)
            if not self._foreign_write_seen:
                self._known_change = last  # else ``catch_up`` replays this write with the others'


def row_attributes(chunk: ChunkRecord) -> RowAttributes:
    """What the in-memory rows keep of ``chunk`` for metadata filters."""
    return RowAttributes(
        title=chunk.title,
        content_type=chunk.content_type,
        modified=None if chunk.modified is None else to_millis(chunk.modified),
        indexed_at=None if chunk.indexed_at is None else to_millis(chunk.indexed_at),
        metadata=tuple(metadata_pairs(chunk.metadata)),
    )


def _row_attributes(
    title: str, content_type: str, modified: int | None, indexed_at: int | None, metadata: str
) -> RowAttributes:
    pairs = metadata_pairs(json.loads(metadata)) if metadata not in ("", "{}") else []
    return RowAttributes(str(title), str(content_type), modified, indexed_at, tuple(pairs))


def _connect(path: Path | None, *, create: bool) -> sqlite3.Connection:
    try:
        if path is None:
            conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        else:
            mode = "rwc" if create else "rw"
            if create:
                private_file(path)  # before SQLite creates it 0644; -wal/-shm copy its mode
            conn = sqlite3.connect(
                f"{path.resolve().as_uri()}?mode={mode}",
                uri=True,
                isolation_level=None,
                check_same_thread=False,
                timeout=30.0,
            )
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=FULL")
    except sqlite3.Error as exc:
        raise IndexUnavailable(f"cannot open the embedded index at {path}: {exc}") from exc
    return conn


def _read_lexicon(
    conn: sqlite3.Connection, max_postings: int, cancel: threading.Event, store_uuid: str | None
) -> Lexicon | None:
    conn.set_progress_handler(lambda: int(cancel.is_set()), 100_000)  # a set ``cancel`` interrupts the read
    try:
        with _transaction(conn, "BEGIN"):  # one snapshot for the rows, their sizes and the postings
            if store_uuid is not None and _store_uuid(conn) != store_uuid:
                return None
            pairs = postings_in(conn)
            if pairs > max_postings:
                log.info("BM25 stays in SQLite: %d (token, row) pairs, over the budget of %d", pairs, max_postings)
                return None
            return read_lexicon(conn)
    finally:
        conn.set_progress_handler(None, 0)


def _store_uuid(conn: sqlite3.Connection) -> str:
    row = conn.execute("SELECT value FROM meta WHERE key = 'store_uuid'").fetchone()
    return "" if row is None else str(row[0])


def _missing_columns(conn: sqlite3.Connection) -> list[tuple[str, str]]:
    present = {str(row[1]) for row in conn.execute("PRAGMA table_info(chunks)")}
    return [(name, declaration) for name, declaration in _ADDED_COLUMNS if name not in present]


def _add_columns(conn: sqlite3.Connection) -> None:
    """Add the columns an older database lacks (call inside a write transaction: checked again there)."""
    for name, declaration in _missing_columns(conn):
        conn.execute(f"ALTER TABLE chunks ADD COLUMN {name} {declaration}")


def _read_dimension(conn: sqlite3.Connection) -> int | None:
    row = conn.execute("SELECT value FROM meta WHERE key = 'dimension'").fetchone()
    return None if row is None else int(row[0])


@contextmanager
def _transaction(conn: sqlite3.Connection, begin: str = "BEGIN IMMEDIATE") -> Iterator[None]:
    conn.execute(begin)
    try:
        yield
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
