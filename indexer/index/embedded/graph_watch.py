"""Noticing, in a running index, a graph file that another process saved for the same store.

A server that opened a store without a graph (or with a smaller one) searches
exactly (or graph + exact tail) while it buys its own; meanwhile the CLI
indexer or a second server may finish a graph of the same store and save it.
Queries look at the graph file at most every ``Planner.graph_file_check_s``
seconds, with one ``stat``: a file other than the one this process last
saved, loaded or turned down is then looked at further off the query path
(``OpenStore.look_for_graph``). A graph file only ever appears whole (it
is written aside and renamed into place), and is checksummed, so a file being
written or a corrupt one is never served.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path

from indexer.index.embedded.graph_file import Signature, signature

log = logging.getLogger(__name__)


class GraphWatch:
    """Tells which new graph file is worth a look, and runs the look at most once at a time."""

    def __init__(self, path: Path, interval_s: float) -> None:
        self._path = path
        self._interval_s = interval_s
        self._known: Signature | None = None
        self._due = 0.0
        self._worker: threading.Thread | None = None
        self._start_lock = threading.Lock()

    def known(self, seen: Signature) -> None:
        """This process saved, loaded or turned down the file ``seen``: never look at it again."""
        self._known = seen

    def is_known(self, seen: Signature | None) -> bool:
        """Whether ``seen`` is the file this process last saved, loaded or turned down (or no file)."""
        return seen is None or seen == self._known

    def changed(self) -> Signature | None:
        """The graph file's signature when a look is due and it is not the known file; else None."""
        now = time.monotonic()
        if now < self._due:
            return None
        self._due = now + self._interval_s
        seen = signature(self._path)
        return None if seen is None or seen == self._known else seen

    def look(self, work: Callable[[Signature], None], seen: Signature, background: bool) -> None:
        """Run ``work(seen)`` now, or in a thread of its own (none when one still runs)."""
        if not background:
            self._run(work, seen)
            return
        with self._start_lock:
            if self._worker is not None and self._worker.is_alive():
                return  # the file stays unknown, so the next due look tries it again
            # Not a daemon: interpreter exit waits for it rather than tearing faiss down under it.
            self._worker = threading.Thread(target=self._run, args=(work, seen), name="docqa-hnsw-adopt")
            self._worker.start()

    def join(self) -> None:
        """Wait for a look under way (the store is closing)."""
        with self._start_lock:
            worker = self._worker
        if worker is not None and worker is not threading.current_thread():
            worker.join()

    @staticmethod
    def _run(work: Callable[[Signature], None], seen: Signature) -> None:
        try:
            work(seen)
        except Exception:  # a graph not adopted only costs speed: the served one still answers
            log.exception("adopting the HNSW graph file another process saved failed")
