"""Searching refreshed documents: ``_search`` (sort, ``search_after``, collapse, paging), ``_count``, and the
document selection of ``_delete_by_query`` / ``_update_by_query``.

Each shard runs the query on its own; a shard that fails (a bad field, a script error) is reported in
``_shards.failures`` while the others answer, and when every shard fails the request fails with
``search_phase_execution_exception``, as on the real server.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from tests.fakes_opensearch.cluster import Cluster
from tests.fakes_opensearch.errors import (
    OpenSearchError,
    all_shards_failed,
    bad_request,
    not_modelled,
    parsing,
    shard_failures,
)
from tests.fakes_opensearch.knn import as_float
from tests.fakes_opensearch.queries import DocKey, MatchAll, Query, ShardView, parse_query
from tests.fakes_opensearch.source import filter_source
from tests.fakes_opensearch.storage import Indexed, IndexState

_NUMERIC = ("long", "integer", "short", "byte", "float", "double", "half_float")
_BODY_KEYS = {
    "query",
    "size",
    "from",
    "_source",
    "sort",
    "search_after",
    "track_scores",
    "track_total_hits",
    "collapse",
    "timeout",
    "min_score",
}
_NOT_MODELLED_KEYS = {
    "aggs", "aggregations", "highlight", "rescore", "post_filter", "suggest", "stored_fields", "docvalue_fields",
    "fields", "script_fields", "profile", "explain", "version", "seq_no_primary_term", "pit", "slice", "ext",
    "indices_boost", "terminate_after", "stats", "search_pipeline", "derived", "verbose_pipeline",
}  # fmt: skip
DEFAULT_MAX_RESULT_WINDOW = 10_000


@dataclass(frozen=True, slots=True)
class Hit:
    index: IndexState
    shard: int
    key: DocKey
    doc: Indexed
    score: float


@dataclass(frozen=True, slots=True)
class SortField:
    field: str
    descending: bool
    missing_first: bool
    #: ``unmapped_type`` was given: an index without the field sorts all its hits as missing.
    unmapped_ok: bool = False


@dataclass
class ShardRun:
    """The hits of a query over some indices, and the shards that failed."""

    hits: list[Hit]
    total_shards: int
    failures: list[tuple[str, int, OpenSearchError]]


def run_query(
    cluster: Cluster, targets: list[IndexState], query: Query, check: Any = None, *, dfs: bool = False
) -> ShardRun:
    """Run ``query`` on every shard of ``targets``; ``check(index)`` may fail an index's shards up front.

    ``dfs``: term statistics of every searched shard together (``search_type=dfs_query_then_fetch``)."""
    run = ShardRun([], 0, [])
    log = []
    every = [segment for index in targets for shard in index.shards for segment in shard.segments] if dfs else None
    for index in targets:
        for shard in index.shards:
            run.total_shards += 1
            view = ShardView(index, shard.number, cluster.version, cluster.knn_plugin, list(shard.segments))
            view.stats_leaves = every
            try:
                if check is not None:
                    check(index)
                matches = query.run(view)
            except OpenSearchError as error:
                run.failures.append((index.name, shard.number, error))
                continue
            finally:
                log.extend(view.knn_log)
            run.hits.extend(Hit(index, shard.number, key, view.doc(key), score) for key, score in matches.items())
    if log:
        cluster.knn_modes.append(log)
    if run.failures and len(run.failures) == run.total_shards:
        raise all_shards_failed(run.failures)
    return run


def shards_header(run: ShardRun) -> dict[str, Any]:
    header: dict[str, Any] = {
        "total": run.total_shards,
        "successful": run.total_shards - len(run.failures),
        "skipped": 0,
        "failed": len(run.failures),
    }
    if run.failures:
        header["failures"] = shard_failures(run.failures)
    return header


def parse_body_query(body: dict[str, Any], cluster: Cluster) -> Query:
    if body.get("query") is None:
        return MatchAll()
    return parse_query(body["query"], knn_plugin=cluster.knn_plugin)


# ---------------------------------------------------------------------------- _search
def search(cluster: Cluster, targets: list[IndexState], body: Any, params: dict[str, str]) -> dict[str, Any]:
    """``POST /{index}/_search``."""
    if body is not None and not isinstance(body, dict):
        raise parsing("request body must be an object")
    body = dict(body or {})
    for key in body:
        if key in _NOT_MODELLED_KEYS:
            raise not_modelled(f"the search request option [{key}]")
        if key not in _BODY_KEYS:
            raise parsing(f"Unknown key for a VALUE_STRING in [{key}].")
    for name in ("size", "from", "track_total_hits", "track_scores"):
        if name in params:
            body[name] = _param_value(params[name])
    size, start = _non_negative(body.get("size", 10), "size"), _non_negative(body.get("from", 0), "from")
    query = parse_body_query(body, cluster)
    sort = parse_sort(body.get("sort"))
    search_after = body.get("search_after")
    collapse = body.get("collapse")
    if search_after is not None:
        if not isinstance(search_after, list) or len(search_after) != len(sort):
            raise bad_request(f"search_after has {len(search_after or [])} value(s) but sort has {len(sort)}.")
        if start > 0:
            raise bad_request("[from] parameter must be set to 0 when [search_after] is used")
        if collapse is not None:
            raise bad_request("cannot use `collapse` in conjunction with `search_after`")
    if collapse is not None and (not isinstance(collapse, dict) or set(collapse) - {"field"}):
        raise not_modelled(f"collapse options {collapse!r} (only field)")

    def check(index: IndexState) -> None:
        window = int(index.setting("index.max_result_window") or DEFAULT_MAX_RESULT_WINDOW)
        if start + size > window:
            raise bad_request(
                f"Result window is too large, from + size must be less than or equal to: [{window}] but was "
                f"[{start + size}]. See the scroll api for a more efficient way to request large data sets. This "
                "limit can be set by changing the [index.max_result_window] index level setting."
            )
        for field in sort:
            _sort_field_info(index, field)
        if collapse is not None:
            _collapse_field_info(index, collapse["field"])

    search_type = params.get("search_type", "query_then_fetch")
    if search_type not in ("query_then_fetch", "dfs_query_then_fetch"):
        raise bad_request(f"No search type for [{search_type}]")
    run = run_query(cluster, targets, query, check, dfs=search_type == "dfs_query_then_fetch")
    min_score = body.get("min_score")
    hits = [hit for hit in run.hits if min_score is None or hit.score >= min_score]
    keyed = [(hit, _sort_values(hit, sort)) for hit in hits]
    shard_order = {
        (index.name, shard.number): n for n, (index, shard) in enumerate((i, s) for i in targets for s in i.shards)
    }

    def compare(a: tuple[Hit, list[Any]], b: tuple[Hit, list[Any]]) -> int:
        order = _compare_values(a[1], b[1], sort)
        if order:
            return order
        tie_a = (shard_order[(a[0].index.name, a[0].shard)], a[0].key)
        tie_b = (shard_order[(b[0].index.name, b[0].shard)], b[0].key)
        return (tie_a > tie_b) - (tie_a < tie_b)

    keyed.sort(key=functools.cmp_to_key(compare))
    if search_after is not None:
        keyed = [item for item in keyed if _compare_values(item[1], search_after, sort) > 0]
    if collapse is not None:
        keyed = _collapse(keyed, collapse["field"])
    page = keyed[start : start + size]
    scored = body.get("track_scores") is True or any(f.field == "_score" for f in sort)
    relevance_sorted = len(sort) == 1 and sort[0].field == "_score" and body.get("sort") is None
    hits_json = []
    for hit, values in page:
        item: dict[str, Any] = {
            "_index": hit.index.name,
            "_id": hit.doc.id,
            "_score": as_float(hit.score) if scored or relevance_sorted else None,
        }
        source = filtered_source(hit.doc.source, body.get("_source"), params)
        if source is not None:
            item["_source"] = source
        if collapse is not None:
            item["fields"] = {collapse["field"]: [_collapse_value(hit, collapse["field"])]}
        if not relevance_sorted:
            item["sort"] = [
                as_float(v) if field.field == "_score" else v for v, field in zip(values, sort, strict=True)
            ]
        hits_json.append(item)
    max_score = max((as_float(h.score) for h in hits), default=None) if (scored or relevance_sorted) else None
    answer_hits: dict[str, Any] = {}
    total = _total(len(hits), body.get("track_total_hits"))
    if total is not None:
        answer_hits["total"] = total["value"] if params.get("rest_total_hits_as_int") == "true" else total
    answer_hits["max_score"] = max_score
    answer_hits["hits"] = hits_json
    return {"took": 1, "timed_out": False, "_shards": shards_header(run), "hits": answer_hits}


def _param_value(text: str) -> Any:
    if text in ("true", "false"):
        return text == "true"
    try:
        return int(text)
    except ValueError:
        raise bad_request(f"Failed to parse int parameter with value [{text}]") from None


def _non_negative(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise parsing(f"[{name}] must be an integer, found {value!r}")
    if value < 0:
        raise bad_request(f"[{name}] parameter cannot be negative, found [{value}]")
    return value


def _total(count: int, track: Any) -> dict[str, Any] | None:
    """``hits.total`` under ``track_total_hits``: exact when true, none when false, else counted up to a limit."""
    if track is False:
        return None
    if track is True:
        return {"value": count, "relation": "eq"}
    limit = DEFAULT_MAX_RESULT_WINDOW if track is None else track
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < -1:
        raise bad_request(f"[track_total_hits] parameter must be positive or equals to -1, got {track}")
    if limit == -1 or count <= limit:
        return {"value": count, "relation": "eq"}
    return {"value": limit, "relation": "gte"}


def filtered_source(source: dict[str, Any], spec: Any, params: dict[str, str]) -> dict[str, Any] | None:
    """``_source`` filtering of the request body (or the URL's ``_source*`` parameters)."""
    if spec is None and "_source" in params:
        spec = {"true": True, "false": False}.get(params["_source"], params["_source"].split(","))
    includes = params.get("_source_includes", "")
    excludes = params.get("_source_excludes", "")
    if spec is None:
        spec = {"includes": [p for p in includes.split(",") if p], "excludes": [p for p in excludes.split(",") if p]}
    if spec is False:
        return None
    if spec is True:
        return source
    if isinstance(spec, str):
        spec = [spec]
    if isinstance(spec, list):
        return filter_source(source, spec, [])
    if isinstance(spec, dict):
        return filter_source(
            source,
            list(spec.get("includes") or spec.get("include") or []),
            list(spec.get("excludes") or spec.get("exclude") or []),
        )
    raise parsing(f"[_source] must be a boolean, a string, an array or an object, found {spec!r}")


# ---------------------------------------------------------------------------- sort
def parse_sort(spec: Any) -> list[SortField]:
    """``sort`` as OpenSearch reads it; default: ``_score`` descending."""
    if spec is None:
        return [SortField("_score", True, False)]
    items = spec if isinstance(spec, list) else [spec]
    fields = []
    for item in items:
        options: dict[str, Any]
        if isinstance(item, str):
            name, options = item, {}
        elif isinstance(item, dict) and len(item) == 1:
            ((name, options),) = item.items()
            options = {"order": options} if isinstance(options, str) else options
        else:
            raise parsing(f"malformed sort {item!r}")
        unknown = set(options) - {"order", "missing", "unmapped_type"}
        if unknown:
            raise not_modelled(f"sort options {sorted(unknown)}")
        order = options.get("order", "desc" if name == "_score" else "asc")
        if order not in ("asc", "desc"):
            raise bad_request(f"Unknown SortOrder [{order}]")
        missing = options.get("missing", "_last")
        if missing not in ("_last", "_first"):
            raise not_modelled(f"sort missing value [{missing}]")
        if name == "_doc":
            raise not_modelled("sorting by _doc")
        fields.append(SortField(name, order == "desc", missing == "_first", "unmapped_type" in options))
    return fields


def _sort_field_info(index: IndexState, field: SortField) -> None:
    name = field.field
    if name == "_score":
        return
    info = index.mapping.field(name)
    if info is None and field.unmapped_ok:
        return
    if info is None:
        raise OpenSearchError(
            400, "query_shard_exception", f"No mapping found for [{name}] in order to sort on", index=index.name
        )
    if info.type == "text":
        raise bad_request(
            "Text fields are not optimised for operations that require per-document field data like aggregations and "
            "sorting, so these operations are disabled by default. Please use a keyword field instead. "
            f"Alternatively, set fielddata=true on [{name}] in order to load field data by uninverting the inverted "
            "index. Note that this can use significant memory."
        )
    if info.type not in ("keyword", "boolean", "date", *_NUMERIC) or not info.doc_values:
        raise bad_request(
            f"Can't load fielddata on [{name}] because fielddata is unsupported on fields of type [{info.type}]. "
            "Use doc values instead."
        )


def _sort_values(hit: Hit, sort: list[SortField]) -> list[Any]:
    values: list[Any] = []
    for field in sort:
        if field.field == "_score":
            values.append(hit.score)
            continue
        found = hit.doc.values.get(field.field) or []
        if not found:
            values.append(None)
            continue
        chosen = max(found) if field.descending else min(found)
        info = hit.index.mapping.field(field.field)
        if info is not None and info.type in ("long", "integer", "short", "byte"):
            chosen = int(chosen)
        values.append(chosen)
    return values


def _compare_values(a: list[Any], b: list[Any], sort: list[SortField]) -> int:
    """-1 when ``a`` sorts before ``b``."""
    for left, right, field in zip(a, b, sort, strict=True):
        if left is None or right is None:
            if left is None and right is None:
                continue
            first = (left is None) == field.missing_first
            return -1 if first else 1
        if left == right:
            continue
        before = left > right if field.descending else left < right
        return -1 if before else 1
    return 0


# ---------------------------------------------------------------------------- collapse
def _collapse_field_info(index: IndexState, name: str) -> None:
    info = index.mapping.field(name)
    if info is None:
        raise bad_request(f"no mapping found for `{name}` in order to collapse on")
    if info.type not in ("keyword", *_NUMERIC):
        raise bad_request(f"unknown type for collapse field `{name}`, only keywords and numbers are accepted")
    if not info.doc_values:
        raise bad_request(f"cannot collapse on field `{name}` without `doc_values`")


def _collapse_value(hit: Hit, field: str) -> Any:
    values = hit.doc.values.get(field) or []
    if len(values) > 1:
        raise bad_request(f"failed to collapse {hit.doc.id}, the collapse field must be single valued")
    return values[0] if values else None


def _collapse(keyed: list[tuple[Hit, list[Any]]], field: str) -> list[tuple[Hit, list[Any]]]:
    """One hit per value of ``field``: the first in sort order (documents without it form one group)."""
    seen: set[Any] = set()
    kept = []
    for hit, values in keyed:
        value = _collapse_value(hit, field)
        if value not in seen:
            seen.add(value)
            kept.append((hit, values))
    return kept


# ---------------------------------------------------------------------------- _count
def count(cluster: Cluster, targets: list[IndexState], body: Any) -> dict[str, Any]:
    body = body or {}
    if set(body) - {"query"}:
        raise parsing(f"request does not support {sorted(set(body) - {'query'})}")
    run = run_query(cluster, targets, parse_body_query(body, cluster))
    return {"count": len(run.hits), "_shards": shards_header(run)}
