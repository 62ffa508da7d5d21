"""Files and folders only their owner may read: the data directory and all it holds.

The data directory keeps the JWT signing secret, the settings database (every
ACL and group) and the embedded index (every chunk's text). Each is created
0600 (files) / 0700 (folders) whatever the process umask, since a umask can
only take permissions away. SQLite gives a database's ``-wal`` and ``-shm``
files the mode of the database itself, so creating the database file first,
private, keeps them private too. Existing files are left as they are:
``docqa doctor`` reports any that are wider (``wider_than_private``).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

PRIVATE_FILE = 0o600
PRIVATE_DIR = 0o700


def private_dir(path: Path) -> Path:
    """Create ``path`` (and missing parents) as 0700 folders; an existing folder is left as is."""
    missing: list[Path] = []
    here = Path(path)
    while not os.path.lexists(here) and here != here.parent:
        missing.append(here)
        here = here.parent
    for folder in reversed(missing):
        try:
            os.mkdir(folder, PRIVATE_DIR)
        except FileExistsError:
            continue  # created by another process meanwhile
        # mkdir's mode is masked by the umask; a umask only removes bits, but
        # chmod anyway so the promise does not rest on that.
        os.chmod(folder, PRIVATE_DIR)
    return Path(path)


def private_file(path: Path) -> Path:
    """Create ``path`` empty and 0600 unless it exists (its folder is made private first)."""
    private_dir(Path(path).parent)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, PRIVATE_FILE)
    except FileExistsError:
        return Path(path)
    try:
        os.fchmod(fd, PRIVATE_FILE)
    finally:
        os.close(fd)
    return Path(path)


def wider_than_private(root: Path) -> list[tuple[Path, int]]:
    """Every entry under ``root`` (``root`` included) readable or writable by others than its owner.

    Links are reported by their own mode bits only and never followed.
    """
    found: list[tuple[Path, int]] = []
    if not os.path.isdir(root):
        return found
    for path in [Path(root), *_walk(Path(root))]:
        try:
            mode = os.lstat(path).st_mode
        except OSError:
            continue
        if stat.S_ISLNK(mode):
            continue
        if stat.S_IMODE(mode) & 0o077:
            found.append((path, stat.S_IMODE(mode)))
    return found


def _walk(root: Path) -> list[Path]:
    out: list[Path] = []
    for folder, dirs, files in os.walk(root, followlinks=False):
        out.extend(Path(folder) / d for d in dirs)
        out.extend(Path(folder) / f for f in files)
    return out
