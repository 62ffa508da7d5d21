"""One ``docqa adapt`` run per store at a time: an exclusive lock on ``<data_dir>/adapted/<store>/lock``.

The lock file holds the holder's pid and start time, so a second run (the CLI's or a server's) is refused
with who holds it. The kernel drops the lock when its process dies, so a killed run never leaves a store
locked.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

from acl.errors import ResourceExhausted
from service.ranking.adapted_model import store_folder


@contextlib.contextmanager
def store_lock(data_dir: Path, store_id: str) -> Iterator[None]:
    """The store's adapt lock, or ResourceExhausted naming the run that holds it."""
    folder = store_folder(data_dir, store_id)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "lock"
    with path.open("a+") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            holder = f.read().strip() or "another process"
            raise ResourceExhausted(
                f"another docqa adapt is running on store {store_id!r} ({holder}); wait for it to end"
            ) from None
        f.seek(0)
        f.truncate()
        f.write(f"pid {os.getpid()} since {datetime.now(UTC).isoformat(timespec='seconds')}")
        f.flush()
        try:
            yield
        finally:
            f.seek(0)
            f.truncate()
            fcntl.flock(f, fcntl.LOCK_UN)


def running(data_dir: Path, store_id: str) -> bool:
    """Whether an adapt run holds the store's lock now."""
    path = store_folder(data_dir, store_id) / "lock"
    if not path.is_file():
        return False
    with path.open("a+") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(f, fcntl.LOCK_UN)
        return False
