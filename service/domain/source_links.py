"""Links a person can open to a source: the store's base URL or the document's own web address, at the chunk's place.

A store's ``source_base_url`` (an ``https://`` or ``http://`` URL with a host,
no credentials, query or fragment) maps a document id — the indexed path
relative to the store's folder, e.g. ``guide/intro.html`` — to
``<base>/guide/intro.html``, each path segment percent-encoded so that no
document id leaves the base: empty and ``.`` segments are dropped, a ``..``
segment gives no base link at all, and ``?``, ``#``, ``:``, ``\\`` and
``%`` are encoded, never read as URL syntax. The base URL itself holds no quote,
angle bracket, backtick, backslash, brace, ``|``, ``^``, space, control or
invisible format character (``base_url_problem``): none of them belongs in a
URL unencoded, and each could end an attribute or open markup wherever a link
is written into a page; a link's other parts, a pushed document's own address
included, carry them percent-encoded. Without a base URL a document
pushed with an http(s) source URI links there. A ``file:`` URI names a path on
the indexing host: remote callers get no link for it; the CLI (``local``),
run on that host, may show it.

The place inside the document is the fragment: ``#page=N`` (the first page,
as PDF viewers read it) when the chunk has pages, else ``#<anchor>`` (the HTML
``id`` of its section), percent-encoded as browsers decode it. The schemes no
answer may link to (``javascript:``, ``data:``, ...; ``service.domain.links``)
never come out, whatever the inputs.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from urllib.parse import quote, unquote, urlsplit

from acl.errors import InvalidArgument
from indexer.source_uris import FILE_SCHEME, WEB_SCHEMES, shown_source_uri, validate_source_uri
from service.domain.links import never_kept, url_key

#: Characters no URL holds unencoded (RFC 3986) that end an HTML attribute, open markup or read as another
#: character in a browser (``\\`` as ``/``).
MARKUP_CHARACTERS = "\"'<>`\\{}|^"


def base_url_problem(value: str) -> str | None:
    """Why ``value`` may not be a ``source_base_url`` by the characters it holds, or None."""
    if any(ch.isspace() or unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp") for ch in value):
        return "source_base_url must not contain spaces or control characters"
    found = next((ch for ch in value if ch in MARKUP_CHARACTERS), None)
    if found is not None:
        return (
            "source_base_url must not contain quotes, angle brackets, backticks, backslashes, braces, "
            f"'|' or '^' (it holds {found!r})"
        )
    return None


def check_base_url(value: object) -> str | None:
    """``value`` as a store's ``source_base_url`` (None or "" = none, a trailing ``/`` dropped).

    InvalidArgument unless it is an http(s) URL with a host and nothing after its path, holding none of the
    characters ``base_url_problem`` names.
    """
    if value is None or value == "":
        return None
    problem = base_url_problem(value) if isinstance(value, str) else None
    if problem is not None:
        raise InvalidArgument(problem)
    uri = validate_source_uri(value)  # http(s) with a host, no credentials, spaces or control characters
    parts = urlsplit(uri)
    if parts.query or parts.fragment or uri.endswith(("?", "#")):
        raise InvalidArgument("source_base_url must not carry a query or fragment")
    if any(unquote(segment) in (".", "..") for segment in parts.path.split("/")):
        raise InvalidArgument("source_base_url must not contain '.' or '..' path segments")
    return uri.rstrip("/")


def fragment(anchor: str, pages: Sequence[int]) -> str:
    """``#page=N`` for the first of ``pages``, else ``#<anchor>`` percent-encoded, else ""."""
    numbers = [p for p in pages if isinstance(p, int) and not isinstance(p, bool) and p >= 1]
    if numbers:
        return f"#page={min(numbers)}"
    if anchor:
        return "#" + quote(anchor, safe="")
    return ""


def document_path(document_id: str) -> str | None:
    """The document id as a relative URL path, each segment percent-encoded; None when it could climb (``..``)."""
    segments = [s for s in document_id.split("/") if s not in ("", ".")]
    if not segments or ".." in segments:
        return None
    return "/".join(quote(s, safe="") for s in segments)


def source_link(
    document_id: str,
    source_uri: str,
    *,
    base_url: str | None,
    anchor: str = "",
    pages: Sequence[int] = (),
    local: bool = False,
) -> str | None:
    """A link to the source at its place: under ``base_url`` when the store has one, else an http(s)
    ``source_uri`` with the fragment; None when there is nothing a remote reader could open.

    ``local`` (the CLI, on the indexing host) also links ``file:`` URIs. A base URL or source URI that
    breaks its rule (stored before the rule existed) is never used.
    """
    place = fragment(anchor, pages)
    link: str | None = None
    base = _base(base_url)
    path = document_path(document_id) if base is not None else None
    if base is not None and path is not None:
        link = f"{base}/{path}{place}"
    else:
        shown = shown_source_uri(source_uri, local=local)
        if shown:
            link = shown.split("#", 1)[0] + place if place else shown
    if link is None or never_kept(url_key(link)):
        return None
    scheme = urlsplit(link).scheme.lower()
    return _encoded(link) if scheme in WEB_SCHEMES or (local and scheme == FILE_SCHEME) else None


def _encoded(link: str) -> str:
    """``link`` with each character of ``MARKUP_CHARACTERS`` percent-encoded (a browser sends them so)."""
    return "".join(f"%{ord(ch):02X}" if ch in MARKUP_CHARACTERS else ch for ch in link)


def _base(base_url: str | None) -> str | None:
    try:
        return check_base_url(base_url)
    except InvalidArgument:
        return None
