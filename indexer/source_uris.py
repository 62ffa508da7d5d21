"""The one rule for a document's source URI: where a reader may open it, never a script.

A pushed document (the gRPC IndexingService) may name an ``https://`` or
``http://`` URL with a host, or nothing; never ``javascript:``, ``data:``,
``file:`` or any other scheme, never credentials in the URL, never spaces or
control characters, at most 2,048 characters. A document indexed from a folder
gets the ``file:`` URI of its path, made by the indexer itself.

What a reader is shown (``shown_source_uri``): remote callers (gRPC, GraphQL)
get http(s) URLs only — a ``file:`` URI names a path on the server, useful to
its administrators alone — and the CLI, the administrator's tool on the
server, shows ``file:`` URIs too. A value that breaks the rule (one stored
before it existed) is shown to nobody: it reads as "".
"""

from __future__ import annotations

import unicodedata
from urllib.parse import urlsplit

from acl.errors import InvalidArgument

#: The longest source URI a document may have.
MAX_SOURCE_URI_CHARS = 2048
#: Schemes a remote reader may be shown (and a push may name).
WEB_SCHEMES = ("https", "http")
#: The scheme of documents indexed from a folder, shown in the CLI only.
FILE_SCHEME = "file"


def validate_source_uri(uri: object, *, allow_file: bool = False) -> str:
    """``uri`` if it keeps the rule above ("" = no link); InvalidArgument naming what is wrong."""
    if not isinstance(uri, str):
        raise InvalidArgument("source_uri must be a string")
    if uri == "":
        return uri
    if len(uri) > MAX_SOURCE_URI_CHARS:
        raise InvalidArgument(f"source_uri is longer than {MAX_SOURCE_URI_CHARS} characters")
    if any(ch.isspace() or unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp") for ch in uri):
        raise InvalidArgument("source_uri must not contain spaces or control characters")
    try:
        parts = urlsplit(uri)
        host = parts.hostname
    except ValueError:  # e.g. an unclosed IPv6 bracket
        raise InvalidArgument("source_uri is not a valid URL") from None
    scheme = parts.scheme.lower()
    allowed = (*WEB_SCHEMES, FILE_SCHEME) if allow_file else WEB_SCHEMES
    if scheme not in allowed:
        raise InvalidArgument(f"source_uri must be an {' or '.join(s + '://' for s in allowed)} URL, or empty")
    if scheme in WEB_SCHEMES and not host:
        raise InvalidArgument(f"source_uri must name a host ({scheme}://host/...)")
    if parts.username is not None or parts.password is not None:
        raise InvalidArgument("source_uri must not carry credentials")
    return uri


def shown_source_uri(uri: str, *, local: bool = False) -> str:
    """What a reader is shown: ``uri`` if it keeps the rule (``file:`` only when ``local``), else ""."""
    try:
        return validate_source_uri(uri, allow_file=local)
    except InvalidArgument:
        return ""
