"""When a store's in-memory copy of its full-text index (``lexicon``) is read, and when it may serve.

Off unless a budget is set (``docqa serve`` sets ``index.lexicon_max_postings``;
a one-shot CLI question would pay the read and use it once). The copy is read
off the query path over a connection of its own; until it is ready, and
whenever the store's rows no longer are exactly the rows it was read with,
BM25 runs in FTS5 as before, so a copy never answers for rows it has not
seen or for rows that are gone. A copy that no longer matches is read again,
at most once per ``max(1 s, the last read's duration)``, so a store that is
being indexed spends at most about half a core on it. A store with more
(token, row) pairs than the budget keeps FTS5.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Callable

import numpy as np

from indexer.errors import IndexUnavailable
from indexer.index.embedded.lexicon import Lexicon
from indexer.index.embedded.rows import Rows

log = logging.getLogger(__name__)

_MIN_PAUSE_S = 1.0
_TOO_LARGE_PAUSE_S = 60.0  # before counting a store's pairs again after it was over the budget

#: Reads the store's lexicon within ``max_postings`` (None when over it); ``cancel`` set: stop early.
LexiconReader = Callable[[int, threading.Event], Lexicon | None]


class LexiconKeeper:
    """Owns one store's optional ``Lexicon``. Thread-safe."""

    def __init__(self, read: LexiconReader, background: bool) -> None:
        self._read = read
        self._background = background
        self.max_postings = 0  # 0: off (``budget``)
        self._lexicon: Lexicon | None = None
        self._matched: tuple[tuple[int, int, int], Lexicon] | None = None
        self._asked_at: tuple[int, int, int] | None = None  # the row state the last read was asked for
        self._lock = threading.Lock()
        self._worker: threading.Thread | None = None
        self._cancel = threading.Event()
        self._not_before = 0.0
        self.reads = 0

    @property
    def pairs(self) -> int:
        """(token, row) pairs of the newest copy; 0 without one."""
        lexicon = self._lexicon
        return 0 if lexicon is None else lexicon.postings

    def budget(self, max_postings: int) -> None:
        """Keep a copy of at most ``max_postings`` pairs (``lexicon.budget_size``) from now on; a larger copy
        (any, for 0) is dropped."""
        with self._lock:
            self.max_postings = max_postings
            self._not_before, self._asked_at = 0.0, None
            lexicon = self._lexicon
            if max_postings == 0 or (lexicon is not None and lexicon.budget_size > max_postings):
                self._lexicon, self._matched = None, None

    def lexicon_for(self, seqs_sorted: Rows, state: tuple[int, int, int]) -> Lexicon | None:
        """The copy if it holds exactly the rows whose sorted seqs are ``seqs_sorted`` (the row table's
        ``state``), else None, after asking for a fresh read."""
        held = self._held_for(seqs_sorted, state)
        if held is not None or self.max_postings == 0 or state == self._asked_at:
            return held  # a read made for these rows that could not match them is not made again
        if self._want(state) and not self._background:  # read in this call
            return self._held_for(seqs_sorted, state)
        return None

    def _held_for(self, seqs_sorted: Rows, state: tuple[int, int, int]) -> Lexicon | None:
        matched = self._matched
        if matched is not None and matched[0] == state:
            return matched[1]
        lexicon = self._lexicon
        if lexicon is not None and np.array_equal(lexicon.seqs, seqs_sorted):
            self._matched = (state, lexicon)
            return lexicon
        return None

    def _want(self, state: tuple[int, int, int]) -> bool:
        """Start a read for the rows in ``state`` (in the foreground without ``background``); False when none
        could start now."""
        with self._lock:
            if self._cancel.is_set() or (self._background and time.monotonic() < self._not_before):
                return False  # (in the foreground, for tests, no pause between reads)
            if self._worker is not None and self._worker.is_alive():
                return False
            self._asked_at = state  # cleared again if the read gives no copy
            if self._background:
                self._worker = threading.Thread(target=self._work, name="docqa-lexicon", daemon=True)
                self._worker.start()
                return True
        self._work()
        return True

    def _work(self) -> None:
        began = time.monotonic()
        pause = _MIN_PAUSE_S
        try:
            lexicon = self._read(self.max_postings, self._cancel)
        except (sqlite3.Error, IndexUnavailable) as exc:
            if not self._cancel.is_set():
                log.warning("could not read the full-text index into memory (%s); BM25 stays in SQLite", exc)
            lexicon = None
            pause = _TOO_LARGE_PAUSE_S
        else:
            if lexicon is None:
                pause = _TOO_LARGE_PAUSE_S
            else:
                with self._lock:  # the budget may have changed meanwhile
                    if self.max_postings > 0 and lexicon.budget_size <= self.max_postings:
                        self._lexicon, self._matched = lexicon, None
                        self.reads += 1
        with self._lock:
            self._not_before = time.monotonic() + max(pause, time.monotonic() - began)
            if lexicon is None:
                self._asked_at = None  # failed or over the budget: asked again after the pause

    def stop(self) -> None:
        """Stop a read under way and start no other."""
        with self._lock:  # a worker is started under the lock: never joined before it started
            self._cancel.set()
            worker = self._worker
        if worker is not None and worker is not threading.current_thread():
            worker.join(timeout=30)
