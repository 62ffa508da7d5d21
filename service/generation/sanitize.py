"""Answer post-processing: links and images only to the answer's sources or the allow-list.

``sanitize_answer`` rewrites a generated answer so that every address in it
passes its ``LinkPolicy`` (``service.generation.link_policy``):

- a Markdown link ``[text](url)`` to anywhere else keeps its text and loses
  its address; a Markdown image ``![alt](url)`` is dropped;
- a reference definition ``[label]: url`` to anywhere else is dropped (so
  ``[text][label]`` and ``![alt][label]`` stay plain text);
- an autolink ``<url>`` and any bare address (``https://…``, ``www.…``,
  ``evil.com/path``, ``javascript:…``) becomes ``(link removed)``;
- raw HTML: a comment is dropped; a tag is kept only when it is plain
  markup without attributes (``<b>``), an ``<a href>`` or ``<img src>`` to an
  allowed address, or the closing tag of one — any other tag is shown as
  text (``&lt;iframe …>``), its addresses removed like any other;
- what is left is made inert: a ``<`` that could open a tag is written
  ``&lt;``, and a word whose character references or backslash escapes decode
  to an address not allowed is removed — so text joined around a removed
  construct cannot form a new tag or an address.

``AnswerStream`` does the same to an answer that arrives in pieces, and the
pieces it lets out add up to what ``sanitize_answer`` gives (exactly, unless
a word is longer than ``MAX_HOLD``): it holds back what could still change —
the text after the last white space, and a construct still open — so an
address split across pieces is still caught. Both read an answer by the same
bounds: a construct ends within ``MAX_HOLD`` characters or is text, and a
word longer than ``MAX_HOLD`` is removed whole. The constructs themselves are
read in ``service.generation.answer_markup``.
"""

from __future__ import annotations

import html
import re
from collections.abc import Generator, Iterable

from service.generation.answer_markup import MAX_HOLD, REMOVED, Constructs, Need, last_line
from service.generation.inert import inert_quotes
from service.generation.link_policy import LinkPolicy, find_addresses

__all__ = ["MAX_HOLD", "REMOVED", "AnswerStream", "sanitize_answer", "sanitized_stream", "verbatim_stream"]

_WORD = re.compile(r"\S+")
_SPACE = re.compile(r"\s")
#: A word too long to be an address worth keeping (and for a stream to hold back).
_LONG_WORD = re.compile(rf"\S{{{MAX_HOLD + 1},}}")
_MARKDOWN_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")
_TAG_OPEN = re.compile(r"<(?=[A-Za-z/!?])")


def sanitize_answer(text: str, policy: LinkPolicy) -> str:
    """``text`` with every link, image and address ``policy`` does not allow removed (see the module)."""
    return _Scanner(_LONG_WORD.sub(REMOVED, text), policy, final=True, line_prefix="").run()[0]


class AnswerStream:
    """Sanitizes an answer arriving in pieces; ``feed`` each piece, then ``close``.

    The pieces let out add up to what ``sanitize_answer`` gives for the whole
    answer. What is held back at any time is the text after the last
    white space, and a construct still open — never more than about
    ``2 × MAX_HOLD`` characters, as a word or a construct longer than
    ``MAX_HOLD`` is no address or link in either.
    """

    def __init__(self, policy: LinkPolicy) -> None:
        self._policy = policy
        self._pending = ""
        self._line = ""  # the output of the current line so far, for reference definitions
        self._skipping = False  # dropping the rest of a word longer than MAX_HOLD

    def feed(self, piece: str) -> str:
        """The sanitized text that ``piece`` lets out (maybe empty: the rest is held back)."""
        if self._skipping:
            space = _SPACE.search(piece)
            if space is None:
                return ""
            piece, self._skipping = piece[space.start() :], False
        pending = self._pending + piece
        long_words = list(_LONG_WORD.finditer(pending, max(0, len(self._pending) - MAX_HOLD - 1)))
        if long_words:
            # A word too long to be an address is removed whole, as sanitize_answer removes it;
            # if it is still going on, the rest of it is dropped as it comes.
            self._skipping = long_words[-1].end() == len(pending)
            pending = _LONG_WORD.sub(REMOVED, pending)
        self._pending = pending
        out, used = _Scanner(pending, self._policy, final=False, line_prefix=self._line).run()
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


def verbatim_stream(pieces: Iterable[str]) -> Generator[str, None, None]:
    """``pieces`` of an answer quoted verbatim from its sources, made inert (``inert.inert_quotes``) as one text:
    a quote is let out whole, so no tag is judged before its end has arrived. Closing this closes ``pieces``."""
    try:
        text = "".join(pieces)
        if text:
            yield inert_quotes(text)
    finally:
        close = getattr(pieces, "close", None)
        if close is not None:
            close()


class _Scanner(Constructs):
    """One left-to-right pass over ``text``; ``run`` returns (output, characters consumed)."""

    def label(self, text: str) -> str:
        # A label is text inside a line (never a definition); an image in it is checked too.
        return _Scanner(text, self.policy, final=True, line_prefix="text").run()[0]

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
                    found = self.construct(i)
                except Need:
                    break
                if found is not None:
                    replacement, end, is_text = found
                    spans += [(plain, i, text[plain:i], "plain"), (i, end, replacement, "text" if is_text else "kept")]
                    self._line_out = last_line(self._line_out + text[plain:i] + replacement)
                    plain = i = self._plain_start = end
                    continue
            i += 1
        stop = min(i, n)
        spans.append((plain, stop, text[plain:stop], "plain"))
        cut = stop if self.final else self._cut(spans)
        return self._join([span for span in spans if span[1] <= cut] + self._partial(spans, cut)), cut

    def _cut(self, spans: list[tuple[int, int, str, str]]) -> int:
        """Where a stream may cut: after the last white space of plain text (0: nowhere yet).

        Anything later may still change: the last word may be the start of an
        address, and text left by a removed link may join the next text into one.
        """
        for start, _, output, kind in reversed(spans):
            if kind == "plain":
                space = max(output.rfind(c) for c in " \t\n\r")
                if space >= 0:
                    return start + space + 1
        return 0

    @staticmethod
    def _partial(spans: list[tuple[int, int, str, str]], cut: int) -> list[tuple[int, int, str, str]]:
        """The part before ``cut`` of the plain span ``cut`` falls in, if it falls inside one."""
        return [(s, cut, out[: cut - s], k) for s, e, out, k in spans if s < cut < e and k == "plain"]

    def _join(self, spans: list[tuple[int, int, str, str]]) -> str:
        """The output of ``spans``; text between kept constructs is checked for bare addresses as one."""
        out: list[tuple[str, bool]] = []  # (output, kept)
        run: list[str] = []
        for _, _, piece, kind in spans:
            if kind == "kept":
                out += [(self._plain("".join(run)), False), (piece, True)]
                run = []
            else:
                run.append(piece)
        out.append((self._plain("".join(run)), False))
        return self._reaching_into_kept(out)

    def _reaching_into_kept(self, pieces: list[tuple[str, bool]]) -> str:
        """The pieces joined, without a bare address that reads on into a kept construct unless it is allowed.

        A renderer's linkifier reads a bare address on over the raw text after
        it, kept tags and links included: linkify-it takes a quoted or
        bracketed part of a path whole, so ``https://source"data<b>x</b>"`` or
        ``https://source[data](https://source)`` is one address, not the source's.
        Such an address is removed with the constructs it reaches into.
        """
        text = "".join(piece for piece, _ in pieces)
        kept: list[tuple[int, int]] = []
        at = 0
        for piece, is_kept in pieces:
            if is_kept:
                kept.append((at, at + len(piece)))
            at += len(piece)
        if not kept:
            return text
        out: list[str] = []
        last = 0
        for start, end in find_addresses(text):
            if start < last or any(s <= start < e for s, e in kept):
                continue  # a construct's own address was checked with the construct
            reached = [e for s, e in kept if start < s < end]
            if reached and not self.policy.allows(text[start:end]):
                out += [text[last:start], REMOVED]
                last = max(end, *reached)
        out.append(text[last:])
        return "".join(out)

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
