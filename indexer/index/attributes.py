"""A chunk's filterable attributes besides its ACL: instants and custom metadata, in one canonical form.

Instants (a file's modification time, when a chunk was written) are UTC and
kept at millisecond precision — what an OpenSearch ``date`` field holds — so
that every adapter compares the same numbers. On the wire and in filters they
are ISO-8601 text with an explicit offset (``2024-05-01T12:00:00Z``).

Custom metadata is a small map set by the indexing API: keys match
``[a-z][a-z0-9_]{0,62}``, values are strings of at most 256 characters, at most
32 keys per document. It is held as an immutable mapping.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from types import MappingProxyType

from acl.errors import InvalidArgument

METADATA_KEY = re.compile(r"[a-z][a-z0-9_]{0,62}")
MAX_METADATA_KEYS = 32
MAX_METADATA_VALUE_CHARS = 256
EMPTY_METADATA: Mapping[str, str] = MappingProxyType({})

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
#: The instants an index can hold: years 1 to 9999 fit every adapter (OpenSearch dates reach further).
_MIN_MILLIS = -62_135_596_800_000
_MAX_MILLIS = 253_402_300_799_999


def metadata_key(key: object) -> str:
    """``key`` if it is a valid custom metadata key, else InvalidArgument naming the rule."""
    if not isinstance(key, str) or METADATA_KEY.fullmatch(key) is None:
        raise InvalidArgument(
            f"metadata key {key!r} is not valid: a lower-case letter, then up to 62 lower-case letters, digits or '_'"
        )
    return key


def metadata_value(key: str, value: object) -> str:
    """``value`` if it may be the value of ``key``: a string of at most 256 characters, no control characters."""
    if not isinstance(value, str):
        raise InvalidArgument(f"metadata {key!r}: the value must be a string")
    if len(value) > MAX_METADATA_VALUE_CHARS:
        raise InvalidArgument(f"metadata {key!r}: the value is longer than {MAX_METADATA_VALUE_CHARS} characters")
    if any(unicodedata.category(ch) == "Cc" for ch in value):
        raise InvalidArgument(f"metadata {key!r}: the value must not hold control characters")
    return value


def frozen_metadata(metadata: Mapping[str, str] | None) -> Mapping[str, str]:
    """A validated, immutable copy of ``metadata`` (keys sorted); InvalidArgument naming the first problem."""
    if not metadata:
        return EMPTY_METADATA
    if not isinstance(metadata, Mapping):
        raise InvalidArgument("metadata must be a map of strings to strings")
    if len(metadata) > MAX_METADATA_KEYS:
        raise InvalidArgument(f"metadata has {len(metadata)} keys; at most {MAX_METADATA_KEYS} are allowed")
    checked = {metadata_key(key): metadata_value(key, value) for key, value in metadata.items()}
    return MappingProxyType(dict(sorted(checked.items())))


def metadata_pairs(metadata: Mapping[str, str]) -> list[str]:
    """The metadata as ``key=value`` terms, sorted (a key never holds ``=``, so each term reads back one way)."""
    return sorted(f"{key}={value}" for key, value in metadata.items())


def pairs_metadata(pairs: list[str] | tuple[str, ...]) -> Mapping[str, str]:
    """The inverse of ``metadata_pairs``."""
    if not pairs:
        return EMPTY_METADATA
    return MappingProxyType(dict(sorted(tuple(pair.split("=", 1)) for pair in pairs)))  # type: ignore[misc]


def instant(value: datetime) -> datetime:
    """``value`` in UTC, cut to the millisecond; InvalidArgument for a naive or out-of-range datetime."""
    if not isinstance(value, datetime):
        raise InvalidArgument(f"expected a date and time, got {type(value).__name__}")
    if value.tzinfo is None or value.utcoffset() is None:
        raise InvalidArgument(f"date {value.isoformat()} has no time zone: give one (e.g. Z for UTC)")
    utc = value.astimezone(UTC)
    return utc.replace(microsecond=utc.microsecond // 1000 * 1000)


def parse_instant(text: object, what: str = "date") -> datetime:
    """An ISO-8601 date (``2024-05-01``, read as midnight UTC) or date and time with an offset, in UTC at
    millisecond precision; InvalidArgument naming ``what`` when it is not one."""
    if not isinstance(text, str) or not text.strip():
        raise InvalidArgument(f"{what} must be an ISO-8601 date or date and time, e.g. 2024-05-01T12:00:00Z")
    try:
        parsed = datetime.fromisoformat(text.strip())
    except ValueError:
        raise InvalidArgument(
            f"{what} {text!r} is not an ISO-8601 date or date and time, e.g. 2024-05-01T12:00:00Z"
        ) from None
    if parsed.tzinfo is None:
        if len(text.strip()) > 10:  # a time without an offset would be read in some unknown zone
            raise InvalidArgument(f"{what} {text!r} has a time but no time zone: add Z for UTC, or an offset")
        parsed = parsed.replace(tzinfo=UTC)
    try:
        return instant(parsed)
    except OverflowError:
        raise InvalidArgument(f"{what} {text!r} is out of range") from None


def to_millis(value: datetime) -> int:
    """Milliseconds since 1970-01-01 UTC of an instant."""
    delta = instant(value) - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000


def from_millis(millis: int) -> datetime:
    """The instant ``millis`` milliseconds after 1970-01-01 UTC."""
    if not _MIN_MILLIS <= millis <= _MAX_MILLIS:
        raise InvalidArgument(f"instant {millis} ms is out of range")
    return _EPOCH + timedelta(milliseconds=millis)


def iso(value: datetime) -> str:
    """An instant as ISO-8601 UTC text with milliseconds: ``2024-05-01T12:00:00.000Z``."""
    v = instant(value)
    return f"{v.year:04d}-{v:%m-%dT%H:%M:%S}.{v.microsecond // 1000:03d}Z"
