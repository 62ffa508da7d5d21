"""The folder scan that cannot leave its folder.

A folder handed to ``docqa index`` may hold entries planted by anyone who can
write to it: a symbolic link to the JWT secret, to ``/proc/self/environ`` or to
a stricter folder; a FIFO that blocks the reader forever; a name with a
newline that no manifest rule can match, or with an invisible zero-width or
bidi character that makes it look like a name a rule does match. So the scan never follows a link
(file or folder), reads only regular files, opens every path component
relative to the folder with ``O_NOFOLLOW`` (a component swapped for a link
after the scan is refused, not followed), and names every entry it refuses,
with the reason, instead of passing over it in silence.
"""

from __future__ import annotations

import errno
import os
import stat
import unicodedata
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from indexer.errors import LoadError, UnsafePath
from indexer.index.attributes import from_millis

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: opening a FIFO must not wait for a writer; fstat refuses it next.
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC

LINK = "symbolic link (not followed)"
FOLDER_LINK = "symbolic link to a folder (not followed)"
NOT_A_FOLDER = "not a folder"
HARD_LINK = "hard link (the same file has another name, maybe outside the folder)"


def _hard_linked(info: os.stat_result) -> bool:
    """A regular file with more than one name: one of them may be a file outside the folder."""
    return info.st_nlink > 1


@dataclass(slots=True)
class ScanResult:
    """What a scan found, by path relative to the folder (``/``-separated)."""

    files: list[str] = field(default_factory=list)
    unsupported: list[str] = field(default_factory=list)
    refused: dict[str, str] = field(default_factory=dict)


def shown(name: str) -> str:
    """``name`` printable on one line: control and invisible format characters and undecodable bytes escaped."""
    out: list[str] = []
    for char in name:
        code = ord(char)
        if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8 (surrogateescape)
            out.append(f"\\x{code - 0xDC00:02x}")
        elif unicodedata.category(char) in ("Cc", "Cf", "Cs", "Zl", "Zp") or char == "\\":
            out.append(char.encode("unicode_escape").decode("ascii"))
        else:
            out.append(char)
    return "".join(out)


def name_problem(name: str) -> str | None:
    """Why no manifest rule could match ``name`` reliably, or None when it is fine."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return "file name is not valid UTF-8 (no ACL rule can match it)"
    if any(unicodedata.category(c) in ("Cc", "Zl", "Zp") for c in name):
        return "file name holds a control character (no ACL rule can match it)"
    # Zero-width characters and bidi controls (Unicode Cf): "finance\u200b" looks like "finance" to whoever
    # writes or reads the manifest, yet no "finance/**" rule matches it, so its files would fall to a wider rule.
    if any(unicodedata.category(c) == "Cf" for c in name):
        return "file name holds an invisible format character (no ACL rule can match it reliably)"
    return None


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "not a regular file (FIFO)"
    if stat.S_ISSOCK(mode):
        return "not a regular file (socket)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "not a regular file (device)"
    return "not a regular file"


def scan_folder(root: Path, supported: frozenset[str], ignore: frozenset[str] = frozenset()) -> ScanResult:
    """Regular files under ``root`` with a ``supported`` suffix, sorted; others reported.

    Hidden entries (a leading ``.``) and the relative paths in ``ignore`` are
    passed over. Links, special files and unmatchable names land in
    ``refused`` with the reason; other suffixes in ``unsupported``.
    """
    result = ScanResult()
    fd = os.open(os.path.realpath(root), _DIR_FLAGS & ~os.O_NOFOLLOW)
    try:
        _scan(fd, "", supported, ignore, result)
    finally:
        os.close(fd)
    return result


def _scan(fd: int, prefix: str, supported: frozenset[str], ignore: frozenset[str], result: ScanResult) -> None:
    with os.scandir(fd) as entries:
        listed = sorted(entries, key=lambda e: e.name)
    for entry in listed:
        name = entry.name
        relative = prefix + name
        if name.startswith(".") or relative in ignore:
            continue
        problem = name_problem(name)
        if problem is not None:
            result.refused[shown(relative)] = problem
            continue
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError as exc:
            result.refused[relative] = f"cannot inspect ({exc.strerror})"
            continue
        mode = info.st_mode
        if stat.S_ISLNK(mode):
            result.refused[relative] = FOLDER_LINK if _points_to_folder(name, fd) else LINK
        elif stat.S_ISDIR(mode):
            try:
                child = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                result.refused[relative] = _open_reason(exc, name, fd)
                continue
            try:
                _scan(child, relative + "/", supported, ignore, result)
            finally:
                os.close(child)
        elif not stat.S_ISREG(mode):
            result.refused[relative] = _kind(mode)
        elif os.path.splitext(name)[1].lower() in supported and _hard_linked(info):
            result.refused[relative] = HARD_LINK
        elif os.path.splitext(name)[1].lower() in supported:
            result.files.append(relative)
        else:
            result.unsupported.append(relative)


def _points_to_folder(name: str, fd: int) -> bool:
    """Whether the link ``name`` names a folder; only to word the report (never opened)."""
    try:
        return stat.S_ISDIR(os.stat(name, dir_fd=fd).st_mode)
    except OSError:
        return False


def _open_reason(exc: OSError, name: str, dir_fd: int) -> str:
    """Why opening ``name`` in ``dir_fd`` without following links failed, in the report's words."""
    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
        # O_NOFOLLOW on a link answers ELOOP, or ENOTDIR together with O_DIRECTORY.
        try:
            is_link = stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
        except OSError:
            is_link = False
        return LINK if is_link or exc.errno == errno.ELOOP else NOT_A_FOLDER
    return f"cannot open ({exc.strerror or type(exc).__name__})"


@contextmanager
def _opened(root: Path, relative: str) -> Iterator[int]:
    """A read-only fd of ``root/relative``, every component opened without following links."""
    parts = relative.split("/")
    if not relative or any(p in ("", ".", "..") for p in parts):
        raise UnsafePath(f"{relative!r} is not a plain path inside the folder")
    # The folder itself is named by the administrator: resolve it once, follow nothing below it.
    try:
        fds = [os.open(os.path.realpath(root), _DIR_FLAGS & ~os.O_NOFOLLOW)]
    except OSError as exc:
        raise LoadError(f"{root}: cannot open folder ({exc.strerror or type(exc).__name__})") from None
    try:
        for position, part in enumerate(parts):
            flags = _DIR_FLAGS if position < len(parts) - 1 else _FILE_FLAGS
            try:
                fds.append(os.open(part, flags, dir_fd=fds[-1]))
            except OSError as exc:
                reason = _open_reason(exc, part, fds[-1])
                # A link is refused; a file that vanished or may not be read simply failed.
                error = UnsafePath if reason in (LINK, NOT_A_FOLDER) else LoadError
                raise error(f"{shown(relative)}: {reason}") from None
        yield fds[-1]
    finally:
        for fd in reversed(fds):
            os.close(fd)


def read_inside(root: Path, relative: str, max_bytes: int | None = None, *, allow_hard_links: bool = False) -> bytes:
    """The bytes of the regular file ``root/relative``, never through a link.

    ``root`` is the folder's resolved path (``Path.resolve``), as the scan saw it.
    Raises ``UnsafePath`` for a link anywhere on the way, a non-regular file,
    a hard link (unless ``allow_hard_links``), a path that leaves ``root``, or
    a file larger than ``max_bytes``; and ``LoadError`` for a file that cannot
    be opened (gone, no permission).
    """
    with _opened(root, relative) as fd:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UnsafePath(f"{shown(relative)}: {_kind(info.st_mode)}")
        if not allow_hard_links and _hard_linked(info):
            raise UnsafePath(f"{shown(relative)}: {HARD_LINK}")
        if max_bytes is not None and info.st_size > max_bytes:
            raise UnsafePath(f"{shown(relative)}: larger than {max_bytes} bytes")
        # Defence in depth: where the kernel says the open file lives.
        where = os.path.realpath(f"/proc/self/fd/{fd}") if os.path.isdir("/proc/self/fd") else None
        if where is not None and where.startswith("/") and not _inside(Path(where), root):
            raise UnsafePath(f"{shown(relative)}: resolves outside the folder")
        chunks: list[bytes] = []
        while block := os.read(fd, 1 << 20):
            chunks.append(block)
        return b"".join(chunks)


def modified_inside(root: Path, relative: str) -> datetime:
    """The modification time (UTC) of the regular file ``root/relative``, reached as ``read_inside`` reaches it."""
    with _opened(root, relative) as fd:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UnsafePath(f"{shown(relative)}: {_kind(info.st_mode)}")
        return from_millis(info.st_mtime_ns // 1_000_000)


def read_file_nofollow(path: Path, max_bytes: int | None = None) -> bytes:
    """The bytes of the regular file ``path``; its last component must not be a link."""
    # The manifest is named by the administrator and never indexed: a hard link is no leak.
    return read_inside(Path(os.path.realpath(path.parent)), path.name, max_bytes, allow_hard_links=True)


def _inside(path: Path, root: Path) -> bool:
    # ``root`` as the caller resolved it, not resolved again: a folder swapped for a link
    # since (by whoever may write to its parent) resolves elsewhere, and is refused.
    try:
        path.relative_to(os.path.abspath(root))
    except ValueError:
        return False
    return True
