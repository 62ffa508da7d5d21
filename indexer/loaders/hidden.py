"""Text a reader of the page never sees is not document text.

Hidden text is where instructions for a language model hide (prompt
injection): a reader never sees them, so nobody notices them, yet an indexer
that keeps them hands them to the model as if they were the document. So
before text is extracted from HTML (an HTML page, or the raw HTML inside a
Markdown file), these are removed:

- comments (and processing instructions, declarations, CDATA);
- elements with the ``hidden`` attribute or ``aria-hidden="true"``, and
  ``<input type="hidden">``;
- elements whose ``style`` attribute hides them: ``display: none``,
  ``visibility: hidden | collapse``, ``content-visibility: hidden``,
  ``opacity: 0``, ``font-size: 0``;
- elements matched by a rule of the page's own ``<style>`` sheets that hides
  them the same way (top-level rules with selectors soupsieve understands;
  rules inside ``@media`` and other at-rules are left alone).
"""

from __future__ import annotations

import re

from bs4 import BeautifulSoup
from bs4.element import PreformattedString, Tag
from soupsieve import SelectorSyntaxError

_ZERO = r"0*(?:\.0*)?(?:px|em|rem|pt|%)?"
_HIDING = re.compile(
    r"(?:^|[;{\s])(?:display\s*:\s*none|visibility\s*:\s*(?:hidden|collapse)|content-visibility\s*:\s*hidden"
    rf"|opacity\s*:\s*{_ZERO}|font-size\s*:\s*{_ZERO})\s*(?:!\s*important\s*)?(?:;|$|}})",
    re.IGNORECASE,
)
_CSS_COMMENT = re.compile(r"/\*.*?\*/", re.DOTALL)
#: Cheap test before parsing a lone tag: words that can make an element hidden.
_MAYBE_HIDDEN = re.compile(r"hidden|display|visibility|opacity|font-size", re.IGNORECASE)


def hides(style: str) -> bool:
    """Whether CSS declarations ``style`` hide their element."""
    return _HIDING.search(_CSS_COMMENT.sub("", style)) is not None


def is_hidden(tag: Tag) -> bool:
    """Whether ``tag`` is hidden by its own attributes."""
    if tag.has_attr("hidden") or str(tag.get("aria-hidden", "")).strip().lower() == "true":
        return True
    if tag.name == "input" and str(tag.get("type", "")).strip().lower() == "hidden":
        return True
    style = tag.get("style")
    return isinstance(style, str) and hides(style)


def hidden_selectors(css: str) -> list[str]:
    """Selectors of the top-level rules of style sheet ``css`` that hide what they match."""
    css = _CSS_COMMENT.sub("", css)
    selectors: list[str] = []
    depth, start, selector = 0, 0, ""
    for position, char in enumerate(css):
        if char == "{":
            if depth == 0:
                selector, start = css[start:position].strip(), position + 1
            depth += 1
        elif char == "}" and depth > 0:
            depth -= 1
            if depth == 0:
                body = css[start:position]
                if selector and not selector.startswith("@") and "{" not in body and hides(body):
                    selectors.append(selector)
                start = position + 1
        elif char == ";" and depth == 0:
            start = position + 1  # the end of an at-statement such as @import
    return selectors


def remove_hidden(soup: BeautifulSoup) -> None:
    """Remove from ``soup`` every comment and every element a reader would not see (see the module)."""
    for node in soup.find_all(string=lambda s: isinstance(s, PreformattedString)):
        node.extract()
    selectors = [s for sheet in soup.find_all("style") for s in hidden_selectors(sheet.get_text())]
    doomed: list[Tag] = [tag for tag in soup.find_all(True) if is_hidden(tag)]
    for selector in selectors:
        try:
            doomed.extend(soup.select(selector))
        except (SelectorSyntaxError, ValueError, NotImplementedError):
            continue  # a selector soupsieve does not understand (e.g. :hover) hides nothing we can tell
    for tag in doomed:
        if not tag.decomposed:
            tag.decompose()


def opens_hidden(tag_source: str) -> bool:
    """Whether the lone opening tag ``tag_source`` (Markdown inline HTML) hides what it encloses."""
    if not _MAYBE_HIDDEN.search(tag_source):
        return False
    tag = BeautifulSoup(tag_source, "html.parser").find()
    return isinstance(tag, Tag) and is_hidden(tag)
