"""What a loader hands the chunker: a document's text and its structure."""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from acl.errors import InvalidArgument
from acl.model import Acl

#: The longest title a pushed document may give itself.
MAX_TITLE_CHARS = 500

BlockKind = Literal["heading", "paragraph"]


@dataclass(frozen=True, slots=True)
class Block:
    """A span of the document's ``text``: a heading or a paragraph-like block.

    ``start``/``end`` are character offsets into ``LoadedDocument.text``
    (``text[start:end]`` is the block's text). ``level`` is the heading level
    (1 = top) for headings and 0 for paragraphs. List items, table rows, code
    blocks and PDF paragraphs are all ``paragraph`` blocks. ``page`` is the
    1-based page the block starts on (0: the document has no pages); ``anchor``
    is, for a heading, the fragment id a link to it names (``""``: none).
    """

    kind: BlockKind
    start: int
    end: int
    level: int = 0
    page: int = 0
    anchor: str = ""


@dataclass(frozen=True, slots=True)
class LoadedDocument:
    """A document's extracted plain text, its title, and its blocks in order.

    Blocks do not overlap and are sorted by ``start``; text between blocks is
    whitespace or separators that the chunker may ignore.
    """

    text: str
    title: str
    blocks: tuple[Block, ...] = field(default_factory=tuple)
    content_type: str = "text/plain"


@dataclass(frozen=True, slots=True)
class DocumentRecord:
    """A document as the catalog (the settings database) knows it, authoritative ACL included."""

    store_id: str
    id: str
    title: str
    source_uri: str
    content_hash: str
    text: str
    acl: Acl
    origin: str = "api"
    chunk_count: int = 0
    indexed_at: datetime | None = field(default=None, compare=False)


def validate_title(title: object) -> str:
    """A pushed document's title: one line of at most ``MAX_TITLE_CHARS`` characters, no control or format
    characters (it is shown to readers and quoted in prompts); InvalidArgument naming what is wrong."""
    if not isinstance(title, str):
        raise InvalidArgument("title must be a string")
    if len(title) > MAX_TITLE_CHARS:
        raise InvalidArgument(f"title is longer than {MAX_TITLE_CHARS} characters")
    if any(unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp") for ch in title):
        raise InvalidArgument("title must be one line without control characters")
    return title
