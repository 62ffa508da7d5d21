"""Which console asset a request names, read as the server reads the path: after percent-decoding.

A request path reaches the app decoded once (``..%2f`` is ``../``), so an asset is named by a plain relative
path alone: non-empty segments, none ``.`` or ``..``, and no backslash, ``%`` (a second round of encoding),
control or invisible format character. Anything else names no asset, whatever it would resolve to. The file
is then resolved (links included) and must be a regular file inside the folder under exactly that name; an
admin-only asset is recognised by its resolved name in any letter case and by its identity on disk, so no
other spelling, on any file system, reaches it as a public file.
"""

from __future__ import annotations

import os
import unicodedata
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

from starlette.types import Scope


@dataclass(frozen=True, slots=True)
class Asset:
    """A file to serve: its path relative to the folder, and whether administrators alone may have it."""

    name: str
    admin_only: bool


def route_path(scope: Scope) -> str:
    """The decoded request path below the mount (``/static/admin.js`` → ``/admin.js``)."""
    path, root = str(scope["path"]), str(scope.get("root_path", ""))
    return path[len(root) :] if root and path.startswith(root) else path


def asset_name(path: str) -> str | None:
    """``path`` (decoded, below the mount) as a plain relative name, or None when it is anything else."""
    name = path.removeprefix("/")
    if not name or "\\" in name or "%" in name:
        return None
    if any(unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Zl", "Zp") for ch in name):
        return None
    if any(segment in ("", ".", "..") for segment in name.split("/")):
        return None
    return name


def resolve_asset(folder: Path, path: str, admin_only: Collection[str]) -> Asset | None:
    """The asset the decoded ``path`` names in ``folder``; None when it names none, leaves the folder, is not a
    regular file, or is a page (``.html``: pages are served by their own routes)."""
    name = asset_name(path)
    if name is None:
        return None
    root = os.path.realpath(folder)
    full = os.path.realpath(os.path.join(root, name))
    if os.path.commonpath([full, root]) != root or not os.path.isfile(full):
        return None
    if os.path.relpath(full, root).replace(os.sep, "/") != name or name.casefold().endswith(".html"):
        return None
    folded = {a.casefold() for a in admin_only}
    admin = name.casefold() in folded or any(_same_file(full, os.path.join(root, a)) for a in admin_only)
    return Asset(name, admin)


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False
