"""Section anchors: the fragment id a link to a heading names, and the permalink glyphs that carry them.

HTML generators mark a heading's target in several ways: an ``id`` on the
heading, an ``<a id>``/``<a name>`` inside it or just before it, or an ``id`` on
the enclosing section (Sphinx ``<section id>``, DocBook ``<div class="sect1"
id>``). Many also add a permalink, a link to the heading whose only text is a
glyph (Sphinx ``<a class="headerlink" href="#x">¶</a>``): that glyph is not
document text, so it is removed, and its fragment kept as the heading's anchor.
Markdown has no ids; its anchors are GitHub's slugs of the heading texts.
"""

from __future__ import annotations

import re
import unicodedata
from urllib.parse import unquote

from bs4 import BeautifulSoup
from bs4.element import NavigableString, Tag

#: Longest anchor kept; a longer ``id`` is not a section anchor anyone links to.
MAX_ANCHOR_CHARS = 256

HEADING_NAMES = ("h1", "h2", "h3", "h4", "h5", "h6")
#: The only text of a permalink (after removing whitespace and zero-width characters).
_GLYPHS = frozenset({"", "¶", "§", "#", "🔗", "⚓"})
_INVISIBLE = re.compile(r"[\s\u200b-\u200d\u2060\ufe0e\ufe0f]+")
#: Classes of the containers DocBook, Sphinx and others give a section's id.
_SECTION_CLASS = re.compile(
    r"section|sect\d|refsect\d|refsynopsisdiv|simplesect|chapter|appendix|preface|part|reference|refentry"
    r"|article|glossary|bibliography|index|colophon|book"
)
_SECTION_TAGS = frozenset({"section", "article"})


def clean_anchor(value: object) -> str:
    """``value`` as an anchor: a non-empty string without whitespace or control characters, else ``""``."""
    if not isinstance(value, str):
        return ""
    value = value.strip()
    if not value or len(value) > MAX_ANCHOR_CHARS:
        return ""
    if any(ch.isspace() or unicodedata.category(ch) in ("Cc", "Cf") for ch in value):
        return ""
    return value


def remove_permalinks(soup: BeautifulSoup) -> dict[int, str]:
    """Remove every permalink (``a.headerlink``, or a fragment link whose only text is a glyph).

    Returns the fragment of each removed permalink that sat in a heading, by
    ``id()`` of that heading (the heading tags stay in the tree).
    """
    hints: dict[int, str] = {}
    for link in soup.find_all("a"):
        if not isinstance(link, Tag) or link.decomposed:
            continue
        href = link.get("href")
        fragment = href[1:] if isinstance(href, str) and href.startswith("#") else None
        classes = _classes(link)
        glyph_only = _INVISIBLE.sub("", link.get_text()) in _GLYPHS
        if not ("headerlink" in classes or (fragment is not None and glyph_only)):
            continue
        heading = link.find_parent(HEADING_NAMES)
        anchor = clean_anchor(unquote(fragment)) if fragment else ""
        if heading is not None and anchor:
            hints.setdefault(id(heading), anchor)
        link.decompose()
    return hints


def heading_anchor(heading: Tag, hints: dict[int, str]) -> str:
    """The anchor of ``heading``: its ``id``; else an ``<a id|name>`` inside it; else its permalink's
    fragment; else an empty ``<a id|name>`` just before it; else the ``id`` of its section."""
    own = clean_anchor(heading.get("id"))
    if own:
        return own
    for link in heading.find_all("a"):
        named = _named(link)
        if named:
            return named
    if id(heading) in hints:
        return hints[id(heading)]
    for sibling in heading.previous_siblings:
        if isinstance(sibling, NavigableString) and not sibling.strip():
            continue
        if isinstance(sibling, Tag) and sibling.name == "a" and not sibling.get_text().strip():
            named = _named(sibling)
            if named:
                return named
        break
    return _section_id(heading)


def _named(link: object) -> str:
    if not isinstance(link, Tag):
        return ""
    return clean_anchor(link.get("id")) or clean_anchor(link.get("name"))


def _classes(tag: Tag) -> list[str]:
    value = tag.get("class")
    return [value] if isinstance(value, str) else list(value or [])


def _section_id(heading: Tag) -> str:
    """The ``id`` of the nearest container that is the heading's section: a ``<section>``/``<article>``,
    an element with a section class, or any element whose first heading this is."""
    for parent in heading.parents:
        if parent.name in ("body", "html", "[document]"):
            break
        anchor = clean_anchor(parent.get("id"))
        if not anchor:
            continue
        classes = _classes(parent)
        if (
            parent.name in _SECTION_TAGS
            or any(_SECTION_CLASS.fullmatch(c) for c in classes)
            or parent.find(HEADING_NAMES) is heading
        ):
            return anchor
    return ""


class Slugger:
    """GitHub's heading anchors (github-slugger): lower case, punctuation dropped, spaces to hyphens,
    and ``-1``, ``-2`` … appended to repeats within one document."""

    def __init__(self) -> None:
        self._seen: dict[str, int] = {}

    def slug(self, text: str) -> str:
        base = "".join(ch for ch in text.lower() if ch in " -" or unicodedata.category(ch)[0] in "LMN" or ch == "_")
        base = base.replace(" ", "-")
        slug = base
        while slug in self._seen:
            self._seen[base] += 1
            slug = f"{base}-{self._seen[base]}"
        self._seen[slug] = 0
        return clean_anchor(slug)
