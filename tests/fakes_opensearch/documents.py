"""Document endpoints: ``_bulk``, single-document writes, ``_doc`` / ``_mget`` (realtime), and the by-query APIs."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from tests.fakes_opensearch.cluster import Cluster, Written
from tests.fakes_opensearch.errors import OpenSearchError, bad_request, not_modelled
from tests.fakes_opensearch.knn import parse_update_script
from tests.fakes_opensearch.search import filtered_source, parse_body_query, run_query
from tests.fakes_opensearch.storage import PRIMARY_TERM, IndexState

_ACTIONS = ("index", "create", "update", "delete")
_ACTION_KEYS = {"_index", "_id", "require_alias", "if_seq_no", "if_primary_term", "retry_on_conflict"}


@dataclass
class Answer:
    """What an endpoint answers; ``wait_for`` lists writes the answer must wait to see refreshed."""

    status: int
    body: Any
    wait_for: dict[tuple[str, int], int] | None = None


def refresh_mode(params: dict[str, str]) -> str:
    value = params.get("refresh", "false")
    mode = {"": "true", "true": "true", "false": "false", "wait_for": "wait_for"}.get(value)
    if mode is None:
        raise bad_request(f"Unknown value for refresh: [{value}].")
    return mode


def _flag(value: Any) -> bool:
    return value is True or value == "true" or value == ""


def _written_answer(cluster: Cluster, written: list[Written], mode: str) -> dict[tuple[str, int], int] | None:
    """Apply ``refresh`` to a finished write: refresh now (``true``) or name what to wait for (``wait_for``)."""
    targets: dict[tuple[str, int], int] = {}
    for write in written:
        if write.shard is not None:
            name, number, seq_no = write.shard
            targets[(name, number)] = max(seq_no, targets.get((name, number), -1))
    if mode == "true" and targets:
        cluster.refresh(shards=set(targets))
        for write in written:
            if write.shard is not None:
                write.item["forced_refresh"] = True
    return targets if mode == "wait_for" and targets else None


def _failed(name: str, doc_id: str | None, error: OpenSearchError, index: IndexState | None) -> Written:
    cause = error.cause()
    if index is not None:
        cause.setdefault("index", index.name)
        cause.setdefault("index_uuid", index.uuid)
    return Written({"_index": index.name if index else name, "_id": doc_id, "status": error.status, "error": cause})


# ---------------------------------------------------------------------------- _bulk
def bulk(cluster: Cluster, default_index: str | None, raw: bytes, params: dict[str, str]) -> Answer:
    """``POST /_bulk``: every line parsed before any is applied; each item answers for itself."""
    mode = refresh_mode(params)
    url_require_alias = _flag(params.get("require_alias", "false"))
    text = raw.decode("utf-8")
    if not text.strip():
        raise bad_request("Validation Failed: 1: no requests added;", type_="action_request_validation_exception")
    if not text.endswith("\n"):
        raise bad_request("The bulk request must be terminated by a newline [\\n]")
    lines = [line for line in text.split("\n") if line.strip()]
    operations: list[tuple[str, dict[str, Any], Any]] = []
    position = 0
    while position < len(lines):
        action = _json_line(lines[position], position)
        if not isinstance(action, dict) or len(action) != 1:
            raise bad_request(
                f"Malformed action/metadata line [{position + 1}], expected a simple object with one action"
            )
        ((kind, meta),) = action.items()
        if kind not in _ACTIONS:
            raise bad_request(
                f"Malformed action/metadata line [{position + 1}], "
                f"expected one of [create, delete, index, update] but found [{kind}]"
            )
        for key in meta:
            if key not in _ACTION_KEYS:
                if key in ("routing", "version", "version_type", "pipeline", "_source", "dynamic_templates"):
                    raise not_modelled(f"the bulk action parameter [{key}]")
                raise bad_request(f"Action/metadata line [{position + 1}] contains an unknown parameter [{key}]")
        payload = None
        if kind != "delete":
            if position + 1 >= len(lines):
                raise bad_request(
                    f"Validation Failed: 1: source is missing for action line [{position + 1}];",
                    type_="action_request_validation_exception",
                )
            payload = _json_line(lines[position + 1], position + 1)
            position += 1
        operations.append((kind, meta, payload))
        position += 1
    written = [
        _bulk_item(cluster, kind, meta, payload, default_index, url_require_alias) for kind, meta, payload in operations
    ]
    wait = _written_answer(cluster, written, mode)
    items = [{kind: write.item} for (kind, _, _), write in zip(operations, written, strict=True)]
    body = {"took": 1, "errors": any("error" in write.item for write in written), "items": items}
    return Answer(200, body, wait)


def _json_line(line: str, position: int) -> Any:
    try:
        return json.loads(line)
    except ValueError as error:
        raise OpenSearchError(400, "x_content_parse_exception", f"[{position + 1}:1] {error}") from None


def _bulk_item(
    cluster: Cluster, kind: str, meta: dict[str, Any], payload: Any, default_index: str | None, url_require_alias: bool
) -> Written:
    name = meta.get("_index") or default_index
    doc_id = None if meta.get("_id") is None else str(meta["_id"])
    if name is None:
        error = bad_request("Validation Failed: 1: index is missing;", type_="action_request_validation_exception")
        return _failed("", doc_id, error, None)
    index = None
    try:
        index = cluster.target(name, require_alias=_flag(meta.get("require_alias", url_require_alias)))
        return _write(cluster, index, kind, doc_id, payload, _if_seq(meta))
    except OpenSearchError as error:
        return _failed(name, doc_id, error, index)


def _if_seq(meta: dict[str, Any]) -> tuple[Any, Any] | None:
    if "if_seq_no" in meta or "if_primary_term" in meta:
        return meta.get("if_seq_no", -2), meta.get("if_primary_term", 0)
    return None


def _write(
    cluster: Cluster, index: IndexState, kind: str, doc_id: str | None, payload: Any, if_seq: tuple[Any, Any] | None
) -> Written:
    if kind in ("index", "create"):
        return cluster.index_document(index, doc_id, payload, create=kind == "create", if_seq=if_seq)
    if doc_id is None:
        raise bad_request("Validation Failed: 1: id is missing;", type_="action_request_validation_exception")
    if kind == "delete":
        return cluster.delete_document(index, doc_id, if_seq=if_seq)
    return cluster.update_document(index, doc_id, payload, if_seq=if_seq)


# ---------------------------------------------------------------------------- single documents
def write_one(cluster: Cluster, kind: str, name: str, doc_id: str | None, body: Any, params: dict[str, str]) -> Answer:
    """``PUT /{index}/_doc/{id}``, ``_create``, ``DELETE .../_doc/{id}``, ``POST .../_update/{id}``."""
    mode = refresh_mode(params)
    if params.get("op_type") == "create":
        kind = "create"
    index = cluster.target(name, require_alias=_flag(params.get("require_alias", "false")))
    if_seq = (params["if_seq_no"], params.get("if_primary_term", 0)) if "if_seq_no" in params else None
    written = _write(cluster, index, kind, doc_id, body, if_seq)
    wait = _written_answer(cluster, [written], mode)
    return Answer(int(written.item.pop("status")), written.item, wait)


def get_one(cluster: Cluster, name: str, doc_id: str, params: dict[str, str]) -> Answer:
    """``GET /{index}/_doc/{id}``: realtime, it sees writes no refresh has made searchable."""
    targets = cluster.resolve(name)
    if len(targets) != 1:
        raise bad_request(f"alias [{name}] has more than one index associated with it, can't execute a single index op")
    item = _lookup(targets[0], doc_id, params, realtime=params.get("realtime", "true") != "false")
    return Answer(200 if item["found"] else 404, item)


def _lookup(
    index: IndexState, doc_id: str, params: dict[str, str], *, realtime: bool, spec: Any = None
) -> dict[str, Any]:
    if realtime:
        current = index.get(doc_id)
        doc = current.doc if current is not None else None
    else:
        shard = index.shard_of(doc_id)
        docs = [d for segment in shard.segments for _, d in segment.live_docs() if d.id == doc_id]
        doc = docs[0] if docs else None
    if doc is None:
        return {"_index": index.name, "_id": doc_id, "found": False}
    item: dict[str, Any] = {
        "_index": index.name,
        "_id": doc_id,
        "_version": doc.version,
        "_seq_no": doc.seq_no,
        "_primary_term": PRIMARY_TERM,
        "found": True,
    }
    source = filtered_source(doc.source, spec, params)
    if source is not None:
        item["_source"] = source
    return item


def mget(cluster: Cluster, name: str | None, body: Any, params: dict[str, str]) -> Answer:
    """``POST /{index}/_mget`` with ``ids`` or ``docs``; realtime."""
    if params.get("refresh") == "true" and name is not None:
        cluster.refresh(cluster.resolve(name))
    if not isinstance(body, dict) or not (("ids" in body) ^ ("docs" in body)):
        raise bad_request("Validation Failed: 1: no documents to get;", type_="action_request_validation_exception")
    if "ids" in body:
        if name is None:
            raise bad_request(
                "Validation Failed: 1: index is missing for doc 0;", type_="action_request_validation_exception"
            )
        requests = [{"_index": name, "_id": str(doc_id)} for doc_id in body["ids"]]
    else:
        requests = [{"_index": doc.get("_index", name), **doc} for doc in body["docs"]]
    realtime = params.get("realtime", "true") != "false"
    docs = []
    for number, request in enumerate(requests):
        unknown = set(request) - {"_index", "_id", "_source"}
        if unknown:
            raise not_modelled(f"mget document options {sorted(unknown)}")
        if request.get("_index") is None:
            raise bad_request(
                f"Validation Failed: 1: index is missing for doc {number};", type_="action_request_validation_exception"
            )
        doc_id = str(request["_id"])
        try:
            targets = cluster.resolve(request["_index"])
        except OpenSearchError as error:
            docs.append({"_index": request["_index"], "_id": doc_id, "error": error.cause()})
            continue
        docs.append(_lookup(targets[0], doc_id, params, realtime=realtime, spec=request.get("_source")))
    return Answer(200, {"docs": docs})


# ---------------------------------------------------------------------------- by query
def by_query(cluster: Cluster, targets: list[IndexState], body: Any, params: dict[str, str], *, delete: bool) -> Answer:
    """``_delete_by_query`` / ``_update_by_query``: search the *refreshed* documents, then write each by ``_id``.

    A document written since the last refresh is invisible to the search (so missed), and one changed
    since then is a version conflict, as on the real server.
    """
    if params.get("wait_for_completion") == "false":
        raise not_modelled("by-query requests run as tasks (wait_for_completion=false)")
    if params.get("refresh", "false") not in ("true", "false", ""):
        raise bad_request(f"Failed to parse value [{params['refresh']}] as only [true] or [false] are allowed.")
    conflicts = str((body or {}).get("conflicts") or params.get("conflicts", "abort"))
    if conflicts not in ("abort", "proceed"):
        raise bad_request(f'conflicts may only be "proceed" or "abort" but was [{conflicts}]')
    body = body or {}
    allowed = {"query", "conflicts", "max_docs"} | (set() if delete else {"script"})
    if set(body) - allowed:
        raise not_modelled(f"by-query options {sorted(set(body) - allowed)}")
    acl = parse_update_script(body["script"]) if "script" in body else None
    run = run_query(cluster, targets, parse_body_query(body, cluster))
    if run.failures:
        raise OpenSearchError(400, "search_phase_execution_exception", "Partial shards failure")
    hits = sorted(run.hits, key=lambda h: (h.index.name, h.shard, h.key))
    if "max_docs" in body or "max_docs" in params:
        hits = hits[: int(body.get("max_docs", params.get("max_docs", len(hits))))]
    done, conflicts_seen = 0, 0
    failures: list[dict[str, Any]] = []
    touched: dict[str, IndexState] = {}
    for hit in hits:
        current = hit.index.get(hit.doc.id)
        if current is None or current.seq_no != hit.doc.seq_no:
            conflicts_seen += 1
            have = (
                "document does not exist"
                if current is None
                else f"current document has seqNo [{current.seq_no}] and primary term [{PRIMARY_TERM}]"
            )
            reason = (
                f"[{hit.doc.id}]: version conflict, required seqNo [{hit.doc.seq_no}], "
                f"primary term [{PRIMARY_TERM}]. {have}"
            )
            if conflicts == "abort":
                cause = {
                    "type": "version_conflict_engine_exception",
                    "reason": reason,
                    "index": hit.index.name,
                    "shard": str(hit.shard),
                    "index_uuid": hit.index.uuid,
                }
                failures.append({"index": hit.index.name, "id": hit.doc.id, "cause": cause, "status": 409})
            continue
        try:
            if delete:
                cluster.delete_document(hit.index, hit.doc.id)
            else:
                source = dict(hit.doc.source)
                if acl is not None:
                    source["acl_allow"], source["acl_deny"] = acl
                cluster.index_document(hit.index, hit.doc.id, source, create=False)
        except OpenSearchError as error:
            failures.append({"index": hit.index.name, "id": hit.doc.id, "cause": error.cause(), "status": error.status})
            continue
        touched[hit.index.name] = hit.index
        done += 1
    if params.get("refresh") in ("true", "") and touched:
        cluster.refresh(list(touched.values()))
    answer: dict[str, Any] = {"took": 1, "timed_out": False, "total": len(hits)}
    answer.update({"deleted": done} if delete else {"updated": done, "deleted": 0})
    answer.update(
        batches=1 if hits else 0,
        version_conflicts=conflicts_seen,
        noops=0,
        retries={"bulk": 0, "search": 0},
        throttled_millis=0,
        requests_per_second=-1.0,
        throttled_until_millis=0,
        failures=failures,
    )
    status = max((failure["status"] for failure in failures), default=200)
    return Answer(status, answer)
