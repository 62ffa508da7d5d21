"""Markdown via markdown-it-py: headings, paragraphs, list items, code, tables."""

from __future__ import annotations

import re
from collections.abc import Sequence

from bs4 import BeautifulSoup
from markdown_it import MarkdownIt
from markdown_it.token import Token

from indexer.documents import LoadedDocument
from indexer.loaders.anchors import Slugger
from indexer.loaders.base import DocumentBuilder, decode_text, one_line
from indexer.loaders.hidden import opens_hidden, remove_hidden

CONTENT_TYPE = "text/markdown"

_INLINE_TAG = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9-]*)")
_VOID = frozenset(
    {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
)
_SPACES = re.compile(r"[ \t]+")
#: Elements whose content no reader sees (code, style sheets, inert templates, fallbacks for browsers without
#: scripts): dropped with their content. A browser reads ``<script/>`` as an opening tag, and so do we.
RAW_TEXT_ELEMENTS = ("script", "style", "template", "noscript")


def _parser() -> MarkdownIt:
    # CommonMark plus GFM tables; "gfm-like" would also need linkify-it-py.
    return MarkdownIt("commonmark").enable(["table", "strikethrough"])


def load_markdown(data: bytes, name: str) -> LoadedDocument:
    """A Markdown document as plain text; titled by its first H1, else its file stem.

    Inline markup is dropped (link text and image alt text stay); each list
    item, code block and table row is a block of its own, list items keeping
    their marker so numbered steps stay numbered. Headings are anchored by
    their GitHub slugs (``# Getting started`` → ``getting-started``).
    """
    builder = DocumentBuilder(name, CONTENT_TYPE)
    tokens = _parser().parse(decode_text(data))
    _walk(tokens, builder)
    return builder.build(builder.first_h1)


def _walk(tokens: Sequence[Token], builder: DocumentBuilder) -> None:
    marker = ""  # a list item's marker, waiting for the item's first block
    row: list[str] | None = None
    slugs = Slugger()
    for i, token in enumerate(tokens):
        kind = token.type
        if kind == "heading_open":
            text = one_line(_inline_text(tokens[i + 1]))
            builder.heading(text, int(token.tag[1:]), anchor=slugs.slug(text))
            marker = ""
        elif kind == "list_item_open":
            marker = f"{token.info}{token.markup} " if token.info else f"{token.markup} "
        elif kind == "paragraph_open" and row is None:
            builder.paragraph(marker + _inline_text(tokens[i + 1]))
            marker = ""
        elif kind in ("fence", "code_block"):
            builder.paragraph(marker + token.content)
            marker = ""
        elif kind == "html_block":
            builder.paragraph(marker + _strip_tags(token.content))
            marker = ""
        elif kind == "tr_open":
            row = []
        elif kind == "inline" and row is not None:
            row.append(" ".join(_inline_text(token).split()))
        elif kind == "tr_close" and row is not None:
            builder.paragraph(" | ".join(row))
            row = None


def _inline_text(token: Token) -> str:
    """The visible text of an ``inline`` token: no emphasis, link or HTML markup, nothing hidden.

    Hidden: the content of a hidden element (``hidden.py``) and of ``<script>``, ``<style>``, ``<template>``
    and ``<noscript>``, in any letter case, nested or not; one left open hides the rest of its paragraph.
    A code span is text a reader sees, ``<script>`` or not.
    """
    parts: list[str] = []
    hidden: list[str] = []  # names of the open inline HTML elements from a hidden one inwards
    for child in token.children or ():
        if child.type == "html_inline":
            _track_hidden(child.content, hidden)
        elif hidden:
            continue
        elif child.type in ("text", "code_inline"):
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            parts.append("\n")
        elif child.type == "image":
            parts.append(child.content)
    return "".join(parts)


def _track_hidden(source: str, hidden: list[str]) -> None:
    """Follow one inline HTML tag: open or close the hidden span its element makes."""
    tag = _INLINE_TAG.match(source)
    if tag is None:  # a comment, declaration or processing instruction: no text either way
        return
    closing, name, self_closing = tag.group(1) == "/", tag.group(2).lower(), source.rstrip().endswith("/>")
    if closing:
        if name in hidden:
            del hidden[len(hidden) - 1 - hidden[::-1].index(name) :]
    else:
        # A raw-text element hides what follows until its closing tag, or the end of the paragraph.
        opens = name in RAW_TEXT_ELEMENTS or (
            not self_closing and name not in _VOID and (hidden or opens_hidden(source))
        )
        if opens:
            hidden.append(name)


def _strip_tags(source: str) -> str:
    """Raw HTML reduced to its visible text: hidden elements and comments removed, spaces collapsed."""
    soup = BeautifulSoup(source, "html.parser")
    remove_hidden(soup)
    for tag in soup.find_all(RAW_TEXT_ELEMENTS):
        tag.decompose()
    return _SPACES.sub(" ", soup.get_text(" "))
