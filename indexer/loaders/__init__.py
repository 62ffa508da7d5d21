"""Turn a source file (text, Markdown, HTML, PDF, DOCX) into a ``LoadedDocument``.

Each format has its own module; they are imported only when a file of that
format is loaded, so importing this package stays cheap. Every failure to read
a file is a ``LoadError`` naming the file and the reason, never document text.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from pathlib import Path

from indexer.documents import LoadedDocument
from indexer.errors import LoadError

__all__ = ["SUPPORTED_SUFFIXES", "content_type_for", "load_bytes", "load_path"]

_DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"

_TYPE_BY_SUFFIX: dict[str, str] = {
    ".txt": "text/plain",
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    ".html": "text/html",
    ".htm": "text/html",
    ".pdf": "application/pdf",
    ".docx": _DOCX,
}

#: (module, function) that loads each content type; aliases map to the same loader.
_LOADERS: dict[str, tuple[str, str]] = {
    "text/plain": ("text", "load_text"),
    "text/markdown": ("markdown", "load_markdown"),
    "text/x-markdown": ("markdown", "load_markdown"),
    "text/html": ("html", "load_html"),
    "application/xhtml+xml": ("html", "load_html"),
    "application/pdf": ("pdf", "load_pdf"),
    _DOCX: ("docx", "load_docx"),
}

#: File suffixes (lower case, with the dot) that ``load_path`` can read.
SUPPORTED_SUFFIXES: frozenset[str] = frozenset(_TYPE_BY_SUFFIX)


def content_type_for(path: str | Path) -> str | None:
    """The content type for ``path``'s suffix (case-insensitive), or None if unsupported."""
    return _TYPE_BY_SUFFIX.get(Path(path).suffix.lower())


def load_bytes(data: bytes, content_type: str, name: str) -> LoadedDocument:
    """Load a document of ``content_type`` from ``data``; ``name`` is its file name.

    ``content_type`` may carry parameters (``text/html; charset=utf-8``); they
    are ignored. ``name`` appears in error messages and, without its suffix, is
    the title of a document that has none. Raises ``LoadError`` for an
    unsupported type, an empty, corrupt or encrypted file, or one with no text.
    """
    media_type = content_type.split(";", 1)[0].strip().lower()
    loader = _loader_for(media_type)
    if loader is None:
        raise LoadError(f"{name}: unsupported content type {media_type!r}")
    if not data:
        raise LoadError(f"{name}: empty file, no extractable text")
    return loader(data, name)


def load_path(path: Path) -> LoadedDocument:
    """Load the file at ``path``, choosing the format by its suffix.

    Raises ``LoadError`` for an unsupported suffix, a file that cannot be read,
    and everything ``load_bytes`` refuses.
    """
    path = Path(path)
    content_type = content_type_for(path)
    if content_type is None:
        raise LoadError(f"{path.name}: unsupported file type {path.suffix!r}")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise LoadError(f"{path.name}: cannot read file ({exc.strerror or type(exc).__name__})") from exc
    return load_bytes(data, content_type, path.name)


def _loader_for(media_type: str) -> Callable[[bytes, str], LoadedDocument] | None:
    entry = _LOADERS.get(media_type)
    if entry is None:
        return None
    module, function = entry
    loader: Callable[[bytes, str], LoadedDocument] = getattr(import_module(f"{__name__}.{module}"), function)
    return loader
