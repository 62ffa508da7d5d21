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
no filter                   ``{"match_all": {}}``
==========================  ==================================================

On a multi-valued field (``acl_allow``, ``acl_deny``) ``terms`` matches when
any value is in the list, and ``must_not`` of it when none is — the semantics
``filters`` defines.
"""

from __future__ import annotations

from typing import Any

from indexer.index.filters import Filter, validate

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
