"""Filters as plain data, the same for every index adapter.

A filter is either a condition on one keyword field::

    {"field": "document_id", "operator": "in", "value": ["a.md", "b.md"]}

or a boolean combination::

    {"operator": "AND", "conditions": [<filter>, ...]}
    {"operator": "OR", "conditions": [<filter>, ...]}
    {"operator": "NOT", "conditions": [<filter>]}

Fields are keyword fields of a chunk: ``document_id``, ``chunk_id``,
``acl_allow`` and ``acl_deny`` (the last two are multi-valued). Operators on a
field: ``==`` (value is a string) and ``in`` / ``not in`` (value is a list of
strings). On a multi-valued field ``in`` means "any of the chunk's values is in
the list" and ``not in`` means "none is". Each adapter translates this in
exactly one module; the query engine always ANDs the caller's ACL filter in
itself, so a run-time filter can never replace it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from acl.errors import InvalidArgument

Filter = dict[str, Any]

FIELDS = frozenset({"document_id", "chunk_id", "acl_allow", "acl_deny"})
FIELD_OPERATORS = frozenset({"==", "in", "not in"})
BOOL_OPERATORS = frozenset({"AND", "OR", "NOT"})


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
        if filter_["field"] not in FIELDS:
            raise InvalidArgument(f"unknown filter field {filter_['field']!r}")
        if op not in FIELD_OPERATORS:
            raise InvalidArgument(f"unknown field operator {op!r}")
        value = filter_.get("value")
        if op == "==":
            if not isinstance(value, str):
                raise InvalidArgument("'==' needs a string value")
        elif not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise InvalidArgument(f"{op!r} needs a list of strings")
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
