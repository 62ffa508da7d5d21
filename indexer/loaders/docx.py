"""DOCX via python-docx: styled headings, paragraphs, and table rows, in body order."""

from __future__ import annotations

import re
from io import BytesIO

import docx
from docx.table import Table
from docx.text.paragraph import Paragraph

from indexer.documents import LoadedDocument
from indexer.errors import LoadError
from indexer.loaders.base import DocumentBuilder, unreadable

CONTENT_TYPE = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"

_HEADING_STYLE = re.compile(r"heading\s*(\d)", re.IGNORECASE)
# Encrypted Office files (and legacy .doc) are OLE compound files, not ZIP packages.
_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"


def load_docx(data: bytes, name: str) -> LoadedDocument:
    """A Word document's body text; titled by its core-properties title, else its
    first "Title" paragraph, else its file stem.

    "Title" paragraphs are level-1 headings and "Heading N" paragraphs level N
    (N + 1 when the document has a Title, so the title encloses them); each
    table row is one block, its cells joined by `` | ``.
    """
    if data.startswith(_OLE_MAGIC):
        raise LoadError(f"{name}: document is encrypted or in the legacy .doc format")
    try:
        document = docx.Document(BytesIO(data))
        items = [item for element in document.iter_inner_content() for item in _items(element)]
        core_title = document.core_properties.title
    except Exception as exc:  # zipfile, lxml and python-docx errors all mean "unreadable"
        raise unreadable(name, "DOCX", exc) from exc

    has_title = any(level == 0 for level, _ in items)
    builder = DocumentBuilder(name, CONTENT_TYPE)
    first_title: str | None = None
    for level, text in items:
        if level is None:
            builder.paragraph(text)
        elif level == 0:
            first_title = first_title or text.strip() or None
            builder.heading(text, 1)
        else:
            builder.heading(text, level + 1 if has_title else level)
    return builder.build(core_title or first_title)


def _items(element: Paragraph | Table) -> list[tuple[int | None, str]]:
    """(heading level, text) pairs: level 0 for a Title paragraph, None for body text."""
    if isinstance(element, Table):
        return [(None, row) for row in _rows(element)]
    style = (element.style.name if element.style is not None else None) or ""
    if style.lower() == "title":
        return [(0, element.text)]
    match = _HEADING_STYLE.fullmatch(style)
    return [(max(1, int(match.group(1))) if match else None, element.text)]


def _rows(table: Table) -> list[str]:
    """One line per row; a merged cell, which python-docx repeats, is written once."""
    rows: list[str] = []
    for row in table.rows:
        cells: list[str] = []
        seen: set[int] = set()
        row_cells = row.cells  # kept alive so each cell's element keeps its id
        for cell in row_cells:
            if id(cell._tc) in seen:
                continue
            seen.add(id(cell._tc))
            text = " ".join(cell.text.split())
            if text:
                cells.append(text)
        rows.append(" | ".join(cells))
    return rows
