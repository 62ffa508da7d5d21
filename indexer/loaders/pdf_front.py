"""What a typesetter prints before a PDF's text for readers of paper: DocBook's title-page tables and a table of
contents, dropped page by page before the text is read (``indexer.loaders.pdf``)."""

from __future__ import annotations

import re

from indexer.loaders.pdf_text import ROMAN, Page, is_leader_line, normalise


def drop_front_matter(lines: Page) -> Page:
    """A page without the tables a typesetter prints for paper: DocBook's title-page "COLLABORATORS" and
    "REVISION HISTORY" tables (dblatex, asciidoc's a2x), and a table of contents whose entries end in page
    numbers with no dot leaders (PDFium does not print the leaders as text)."""
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = normalise(lines[i])
        if line in _TITLE_TABLES and _table_header_follows(lines, i):
            i = _end_of_block(lines, i)
            continue
        if line in _CONTENTS and _toc_follows(lines, i + 1):
            i += 1
            while i < len(lines) and (not lines[i] or _in_toc(lines, i)):
                i += 1
            continue
        out.append(lines[i])
        i += 1
    # A page of the contents that goes on from the page before (no "Contents" heading on it).
    texted = [j for j, line in enumerate(out) if line]
    in_toc = [j for j in texted if _in_toc(out, j)]
    if len(in_toc) >= 5 and len(in_toc) * 5 >= len(texted) * 4:
        drop = set(in_toc)
        out = [line for j, line in enumerate(out) if j not in drop]
    return out


#: What opens a DocBook title-page table, and the header row that proves it is one.
_TITLE_TABLES = frozenset({"collaborators", "revision history"})
_TABLE_HEADERS = (re.compile(r"\bACTION\s+NAME\s+DATE\s+SIGNATURE\b"), re.compile(r"\bNUMBER\s+DATE\s+DESCRIPTION\b"))
_CONTENTS = frozenset({"contents", "table of contents"})
#: A table-of-contents entry: numbering (or a capital), a title, a page number (arabic or roman).
_TOC_ENTRY = re.compile(
    rf"^(?:(?:chapter|appendix|part)\s+)?(?:[A-Z]|\d+(?:\.\d+)*)\.?\s+\S.*\s(?:\d{{1,4}}|{ROMAN})$", re.IGNORECASE
)


#: The end of an entry: a short title with its page number ("Index 183").
_TOC_TAIL = re.compile(rf"^[A-Z][^.]{{0,80}}\s(?:\d{{1,4}}|{ROMAN})$")


def _table_header_follows(lines: Page, at: int) -> bool:
    return any(any(h.search(line) for h in _TABLE_HEADERS) for line in lines[at + 1 : at + 6])


def _end_of_block(lines: Page, at: int) -> int:
    """Past the table at ``at``: up to the blank line after its header row (a revision table's rows too)."""
    i = at + 1
    while i < len(lines) and not any(h.search(lines[i]) for h in _TABLE_HEADERS[1:]) and lines[i]:
        i += 1
    # the revision history's header row and its rows, down to the next blank line
    while i < len(lines) and lines[i]:
        i += 1
    return i


def _in_toc(lines: Page, at: int) -> bool:
    """An entry of the table of contents at ``at``, or a wrapped entry's first line (the entry follows)."""
    line = lines[at].strip()
    if is_leader_line(line):
        return True
    if len(line.split()) > 16 or line.endswith("."):
        return False
    if _TOC_ENTRY.match(line) or _TOC_TAIL.match(line):
        return True
    after = next((other.strip() for other in lines[at + 1 : at + 3] if other), "")
    return bool(_TOC_ENTRY.match(after) or _TOC_TAIL.match(after) or is_leader_line(after))


def _toc_follows(lines: Page, at: int) -> bool:
    entries = [line for line in lines[at : at + 6] if line]
    return len(entries) >= 3 and sum(bool(_TOC_ENTRY.match(line.strip())) for line in entries) >= len(entries) - 1
