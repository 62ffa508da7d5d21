"""The change log of a store's SQLite file: which documents each write touched, in commit order.

Every write transaction appends one entry per document it added, removed or
re-ACLed (``log``), so a process that mirrors the file in memory can apply
another process's writes document by document (``changed_since``) instead of
reloading every row. Old entries are pruned; a reader that fell further
behind, or a file written without logging (by a DocQA from before the log),
is told to reload everything.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

#: Entries kept; a mirror more than this many document changes behind reloads everything.
KEEP = 100_000

DDL = "CREATE TABLE IF NOT EXISTS changes (id INTEGER PRIMARY KEY AUTOINCREMENT, document_id TEXT NOT NULL)"


def newest(conn: sqlite3.Connection) -> int:
    """The id of the newest entry (0 for none)."""
    return int(conn.execute("SELECT COALESCE(MAX(id), 0) FROM changes").fetchone()[0])


def log(conn: sqlite3.Connection, document_ids: Iterable[str]) -> int:
    """Record that the open write transaction touched ``document_ids``; the newest id after it."""
    conn.executemany("INSERT INTO changes (document_id) VALUES (?)", [(d,) for d in sorted(set(document_ids))])
    last = newest(conn)
    conn.execute("DELETE FROM changes WHERE id <= ?", (last - KEEP,))
    return last


def changed_since(conn: sqlite3.Connection, since: int) -> tuple[int, list[str]] | None:
    """(newest id, documents changed after entry ``since``), or None when the log cannot say.

    Call inside a read transaction. None when entries after ``since`` were
    pruned or nothing was logged although the file changed (the caller knows
    it changed); then only a full reload is safe.
    """
    last = newest(conn)
    if last <= since:
        return None
    oldest = int(conn.execute("SELECT MIN(id) FROM changes").fetchone()[0])
    if oldest > since + 1:
        return None
    documents = [str(row[0]) for row in conn.execute("SELECT DISTINCT document_id FROM changes WHERE id > ?", (since,))]
    return last, documents
