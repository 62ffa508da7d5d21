"""HTML via BeautifulSoup and lxml: headings, paragraphs, list items, table rows, code."""

from __future__ import annotations

import re
import warnings

from bs4 import BeautifulSoup, MarkupResemblesLocatorWarning, XMLParsedAsHTMLWarning
from bs4.element import NavigableString, PageElement, PreformattedString, Tag

from indexer.documents import LoadedDocument
from indexer.loaders.anchors import heading_anchor, remove_permalinks
from indexer.loaders.base import DocumentBuilder, decode_text, one_line
from indexer.loaders.hidden import remove_hidden

CONTENT_TYPE = "text/html"

#: Elements whose content is never document text.
_DROPPED = ("script", "style", "nav", "noscript", "template", "svg", "iframe", "object")
_HEADING = re.compile(r"h([1-6])")
#: Elements that end the running paragraph before and after them.
_BLOCKS = frozenset(
    {
        *("p", "div", "li", "ul", "ol", "dl", "dt", "dd", "blockquote", "hr", "center"),
        *("section", "article", "main", "aside", "header", "footer", "figure", "figcaption"),
        *("table", "thead", "tbody", "tfoot", "caption", "form", "fieldset", "legend"),
        *("details", "summary", "address", "body", "html"),
    }
)


def load_html(data: bytes, name: str) -> LoadedDocument:
    """An HTML page as plain text; titled by ``<title>``, else its first H1, else its stem.

    Scripts, styles, navigation, comments and hidden elements (``hidden``,
    ``aria-hidden``, ``display: none`` and the like: ``indexer.loaders.hidden``)
    are dropped; each heading, paragraph, list item, ``<pre>`` and table row
    (cells joined by `` | ``) is a block. Each heading carries its anchor, and
    permalink glyphs (Sphinx's ``¶`` and the like) are removed
    (``indexer.loaders.anchors``).
    """
    with warnings.catch_warnings():
        # bs4 warns about input that looks like a URL or XML; a document is what it is.
        warnings.simplefilter("ignore", MarkupResemblesLocatorWarning)
        warnings.simplefilter("ignore", XMLParsedAsHTMLWarning)
        soup = BeautifulSoup(decode_text(data), "lxml")
    title = one_line(soup.title.get_text()) if soup.title is not None else ""
    remove_hidden(soup)  # text no reader sees is where injected instructions hide
    for tag in soup.find_all(_DROPPED):
        tag.decompose()
    if soup.head is not None:
        soup.head.decompose()
    hints = remove_permalinks(soup)
    builder = DocumentBuilder(name, CONTENT_TYPE)
    _Walker(builder, hints).walk(soup)
    return builder.build(title or builder.first_h1)


class _Walker:
    """Turns the element tree into blocks, iteratively (deep trees don't hit the recursion limit)."""

    def __init__(self, builder: DocumentBuilder, anchor_hints: dict[int, str]) -> None:
        self._builder = builder
        self._hints = anchor_hints
        self._line: list[str] = []  # inline text of the running paragraph; "\n" for <br>

    def walk(self, root: Tag) -> None:
        stack: list[PageElement | None] = list(reversed(root.contents))
        while stack:
            node = stack.pop()
            if node is None:  # the end of a block element
                self._flush()
            elif isinstance(node, NavigableString):
                if not isinstance(node, PreformattedString):  # comments, doctype, CDATA
                    self._line.append(str(node))
            elif isinstance(node, Tag):
                stack.extend(self._enter(node))

    def _enter(self, tag: Tag) -> list[PageElement | None]:
        """Handle ``tag``; return what to visit next, in reverse order."""
        name = tag.name
        heading = _HEADING.fullmatch(name)
        if heading:
            self._flush()
            self._builder.heading(tag.get_text(" "), int(heading.group(1)), anchor=heading_anchor(tag, self._hints))
            return []
        if name == "pre":
            self._flush()
            self._builder.paragraph(tag.get_text())
            return []
        if name == "tr":
            self._flush()
            cells = [one_line(cell.get_text(" ")) for cell in tag.find_all(("td", "th"))]
            self._builder.paragraph(" | ".join(cell for cell in cells if cell))
            return []
        if name == "br":
            self._line.append("\n")
            return []
        if name in _BLOCKS:
            self._flush()
            return [None, *reversed(tag.contents)]
        return list(reversed(tag.contents))

    def _flush(self) -> None:
        if self._line:
            lines = "".join(self._line).split("\n")
            self._builder.paragraph("\n".join(one_line(line) for line in lines))
            self._line = []
