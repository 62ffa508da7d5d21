"""The change log of a store's SQLite file: which documents each commit touched, in commit order.

Triggers on ``chunks`` append one entry per row inserted, deleted or
re-ACLed, naming its document, so every writer logs, whatever its code (the
CLI, a second server, a DocQA from before the log once it has opened the file).
A process that mirrors the file in memory then applies another process's
writes document by document (``changed_since``) instead of reloading every
row. Old entries are pruned; a reader that fell further behind is told to
reload everything.
"""

from __future__ import annotations

import hashlib
import sqlite3

#: Entries kept; a mirror more than this many row changes behind reloads everything.
KEEP = 1_000_000
#: Entries a ``digest`` covers.
DIGEST_ENTRIES = 64

DDL = (
    # ``nonce``: random per entry, so two histories that touched the same documents in the same order
    # (a store file restored from an older copy, then written again) still log different entries (``digest``).
    "CREATE TABLE IF NOT EXISTS changes (id INTEGER PRIMARY KEY AUTOINCREMENT, document_id TEXT NOT NULL, nonce BLOB)",
    """CREATE TRIGGER IF NOT EXISTS chunks_changes_insert AFTER INSERT ON chunks BEGIN
        INSERT INTO changes (document_id, nonce) VALUES (new.document_id, randomblob(8)); END""",
    """CREATE TRIGGER IF NOT EXISTS chunks_changes_delete AFTER DELETE ON chunks BEGIN
        INSERT INTO changes (document_id, nonce) VALUES (old.document_id, randomblob(8)); END""",
    """CREATE TRIGGER IF NOT EXISTS chunks_changes_update AFTER UPDATE ON chunks BEGIN
        INSERT INTO changes (document_id, nonce) VALUES (old.document_id, randomblob(8));
        INSERT INTO changes (document_id, nonce) VALUES (new.document_id, randomblob(8)); END""",
)
_TRIGGERS = ("chunks_changes_insert", "chunks_changes_delete", "chunks_changes_update")


def ensure(conn: sqlite3.Connection) -> None:
    """Create the log and its triggers if missing, and give a log from before ``nonce`` one (inside a write
    transaction)."""
    conn.execute(DDL[0])
    columns = {row[1] for row in conn.execute("PRAGMA table_info(changes)")}
    if "nonce" not in columns:
        conn.execute("ALTER TABLE changes ADD COLUMN nonce BLOB")  # older entries keep none
    for name in _TRIGGERS:
        found = conn.execute("SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = ?", (name,)).fetchone()
        if found is not None and "randomblob" not in str(found[0]):
            conn.execute(f"DROP TRIGGER {name}")  # a trigger from before ``nonce``
    for statement in DDL[1:]:
        conn.execute(statement)


def newest(conn: sqlite3.Connection) -> int:
    """The id of the newest entry (0 for none)."""
    return int(conn.execute("SELECT COALESCE(MAX(id), 0) FROM changes").fetchone()[0])


def prune(conn: sqlite3.Connection) -> int:
    """Drop all but the newest ``KEEP`` entries (inside a write transaction); the newest id."""
    last = newest(conn)
    conn.execute("DELETE FROM changes WHERE id <= ?", (last - KEEP,))
    return last


def digest(conn: sqlite3.Connection, upto: int) -> str | None:
    """A fingerprint of the log up to entry ``upto``: its last ``DIGEST_ENTRIES`` entries (ids, documents, nonces).

    A store file restored from an older copy and written again has other entries there (their nonces
    differ even where the same documents were written), so rows saved against one history are not taken
    for rows of the other. None when those entries were pruned.
    Call inside a read transaction.
    """
    entries = conn.execute(
        "SELECT id, document_id, hex(nonce) FROM changes WHERE id > ? AND id <= ? ORDER BY id",
        (upto - DIGEST_ENTRIES, upto),
    ).fetchall()
    if len(entries) != min(upto, DIGEST_ENTRIES) or (upto and entries[-1][0] != upto):
        return None
    text = "".join(f"{id_}\t{nonce}\t{document}\n" for id_, document, nonce in entries)
    return hashlib.sha256(text.encode()).hexdigest()


def changed_since(conn: sqlite3.Connection, since: int) -> tuple[int, list[str]] | None:
    """(newest id, documents changed after entry ``since``), or None when entries after it were pruned.

    Call inside a read transaction.
    """
    last = newest(conn)
    if last <= since:
        return last, []  # the file changed without a row changing (a checkpoint, a schema upgrade)
    oldest = int(conn.execute("SELECT MIN(id) FROM changes").fetchone()[0])
    if oldest > since + 1:
        return None
    documents = [str(row[0]) for row in conn.execute("SELECT DISTINCT document_id FROM changes WHERE id > ?", (since,))]
    return last, documents
