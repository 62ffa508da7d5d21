"""The constructs of a generated answer that can carry an address, and whether each may stay.

A Markdown inline link or image (``[text](url "title")``, ``![alt](url)``), a
reference definition (``[label]: url``, at the start of a line — as the
output shows it), an autolink (``<url>``), and raw HTML (a comment, a tag).
``Constructs.construct`` says where the one at a position ends and what
replaces it: the construct itself when every address in it is allowed,
else what is left of it (a link's text; nothing for an image, a definition
or a comment; a tag that may not stay is left as text, to be shown as text).

A construct is one only if it ends within ``MAX_HOLD`` characters of its
start, so that a stream, which must wait for a construct to end, never waits
longer — and a whole answer is read by the same rule.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod

from service.generation.link_policy import LinkPolicy, find_addresses

REMOVED = "(link removed)"
#: Characters a construct (or a word) may span; a stream holds back no more than about twice this.
MAX_HOLD = 2048

_PLAIN_TAGS = frozenset(
    {
        *("b", "i", "em", "strong", "code", "pre", "br", "p", "ul", "ol", "li", "sub", "sup", "hr"),
        *("blockquote", "table", "thead", "tbody", "tr", "th", "td", "s", "del", "ins", "kbd", "mark"),
        *("small", "span", "div", "h1", "h2", "h3", "h4", "h5", "h6", "dl", "dt", "dd"),
    }
)
_KEPT_TAGS = _PLAIN_TAGS | {"a", "img"}
_LINK_ATTRIBUTES = {"a": ("href", {"href", "title"}), "img": ("src", {"src", "alt", "title", "width", "height"})}
_TAG_NAME = re.compile(r"<([A-Za-z][A-Za-z0-9:\-]*)")
_ATTRIBUTE = re.compile(r"""\s+([^\s"'>/=]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'=<>`]+)))?""")
_TAG_TAIL = re.compile(r"\s*/?>")
_CLOSING_TAG = re.compile(r"</\s*([A-Za-z][A-Za-z0-9:\-]*)\s*>")
_AUTOLINK = re.compile(r"<([A-Za-z][A-Za-z0-9+.\-]{1,31}:[^\s<>]*)>")
_EMAIL_AUTOLINK = re.compile(r"<[\w.!#$%&'*+/=?^`{|}~\-]+@[A-Za-z0-9](?:[A-Za-z0-9.\-]*[A-Za-z0-9])?>")
# What may stand before a reference definition on its line: indentation, quote and list markers.
_CONTAINER_PREFIX = re.compile(r"(?:[ \t]*(?:>|[-+*]|\d{1,9}[.)])(?=[ \t]|$))*[ \t]*")


class Need(Exception):
    """The text ends before the construct at hand does: wait for more."""


class Constructs(ABC):
    """Reads the constructs of ``text``; a pass over the text (``sanitize._Scanner``) builds on it."""

    def __init__(self, text: str, policy: LinkPolicy, *, final: bool, line_prefix: str) -> None:
        self.text = text
        self.policy = policy
        #: Whether the text is the whole answer (else a construct running to its end waits: ``Need``).
        self.final = final
        #: The output of the current line before ``text`` (what a renderer sees before it).
        self.line_prefix = line_prefix
        self._line_out = line_prefix  # the output of the current line up to ``_plain_start``
        self._plain_start = 0
        self._truncated = False  # whether the construct at hand is cut off at MAX_HOLD

    @abstractmethod
    def label(self, text: str) -> str:
        """The sanitized text of a link's label (it may hold an image, for one)."""

    def _need(self, i: int) -> None:
        """The construct at ``i`` runs to the end of the text: wait for more, unless there is no more."""
        if not self.final and not self._truncated:
            raise Need

    def construct(self, i: int) -> tuple[str, int, bool] | None:
        """(replacement, end, is_text) for a link, image, definition, autolink or tag at ``i``; None if none.

        ``is_text``: the replacement is what is left of a removed construct (text, or nothing).
        A construct is one only if it ends within ``MAX_HOLD`` characters, in a
        stream as in a whole answer, so a stream never waits longer than that.
        """
        full = self.text
        self.text = full[: i + MAX_HOLD]
        self._truncated = len(self.text) < len(full)
        try:
            return self._construct_in_view(i)
        finally:
            self.text = full

    def _construct_in_view(self, i: int) -> tuple[str, int, bool] | None:
        text = self.text
        if i + 1 >= len(text):
            self._need(i)
            return None
        if text[i] == "!":
            return self._link(i + 1, image=True) if text[i + 1] == "[" else None
        if text[i] == "[":
            if self._at_line_start(i):
                definition = self._definition(i)
                if definition is not None:
                    return definition
            return self._link(i, image=False)
        return self._tag(i)

    def _label_end(self, i: int) -> int | None:
        """The index of the ``]`` closing the label opened at ``i``; None if it is not a label."""
        text, depth, j = self.text, 0, i
        while j < len(text):
            char = text[j]
            if char == "\\":
                j += 2
                continue
            if char == "[":
                depth += 1
            elif char == "]":
                depth -= 1
                if depth == 0:
                    return j
            elif char == "\n" and text.startswith("\n", j + 1):
                return None  # a blank line ends a paragraph, and any label in it
            j += 1
        self._need(i)
        return None

    def _link(self, i: int, *, image: bool) -> tuple[str, int, bool] | None:
        """An inline link or image whose label opens at ``i``."""
        close = self._label_end(i)
        if close is None:
            return None
        if close + 1 >= len(self.text):
            self._need(i)
            return None
        if self.text[close + 1] != "(":
            return None
        parsed = self._destination(close + 2, i)
        if parsed is None:
            return None
        url, end = parsed
        # The label is text inside a line (never a definition); an image in it is checked too.
        label = self.label(self.text[i + 1 : close])
        if self.policy.allows(url):
            return ("!" if image else "") + f"[{label}]" + self.text[close + 1 : end], end, False
        return ("" if image else label), end, True

    def _skip_space(self, j: int, *, newlines: int = 1) -> int:
        text = self.text
        while j < len(text) and text[j] in " \t\n":
            if text[j] == "\n":
                newlines -= 1
                if newlines < 0:
                    break
            j += 1
        return j

    def _destination(self, j: int, opened: int) -> tuple[str, int] | None:
        """After ``](`` at ``j``: (destination, end after ``)``); None if this is no inline link."""
        text, n = self.text, len(self.text)
        j = self._skip_space(j)
        start = j
        if j < n and text[j] == "<":
            close = text.find(">", j)
            if close < 0:
                self._need(opened)
                return None
            if "\n" in text[j:close] or "<" in text[j + 1 : close]:
                return None
            url, j = text[j + 1 : close], close + 1
        else:
            depth = 0
            while j < n and not text[j].isspace():
                char = text[j]
                if char == "\\":
                    j += 2
                    continue
                if char == "(":
                    depth += 1
                elif char == ")":
                    if depth == 0:
                        break
                    depth -= 1
                j += 1
            url = text[start:j]
        spaced = self._skip_space(j)
        if spaced < n and text[spaced] in "\"'(" and spaced > j:
            closer = ")" if text[spaced] == "(" else text[spaced]
            k = spaced + 1
            while k < n and text[k] != closer:
                k += 2 if text[k] == "\\" else 1
            if k >= n:
                self._need(opened)
                return None
            spaced = self._skip_space(k + 1)
        if spaced >= n:
            self._need(opened)
            return None
        return (url, spaced + 1) if text[spaced] == ")" else None

    def _at_line_start(self, i: int) -> bool:
        """Whether only indentation and quote or list markers stand before ``i`` on its line, as output.

        As output: a removed image or tag leaves nothing, so ``![x](…)[r]: …``
        starts a line once the image is gone.
        """
        before = last_line(self._line_out + self.text[self._plain_start : i])
        return _CONTAINER_PREFIX.fullmatch(before) is not None

    def _definition(self, i: int) -> tuple[str, int, bool] | None:
        """A reference definition ``[label]: url "title"`` at ``i``: kept if allowed, else dropped."""
        text, n = self.text, len(self.text)
        close = self._label_end(i)
        if close is None or close + 1 >= n or text[close + 1] != ":" or text.startswith("^", i + 1):
            if close is not None and close + 1 >= n:
                self._need(i)
            return None
        j = self._skip_space(close + 2)
        if j >= n:
            self._need(i)
            return None
        if text[j] == "<":
            end = text.find(">", j)
            if end < 0:
                self._need(i)
                return None
            if "\n" in text[j:end]:
                return None
            url, k = text[j : end + 1], end + 1
        else:
            k = j
            while k < n and not text[k].isspace():
                k += 1
            url = text[j:k]
        line_end = text.find("\n", k)
        if line_end < 0:
            self._need(i)
            line_end = n
        rest = text[k:line_end].strip()
        if rest and not (rest[0] in "\"'(" and rest[-1] == {"(": ")"}.get(rest[0], rest[0]) and len(rest) > 1):
            return None  # text after the address: not a definition
        if self.policy.allows(url):
            return text[i:line_end], line_end, False
        return "", line_end, True

    def _tag(self, i: int) -> tuple[str, int, bool] | None:
        """An HTML comment, tag or autolink at ``i`` (a ``<``)."""
        text = self.text
        if text.startswith("<!--", i):
            end = text.find("-->", i + 4)
            if end < 0:
                self._need(i)
                return None
            return "", end + 3, True
        if not (text[i + 1].isalpha() or text[i + 1] in "/!?"):
            return None
        closed = _tag_end(text, i)
        if closed is None:
            self._need(i)
            return None
        if closed < 0:
            return None
        span, end = text[i:closed], closed
        autolink = _AUTOLINK.fullmatch(span)
        if autolink is not None:
            kept = self.policy.allows(autolink.group(1))
            return (span, end, False) if kept else (REMOVED, end, True)
        if _EMAIL_AUTOLINK.fullmatch(span):
            return (span, end, False) if self.policy.allows(span[1:-1]) else (REMOVED, end, True)
        closing = _CLOSING_TAG.fullmatch(span)
        if closing is not None and closing.group(1).lower() in _KEPT_TAGS:
            return span, end, False
        if self._tag_allowed(span):
            return span, end, False
        # Any other tag is shown as text: its "<" is text (written "&lt;" in the end) and what follows
        # is read on, so an image or address inside is removed like any other. `List<String>` stays
        # readable, and nothing is hidden from the reader.
        return "<", i + 1, True

    def _tag_allowed(self, span: str) -> bool:
        name = _TAG_NAME.match(span)
        if name is None:
            return False  # declarations, processing instructions, malformed tags
        attributes: dict[str, str] = {}
        j = name.end()
        while (found := _ATTRIBUTE.match(span, j)) is not None:
            attribute = found.group(1).lower()
            if attribute in attributes:
                return False  # a browser keeps the first of two, a check of the last would be fooled
            attributes[attribute] = next((g for g in found.groups()[1:] if g is not None), "")
            j = found.end()
        if _TAG_TAIL.fullmatch(span, j) is None:
            return False
        tag = name.group(1).lower()
        if tag in _PLAIN_TAGS:
            return not attributes
        if tag not in _LINK_ATTRIBUTES:
            return False
        address, permitted = _LINK_ATTRIBUTES[tag]
        if address not in attributes or not set(attributes) <= permitted:
            return False
        others = (v for k, v in attributes.items() if k != address)
        return self.policy.allows(attributes[address]) and not any(find_addresses(v) for v in others)


def last_line(text: str) -> str:
    """The last line of ``text`` (all of it if it has no new line)."""
    return text[text.rfind("\n") + 1 :]


def _tag_end(text: str, i: int) -> int | None:
    """The end of the tag-like span at ``i`` (after its ``>``); -1 if a ``<`` comes first; None if unclosed."""
    quote: str | None = None
    after_equals = False
    for j in range(i + 1, len(text)):
        char = text[j]
        if quote is not None:
            if char == quote:
                quote, after_equals = None, False
            continue
        if char == ">":
            return j + 1
        if char == "<":
            return -1
        if char in "\"'" and after_equals:
            quote = char
        elif not char.isspace():
            after_equals = char == "="
    return None
