"""The embedded index's one translation of the plain-data filter language.

A filter becomes a boolean mask over a store's rows, built from the keyword
postings with vectorised numpy operations, so that the cost grows with the
number of rows the filter's values name, not with a Python loop over rows.
Pattern operators (``prefix``, ``glob``, ``contains``) test each distinct
document id or title once, never each row; date ranges compare a column.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from indexer.index.attributes import parse_instant, to_millis
from indexer.index.embedded.rows import NO_INSTANT, Mask, RowTable
from indexer.index.filters import METADATA_PREFIX, Filter, fold, glob_matches, validate


def filter_mask(filter_: Filter | None, rows: RowTable) -> Mask:
    """Mask over ``rows[0:n]``: True where the row is live and matches ``filter_``.

    Raises InvalidArgument for a malformed filter. ``None`` matches every row.
    """
    live = rows.alive[: rows.n]
    if filter_ is None:
        return live.copy()
    mask = _evaluate(validate(filter_), rows)
    mask &= live
    return mask


def _evaluate(filter_: Filter, rows: RowTable) -> Mask:
    operator = filter_["operator"]
    if "field" in filter_:
        return _condition(filter_["field"], operator, filter_["value"], rows)
    conditions = filter_["conditions"]
    mask = _evaluate(conditions[0], rows)
    if operator == "NOT":
        np.logical_not(mask, out=mask)
    elif operator == "AND":
        for condition in conditions[1:]:
            mask &= _evaluate(condition, rows)
    else:  # OR
        for condition in conditions[1:]:
            mask |= _evaluate(condition, rows)
    return mask


def _condition(field: str, operator: str, value: Any, rows: RowTable) -> Mask:
    if operator in (">=", "<="):
        column = rows.modified if field == "modified" else rows.indexed_at
        bound = to_millis(parse_instant(value))
        instants = column[: rows.n]
        within: Mask = (instants >= bound) if operator == ">=" else (instants <= bound)
        within &= instants != NO_INSTANT
        return within
    if operator == "prefix":
        field, values = "document_id", [d for d in rows.postings["document_id"] if d.startswith(value)]
    elif operator == "glob":
        field, values = "document_id", [d for d in rows.postings["document_id"] if glob_matches(value, d)]
    elif operator == "contains":
        wanted = fold(value)
        field, values = "title", [t for t in rows.postings["title"] if wanted in fold(t)]
    elif field.startswith(METADATA_PREFIX):
        key = field[len(METADATA_PREFIX) :]
        field, values = "metadata", [f"{key}={v}" for v in ([value] if operator == "==" else value)]
    else:
        values = [value] if operator == "==" else value
    mask = np.zeros(rows.n, np.bool_)
    mask[rows.rows_of(field, values)] = True
    if operator == "not in":
        np.logical_not(mask, out=mask)
    return mask
