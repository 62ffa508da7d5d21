"""PDF via pypdf: the text of each page, cut into paragraphs at blank lines."""

from __future__ import annotations

from io import BytesIO

from pypdf import PasswordType, PdfReader

from acl.errors import LoadError
from indexer.documents import LoadedDocument
from indexer.loaders.base import DocumentBuilder, split_paragraphs, unreadable

CONTENT_TYPE = "application/pdf"

# Placeholders PDF producers write when the author set no title.
_NO_TITLE = frozenset({"untitled", "untitled document", "(anonymous)"})


def load_pdf(data: bytes, name: str) -> LoadedDocument:
    """A PDF's text, page by page; titled by its metadata title, else its file stem.

    A PDF encrypted with a non-empty user password, a corrupt PDF, and one
    with no text layer (a scan) raise ``LoadError``.
    """
    try:
        reader = PdfReader(BytesIO(data))
        if reader.is_encrypted:
            _decrypt_with_empty_password(reader, name)
        title = _metadata_title(reader)
        pages = [page.extract_text() for page in reader.pages]
    except LoadError:
        raise
    except Exception as exc:  # pypdf raises many kinds on damaged files; all mean "unreadable"
        raise unreadable(name, "PDF", exc) from exc
    builder = DocumentBuilder(name, CONTENT_TYPE)
    for page in pages:
        for paragraph in split_paragraphs(page):
            builder.paragraph(paragraph)
    return builder.build(title)


def _decrypt_with_empty_password(reader: PdfReader, name: str) -> None:
    """Decrypt with the empty user password, which many "protected" PDFs use.

    Raises ``LoadError`` when a real password is needed or the cipher is unsupported.
    """
    encrypted = LoadError(f"{name}: PDF is encrypted (a password is needed to read it)")
    try:
        result = reader.decrypt("")
    except Exception as exc:  # an unsupported algorithm or missing crypto library
        raise encrypted from exc
    if result is PasswordType.NOT_DECRYPTED:
        raise encrypted


def _metadata_title(reader: PdfReader) -> str | None:
    """The document-information title, if it is a usable string."""
    try:
        metadata = reader.metadata
        title = metadata.title if metadata is not None else None
    except Exception:
        return None
    if not isinstance(title, str) or title.strip().lower() in _NO_TITLE | {""}:
        return None
    return title
