"""The tests' own view of an answer's links, independent of the sanitizer: what a reader's software would follow.

``followed_addresses`` renders the answer as a web client would (markdown-it:
CommonMark, raw HTML on, GFM-style linkify) and collects every address of
every element, plus anything in the raw text that looks like an address to a
person (``scheme://…``, ``www.…``, ``javascript:…``). ``carried_text`` says
whether an address carries text of a document.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable
from urllib.parse import unquote_plus

from bs4 import BeautifulSoup
from markdown_it import MarkdownIt

_URL_ATTRIBUTES = frozenset(
    {"href", "src", "srcset", "action", "formaction", "poster", "background", "data", "cite", "xlink:href", "ping"}
)
_LOOKS_LIKE_ADDRESS = re.compile(
    r"(?i)[a-z][a-z0-9+.\-]*://[^\s)<>\"']+|(?<![a-z0-9])www\.[^\s)<>\"']+|(?:javascript|data|vbscript):\S+"
)
_NOT_LETTER = re.compile(r"[^0-9a-z]+")


def followed_addresses(answer: str) -> list[str]:
    """Every address a renderer or a reader could follow in ``answer``."""
    renderer = MarkdownIt("commonmark", {"linkify": True, "html": True}).enable(["linkify", "table", "strikethrough"])
    # A browser keeps the first of two attributes of the same name; so does this reading.
    soup = BeautifulSoup(renderer.render(answer), "html.parser", on_duplicate_attribute="ignore")
    found: list[str] = []
    for tag in soup.find_all(True):
        for name, value in tag.attrs.items():
            for item in value if isinstance(value, list) else [value]:
                if name.lower() in _URL_ATTRIBUTES or "url(" in str(item).lower():
                    found.append(str(item))
    found += _LOOKS_LIKE_ADDRESS.findall(answer)
    return found


def _decoded(address: str) -> str:
    value = html.unescape(address)
    for _ in range(3):  # encoded more than once is still carried
        value = unquote_plus(value)
    return value.lower()


def carried_text(address: str, texts: Iterable[str], run: int = 20) -> str | None:
    """A run of ``run`` characters of one of ``texts`` that ``address`` carries (decoded), else None.

    Compared twice: with whitespace collapsed, and as letters and digits only.
    """
    decoded = _decoded(address)
    spaced, letters = " ".join(decoded.split()), _NOT_LETTER.sub("", decoded)
    for text in texts:
        for source, target in ((" ".join(text.lower().split()), spaced), (_NOT_LETTER.sub("", text.lower()), letters)):
            for k in range(len(source) - run + 1):
                if source[k : k + run] in target:
                    return source[k : k + run]
    return None


def shares_text(answer: str, text: str, run: int = 20) -> str | None:
    """A run of ``run`` characters of ``text`` that ``answer`` contains (whitespace collapsed), else None."""
    haystack, needle = " ".join(answer.lower().split()), " ".join(text.lower().split())
    for k in range(len(needle) - run + 1):
        if needle[k : k + run] in haystack:
            return needle[k : k + run]
    return None
