"""What every loader shares: text decoding, clean-up, and building a ``LoadedDocument``.

A loader feeds headings and paragraphs, in reading order, to a ``DocumentBuilder``;
the builder owns the one normalised ``text`` (blocks joined by a blank line) and the
block offsets into it, so no loader has to do offset arithmetic itself.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import replace
from pathlib import PurePath

from indexer.documents import Block, LoadedDocument
from indexer.errors import LoadError

BLOCK_SEPARATOR = "\n\n"

# C0/C1 control characters other than tab and newline; they only confuse tokenizers.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_TRAILING_SPACE = re.compile(r"[ \t\u00a0]+\n")
_BLANK_LINES = re.compile(r"\n\s*\n")
_WHITESPACE = re.compile(r"\s+")


def decode_text(data: bytes) -> str:
    """``data`` as text: UTF-8 (BOM allowed), else a UTF-16 BOM, else detected, else Latin-1.

    Never fails: Latin-1 maps every byte to a character.
    """
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        pass
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError:
            pass
    detected = _detect(data)
    return detected if detected is not None else data.decode("latin-1")


def _detect(data: bytes) -> str | None:
    """Decode with ``charset_normalizer`` when it happens to be installed."""
    try:
        from charset_normalizer import from_bytes
    except ImportError:
        return None
    best = from_bytes(data).best()
    return str(best) if best is not None else None


def clean_block(text: str) -> str:
    """One block's text: unified newlines, no control characters, no blank lines, stripped."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = _CONTROL.sub("", text)
    text = _TRAILING_SPACE.sub("\n", text)
    text = _BLANK_LINES.sub("\n", text)
    return text.strip()


def one_line(text: str) -> str:
    """``text`` with every run of whitespace (newlines included) turned into one space."""
    return _WHITESPACE.sub(" ", _CONTROL.sub("", text)).strip()


def split_paragraphs(text: str) -> list[str]:
    """``text`` cut at blank lines, newlines unified first."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return _BLANK_LINES.split(text)


def stem_of(name: str) -> str:
    """The title a document without one gets: its file name without the suffix."""
    return PurePath(name).stem or name


def unreadable(name: str, what: str, exc: BaseException) -> LoadError:
    """A ``LoadError`` for a file a library could not parse; names the error class only.

    Library messages can quote bytes of the file, so they stay out of the message.
    """
    return LoadError(f"{name}: cannot read {what}: corrupt or unsupported file ({type(exc).__name__})")


class DocumentBuilder:
    """Accumulates headings and paragraphs and lays them out as one normalised text."""

    def __init__(self, name: str, content_type: str) -> None:
        self._name = name
        self._content_type = content_type
        self._parts: list[str] = []
        self._blocks: list[Block] = []
        self._length = 0
        self.first_h1: str | None = None

    def heading(self, text: str, level: int, *, anchor: str = "", page: int = 0) -> None:
        """Add a heading on a line of its own; empty headings are dropped.

        ``anchor``: the fragment id that links to it; ``page``: the 1-based page it is on (0: no pages).
        """
        text = one_line(text)
        if text:
            level = min(max(level, 1), 9)
            if level == 1 and self.first_h1 is None:
                self.first_h1 = text
            self._add(Block("heading", 0, 0, level, page, one_line(anchor)), text)

    def paragraph(self, text: str, *, page: int = 0) -> None:
        """Add a paragraph-like block (list item, table row, code); blank ones are dropped."""
        text = clean_block(text)
        if text:
            self._add(Block("paragraph", 0, 0, 0, page), text)

    def _add(self, block: Block, text: str) -> None:
        if self._parts:
            self._parts.append(BLOCK_SEPARATOR)
            self._length += len(BLOCK_SEPARATOR)
        start = self._length
        self._parts.append(text)
        self._length += len(text)
        self._blocks.append(replace(block, start=start, end=self._length))

    def build(self, title: str | None = None) -> LoadedDocument:
        """The document; ``title`` (whitespace collapsed) or else the file's stem.

        Raises ``LoadError`` when nothing but whitespace was extracted.
        """
        if not self._blocks:
            raise LoadError(f"{self._name}: no extractable text")
        clean_title = one_line(title) if title else ""
        return LoadedDocument(
            text="".join(self._parts),
            title=clean_title or stem_of(self._name),
            blocks=tuple(self._blocks),
            content_type=self._content_type,
        )
