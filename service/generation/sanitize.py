"""Answer post-processing: links and images only to the answer's sources or the allow-list.

``sanitize_answer`` rewrites a generated answer so that every address in it
passes its ``LinkPolicy`` (``service.generation.link_policy``):

- a Markdown link ``[text](url)`` to anywhere else keeps its text and loses
  its address; a Markdown image ``![alt](url)`` is dropped;
- a reference definition ``[label]: url`` to anywhere else is dropped (so
  ``[text][label]`` and ``![alt][label]`` stay plain text);
- an autolink ``<url>`` and any bare address (``https://…``, ``www.…``,
  ``evil.com/path``, ``javascript:…``) becomes ``(link removed)``;
- raw HTML: a comment, declaration or processing instruction is dropped; a
  tag is kept only when it is plain markup without attributes (``<b>``), an
  ``<a href>`` or ``<img src>`` to an allowed address, or a closing tag —
  every other tag is dropped, its text stays;
- what is left is made inert: a ``<`` that could open a tag is written
  ``&lt;``, and a word whose character references or backslash escapes decode
  to an address not allowed is removed — so text joined around a removed
  construct cannot form a new tag or an address.

``AnswerStream`` does the same to an answer that arrives in pieces: it holds
back only what could still become part of an address or a link (the
unfinished last word, an unclosed ``[``, ``(`` or ``<``, at most
``MAX_HOLD`` characters), so an address split across pieces is still caught
and the pieces it lets out add up to what ``sanitize_answer`` would give.
"""

from __future__ import annotations

import html
import re
from collections.abc import Generator, Iterable

from service.generation.link_policy import LinkPolicy, find_addresses

REMOVED = "(link removed)"
#: Characters a stream holds back at most while waiting for a construct to close.
MAX_HOLD = 2048

_PLAIN_TAGS = frozenset(
    {
        *("b", "i", "em", "strong", "code", "pre", "br", "p", "ul", "ol", "li", "sub", "sup", "hr"),
        *("blockquote", "table", "thead", "tbody", "tr", "th", "td", "s", "del", "ins", "kbd", "mark"),
        *("small", "span", "div", "h1", "h2", "h3", "h4", "h5", "h6", "dl", "dt", "dd"),
    }
)
_LINK_ATTRIBUTES = {"a": ("href", {"href", "title"}), "img": ("src", {"src", "alt", "title", "width", "height"})}
_TAG_NAME = re.compile(r"<([A-Za-z][A-Za-z0-9:\-]*)")
_ATTRIBUTE = re.compile(r"""\s+([^\s"'>/=]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'=<>`]+)))?""")
_TAG_TAIL = re.compile(r"\s*/?>")
_CLOSING_TAG = re.compile(r"</\s*[A-Za-z][A-Za-z0-9:\-]*\s*>")
_AUTOLINK = re.compile(r"<([A-Za-z][A-Za-z0-9+.\-]{1,31}:[^\s<>]*)>")
_EMAIL_AUTOLINK = re.compile(r"<[\w.!#$%&'*+/=?^`{|}~\-]+@[A-Za-z0-9](?:[A-Za-z0-9.\-]*[A-Za-z0-9])?>")
_WORD = re.compile(r"\S+")
_MARKDOWN_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")
_TAG_OPEN = re.compile(r"<(?=[A-Za-z/!?])")
# What may stand before a reference definition on its line: indentation, quote and list markers.
_CONTAINER_PREFIX = re.compile(r"(?:[ \t]*(?:>|[-+*]|\d{1,9}[.)])(?=[ \t]|$))*[ \t]*")


class _Need(Exception):
    """The text ends before the construct at hand does: wait for more."""


def sanitize_answer(text: str, policy: LinkPolicy) -> str:
    """``text`` with every link, image and address ``policy`` does not allow removed (see the module)."""
    return _Scanner(text, policy, final=True, line_prefix="").run()[0]


class AnswerStream:
    """Sanitizes an answer arriving in pieces; ``feed`` each piece, then ``close``."""

    def __init__(self, policy: LinkPolicy) -> None:
        self._policy = policy
        self._pending = ""
        self._line = ""  # the output of the current line so far, for reference definitions

    def feed(self, piece: str) -> str:
        """The sanitized text that ``piece`` lets out (maybe empty: the rest is held back)."""
        self._pending += piece
        out, used = _Scanner(self._pending, self._policy, final=False, line_prefix=self._line).run()
        self._advance(used, out)
        return out

    def close(self) -> str:
        """The sanitized rest of the answer."""
        out, used = _Scanner(self._pending, self._policy, final=True, line_prefix=self._line).run()
        self._advance(used, out)
        return out

    def _advance(self, used: int, out: str) -> None:
        self._pending = self._pending[used:]
        newline = out.rfind("\n")
        self._line = out[newline + 1 :] if newline >= 0 else self._line + out


def sanitized_stream(pieces: Iterable[str], policy: LinkPolicy) -> Generator[str, None, None]:
    """``pieces`` of an answer, sanitized; closing this closes ``pieces`` too (the model stops)."""
    stream = AnswerStream(policy)
    try:
        for piece in pieces:
            out = stream.feed(piece)
            if out:
                yield out
        rest = stream.close()
        if rest:
            yield rest
    finally:
        close = getattr(pieces, "close", None)
        if close is not None:
            close()


class _Scanner:
    """One left-to-right pass over ``text``; ``run`` returns (output, characters consumed)."""

    def __init__(self, text: str, policy: LinkPolicy, *, final: bool, line_prefix: str) -> None:
        self.text = text
        self.policy = policy
        self.final = final
        #: The output of the current line so far (what a renderer sees before the text at hand).
        self.line_prefix = line_prefix
        self._line_out = line_prefix  # ... up to ``_plain_start``, during ``run``
        self._plain_start = 0

    def run(self) -> tuple[str, int]:
        text, n = self.text, len(self.text)
        # (start, end, output, kind): "plain" text, "text" left of a removed construct, or a "kept" construct.
        spans: list[tuple[int, int, str, str]] = []
        plain = i = 0
        while i < n:
            char = text[i]
            if char == "\\":
                i += 2  # an escaped character is never markup
                continue
            if char in "[!<":
                try:
                    found = self._construct(i)
                except _Need:
                    break
                if found is not None:
                    replacement, end, is_text = found
                    spans += [(plain, i, text[plain:i], "plain"), (i, end, replacement, "text" if is_text else "kept")]
                    self._line_out = _last_line(self._line_out + text[plain:i] + replacement)
                    plain = i = self._plain_start = end
                    continue
            i += 1
        stop = min(i, n)
        spans.append((plain, stop, text[plain:stop], "plain"))
        cut = stop if self.final else self._cut(spans, stop)
        return self._join([span for span in spans if span[1] <= cut] + self._partial(spans, cut)), cut

    def _cut(self, spans: list[tuple[int, int, str, str]], stop: int) -> int:
        """Where a stream may cut: after a white space of plain text or after a kept construct.

        Anything later may still change: the last word may be the start of an
        address, and text left by a removed link may join the next text into one.
        """
        for start, end, output, kind in reversed(spans):
            if kind == "kept":
                cut = end
                break
            if kind == "plain":
                space = max(output.rfind(c) for c in " \t\n\r")
                if space >= 0:
                    cut = start + space + 1
                    break
        else:
            cut = 0
        return stop if stop - cut > MAX_HOLD else cut

    @staticmethod
    def _partial(spans: list[tuple[int, int, str, str]], cut: int) -> list[tuple[int, int, str, str]]:
        """The part before ``cut`` of the plain span ``cut`` falls in, if it falls inside one."""
        return [(s, cut, out[: cut - s], k) for s, e, out, k in spans if s < cut < e and k == "plain"]

    def _join(self, spans: list[tuple[int, int, str, str]]) -> str:
        """The output of ``spans``; text between kept constructs is checked for bare addresses as one."""
        out: list[str] = []
        run: list[str] = []
        for _, _, piece, kind in spans:
            if kind == "kept":
                out += [self._plain("".join(run)), piece]
                run = []
            else:
                run.append(piece)
        out.append(self._plain("".join(run)))
        return "".join(out)

    # constructs ---------------------------------------------------------------------------------
    def _complete(self, i: int) -> bool:
        """Whether the text is all there is for a construct at ``i`` (else wait for more)."""
        return self.final or len(self.text) - i > MAX_HOLD

    def _need(self, i: int) -> None:
        if not self._complete(i):
            raise _Need

    def _construct(self, i: int) -> tuple[str, int, bool] | None:
        """(replacement, end, is_text) for a link, image, definition, autolink or tag at ``i``; None if none.

        ``is_text``: the replacement is what is left of a removed construct (text, or nothing).
        """
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
        label = _Scanner(self.text[i + 1 : close], self.policy, final=True, line_prefix="text").run()[0]
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
        before = _last_line(self._line_out + self.text[self._plain_start : i])
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
        if _EMAIL_AUTOLINK.fullmatch(span) or _CLOSING_TAG.fullmatch(span):
            return span, end, False
        return (span, end, False) if self._tag_allowed(span) else ("", end, True)

    def _tag_allowed(self, span: str) -> bool:
        name = _TAG_NAME.match(span)
        if name is None:
            return False  # declarations, processing instructions, malformed tags
        attributes: dict[str, str] = {}
        j = name.end()
        while (found := _ATTRIBUTE.match(span, j)) is not None:
            attributes[found.group(1).lower()] = next((g for g in found.groups()[1:] if g is not None), "")
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

    # plain text -----------------------------------------------------------------------------------
    def _plain(self, text: str) -> str:
        """Text between kept constructs, made inert: no address the policy does not allow, no new tag.

        - a word whose character references or backslash escapes decode to an
          address not allowed becomes ``REMOVED``, whole;
        - every bare address not allowed becomes ``REMOVED``;
        - a ``<`` that could open a tag is written ``&lt;`` (kept tags are
          whole constructs; text joined around a removed one must not form one).
        """
        if not text:
            return text
        text = _WORD.sub(self._inert_word, text)
        out: list[str] = []
        last = 0
        for start, end in find_addresses(text):
            if not self.policy.allows(text[start:end]):
                out.append(text[last:start])
                out.append(REMOVED)
                last = end
        out.append(text[last:])
        return _TAG_OPEN.sub("&lt;", "".join(out))

    def _inert_word(self, word: re.Match[str]) -> str:
        raw = word.group(0)
        if "&" not in raw and "\\" not in raw:
            return raw
        decoded = html.unescape(_MARKDOWN_ESCAPE.sub(r"\1", raw))
        addresses = find_addresses(decoded)
        if all(self.policy.allows(decoded[start:end]) for start, end in addresses):
            return raw
        return REMOVED


def _last_line(text: str) -> str:
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
