"""The plain-data filter language (``indexer.index.filters``) as OpenSearch query DSL.

This is the only place that knows how a DocQA filter looks to OpenSearch. Each
filter field is a ``keyword`` field of the same name in the store's index
(``opensearch_mapping``), so a condition is a ``term`` or ``terms`` query and
the boolean operators are ``bool`` clauses. Everything is written in filter
context (no scoring), which OpenSearch caches and which the ``knn`` query
accepts as its efficient-filtering ``filter``:

==========================  ==================================================
DocQA                       OpenSearch
==========================  ==================================================
``field == v``              ``{"term": {field: v}}``
``field in [v, ...]``       ``{"terms": {field: [v, ...]}}`` (``[]`` matches none)
``field not in [v, ...]``   ``{"bool": {"must_not": [{"terms": ...}]}}``
``AND [a, b]``              ``{"bool": {"filter": [a, b]}}``
``OR [a, b]``               ``{"bool": {"should": [a, b], "minimum_should_match": 1}}``
``NOT [a]``                 ``{"bool": {"must_not": [a]}}``
``metadata.k in [v, ...]``  ``{"terms": {"metadata": ["k=v", ...]}}``
``document_id prefix p``    ``{"prefix": {"document_id": {"value": p}}}``
``document_id glob g``      ``{"wildcard": {"document_id": {"value": g}}}`` (``\\`` escaped)
``title contains t``        ``{"wildcard": {"title_folded": {"value": "*t*"}}}`` (folded, escaped)
``modified >= d``           ``{"range": {"modified": {"gte": d}}}`` (``<=``: ``lte``)
no filter                   ``{"match_all": {}}``
==========================  ==================================================

``title_folded`` holds the title as ``filters.fold`` lower-cases it, so
``contains`` ignores case exactly as the other adapters do, with no reliance
on the server's own case folding. Dates travel as ISO-8601 UTC text at
millisecond precision, what a ``date`` field holds.

On a multi-valued field (``acl_allow``, ``acl_deny``) ``terms`` matches when
any value is in the list, and ``must_not`` of it when none is — the semantics
``filters`` defines.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from indexer.index.attributes import iso, parse_instant
from indexer.index.filters import METADATA_PREFIX, Filter, fold, validate

Query = dict[str, Any]

MATCH_ALL: Query = {"match_all": {}}


def to_query(filter_: Filter | None) -> Query:
    """The query DSL for ``filter_`` (validated first; InvalidArgument if malformed)."""
    if filter_ is None:
        return dict(MATCH_ALL)
    return _translate(validate(filter_))


def _translate(filter_: Filter) -> Query:
    operator = filter_["operator"]
    if "field" in filter_:
        field, value = filter_["field"], filter_["value"]
        if operator in _PATTERNS:
            return _PATTERNS[operator](value)
        if operator in (">=", "<="):
            return {"range": {field: {"gte" if operator == ">=" else "lte": iso(parse_instant(value))}}}
        if field.startswith(METADATA_PREFIX):
            key = field[len(METADATA_PREFIX) :]
            field, value = "metadata", f"{key}={value}" if operator == "==" else [f"{key}={v}" for v in value]
        if operator == "==":
            return {"term": {field: value}}
        terms: Query = {"terms": {field: list(value)}}
        return terms if operator == "in" else {"bool": {"must_not": [terms]}}
    clauses = [_translate(condition) for condition in filter_["conditions"]]
    if operator == "AND":
        return {"bool": {"filter": clauses}}
    if operator == "OR":
        return {"bool": {"should": clauses, "minimum_should_match": 1}}
    return {"bool": {"must_not": clauses}}  # NOT: validate() allows exactly one condition


def _escaped(text: str, specials: str) -> str:
    return "".join(f"\\{ch}" if ch in specials else ch for ch in text)


_BACKSLASH = "\\"


def _prefix(value: str) -> Query:
    return {"prefix": {"document_id": {"value": value}}}


def _glob(value: str) -> Query:
    # A glob's ``*`` and ``?`` are the wildcard query's own; only its escape character must be escaped.
    return {"wildcard": {"document_id": {"value": _escaped(value, _BACKSLASH)}}}


def _contains(value: str) -> Query:
    return {"wildcard": {"title_folded": {"value": "*" + _escaped(fold(value), "*?" + _BACKSLASH) + "*"}}}


_PATTERNS: dict[str, Callable[[str], Query]] = {"prefix": _prefix, "glob": _glob, "contains": _contains}
