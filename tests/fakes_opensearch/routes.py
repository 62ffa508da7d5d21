"""The REST endpoints the fake serves, their query parameters, and the index-level ones' answers.

A path the fake does not serve answers 400 ``fake_not_modelled_exception``; a query parameter the
endpoint does not take answers 400 as the real server does ("contains unrecognized parameter").
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tests.fakes_opensearch import documents, search
from tests.fakes_opensearch import settings as index_settings
from tests.fakes_opensearch.cluster import Cluster
from tests.fakes_opensearch.documents import Answer
from tests.fakes_opensearch.errors import OpenSearchError, bad_request, not_modelled
from tests.fakes_opensearch.storage import IndexState
from tests.fakes_opensearch.versions import lucene_version, version_text

CLUSTER_NAME = "fake-opensearch"
NODE_NAME = "fake-node"


@dataclass
class Call:
    """One request as an endpoint sees it."""

    cluster: Cluster
    method: str
    path: str
    params: dict[str, str]
    raw: bytes
    parts: dict[str, str]
    distribution: str

    def json(self) -> Any:
        """The body as JSON (None when empty); 400 when it is not JSON."""
        if not self.raw.strip():
            return None
        try:
            return json.loads(self.raw)
        except ValueError as error:
            raise OpenSearchError(
                400, "x_content_parse_exception", f"Failed to parse the request body: {error}"
            ) from None

    def require_json(self) -> Any:
        body = self.json()
        if body is None:
            raise bad_request("request body is required", type_="parse_exception")
        return body


Handler = Callable[[Call], Answer]

_COMMON = {"pretty", "human", "error_trace"}
_WILDCARDS = {"ignore_unavailable", "allow_no_indices", "expand_wildcards"}
_MASTER = {"timeout", "cluster_manager_timeout", "master_timeout"}
_SOURCE = {"_source", "_source_includes", "_source_excludes"}
_WRITE = {"refresh", "timeout", "wait_for_active_shards", "require_alias", "if_seq_no", "if_primary_term"}


# ---------------------------------------------------------------------------- cluster-level answers
def _info(call: Call) -> Answer:
    version = call.cluster.version
    return Answer(200, {
        "name": NODE_NAME,
        "cluster_name": CLUSTER_NAME,
        "cluster_uuid": "fake-cluster-uuid-00000",
        "version": {
            "distribution": call.distribution,
            "number": version_text(version),
            "build_type": "tar",
            "build_hash": "0000000000000000000000000000000000000000",
            "build_date": "2025-01-01T00:00:00.000000Z",
            "build_snapshot": False,
            "lucene_version": lucene_version(version),
            "minimum_wire_compatibility_version": "2.19.0" if version[0] >= 3 else "7.10.0",
            "minimum_index_compatibility_version": "2.0.0" if version[0] >= 3 else "7.0.0",
        },
        "tagline": "The OpenSearch Project: https://opensearch.org/",
    })  # fmt: skip


def _cat_plugins(call: Call) -> Answer:
    plugin_version = version_text(call.cluster.version) + ".0"
    rows = (
        [{"name": NODE_NAME, "component": "opensearch-knn", "version": plugin_version}]
        if call.cluster.knn_plugin
        else []
    )
    if call.params.get("format") == "json":
        return Answer(200, rows)
    return Answer(200, "".join(f"{row['name']} {row['component']} {row['version']}\n" for row in rows))


def _put_template(call: Call) -> Answer:
    call.cluster.put_template(call.parts["name"], call.require_json())
    return Answer(200, {"acknowledged": True})


# ---------------------------------------------------------------------------- indices
def _create(call: Call) -> Answer:
    index = call.cluster.create_index(call.parts["index"], call.json())
    return Answer(200, {"acknowledged": True, "shards_acknowledged": True, "index": index.name})


def _describe(index: IndexState, flat: bool) -> dict[str, Any]:
    settings = dict(index.settings)
    return {
        "aliases": {alias: dict(props) for alias, props in index.aliases.items()},
        "mappings": index.mapping.raw,
        "settings": settings if flat else index_settings.structured(settings),
    }


def _flat_settings(call: Call) -> bool:
    if "include_defaults" in call.params and call.params["include_defaults"] != "false":
        raise not_modelled("include_defaults")
    return call.params.get("flat_settings") == "true"


def _get(call: Call) -> Answer:
    targets = call.cluster.resolve(
        call.parts["index"], ignore_unavailable=call.params.get("ignore_unavailable") == "true"
    )
    flat = _flat_settings(call)
    return Answer(200, {index.name: _describe(index, flat) for index in targets})


def _exists(call: Call) -> Answer:
    try:
        call.cluster.resolve(call.parts["index"])
    except OpenSearchError:
        return Answer(404, None)
    return Answer(200, None)


def _delete(call: Call) -> Answer:
    call.cluster.delete_indices(call.parts["index"])
    return Answer(200, {"acknowledged": True})


def _put_mapping(call: Call) -> Answer:
    call.cluster.put_mapping(call.parts["index"], call.require_json())
    return Answer(200, {"acknowledged": True})


def _mapping(call: Call) -> Answer:
    targets = call.cluster.resolve(call.parts.get("index", "_all"))
    return Answer(200, {index.name: {"mappings": index.mapping.raw} for index in targets})


def _settings(call: Call) -> Answer:
    targets = call.cluster.resolve(call.parts.get("index", "_all"))
    flat = _flat_settings(call)
    return Answer(200, {index.name: {"settings": _describe(index, flat)["settings"]} for index in targets})


def _get_alias(call: Call) -> Answer:
    cluster = call.cluster
    targets = cluster.resolve(call.parts["index"]) if "index" in call.parts else list(cluster.indices.values())
    wanted = call.parts.get("name")
    answer = {}
    for index in targets:
        aliases = {a: dict(p) for a, p in index.aliases.items() if wanted is None or a in wanted.split(",")}
        if aliases or wanted is None:
            answer[index.name] = {"aliases": aliases}
    if wanted is not None and not answer:
        # The real server's odd shape for a missing alias: a string error.
        return Answer(404, {"error": f"alias [{wanted}] missing", "status": 404})
    return Answer(200, answer)


def _update_aliases(call: Call) -> Answer:
    body = call.require_json()
    call.cluster.update_aliases(body.get("actions") if isinstance(body, dict) else None)
    return Answer(200, {"acknowledged": True})


def _refresh(call: Call) -> Answer:
    cluster = call.cluster
    targets = cluster.resolve(
        call.parts.get("index", "_all"), ignore_unavailable=call.params.get("ignore_unavailable") == "true"
    )
    cluster.refresh(targets)
    shards = sum(len(index.shards) for index in targets)
    copies = sum(len(index.shards) * (1 + int(index.setting("index.number_of_replicas") or 1)) for index in targets)
    return Answer(200, {"_shards": {"total": copies, "successful": shards, "failed": 0}})


# ---------------------------------------------------------------------------- documents and search
def _targets(call: Call) -> list[IndexState]:
    return call.cluster.resolve(
        call.parts.get("index", "_all"), ignore_unavailable=call.params.get("ignore_unavailable") == "true"
    )


def _search(call: Call) -> Answer:
    return Answer(200, search.search(call.cluster, _targets(call), call.json(), call.params))


def _count(call: Call) -> Answer:
    return Answer(200, search.count(call.cluster, _targets(call), call.json()))


def _bulk(call: Call) -> Answer:
    return documents.bulk(call.cluster, call.parts.get("index"), call.raw, call.params)


def _mget(call: Call) -> Answer:
    return documents.mget(call.cluster, call.parts.get("index"), call.require_json(), call.params)


def _get_doc(call: Call) -> Answer:
    answer = documents.get_one(call.cluster, call.parts["index"], call.parts["id"], call.params)
    return Answer(answer.status, None) if call.method == "HEAD" else answer


def _index_doc(call: Call) -> Answer:
    return documents.write_one(
        call.cluster, "index", call.parts["index"], call.parts.get("id"), call.json(), call.params
    )


def _create_doc(call: Call) -> Answer:
    return documents.write_one(call.cluster, "create", call.parts["index"], call.parts["id"], call.json(), call.params)


def _delete_doc(call: Call) -> Answer:
    return documents.write_one(call.cluster, "delete", call.parts["index"], call.parts["id"], None, call.params)


def _update_doc(call: Call) -> Answer:
    return documents.write_one(
        call.cluster, "update", call.parts["index"], call.parts["id"], call.require_json(), call.params
    )


def _delete_by_query(call: Call) -> Answer:
    return documents.by_query(call.cluster, _targets(call), call.json(), call.params, delete=True)


def _update_by_query(call: Call) -> Answer:
    return documents.by_query(call.cluster, _targets(call), call.json(), call.params, delete=False)


_SEARCH_PARAMS = {
    "size", "from", "track_total_hits", "track_scores", "timeout", "search_type", "rest_total_hits_as_int",
    "typed_keys", "preference", "request_cache", "batched_reduce_size", "ccs_minimize_roundtrips",
    "allow_partial_search_results", *_SOURCE, *_WILDCARDS,
}  # fmt: skip
_BY_QUERY = {
    "refresh", "conflicts", "wait_for_completion", "max_docs", "scroll_size", "timeout", "slices",
    "requests_per_second", "wait_for_active_shards", "scroll", "search_timeout", *_WILDCARDS,
}  # fmt: skip

#: (methods, path pattern, handler, query parameters it takes). Literal segments are tried before ``{name}``s.
ROUTES: list[tuple[set[str], str, Handler, set[str]]] = [
    ({"GET", "HEAD"}, "/", _info, set()),
    ({"GET"}, "/_cat/plugins", _cat_plugins, {"format", "v", "h", "s", "help", "local", *_MASTER}),
    ({"PUT", "POST"}, "/_index_template/{name}", _put_template, {"create", "cause", *_MASTER}),
    ({"POST", "PUT"}, "/_bulk", _bulk, _WRITE - {"if_seq_no", "if_primary_term"}),
    ({"GET", "POST"}, "/_mget", _mget, {"realtime", "refresh", "preference", *_SOURCE}),
    ({"GET", "POST"}, "/_search", _search, _SEARCH_PARAMS),
    ({"GET", "POST"}, "/_count", _count, {"preference", *_WILDCARDS}),
    ({"GET", "POST"}, "/_refresh", _refresh, _WILDCARDS),
    ({"GET"}, "/_alias", _get_alias, {"local", *_WILDCARDS}),
    ({"GET", "HEAD"}, "/_alias/{name}", _get_alias, {"local", *_WILDCARDS}),
    ({"POST"}, "/_aliases", _update_aliases, _MASTER),
    ({"GET"}, "/_mapping", _mapping, {"local", *_WILDCARDS, *_MASTER}),
    ({"GET"}, "/_settings", _settings, {"flat_settings", "include_defaults", "local", *_WILDCARDS, *_MASTER}),
    ({"POST", "PUT"}, "/{index}/_bulk", _bulk, _WRITE - {"if_seq_no", "if_primary_term"}),
    ({"GET", "POST"}, "/{index}/_mget", _mget, {"realtime", "refresh", "preference", *_SOURCE}),
    ({"GET", "POST"}, "/{index}/_search", _search, _SEARCH_PARAMS),
    ({"GET", "POST"}, "/{index}/_count", _count, {"preference", *_WILDCARDS}),
    ({"GET", "POST"}, "/{index}/_refresh", _refresh, _WILDCARDS),
    ({"POST"}, "/{index}/_delete_by_query", _delete_by_query, _BY_QUERY),
    ({"POST"}, "/{index}/_update_by_query", _update_by_query, _BY_QUERY),
    ({"GET"}, "/{index}/_alias", _get_alias, {"local", *_WILDCARDS}),
    ({"GET", "HEAD"}, "/{index}/_alias/{name}", _get_alias, {"local", *_WILDCARDS}),
    ({"GET"}, "/{index}/_mapping", _mapping, {"local", *_WILDCARDS, *_MASTER}),
    ({"PUT", "POST"}, "/{index}/_mapping", _put_mapping, {"write_index_only", *_WILDCARDS, *_MASTER}),
    ({"GET"}, "/{index}/_settings", _settings, {"flat_settings", "include_defaults", "local", *_WILDCARDS, *_MASTER}),
    ({"GET", "HEAD"}, "/{index}/_doc/{id}", _get_doc, {"realtime", "refresh", "preference", *_SOURCE}),
    ({"PUT", "POST"}, "/{index}/_doc/{id}", _index_doc, _WRITE | {"op_type"}),
    ({"POST"}, "/{index}/_doc", _index_doc, _WRITE | {"op_type"}),
    ({"PUT", "POST"}, "/{index}/_create/{id}", _create_doc, _WRITE),
    ({"DELETE"}, "/{index}/_doc/{id}", _delete_doc, _WRITE - {"require_alias"}),
    ({"POST"}, "/{index}/_update/{id}", _update_doc, _WRITE | {"retry_on_conflict"}),
    ({"PUT"}, "/{index}", _create, {"wait_for_active_shards", *_MASTER}),
    ({"GET"}, "/{index}", _get, {"flat_settings", "include_defaults", "local", *_WILDCARDS, *_MASTER}),
    ({"HEAD"}, "/{index}", _exists, {"flat_settings", "include_defaults", "local", *_WILDCARDS, *_MASTER}),
    ({"DELETE"}, "/{index}", _delete, {*_WILDCARDS, *_MASTER}),
]


def route(method: str, segments: list[str]) -> tuple[Handler, dict[str, str], set[str]]:
    """The handler of a request, its path parameters, and the query parameters it takes."""
    for methods, pattern, handler, params in ROUTES:
        names = [part for part in pattern.split("/") if part]
        if len(names) != len(segments) or method not in methods:
            continue
        parts: dict[str, str] = {}
        for name, segment in zip(names, segments, strict=True):
            if name.startswith("{"):
                if segment.startswith("_") and name == "{index}" and segment not in ("_all",):
                    break
                parts[name[1:-1]] = segment
            elif name != segment:
                break
        else:
            return handler, parts, params | _COMMON
    path = "/" + "/".join(segments)
    raise not_modelled(f"the endpoint [{method} {path}] (no handler found for uri [{path}] and method [{method}])")


def check_params(path: str, params: dict[str, str], allowed: set[str]) -> None:
    for name in params:
        if name == "filter_path":
            raise not_modelled("filter_path")
        if name not in allowed:
            raise bad_request(f"request [{path}] contains unrecognized parameter: [{name}]")
