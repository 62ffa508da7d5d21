"""Metadata filters a query may carry: path, content type, title, dates and custom metadata keys.

A ``MetadataFilter`` narrows a query to the chunks whose document matches every
condition it sets (AND); an unset condition matches everything. It is checked
when built (``InvalidArgument`` with a message naming the field) and becomes a
plain-data index filter (``to_filter``) that the query classes AND with the
caller's ACL filter inside the search — it never replaces or widens access.

- ``path_prefix`` / ``path_glob``: on the document id (its path relative to the
  indexed folder, or the id it was pushed with); the glob's ``*`` is any run of
  characters, ``/`` included, ``?`` one character, everything else itself;
- ``content_types``: any of these media types (``text/html``, ``application/pdf``);
- ``title_contains``: the title holds this text, ignoring case;
- ``modified_from`` / ``modified_to``, ``indexed_from`` / ``indexed_to``: inclusive
  bounds on the document's modification time and on when its chunks were written
  (a document without the instant matches no bound on it);
- ``metadata``: per custom key (set by the indexing API), the value is one of the given.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any

from acl.errors import InvalidArgument
from indexer.index.attributes import (
    MAX_METADATA_KEYS,
    instant,
    iso,
    metadata_key,
    metadata_value,
    parse_instant,
)
from indexer.index.filters import MAX_PATTERN_CHARS, Filter, and_, metadata_field

#: The most content types, and values per metadata key, one filter may list.
MAX_VALUES = 64
_MEDIA_TYPE = re.compile(r"[a-z0-9][a-z0-9!#$&^_.+-]{0,126}/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}")


@dataclass(frozen=True, slots=True)
class MetadataCondition:
    """Custom metadata ``key`` has one of ``values``."""

    key: str
    values: tuple[str, ...]

    def __post_init__(self) -> None:
        metadata_key(self.key)
        if isinstance(self.values, str) or not isinstance(self.values, Sequence):
            raise InvalidArgument(f"metadata {self.key!r}: values must be a list of strings")
        object.__setattr__(self, "values", tuple(self.values))
        if not self.values:
            raise InvalidArgument(f"metadata {self.key!r}: give at least one value")
        if len(self.values) > MAX_VALUES:
            raise InvalidArgument(f"metadata {self.key!r}: at most {MAX_VALUES} values")
        for value in self.values:
            metadata_value(self.key, value)


@dataclass(frozen=True, slots=True)
class MetadataFilter:
    """Conditions on a chunk's document, all of which must hold (see the module's docstring)."""

    path_prefix: str | None = None
    path_glob: str | None = None
    content_types: tuple[str, ...] = ()
    title_contains: str | None = None
    modified_from: datetime | None = None
    modified_to: datetime | None = None
    indexed_from: datetime | None = None
    indexed_to: datetime | None = None
    metadata: tuple[MetadataCondition, ...] = field(default=())

    def __post_init__(self) -> None:
        for name, label in (("path_prefix", "path prefix"), ("path_glob", "path glob"), ("title_contains", "title")):
            _text(getattr(self, name), label)
        object.__setattr__(self, "content_types", _content_types(self.content_types))
        for low, high, label in (
            ("modified_from", "modified_to", "modified"),
            ("indexed_from", "indexed_to", "indexed"),
        ):
            start, end = (None if v is None else instant(v) for v in (getattr(self, low), getattr(self, high)))
            object.__setattr__(self, low, start)
            object.__setattr__(self, high, end)
            if start is not None and end is not None and start > end:
                raise InvalidArgument(f"{label} date range is empty: from {iso(start)} is after to {iso(end)}")
        conditions = tuple(self.metadata)
        if not all(isinstance(c, MetadataCondition) for c in conditions):
            raise InvalidArgument("metadata conditions must each name a key and its values")
        if len(conditions) > MAX_METADATA_KEYS:
            raise InvalidArgument(f"at most {MAX_METADATA_KEYS} metadata conditions")
        keys = [c.key for c in conditions]
        if len(set(keys)) != len(keys):
            raise InvalidArgument("each metadata key may appear once: list its values together")
        object.__setattr__(self, "metadata", conditions)

    @classmethod
    def parse(
        cls,
        *,
        path_prefix: str | None = None,
        path_glob: str | None = None,
        content_types: Sequence[str] = (),
        title_contains: str | None = None,
        modified_from: str | None = None,
        modified_to: str | None = None,
        indexed_from: str | None = None,
        indexed_to: str | None = None,
        metadata: Mapping[str, Sequence[str]] | Sequence[tuple[str, Sequence[str]]] = (),
    ) -> MetadataFilter:
        """A filter from interface input: dates as ISO-8601 text (a bare date is midnight UTC), metadata as
        key → values; InvalidArgument naming the field for anything malformed."""
        items = metadata.items() if isinstance(metadata, Mapping) else metadata
        return cls(
            path_prefix=path_prefix,
            path_glob=path_glob,
            content_types=tuple(content_types),
            title_contains=title_contains,
            modified_from=_date(modified_from, "modified from"),
            modified_to=_date(modified_to, "modified to"),
            indexed_from=_date(indexed_from, "indexed from"),
            indexed_to=_date(indexed_to, "indexed to"),
            metadata=tuple(MetadataCondition(key, tuple(values)) for key, values in items),
        )

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> MetadataFilter:
        """A filter from a JSON-like object with ``parse``'s keys; an unknown key is InvalidArgument."""
        if not isinstance(data, Mapping):
            raise InvalidArgument("a filter must be an object")
        known = {f.name for f in fields(cls)}
        unknown = sorted(str(key) for key in data if key not in known)
        if unknown:
            raise InvalidArgument(f"unknown filter key {unknown[0]!r}; known keys: {', '.join(sorted(known))}")
        try:
            return cls.parse(**data)
        except TypeError:  # a list where a string belongs, and the like
            raise InvalidArgument("a filter value has the wrong type") from None

    @property
    def is_empty(self) -> bool:
        """Whether no condition is set (the filter matches every chunk)."""
        return self.to_filter() is None

    def to_filter(self) -> Filter | None:
        """The index filter of these conditions (None when there is none); AND it with the ACL filter."""
        conditions: list[Filter] = []
        if self.path_prefix is not None:
            conditions.append({"field": "document_id", "operator": "prefix", "value": self.path_prefix})
        if self.path_glob is not None:
            conditions.append({"field": "document_id", "operator": "glob", "value": self.path_glob})
        if self.content_types:
            conditions.append({"field": "content_type", "operator": "in", "value": list(self.content_types)})
        if self.title_contains is not None:
            conditions.append({"field": "title", "operator": "contains", "value": self.title_contains})
        for name, bound, operator in (
            ("modified", self.modified_from, ">="),
            ("modified", self.modified_to, "<="),
            ("indexed_at", self.indexed_from, ">="),
            ("indexed_at", self.indexed_to, "<="),
        ):
            if bound is not None:
                conditions.append({"field": name, "operator": operator, "value": iso(bound)})
        for condition in self.metadata:
            conditions.append(
                {"field": metadata_field(condition.key), "operator": "in", "value": list(condition.values)}
            )
        return and_(*conditions) if conditions else None


def restrict(access: Filter, filters: MetadataFilter | None) -> Filter:
    """``access`` (the caller's ACL filter, with any scope) AND the metadata filter: never wider than ``access``."""
    metadata = None if filters is None else filters.to_filter()
    return access if metadata is None else and_(access, metadata)


def _text(value: object, label: str) -> None:
    if value is None:
        return
    if not isinstance(value, str):
        raise InvalidArgument(f"{label} must be a string")
    if not value:
        raise InvalidArgument(f"{label} must not be empty (leave it out to match every document)")
    if len(value) > MAX_PATTERN_CHARS:
        raise InvalidArgument(f"{label} is longer than {MAX_PATTERN_CHARS} characters")
    if any(unicodedata.category(ch) == "Cc" for ch in value):
        raise InvalidArgument(f"{label} must not hold control characters")


def _content_types(values: object) -> tuple[str, ...]:
    if isinstance(values, str) or not isinstance(values, Sequence):
        raise InvalidArgument("content types must be a list of media types")
    if len(values) > MAX_VALUES:
        raise InvalidArgument(f"at most {MAX_VALUES} content types")
    normalised: list[str] = []
    for value in values:
        text = value.strip().lower() if isinstance(value, str) else ""
        if _MEDIA_TYPE.fullmatch(text) is None:
            raise InvalidArgument(f"content type {value!r} is not a media type like text/html or application/pdf")
        if text not in normalised:
            normalised.append(text)
    return tuple(normalised)


def _date(value: str | None, label: str) -> datetime | None:
    return None if value is None else parse_instant(value, label)
