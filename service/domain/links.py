"""What a link address is, as a browser reads it, and which allow-list entry admits it.

Addresses are compared as a browser reads them: Markdown backslash escapes
and HTML character references decoded, percent-escapes decoded, invisible
characters and whitespace removed, scheme and host in lower case. An
allow-list entry is an ``http(s)`` URL prefix: it admits an address with the
same scheme, host and port, a path at or under its own, no user name or
password and no query string (the usual carrier of smuggled text).
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

#: Schemes no answer ever links to, not even as a source's address.
NEVER_KEPT_SCHEMES = frozenset({"javascript", "vbscript", "data", "blob"})

_MARKDOWN_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")
# Whitespace, C0/C1 controls and the zero-width characters browsers and renderers skip.
_INVISIBLE = re.compile(r"[\s\x00-\x1f\x7f-\x9f\u00ad\u200b-\u200f\u2060\ufeff]+")
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*):")


def url_key(url: str) -> str:
    """``url`` as it is compared: decoded as a browser reads it, invisible characters removed."""
    value = url.strip()
    if value.startswith("<") and value.endswith(">"):
        value = value[1:-1]
    value = html.unescape(_MARKDOWN_ESCAPE.sub(r"\1", value))
    value = _INVISIBLE.sub("", unquote(_INVISIBLE.sub("", value)))
    scheme = _SCHEME.match(value)
    if scheme is not None:
        value = scheme.group(1).lower() + value[scheme.end(1) :]
        if value[scheme.end(1) :].startswith("://"):
            start = scheme.end(1) + 3
            end = min((p for p in (value.find(c, start) for c in "/?#") if p >= 0), default=len(value))
            value = value[:start] + value[start:end].lower() + value[end:]
    return value


def never_kept(key: str) -> bool:
    """Whether ``key`` (a ``url_key``) has a scheme no answer may link to."""
    scheme = _SCHEME.match(key)
    return scheme is not None and scheme.group(1).lower() in NEVER_KEPT_SCHEMES


@dataclass(frozen=True, slots=True)
class AllowedPrefix:
    """One allow-list entry: scheme, host, port and a path prefix."""

    scheme: str
    host: str
    port: int | None
    path: str

    @classmethod
    def parse(cls, entry: str) -> AllowedPrefix:
        """The entry ``entry``; ``ValueError`` unless an http(s) URL with a host and nothing after the path."""
        parts = urlsplit(url_key(entry))
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"link allow-list entry {entry!r} is not an http(s) URL with a host")
        if parts.username is not None or parts.password is not None or parts.query or parts.fragment:
            raise ValueError(f"link allow-list entry {entry!r} may hold no user, password, query or fragment")
        return cls(parts.scheme, parts.hostname, parts.port, parts.path or "/")

    def admits(self, key: str) -> bool:
        """Whether the address ``key`` (a ``url_key``) is at or under this entry, with no query."""
        if "\\" in key:  # browsers read "\" as "/" in http(s) addresses; urlsplit does not
            return False
        try:
            parts = urlsplit(key)
            port = parts.port
        except ValueError:
            return False
        if (parts.scheme, parts.hostname, port) != (self.scheme, self.host, self.port):
            return False
        if parts.username is not None or parts.password is not None or parts.query:
            return False
        path = parts.path or "/"
        if any(segment in (".", "..") for segment in path.split("/")):
            return False
        under = self.path if self.path.endswith("/") else self.path + "/"
        return path == self.path or path.startswith(under)
