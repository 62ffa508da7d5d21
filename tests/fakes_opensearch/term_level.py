"""Term-level queries on keyword and date fields: ``prefix``, ``wildcard`` and ``range``.

As the server runs them: ``prefix`` and ``wildcard`` test each indexed keyword term (``*`` any run of characters,
``?`` one character, ``\\`` escapes the next one; case-sensitive unless ``case_insensitive``, which the fake does
not model); ``range`` on a ``date`` field compares instants at millisecond precision, parsing the bounds and the
stored values as ISO-8601 (``strict_date_optional_time``) or epoch milliseconds. A document without a value of the
field matches none of them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from tests.fakes_opensearch.errors import OpenSearchError, bad_request, not_modelled, parsing
from tests.fakes_opensearch.queries import Matches, Query, ShardView


def _keyword_values(view: ShardView, field: str, kind: str) -> dict[Any, list[str]] | None:
    info = view.index.mapping.field(field)
    if info is None:
        return None
    if info.type != "keyword":
        raise not_modelled(f"[{kind}] queries on a field of type [{info.type}]")
    if not info.searchable:
        raise bad_request(f"Cannot search on field [{field}] since it is not indexed.")
    return {key: [str(v) for v in doc.values.get(field, [])] for key, doc in view.docs()}


@dataclass(frozen=True, eq=False)
class Prefix(Query):
    field: str
    value: str
    boost: float = 1.0

    def run(self, view: ShardView) -> Matches:
        values = _keyword_values(view, self.field, "prefix") or {}
        return {key: self.boost for key, terms in values.items() if any(t.startswith(self.value) for t in terms)}


def wildcard_regex(pattern: str) -> re.Pattern[str]:
    """Lucene's WildcardQuery.toAutomaton, as a regular expression."""
    out: list[str] = []
    position = 0
    while position < len(pattern):
        ch = pattern[position]
        if ch == "*":
            out.append(".*")
        elif ch == "?":
            out.append(".")
        elif ch == "\\" and position + 1 < len(pattern):
            position += 1
            out.append(re.escape(pattern[position]))
        else:
            out.append(re.escape(ch))
        position += 1
    return re.compile("".join(out), re.DOTALL)


@dataclass(frozen=True, eq=False)
class Wildcard(Query):
    field: str
    pattern: str
    boost: float = 1.0

    def run(self, view: ShardView) -> Matches:
        regex = wildcard_regex(self.pattern)
        values = _keyword_values(view, self.field, "wildcard") or {}
        return {key: self.boost for key, terms in values.items() if any(regex.fullmatch(t) for t in terms)}


def epoch_millis(value: Any, field: str) -> int:
    """An instant as a ``date`` field reads it (default format ``strict_date_optional_time||epoch_millis``)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    text = str(value)
    if re.fullmatch(r"-?\d+", text) and len(text) != 4:  # a bare year is a date, not milliseconds
        return int(text)
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise OpenSearchError(
            400, "parse_exception", f"failed to parse date field [{text}] with format [strict_date_optional_time]"
        ) from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    delta = parsed - datetime(1970, 1, 1, tzinfo=UTC)
    return (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000


@dataclass(frozen=True, eq=False)
class Range(Query):
    field: str
    bounds: tuple[tuple[str, Any], ...]
    boost: float = 1.0

    def run(self, view: ShardView) -> Matches:
        info = view.index.mapping.field(self.field)
        if info is None:
            return {}
        if info.type != "date":
            raise not_modelled(f"[range] queries on a field of type [{info.type}]")
        limits = [(op, epoch_millis(bound, self.field)) for op, bound in self.bounds if bound is not None]
        found: Matches = {}
        for key, doc in view.docs():
            instants = [epoch_millis(v, self.field) for v in doc.values.get(self.field, [])]
            if any(all(_holds(op, at, limit) for op, limit in limits) for at in instants):
                found[key] = self.boost
        return found


def _holds(op: str, at: int, limit: int) -> bool:
    return {"gte": at >= limit, "gt": at > limit, "lte": at <= limit, "lt": at < limit}[op]


def _field_body(body: dict[str, Any], kind: str, allowed: set[str]) -> tuple[str, dict[str, Any]]:
    fields = {key: value for key, value in body.items() if key not in ("boost", "_name")}
    if len(fields) != 1:
        raise parsing(f"[{kind}] query doesn't support multiple fields, found {sorted(fields)}")
    ((name, spec),) = fields.items()
    if not isinstance(spec, dict):
        spec = {"value": spec}
    for key in spec:
        if key not in allowed:
            raise parsing(f"[{kind}] query does not support [{key}]")
    if spec.get("case_insensitive"):
        raise not_modelled(f"case_insensitive {kind} queries")
    return name, spec


def parse_prefix(body: dict[str, Any]) -> Query:
    name, spec = _field_body(body, "prefix", {"value", "boost", "_name", "rewrite", "case_insensitive"})
    if not isinstance(spec.get("value"), str):
        raise parsing("[prefix] query requires a string [value]")
    return Prefix(name, spec["value"], float(spec.get("boost", 1.0)))


def parse_wildcard(body: dict[str, Any]) -> Query:
    allowed = {"value", "wildcard", "boost", "_name", "rewrite", "case_insensitive"}
    name, spec = _field_body(body, "wildcard", allowed)
    pattern = spec.get("value", spec.get("wildcard"))
    if not isinstance(pattern, str):
        raise parsing("[wildcard] query requires a string [value]")
    return Wildcard(name, pattern, float(spec.get("boost", 1.0)))


def parse_range(body: dict[str, Any]) -> Query:
    allowed = {"gte", "gt", "lte", "lt", "boost", "_name", "format", "time_zone", "relation"}
    name, spec = _field_body(body, "range", allowed)
    for key in ("format", "time_zone", "relation"):
        if key in spec:
            raise not_modelled(f"[range] parameter [{key}]")
    bounds = tuple((op, spec[op]) for op in ("gte", "gt", "lte", "lt") if op in spec)
    return Range(name, bounds, float(spec.get("boost", 1.0)))
