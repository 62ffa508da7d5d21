"""The embedded index's full-text half: an SQLite FTS5 index over the chunks table, for BM25 search.

The FTS5 table ``chunks_fts`` is an external-content index of ``chunks`` (the
text is stored once, in ``chunks``) over three columns: the chunk's text, its
title and its heading path. Triggers keep it in step with ``chunks`` inside
the same transactions as every insert, delete and text update, so a process
killed mid-write leaves both old or both new. A store file made before full
text existed gets the table, the triggers and the index of its rows the first
time it is opened (``ensure_fulltext``, idempotent, in one transaction).

Tokenizer: ``porter unicode61 remove_diacritics 2`` — Unicode words, case and
diacritics folded, English words reduced to their Porter stem, so a question's
"carried over" meets a chunk's "carry over" (``bench/lexical.py`` measured it
against plain ``unicode61``). A query is built from plain words only
(``lexical.query_terms``), each a double-quoted FTS5 string, OR-ed: no user
text is ever read as FTS5 syntax.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Generator, Sequence

TOKENIZER = "porter unicode61 remove_diacritics 2"
#: bm25() weights of the columns text, title, heading path: a word in a title or heading counts more.
WEIGHTS = (1.0, 2.0, 2.0)

#: The indexed columns of ``chunks``, in ``WEIGHTS``' order.
COLUMNS = ("text", "title", "heading_path")
_COLUMNS = ", ".join(COLUMNS)
_SCHEMA = (
    f"CREATE VIRTUAL TABLE chunks_fts USING fts5({_COLUMNS}, content='chunks', content_rowid='seq',"
    f" tokenize='{TOKENIZER}')",
    f"""CREATE TRIGGER chunks_fts_insert AFTER INSERT ON chunks BEGIN
        INSERT INTO chunks_fts (rowid, {_COLUMNS}) VALUES (new.seq, new.text, new.title, new.heading_path);
    END""",
    f"""CREATE TRIGGER chunks_fts_delete AFTER DELETE ON chunks BEGIN
        INSERT INTO chunks_fts (chunks_fts, rowid, {_COLUMNS})
        VALUES ('delete', old.seq, old.text, old.title, old.heading_path);
    END""",
    f"""CREATE TRIGGER chunks_fts_update AFTER UPDATE OF seq, {_COLUMNS} ON chunks BEGIN
        INSERT INTO chunks_fts (chunks_fts, rowid, {_COLUMNS})
        VALUES ('delete', old.seq, old.text, old.title, old.heading_path);
        INSERT INTO chunks_fts (rowid, {_COLUMNS}) VALUES (new.seq, new.text, new.title, new.heading_path);
    END""",
)
_OBJECTS = ("chunks_fts", "chunks_fts_insert", "chunks_fts_delete", "chunks_fts_update")

_SCORE = f"bm25(chunks_fts, {', '.join(str(w) for w in WEIGHTS)})"
_RANKED = f"SELECT rowid, {_SCORE} AS score FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY score LIMIT ?"
#: Rows of one ranked query read back at a time.
BATCH = 512


def ensure_fulltext(conn: sqlite3.Connection) -> None:
    """Create the FTS table and its triggers where missing and index the rows already there.

    Call inside a write transaction (``BEGIN IMMEDIATE``), so that two processes
    opening an old file at once build it once.
    """
    present = {
        str(row[0])
        for row in conn.execute(
            f"SELECT name FROM sqlite_master WHERE name IN ({', '.join('?' * len(_OBJECTS))})", _OBJECTS
        )
    }
    if present == set(_OBJECTS):
        return
    for name in ("chunks_fts_insert", "chunks_fts_delete", "chunks_fts_update"):
        conn.execute(f"DROP TRIGGER IF EXISTS {name}")
    conn.execute("DROP TABLE IF EXISTS chunks_fts")
    for statement in _SCHEMA:
        conn.execute(statement)
    conn.execute("INSERT INTO chunks_fts (chunks_fts) VALUES ('rebuild')")


def match_expression(terms: Sequence[str]) -> str:
    """An FTS5 query matching any of ``terms`` (plain words), each quoted so that none is read as syntax."""
    return " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)


def ranked(conn: sqlite3.Connection, match: str, limit: int) -> Generator[list[tuple[int, float]], None, None]:
    """Batches of (seq, BM25 score > 0) of the best ``limit`` rows matching ``match``, best first.

    FTS5 scores and sorts every row it ranks before the first comes back; the caller reads only as many
    batches as it needs.
    """
    yield from _batches(conn.execute(_RANKED, (match, limit)))


def _batches(cursor: sqlite3.Cursor) -> Generator[list[tuple[int, float]], None, None]:
    try:
        while batch := cursor.fetchmany(BATCH):
            yield [(int(seq), -float(score)) for seq, score in batch]
    finally:
        cursor.close()
