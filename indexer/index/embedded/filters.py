"""The embedded index's one translation of the plain-data filter language.

A filter becomes a boolean mask over a store's rows, built from the keyword
postings with vectorised numpy operations, so that the cost grows with the
number of rows the filter's values name, not with a Python loop over rows.
"""

from __future__ import annotations

import numpy as np

from indexer.index.embedded.rows import Mask, RowTable
from indexer.index.filters import Filter, validate


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
        value = filter_["value"]
        values = [value] if operator == "==" else value
        mask = np.zeros(rows.n, np.bool_)
        mask[rows.rows_of(filter_["field"], values)] = True
        if operator == "not in":
            np.logical_not(mask, out=mask)
        return mask
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
