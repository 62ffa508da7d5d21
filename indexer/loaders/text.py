"""Plain text: paragraphs are the runs of lines between blank lines."""

from __future__ import annotations

from indexer.documents import LoadedDocument
from indexer.loaders.base import DocumentBuilder, decode_text, split_paragraphs

CONTENT_TYPE = "text/plain"


def load_text(data: bytes, name: str) -> LoadedDocument:
    """A plain-text document titled by its file stem, one block per paragraph."""
    builder = DocumentBuilder(name, CONTENT_TYPE)
    for paragraph in split_paragraphs(decode_text(data)):
        builder.paragraph(paragraph)
    return builder.build()
