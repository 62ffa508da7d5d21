"""A running server keeps purging history past its retention; a failed purge is logged, never fatal."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from service.api.cli.serve import keep_purging, purge_history


class _History:
    def __init__(self, fail: bool = False) -> None:
        self.calls = 0
        self.fail = fail
        self.purged = threading.Event()

    def purge(self) -> int:
        self.calls += 1
        if self.calls >= 3:
            self.purged.set()
        if self.fail:
            raise RuntimeError("database away")
        return 2


class _App:
    def __init__(self, history: _History) -> None:
        self.history = history


def test_keep_purging_purges_until_stopped() -> None:
    history, stop = _History(), threading.Event()
    worker = threading.Thread(target=keep_purging, args=(_App(history), stop, 0.001))
    worker.start()
    assert history.purged.wait(30)
    stop.set()
    worker.join(30)
    assert not worker.is_alive()
    calls = history.calls
    assert calls >= 3
    keep_purging(_App(history), stop, 0.001)  # already stopped: returns at once, purges nothing
    assert history.calls == calls


def test_a_failed_purge_is_logged_and_serving_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    app: Any = _App(_History(fail=True))
    assert purge_history(app) == 0
    assert "could not be purged" in caplog.text
    assert purge_history(_App(_History())) == 2
