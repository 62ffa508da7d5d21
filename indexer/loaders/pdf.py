"""PDF via pypdf: each page's text cleaned for reading, with its page number and the outline's headings.

The text of every page goes through ``indexer.loaders.pdf_text`` (running
headers and footers, page numbers and dot-leader lines removed, hyphenation
repaired); each block remembers the page it is on, so chunks and citations
carry ``pages``. The outline (bookmarks) gives the headings: each entry
becomes a heading block on its page, at the line that prints it when one does
(else before the rest of that page's text), nested entries one level deeper.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from io import BytesIO
from typing import Any

from pypdf import PasswordType, PdfReader

from indexer.documents import MAX_TITLE_CHARS, LoadedDocument
from indexer.errors import LoadError
from indexer.loaders.base import DocumentBuilder, one_line, unreadable
from indexer.loaders.pdf_front import drop_front_matter
from indexer.loaders.pdf_text import Page, clean_pages, heading_key, normalise, page_lines

CONTENT_TYPE = "application/pdf"

#: Outline entries read at most (a hostile file may nest thousands).
MAX_OUTLINE_ENTRIES = 5_000

_PDFIUM = threading.Lock()
#: The most bytes a PDF's page content streams may decode to, all pages together (Debian's 193-page Policy
#: Manual: 4.6 MB).
MAX_CONTENT_BYTES = 64 * 2**20
#: Where PDFium joined a line that ends in a hyphen to the next (U+FFFE or U+0002): the hyphen and the line break
#: the page prints, which ``repair_hyphenation`` joins or keeps (also across pages, once running headers and
#: footers are gone).
_SOFT_BREAK = re.compile("[\ufffe\x02]")

# Placeholders PDF producers write when the author set no title.
_NO_TITLE = frozenset({"untitled", "untitled document", "(anonymous)", "title", "document", "slide 1"})
# A file name or path where a title should be ("Microsoft Word - report.docx", "C:\\work\\x.tex").
_FILE_NAME = re.compile(
    r"\.(?:docx?|pdf|tex|dvi|ps|rtf|odt|indd|qxd|pages|txt|html?|pptx?|xlsx?)$"
    r"|^[a-z]:\\|\\|^/|^microsoft (?:word|powerpoint|excel) - "
)


@dataclass(frozen=True, slots=True)
class OutlineEntry:
    """One bookmark: its title, its depth (1 = top) and the 0-based page it points to."""

    title: str
    level: int
    page: int


def load_pdf(data: bytes, name: str) -> LoadedDocument:
    """A PDF's cleaned text, page by page, with the outline's headings.

    Titled by its metadata title when that is a real title, else its first
    line when that reads like one, else its first outline heading, else its
    file stem. A PDF encrypted with a non-empty user password, a corrupt PDF,
    and one with no text layer (a scan) raise ``LoadError``.
    """
    try:
        reader = PdfReader(BytesIO(data))
        if reader.is_encrypted:
            _decrypt_with_empty_password(reader, name)
        title = _metadata_title(reader)
        texts = page_texts(data, len(reader.pages), reader)
    except LoadError:
        raise
    except Exception as exc:  # pypdf raises many kinds on damaged files; all mean "unreadable"
        raise unreadable(name, "PDF", exc) from exc
    outline = read_outline(reader, len(texts))
    keep: list[set[str]] = [set() for _ in texts]
    for entry in outline:
        keep[entry.page].add(heading_key(entry.title))
    pages = clean_pages([drop_front_matter(page_lines(text)) for text in texts], keep)
    builder = DocumentBuilder(name, CONTENT_TYPE)
    _lay_out(builder, pages, outline)
    fallback = _first_line_title(pages) or next((e.title for e in outline), None)
    return builder.build(title or fallback)


def page_texts(data: bytes, page_count: int, reader: PdfReader) -> list[str]:
    """Each page's text as PDFium lays it out (``pypdfium2``); pypdf's extraction when PDFium cannot open the file.

    PDFium places words by the glyphs' positions, so text a typesetter set with
    kerning offsets instead of space characters (pdfTeX, dblatex: Debian's
    DocBook manuals) keeps its word spaces, where pypdf's plain extraction
    writes "Thisdocumentmaybeused…" and its layout mode is no better.
    """
    _bounded_contents(reader)
    try:
        texts = _pdfium_texts(data)
    except Exception:  # PDFium refuses what pypdf may still read (a cipher it lacks, a damaged xref table)
        return [page.extract_text() for page in reader.pages]
    if len(texts) != page_count:
        return [page.extract_text() for page in reader.pages]
    return texts


def _bounded_contents(reader: PdfReader) -> None:
    """Raise (an unreadable file) when the pages' content streams decode to more than MAX_CONTENT_BYTES.

    PDFium decodes without a limit: a 458 KB file whose content stream inflates to 150 MB cost 2.2 GB and 15 s.
    pypdf decodes each stream under its own limits first (a stream past them raises), and the sum is bounded.
    """
    total = 0
    for page in reader.pages:
        contents = page.get_contents()
        total += len(contents.get_data()) if contents is not None else 0
        if total > MAX_CONTENT_BYTES:
            raise ValueError(f"page content beyond {MAX_CONTENT_BYTES // 2**20} MB")


def _pdfium_texts(data: bytes) -> list[str]:
    import pypdfium2  # imported when a PDF is read: the indexer's other paths never need it

    texts: list[str] = []
    # PDFium is not thread-safe: one document at a time in this process.
    with _PDFIUM:
        document = pypdfium2.PdfDocument(data)
        try:
            for page in document:
                textpage = page.get_textpage()
                try:
                    text = textpage.get_text_range()
                finally:
                    textpage.close()
                    page.close()
                texts.append(_SOFT_BREAK.sub("-\n", text.replace("\r\n", "\n").replace("\r", "\n")))
        finally:
            document.close()
    return texts


def read_outline(reader: PdfReader, page_count: int) -> list[OutlineEntry]:
    """The outline's entries in order, each with its level and page; [] when it is missing or unreadable.

    Entries whose destination is not a page of the document are skipped.
    """
    entries: list[OutlineEntry] = []
    try:
        for item, level in _walk(reader.outline):
            if len(entries) >= MAX_OUTLINE_ENTRIES:
                break
            title = one_line(str(getattr(item, "title", "") or ""))
            try:
                page = reader.get_destination_page_number(item)
            except Exception:  # a destination pypdf cannot resolve: not a heading we can place
                continue
            if title and page is not None and 0 <= page < page_count:
                entries.append(OutlineEntry(title[:MAX_TITLE_CHARS], level, page))
    except Exception:  # a damaged outline is no reason to lose the text
        return []
    return entries


def _walk(items: Any) -> Iterator[tuple[Any, int]]:
    """Outline items with their depth; pypdf nests a list of children after their parent. Iterative."""
    stack: list[tuple[Iterator[Any], int]] = [(iter(items or ()), 1)]
    while stack:
        children, level = stack[-1]
        item = next(children, None)
        if item is None:
            stack.pop()
        elif isinstance(item, list):
            stack.append((iter(item), level + 1))
        else:
            yield item, level


def _lay_out(builder: DocumentBuilder, pages: list[Page], outline: list[OutlineEntry]) -> None:
    """Feed the pages to ``builder``: paragraphs at blank lines, the outline's headings where they print."""
    by_page: dict[int, list[OutlineEntry]] = {}
    for entry in outline:
        by_page.setdefault(entry.page, []).append(entry)
    for index, lines in enumerate(pages):
        number = index + 1
        cursor = 0
        for entry in by_page.get(index, ()):
            found = _find_heading(lines, cursor, entry.title)
            if found is None:
                builder.heading(entry.title, entry.level, page=number)
                continue
            at, size = found
            _paragraphs(builder, lines[cursor:at], number)
            builder.heading(" ".join(lines[at : at + size]), entry.level, page=number)
            cursor = at + size
        _paragraphs(builder, lines[cursor:], number)


def _find_heading(lines: Page, start: int, title: str) -> tuple[int, int] | None:
    """Where ``title`` prints from ``start`` on: (line index, 1 or 2 lines — a heading may wrap)."""
    exact, key = normalise(title), heading_key(title)
    for at in range(start, len(lines)):
        candidates = [lines[at]]
        if at + 1 < len(lines) and lines[at] and lines[at + 1]:
            candidates.append(f"{lines[at]} {lines[at + 1]}")
        for size, candidate in enumerate(candidates, start=1):
            if candidate and (normalise(candidate) == exact or heading_key(candidate) == key):
                return at, size
    return None


def _paragraphs(builder: DocumentBuilder, lines: Page, page: int) -> None:
    paragraph: list[str] = []
    for line in [*lines, ""]:
        if line:
            paragraph.append(line)
        elif paragraph:
            builder.paragraph("\n".join(paragraph), page=page)
            paragraph = []


def _first_line_title(pages: list[Page]) -> str | None:
    """The document's first line, when it reads like a title: short, with letters, not a sentence."""
    first = next((line for lines in pages for line in lines if line), "")
    words = first.split()
    short = 0 < len(words) <= 15 and len(first) <= 150
    if short and sum(c.isalpha() for c in first) >= 3 and not first.endswith((".", ",", ";", ":")):
        return first
    return None


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
    """The document-information title, if it is a real title (not a placeholder or a file name)."""
    try:
        metadata = reader.metadata
        title = metadata.title if metadata is not None else None
    except Exception:
        return None
    if not isinstance(title, str):
        return None
    title = one_line(title)
    lowered = title.lower()
    if lowered in _NO_TITLE or lowered.startswith("untitled") or _FILE_NAME.search(lowered):
        return None
    if sum(ch.isalpha() for ch in title) < 2 or len(title) > MAX_TITLE_CHARS:
        return None
    return title
