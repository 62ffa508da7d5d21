"""Which addresses an answer may carry: its own sources, and the configured allow-list.

A language model that read a planted instruction can be made to put other
text it read into a URL — as an image a browser fetches by itself, or a link a
reader clicks (EchoLeak, CVE-2025-32711). So an answer keeps an address only
if it is, exactly, the address of one of the sources that answer was given,
or if it falls under an entry of ``generator.link_allowlist`` (same scheme
``http``/``https``, same host and port, a path at or under the entry's path,
no user name or password and no query string) and carries no run of
``CARRIED_CHARS`` letters and digits of the texts the model read — the
allow-listed host might forward what it is sent, as in EchoLeak. ``javascript:``, ``vbscript:``,
``data:`` and ``blob:`` addresses are never kept, not even as a source.
Addresses are compared as a browser reads them (``service.domain.links``).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote_plus, urlsplit

from service.domain.links import AllowedPrefix, never_kept, url_key

if TYPE_CHECKING:
    from linkify_it import LinkifyIt

# Addresses a renderer may not linkify but a reader (or another renderer) could follow.
_ANY_SCHEME = re.compile(r"(?i)[a-z][a-z0-9+.\-]{1,31}://[^\s<>\"'`]*")
_SCRIPT_SCHEME = re.compile(r"(?i)(?:javascript|vbscript|data|blob|mailto):[^\s<>\"'`]*")
_PROTOCOL_RELATIVE = re.compile(r"(?<![A-Za-z0-9:/\\])//[A-Za-z0-9\[][^\s<>\"'`]*")
_WWW = re.compile(r"(?i)(?<![A-Za-z0-9])www\.[^\s<>\"'`]+")
_TRAILING = ".,;:!?'\"*_~"
_BEFORE_SCHEME = re.compile(r"[^\s\w](?=[A-Za-z][A-Za-z0-9+.\-]{0,31}://)")
_NOT_LETTER = re.compile(r"[^0-9a-z]+")
#: Letters and digits in a row of the model's texts that an allow-listed address may not carry.
CARRIED_CHARS = 20


class LinkPolicy:
    """The addresses one answer may keep."""

    __slots__ = ("_prefixes", "_quoted", "_quoted_mail", "_sources", "_texts", "_windows")

    def __init__(self, sources: Iterable[str], allowlist: Iterable[str] = (), texts: Iterable[str] = ()) -> None:
        """The policy of an answer given ``sources`` (their addresses) under ``allowlist`` (URL prefixes).

        ``texts`` are the texts the model read: an allow-listed address that
        carries a run of ``CARRIED_CHARS`` letters and digits of them is not
        kept, unless the texts quote that very address. Raises ``ValueError``
        for an allow-list entry that is not an http(s) URL with a host, or that
        holds a user, password, query or fragment.
        """
        self._sources = frozenset(key for key in map(url_key, sources) if key and not never_kept(key))
        self._prefixes = tuple(AllowedPrefix.parse(entry) for entry in allowlist)
        self._texts = tuple(texts)
        self._windows: frozenset[str] | None = None  # built on the first allow-listed address
        self._quoted: frozenset[str] = frozenset()
        self._quoted_mail: frozenset[str] | None = None

    def allows(self, url: str) -> bool:
        """Whether an answer may carry a link or image to ``url``."""
        key = url_key(url)
        if not key or never_kept(key):
            return False
        if key in self._sources:
            return True
        mailbox = _mailbox(key)
        if mailbox is not None:
            # An e-mail address can carry text in its local part: kept only when a source gives that very address.
            return mailbox in self._mailboxes()
        return any(prefix.admits(key) for prefix in self._prefixes) and not self._carries_text(key)

    def _mailboxes(self) -> frozenset[str]:
        if self._quoted_mail is None:
            self._quoted_mail = frozenset(box.lower() for text in self._texts for box in _MAILBOX_IN_TEXT.findall(text))
        return self._quoted_mail

    def _carries_text(self, key: str) -> bool:
        """Whether ``key`` smuggles text the model read (an address the texts quote does not)."""
        if self._windows is None:
            letters = [_letters(text) for text in self._texts]
            self._windows = frozenset(
                run[k : k + CARRIED_CHARS] for run in letters for k in range(len(run) - CARRIED_CHARS + 1)
            )
            self._quoted = frozenset(
                url_key(text[start:end]) for text in self._texts for start, end in find_addresses(text)
            )
        if key in self._quoted:
            return False
        parts = urlsplit(key)  # the host is the allow-list's own: only the path and fragment can carry text
        run = _letters(unquote_plus(parts.path + parts.fragment))
        return any(run[k : k + CARRIED_CHARS] in self._windows for k in range(len(run) - CARRIED_CHARS + 1))


_MAILBOX = re.compile(r"(?i)(?:mailto:)?([a-z0-9.!#$%&'*+/=?^_`{|}~-]+@[a-z0-9](?:[a-z0-9.-]*[a-z0-9])?)")
_MAILBOX_IN_TEXT = re.compile(r"(?i)[a-z0-9.!#$%&'*+/=?^_`{|}~-]+@[a-z0-9](?:[a-z0-9.-]*[a-z0-9])?")


_MAYBE_LINKED = re.compile(r"[:@]|//|\S\.\S")


def _mailbox(key: str) -> str | None:
    """The address of a bare or ``mailto:`` e-mail address without a query (lower case); None otherwise."""
    match = _MAILBOX.fullmatch(key)
    return match.group(1).lower() if match is not None else None


def _letters(text: str) -> str:
    return _NOT_LETTER.sub("", text.lower())


@functools.cache
def _linkify() -> LinkifyIt:
    from linkify_it import LinkifyIt

    return LinkifyIt()


def _fuzzy_carries_data(match: Any) -> bool:
    """A scheme-less match (``evil.com/x``) worth checking: a path, query, port or sub-domains.

    ``example.com`` or ``config.py`` alone cannot carry text; ``a-secret.evil.com`` can.
    """
    url = str(match.url)
    rest = url.split("://", 1)[-1]
    host, sep, _ = rest.partition("/")
    if sep or "?" in host or "#" in host or ":" in host:
        return True
    return host.count(".") >= 2


def _trim(text: str, start: int, end: int) -> int:
    """The end of an address found by a pattern: trailing punctuation and unmatched ")" left out."""
    while end > start:
        last = text[end - 1]
        if last in _TRAILING or (last == ")" and text.count("(", start, end) < text.count(")", start, end)):
            end -= 1
        else:
            break
    return end


def find_addresses(text: str) -> list[tuple[int, int]]:
    """Spans of ``text`` a reader or a renderer could follow as an address, merged and in order.

    What linkify-it (markdown-it's linkifier) links — e-mail addresses included,
    bare ``name.tld`` words that carry no path not — plus any
    ``scheme://…``, ``//host…``, ``www.…`` and ``javascript:``/``data:``-style address.
    """
    spans: list[tuple[int, int]] = []
    # linkify-it is slow in pure Python; everything it links has a scheme's ":", "//", an "@" or a dot
    # between two non-blank characters, so text without any of them (most prose) skips it.
    if _MAYBE_LINKED.search(text):
        # linkify-it links no "scheme://" right after punctuation ("=https://…"), where markdown-it's own
        # linkify rule may, reading on over a quoted part: it is read again with that character a space.
        for variant in dict.fromkeys((text, _BEFORE_SCHEME.sub(" ", text))):
            for match in _linkify().match(variant) or ():
                # An e-mail address is one too (its local part can carry text): kept only when a source quotes it.
                if match.schema or _fuzzy_carries_data(match):
                    spans.append((match.index, match.last_index))
    for pattern in (_ANY_SCHEME, _SCRIPT_SCHEME, _WWW, _PROTOCOL_RELATIVE):
        for found in pattern.finditer(text):
            end = _trim(text, found.start(), found.end())
            if end > found.start():
                spans.append((found.start(), end))
    spans.sort()
    merged: list[tuple[int, int]] = []
    for start, end in spans:
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged
