"""Progress of long work: a bar on a terminal, periodic log lines everywhere else.

``docqa index`` reports files looked at and chunks embedded. On a terminal a
tqdm bar shows both with rates and an ETA; under cron, CI or a Kubernetes Job
(stderr is not a terminal) the same figures go to the log every ``interval_s``
seconds and once at the end, so a long run is never silent and never fills a
log with carriage returns.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any, TextIO

log = logging.getLogger("docqa.progress")


def _duration(seconds: float) -> str:
    seconds = max(0, round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


class IndexProgress:
    """Counts files and chunks of one run; draws a bar or logs lines (see the module docstring)."""

    def __init__(
        self,
        label: str,
        *,
        stream: TextIO,
        bar: bool,
        interval_s: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._label = label
        self._interval = interval_s
        self._clock = clock
        self._start = clock()
        self._last_line = self._start
        self.total: int | None = None
        self.files = 0
        self.chunks = 0
        self._bar: Any = None
        if bar:
            from tqdm import tqdm

            self._bar = tqdm(desc=label, unit="file", file=stream)
        else:
            log.setLevel(logging.INFO)  # progress lines show without --verbose

    # the pipeline's callbacks ------------------------------------------------------------
    def on_total(self, files: int) -> None:
        self.total = files
        if self._bar is not None:
            self._bar.total = files
            self._bar.refresh()

    def on_files(self, count: int) -> None:
        self.files += count
        if self._bar is not None:
            self._bar.update(count)
        self._maybe_log()

    def on_chunks(self, count: int) -> None:
        self.chunks += count
        if self._bar is not None:
            self._bar.set_postfix_str(f"{self.chunks} chunks, {self.chunk_rate():.1f} chunks/s", refresh=True)
        self._maybe_log()

    # figures ------------------------------------------------------------------------------
    def chunk_rate(self) -> float:
        elapsed = self._clock() - self._start
        return self.chunks / elapsed if elapsed > 0 else 0.0

    def eta_s(self) -> float | None:
        """Seconds left at the run's file rate so far; None until a file is done."""
        elapsed = self._clock() - self._start
        if self.total is None or self.files == 0 or elapsed <= 0:
            return None
        return (self.total - self.files) * elapsed / self.files

    def line(self) -> str:
        total = "?" if self.total is None else str(self.total)
        eta = self.eta_s()
        return (
            f"{self._label}: {self.files}/{total} files, {self.chunks} chunks, "
            f"{self.chunk_rate():.1f} chunks/s, elapsed {_duration(self._clock() - self._start)}"
            + ("" if eta is None else f", ETA {_duration(eta)}")
        )

    def _maybe_log(self) -> None:
        if self._bar is not None:
            return
        now = self._clock()
        if now - self._last_line >= self._interval:
            self._last_line = now
            log.info("%s", self.line())

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
        else:
            log.info("%s (done)", self.line())
