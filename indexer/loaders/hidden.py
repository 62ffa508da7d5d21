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
  ``opacity`` at most 0.01 (a negative one is 0), ``font-size: 0`` in any
  unit — read as a browser reads declarations: comments dropped, CSS escapes
  decoded (``display:\\6e one``), any letter case, ``!important`` or not;
- elements matched by a rule of the page's own ``<style>`` sheets that hides
  them the same way (top-level rules with selectors soupsieve understands;
  rules inside ``@media`` and other at-rules are left alone).

The loaders also drop ``<script>``, ``<style>``, ``<template>`` and ``<noscript>`` with their content,
in a page and in Markdown alike (a block of raw HTML, or inline in a paragraph).
"""

from __future__ import annotations

import re

from bs4 import BeautifulSoup
from bs4.element import PreformattedString, Tag
from soupsieve import SelectorSyntaxError

_CSS_COMMENT = re.compile(r"/\*.*?\*/", re.DOTALL)
# A CSS escape: up to six hex digits and one optional white space, or any other character.
_CSS_ESCAPE = re.compile(r"\\(?:([0-9a-fA-F]{1,6})\s?|(.))", re.DOTALL)
_IMPORTANT = re.compile(r"!\s*important$", re.IGNORECASE)
# A CSS number with its unit: "0", "+0.0", "-1", ".0e0", "0vw", "0%".
_DIMENSION = re.compile(r"([+-]?(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?)([a-z%]*)", re.IGNORECASE)
#: At or below this opacity (clamped at 0, as browsers do) nobody reads the text.
_INVISIBLE_OPACITY = 0.01
#: Cheap test before parsing a lone tag: words that can make an element hidden (or escapes that spell them).
_MAYBE_HIDDEN = re.compile(r"hidden|display|visibility|opacity|font-size|\\", re.IGNORECASE)


def _unescaped(css: str) -> str:
    def character(match: re.Match[str]) -> str:
        if match.group(2) is not None:
            return match.group(2)
        code = int(match.group(1), 16)
        return chr(code) if 0 < code <= 0x10FFFF and not 0xD800 <= code <= 0xDFFF else "\ufffd"

    return _CSS_ESCAPE.sub(character, css)


def _number(value: str) -> tuple[float, str] | None:
    found = _DIMENSION.fullmatch(value)
    if found is None:
        return None
    try:
        return float(found.group(1)), found.group(2).lower()
    except (OverflowError, ValueError):
        return None


def _declaration_hides(name: str, value: str) -> bool:
    if name == "display":
        return value == "none"
    if name == "visibility":
        return value in ("hidden", "collapse")
    if name == "content-visibility":
        return value == "hidden"
    number = _number(value)
    if number is None:
        return False
    amount, unit = number
    if name == "opacity":  # a number or a percentage; below 0 is 0
        return unit in ("", "%") and amount / (100 if unit == "%" else 1) <= _INVISIBLE_OPACITY
    return name == "font-size" and amount == 0  # zero in any unit


def hides(style: str) -> bool:
    """Whether CSS declarations ``style`` hide their element (read as a browser reads them: comments
    dropped, escapes decoded, any letter case, ``!important`` or not; zero in any unit)."""
    for declaration in re.split(r"[;{}]", _unescaped(_CSS_COMMENT.sub("", style))):
        name, colon, value = declaration.partition(":")
        if colon and _declaration_hides(name.strip().lower(), _IMPORTANT.sub("", value.strip()).strip().lower()):
            return True
    return False


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
