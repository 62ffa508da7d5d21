"""Filters as plain data, the same for every index adapter.

A filter is either a condition on one keyword field::

    {"field": "document_id", "operator": "in", "value": ["a.md", "b.md"]}

or a boolean combination::

    {"operator": "AND", "conditions": [<filter>, ...]}
    {"operator": "OR", "conditions": [<filter>, ...]}
    {"operator": "NOT", "conditions": [<filter>]}

Fields are keyword fields of a chunk: ``document_id``, ``chunk_id``,
``acl_allow`` and ``acl_deny`` (the last two are multi-valued), ``content_type``
and ``metadata.<key>`` (a custom metadata key, ``indexer.index.attributes``).
Operators on a keyword field: ``==`` (value is a string) and ``in`` / ``not in``
(value is a list of strings). On a multi-valued field ``in`` means "any of the
chunk's values is in the list" and ``not in`` means "none is"; a chunk without
the key has no value (``in`` fails, ``not in`` holds).

Metadata operators, each on its one field (value a non-empty string):

- ``{"field": "document_id", "operator": "prefix", "value": "hr/"}``: the id starts with it;
- ``{"field": "document_id", "operator": "glob", "value": "hr/*.pdf"}``: the whole id matches
  the pattern, where ``*`` is any run of characters (``/`` included) and ``?`` any one
  character; every other character is itself;
- ``{"field": "title", "operator": "contains", "value": "Policy"}``: the title holds it,
  ignoring case (both sides ``fold``-ed);
- ``{"field": "modified" | "indexed_at", "operator": ">=" | "<=", "value": "2024-05-01T00:00:00Z"}``:
  the instant (ISO-8601 with an offset, compared at millisecond precision) is at or after /
  at or before the bound; a chunk without the instant matches neither.

Each adapter translates this in exactly one module; the query engine always
ANDs the caller's ACL filter in itself, so a run-time filter can never replace it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from acl.errors import InvalidArgument
from indexer.index.attributes import METADATA_KEY, parse_instant

Filter = dict[str, Any]

KEYWORD_FIELDS = frozenset({"document_id", "chunk_id", "acl_allow", "acl_deny", "content_type"})
DATE_FIELDS = frozenset({"modified", "indexed_at"})
FIELDS = KEYWORD_FIELDS | DATE_FIELDS | {"title"}
#: A custom metadata key is the field ``metadata.<key>``.
METADATA_PREFIX = "metadata."
KEYWORD_OPERATORS = frozenset({"==", "in", "not in"})
#: Operators that apply to one field only.
FIELD_OF_OPERATOR = {"prefix": "document_id", "glob": "document_id", "contains": "title"}
RANGE_OPERATORS = frozenset({">=", "<="})
FIELD_OPERATORS = KEYWORD_OPERATORS | RANGE_OPERATORS | set(FIELD_OF_OPERATOR)
BOOL_OPERATORS = frozenset({"AND", "OR", "NOT"})
#: The longest prefix, glob or ``contains`` text a filter may hold.
MAX_PATTERN_CHARS = 256


def fold(text: str) -> str:
    """Text as ``contains`` compares it: lower-cased (the same on every adapter)."""
    return text.lower()


def glob_matches(pattern: str, text: str) -> bool:
    """Whether the whole of ``text`` matches ``pattern`` (``*``: any run of characters, ``?``: one character).

    Matched piece by piece between the stars, each at its leftmost place (which is right for ``*`` and ``?``
    alone), so the time is at most len(text) × len(pattern) whatever the pattern: a regular expression would
    backtrack exponentially on ``a*a*a*…!``, and the time taken would tell a caller whether ids they may not
    read start with ``a``.
    """
    pieces = pattern.split("*")
    if len(pieces) == 1:
        return len(text) == len(pattern) and _piece_at(pattern, text, 0)
    first, *middle, last = pieces
    end = len(text) - len(last)
    if end < len(first) or not _piece_at(first, text, 0) or not _piece_at(last, text, end):
        return False
    position = len(first)
    for piece in middle:
        found = next((i for i in range(position, end - len(piece) + 1) if _piece_at(piece, text, i)), -1)
        if found < 0:
            return False
        position = found + len(piece)
    return True


def _piece_at(piece: str, text: str, at: int) -> bool:
    """Whether ``piece`` (no ``*``; ``?`` any one character) matches ``text`` at offset ``at``."""
    return all(p == "?" or p == text[at + i] for i, p in enumerate(piece))


def metadata_field(key: str) -> str:
    """The filter field of custom metadata ``key``."""
    return METADATA_PREFIX + key


def acl_filter(principals: Iterable[str]) -> Filter:
    """Chunks readable by ``principals``: allow meets them, deny does not."""
    values = sorted(set(principals))
    return {
        "operator": "AND",
        "conditions": [
            {"field": "acl_allow", "operator": "in", "value": values},
            {"field": "acl_deny", "operator": "not in", "value": values},
        ],
    }


def documents_filter(document_ids: Iterable[str]) -> Filter:
    """Chunks of the given documents."""
    return {"field": "document_id", "operator": "in", "value": sorted(set(document_ids))}


def and_(*filters: Filter | None) -> Filter:
    """AND of the given filters, skipping ``None``."""
    conditions = [f for f in filters if f is not None]
    if len(conditions) == 1:
        return conditions[0]
    return {"operator": "AND", "conditions": conditions}


def validate(filter_: Filter) -> Filter:
    """Return ``filter_`` if it is well formed, else raise InvalidArgument."""
    if not isinstance(filter_, dict):
        raise InvalidArgument(f"filter must be an object, got {type(filter_).__name__}")
    op = filter_.get("operator")
    if "field" in filter_:
        _validate_condition(filter_["field"], op, filter_.get("value"))
        return filter_
    if op not in BOOL_OPERATORS:
        raise InvalidArgument(f"unknown boolean operator {op!r}")
    conditions = filter_.get("conditions")
    if not isinstance(conditions, list) or not conditions:
        raise InvalidArgument(f"{op} needs a non-empty list of conditions")
    if op == "NOT" and len(conditions) != 1:
        raise InvalidArgument("NOT takes exactly one condition")
    for condition in conditions:
        validate(condition)
    return filter_


def _validate_condition(field: Any, op: Any, value: Any) -> None:
    is_metadata = isinstance(field, str) and field.startswith(METADATA_PREFIX)
    if is_metadata and METADATA_KEY.fullmatch(field[len(METADATA_PREFIX) :]) is None:
        raise InvalidArgument(f"filter field {field!r} names no valid metadata key")
    if not is_metadata and (not isinstance(field, str) or field not in FIELDS):
        raise InvalidArgument(f"unknown filter field {field!r}")
    if not isinstance(op, str) or op not in FIELD_OPERATORS:
        raise InvalidArgument(f"unknown field operator {op!r}")
    if op in KEYWORD_OPERATORS:
        if not is_metadata and field not in KEYWORD_FIELDS:
            raise InvalidArgument(f"{op!r} does not apply to field {field!r}")
        if op == "==":
            if not isinstance(value, str):
                raise InvalidArgument("'==' needs a string value")
        elif not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise InvalidArgument(f"{op!r} needs a list of strings")
        return
    if op in RANGE_OPERATORS:
        if field not in DATE_FIELDS:
            raise InvalidArgument(f"{op!r} applies to {sorted(DATE_FIELDS)} only, not {field!r}")
        parse_instant(value, f"{field} bound")
        return
    if field != FIELD_OF_OPERATOR[op]:
        raise InvalidArgument(f"{op!r} applies to field {FIELD_OF_OPERATOR[op]!r} only, not {field!r}")
    if not isinstance(value, str) or not value:
        raise InvalidArgument(f"{op!r} needs a non-empty string")
    if len(value) > MAX_PATTERN_CHARS:
        raise InvalidArgument(f"{op!r} value is longer than {MAX_PATTERN_CHARS} characters")
