"""The official OpenSearch API specification, as JSON-schema validators for request and response bodies.

The specification (OpenAPI 3.1, whose schemas are JSON Schema 2020-12) lives
in ``tests/data/opensearch-api-spec`` (the parts the tests read, with the
licence), or where ``OPENSEARCH_API_SPEC`` points. Every YAML file is loaded as one resource of a
``referencing`` registry under its own ``file:`` URI, so the spec's relative
``$ref``s (``'_common.yaml#/components/schemas/Field'``,
``'../schemas/_core.bulk.yaml#/...'``) resolve exactly as written; nothing is
copied by hand.

The spec leaves most objects open (no ``additionalProperties: false``), so on
its own it would accept ``{"knn": {"v": {"vector": [..], "filters": {..}}}}``.
Request bodies are therefore checked in *strict* mode: every object schema that
names its properties is closed with ``unevaluatedProperties: false`` at the
place where an instance meets it as a whole (the body itself, a property value,
an array item) — never inside ``allOf``/``oneOf``/``anyOf`` branches, where
closing would reject the properties that a sibling branch declares. Objects the
spec deliberately leaves free (``additionalProperties``, ``patternProperties``,
bare ``type: object``) stay free. Responses are checked open, since
servers add fields.

Both modes read ``oneOf`` as ``anyOf``: where the spec's alternatives are
open they overlap (``{"chunk_id": "asc"}`` is both a ``FieldWithDirection``
and an open ``SortOptions``; a by-query answer is both a task and a result),
so "exactly one" would refuse every field sort; closed objects are what catch
typos.
"""

from __future__ import annotations

import contextlib
import copy
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml
from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

_DATA = Path(__file__).resolve().parents[1] / "data" / "opensearch-api-spec"
SPEC_HOME = Path(os.environ.get("OPENSEARCH_API_SPEC") or _DATA)
SPEC_DIR = SPEC_HOME / "spec"
STORIES_DIR = SPEC_HOME / "test-stories"

# Keywords that apply a subschema to the same instance (and so must stay open).
_IN_PLACE_LISTS = ("allOf", "anyOf", "oneOf")
_IN_PLACE_SINGLE = ("not", "if", "then", "else")
# Keywords that apply a subschema to a child of the instance.
_CHILD_SINGLE = ("items", "additionalProperties", "contains", "propertyNames", "unevaluatedItems")
_CHILD_MAPS = ("properties", "patternProperties", "dependentSchemas")
_CHILD_LISTS = ("prefixItems",)
_OPENERS = ("additionalProperties", "patternProperties", "unevaluatedProperties")


def _load(path: Path) -> Any:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return yaml.load(path.read_text(encoding="utf-8"), Loader=loader)


@lru_cache(maxsize=1)
def _documents() -> dict[str, Any]:
    if not SPEC_DIR.is_dir():
        raise FileNotFoundError(
            f"the OpenSearch API specification is missing at {SPEC_DIR}; "
            "it ships in tests/data/opensearch-api-spec; OPENSEARCH_API_SPEC points elsewhere"
        )
    return {path.resolve().as_uri(): _load(path) for path in sorted(SPEC_DIR.rglob("*.yaml"))}


def _uri(relative: str) -> str:
    return (SPEC_DIR / relative).resolve().as_uri()


class _Closer:
    """Adds ``unevaluatedProperties: false`` where an instance meets a closed object schema."""

    def __init__(self, documents: dict[str, Any]) -> None:
        self.documents = documents

    def resolve(self, base: str, ref: str) -> tuple[str, Any]:
        from urllib.parse import urldefrag, urljoin

        target, fragment = urldefrag(urljoin(base, ref))
        node = self.documents[target]
        for token in fragment.lstrip("/").split("/") if fragment else []:
            node = node[token.replace("~1", "/").replace("~0", "~")]
        return target, node

    def _closure(
        self, base: str, node: Any, seen: set[int], branch: bool = False
    ) -> Iterator[tuple[dict[str, Any], bool]]:
        """The schema nodes that apply to the same instance as ``node``; ``True`` marks an alternative.

        An alternative is a branch of ``anyOf``/``oneOf`` (or what its ``$ref`` leads to): an instance
        may match it alone, so a free-form alternative means the object is open.
        """
        if not isinstance(node, dict) or id(node) in seen:
            return
        seen.add(id(node))
        yield node, branch
        if isinstance(node.get("$ref"), str):
            target, resolved = self.resolve(base, node["$ref"])
            yield from self._closure(target, resolved, seen, branch)
        for child in node.get("allOf", ()):
            yield from self._closure(base, child, seen, False)
        for key in ("anyOf", "oneOf"):
            for child in node.get(key, ()):
                yield from self._closure(base, child, seen, True)

    @staticmethod
    def _free_form(node: dict[str, Any]) -> bool:
        """Does this node, by itself, accept objects with any properties?"""
        shaping = {"properties", "$ref", "enum", "const", "not", *_IN_PLACE_LISTS, *_OPENERS}
        if shaping & node.keys():
            return False
        kind = node.get("type")
        return kind is None or kind == "object" or (isinstance(kind, list) and "object" in kind)

    def closable(self, base: str, node: Any) -> bool:
        """True when ``node`` names its properties and nothing in it leaves the object open."""
        nodes = list(self._closure(base, node, set()))
        if any(key in n for n, _ in nodes for key in _OPENERS):
            return False
        if any(self._free_form(n) for n, alternative in nodes if alternative):
            return False
        return any("properties" in n for n, _ in nodes)

    def walk(self, base: str, node: Any, whole: bool) -> None:
        """Close ``node`` if an instance meets it as a whole, then walk its subschemas."""
        if not isinstance(node, dict):
            return
        if whole and self.closable(base, node):
            node["unevaluatedProperties"] = False
        for key in _IN_PLACE_LISTS:
            for branch in node.get(key, ()):
                self.walk(base, branch, whole=False)
        for key in _IN_PLACE_SINGLE:
            self.walk(base, node.get(key), whole=False)
        for key in _CHILD_SINGLE:
            self.walk(base, node.get(key), whole=True)
        for key in _CHILD_MAPS:
            child_map = node.get(key)
            if isinstance(child_map, dict):
                for child in child_map.values():
                    self.walk(base, child, whole=True)
        for key in _CHILD_LISTS:
            for child in node.get(key, ()):
                self.walk(base, child, whole=True)


def _schema_roots(document: Any) -> Iterator[tuple[Any, bool]]:
    """Every schema in an OpenAPI document, and whether an instance meets it as a whole."""
    components = document.get("components", {}) if isinstance(document, dict) else {}
    for schema in components.get("schemas", {}).values():
        yield schema, False  # reached only through $ref; the referring site decides
    for kind in ("requestBodies", "responses"):
        for body in components.get(kind, {}).values():
            for media in body.get("content", {}).values():
                if "schema" in media:
                    yield media["schema"], True


def _any_of(node: Any) -> None:
    """Read every ``oneOf`` as ``anyOf`` (see the module docstring)."""
    if isinstance(node, dict):
        if "oneOf" in node and "anyOf" not in node:
            node["anyOf"] = node.pop("oneOf")
        for value in node.values():
            _any_of(value)
    elif isinstance(node, list):
        for value in node:
            _any_of(value)


@lru_cache(maxsize=2)
def registry(strict: bool) -> Registry[Any]:
    """All spec files as one registry; ``strict`` closes object schemas as the module explains."""
    documents = copy.deepcopy(_documents())
    if strict:
        closer = _Closer(documents)
        for uri, document in documents.items():
            for schema, whole in _schema_roots(document):
                closer.walk(uri, schema, whole)
    _any_of(documents)
    resources = [
        (uri, Resource.from_contents(doc, default_specification=DRAFT202012)) for uri, doc in documents.items()
    ]
    return Registry().with_resources(resources)


def _pointer(*tokens: str) -> str:
    return "#/" + "/".join(t.replace("~", "~0").replace("/", "~1") for t in tokens)


@dataclass(frozen=True)
class BodySchema:
    """One request or response body of the spec, ready to validate instances."""

    ref: str
    strict: bool

    @property
    def validator(self) -> Draft202012Validator:
        return Draft202012Validator({"$ref": self.ref}, registry=registry(self.strict))

    def errors(self, instance: Any) -> list[str]:
        """Every violation as ``path: message``; empty when the instance is valid."""
        found: list[ValidationError] = sorted(self.validator.iter_errors(instance), key=lambda e: list(e.path))
        return [f"{'/'.join(str(p) for p in e.absolute_path) or '(body)'}: {e.message}" for e in found]

    def check(self, instance: Any) -> None:
        """Raise AssertionError listing the violations, if any."""
        problems = self.errors(instance)
        if problems:
            raise AssertionError(f"body does not match {self.ref}:\n  " + "\n  ".join(problems))


def request_body(namespace: str, name: str, media: str = "application/json") -> BodySchema:
    """The strict schema of request body ``name`` in ``spec/namespaces/<namespace>.yaml``."""
    ref = _uri(f"namespaces/{namespace}.yaml") + _pointer(
        "components", "requestBodies", name, "content", media, "schema"
    )
    return BodySchema(ref, strict=True)


def response_body(namespace: str, name: str, media: str = "application/json") -> BodySchema:
    """The (open) schema of response ``name`` (e.g. ``search@200``) in ``spec/namespaces/<namespace>.yaml``."""
    ref = _uri(f"namespaces/{namespace}.yaml") + _pointer("components", "responses", name, "content", media, "schema")
    return BodySchema(ref, strict=False)


def component(schemas_file: str, name: str, strict: bool = True) -> BodySchema:
    """Component schema ``name`` of ``spec/schemas/<schemas_file>.yaml``, as a whole instance."""
    ref = _uri(f"schemas/{schemas_file}.yaml") + _pointer("components", "schemas", name)
    if not strict:
        return BodySchema(ref, strict=False)
    # A component is closed where it is used; used at the top, it is wrapped like a property value.
    return _ClosedComponent(ref, strict=True)


@dataclass(frozen=True)
class _ClosedComponent(BodySchema):
    @property
    def validator(self) -> Draft202012Validator:
        documents = _documents()
        closer = _Closer(documents)
        root: dict[str, Any] = {"$ref": self.ref}
        if closer.closable(self.ref, root):
            root["unevaluatedProperties"] = False
        return Draft202012Validator(root, registry=registry(True))


def stories() -> list[Path]:
    """The spec project's k-NN test stories (a request and a real server's response each)."""
    return sorted(STORIES_DIR.rglob("*.yaml"))


def load_story(path: Path) -> Any:
    return _load(path)


# ---------------------------------------------------------------------------- operations
@dataclass(frozen=True)
class Operation:
    """One operation of the spec (a path template and an HTTP method)."""

    uri: str
    template: str
    method: str
    group: str
    spec: dict[str, Any]

    def _parameter(self, name: str) -> BodySchema | None:
        """The schema of query parameter ``name`` of this operation, if it has one."""
        from urllib.parse import urljoin

        closer = _Closer(_documents())
        for ref in self.spec.get("parameters", ()):
            _, parameter = closer.resolve(self.uri, ref["$ref"])
            if parameter.get("in") == "query" and parameter.get("name") == name:
                return BodySchema(urljoin(self.uri, ref["$ref"]) + "/schema", strict=False)
        return None

    def parameter_errors(self, params: dict[str, str]) -> list[str]:
        """Query parameters the operation does not define, or whose value its schema refuses.

        Values arrive as URL strings; ``"true"`` or ``"10"`` is also tried as the JSON value it spells.
        """
        import json

        problems = []
        for name, raw in params.items():
            schema = self._parameter(name)
            if schema is None:
                problems.append(f"{self.group}: no query parameter {name!r}")
                continue
            candidates: list[Any] = [raw]
            with contextlib.suppress(ValueError):
                candidates.append(json.loads(raw))
            if all(schema.errors(candidate) for candidate in candidates):
                problems.append(f"{self.group}: {name}={raw!r} does not match its schema")
        return problems

    def response_schema(self, status: int = 200) -> BodySchema | None:
        """The (open) schema of this operation's answer with ``status``."""
        answer = (self.spec.get("responses") or {}).get(str(status))
        if answer is None:
            return None
        target_uri, resolved = _Closer(_documents()).resolve(self.uri, answer["$ref"])
        media = next(iter(resolved.get("content") or {"application/json": None}))
        return response_body(Path(target_uri).stem, answer["$ref"].rsplit("/", 1)[-1], media)

    def body_schema(self) -> BodySchema | None:
        body = self.spec.get("requestBody")
        if body is None:
            return None
        target_uri, resolved = _Closer(_documents()).resolve(self.uri, body["$ref"])
        media = next(iter(resolved["content"]))
        name = body["$ref"].rsplit("/", 1)[-1]
        namespace = Path(target_uri).stem
        return request_body(namespace, name, media)


@lru_cache(maxsize=1)
def _operations() -> list[tuple[re.Pattern[str], Operation]]:
    found = []
    for uri, document in _documents().items():
        if "/namespaces/" not in uri:
            continue
        for template, methods in (document.get("paths") or {}).items():
            pattern = re.compile("^" + re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(template)) + "$")
            for method, spec in methods.items():
                if isinstance(spec, dict) and "x-operation-group" in spec:
                    found.append((pattern, Operation(uri, template, method.upper(), spec["x-operation-group"], spec)))
    # Literal segments win over path parameters.
    found.sort(key=lambda item: item[1].template.count("{"))
    return found


def operation(method: str, path: str) -> Operation:
    """The spec operation a request is for; AssertionError if the spec has none."""
    for pattern, candidate in _operations():
        if candidate.method == method.upper() and pattern.match(path):
            return candidate
    raise AssertionError(f"the OpenSearch API has no operation {method} {path}")


# ---------------------------------------------------------------------------- a recording wire
@dataclass
class Request:
    """One HTTP request as the client sent it, body decoded (a list of lines for NDJSON)."""

    method: str
    path: str
    params: dict[str, str]
    body: Any

    @property
    def operation(self) -> Operation:
        return operation(self.method, self.path)


_SHARDS = {"total": 1, "successful": 1, "skipped": 0, "failed": 0}


class FakeWire:
    """Stands in for the network under a real ``opensearch-py`` client: no socket is opened.

    It records every request (``requests``) and answers like a single-node
    OpenSearch would, from a few knobs a test sets: ``indices`` (name ->
    ``{"mappings", "settings"}``), ``hits`` for ``_search``, ``count`` for
    ``_count``, ``reject`` (``_id``s a bulk refuses, with the error type),
    ``busy`` (``_id`` -> how many bulks answer it 429 first), ``by_query`` (extra fields
    of a by-query answer), and ``faults``: statuses to answer to the next
    requests, in order (``"down"`` refuses the connection, ``"timeout"`` times out).
    """

    def __init__(self) -> None:
        self.requests: list[Request] = []
        self.indices: dict[str, dict[str, Any]] = {}
        self.hits: list[dict[str, Any]] = []
        self.count = 0
        self.reject: dict[str, str] = {}
        self.busy: dict[str, int] = {}
        self.by_query: dict[str, Any] = {}
        self.faults: list[int | str] = []
        self.plugins: list[dict[str, str]] = [{"name": "node-1", "component": "opensearch-knn", "version": "3.1.0.0"}]
        #: ``_id`` -> ``chunk_count`` of every chunk a bulk wrote and did not delete (what ``_mget`` finds).
        self.stored: dict[str, int] = {}

    def client(self) -> Any:
        from opensearchpy import OpenSearch

        return OpenSearch(
            hosts=["http://opensearch.invalid:9200"], connection_class=self._connection_class(), max_retries=0
        )

    def _connection_class(self) -> type:
        from opensearchpy import Connection
        from opensearchpy.exceptions import ConnectionError as TransportConnectionError
        from opensearchpy.exceptions import ConnectionTimeout

        wire = self

        class WireConnection(Connection):
            def close(self) -> None:
                """Nothing to close: there is no socket."""

            def perform_request(
                self,
                method: str,
                url: str,
                params: Any = None,
                body: Any = None,
                timeout: Any = None,
                ignore: Any = (),
                headers: Any = None,
            ) -> Any:
                import json

                path = url.partition("?")[0]
                decoded = {k: v.decode() if isinstance(v, bytes) else str(v) for k, v in (params or {}).items()}
                request = Request(method, path, decoded, wire._decode(body))
                wire.requests.append(request)
                if wire.faults:
                    fault = wire.faults.pop(0)
                    if fault == "down":
                        raise TransportConnectionError("N/A", "connection refused", OSError("refused"))
                    if fault == "timeout":
                        raise ConnectionTimeout("TIMEOUT", "read timed out", OSError("timeout"))
                    status, answer = int(fault), {"error": {"type": "fault", "reason": "injected"}, "status": fault}
                else:
                    status, answer = wire._answer(request)
                raw = json.dumps(answer)
                if not 200 <= status < 300 and status not in (ignore or ()):
                    self._raise_error(status, raw, "application/json")
                return status, {"content-type": "application/json"}, raw

        return WireConnection

    @staticmethod
    def _decode(body: Any) -> Any:
        import json

        if body is None:
            return None
        text = body.decode() if isinstance(body, bytes) else str(body)
        lines = [line for line in text.split("\n") if line.strip()]
        if len(lines) > 1 or text.endswith("\n"):
            return [json.loads(line) for line in lines]
        return json.loads(text)

    def _missing(self, name: str) -> tuple[int, dict[str, Any]]:
        reason = {"type": "index_not_found_exception", "reason": f"no such index [{name}]", "index": name}
        return 404, {"error": {**reason, "root_cause": [reason]}, "status": 404}

    def _answer(self, request: Request) -> tuple[int, Any]:
        segments = [s for s in request.path.split("/") if s]
        method = request.method
        if not segments:
            return 200, {
                "name": "node-1",
                "cluster_name": "wire",
                "cluster_uuid": "wire",
                "version": {
                    "distribution": "opensearch",
                    "number": "3.1.0",
                    "build_type": "tar",
                    "build_hash": "x",
                    "build_date": "2025-01-01T00:00:00Z",
                    "build_snapshot": False,
                    "lucene_version": "10.2.1",
                    "minimum_wire_compatibility_version": "2.19.0",
                    "minimum_index_compatibility_version": "2.0.0",
                },
                "tagline": "The OpenSearch Project: https://opensearch.org/",
            }
        if segments == ["_cat", "plugins"]:
            return 200, self.plugins
        name = segments[0]
        if segments[-1] == "_bulk":
            return 200, self._bulk(request.body or [])
        aliases = {alias: concrete for concrete, entry in self.indices.items() for alias in entry["aliases"]}
        if len(segments) == 1:
            if method == "PUT":
                if name in self.indices or name in aliases:
                    error = {"type": "resource_already_exists_exception", "reason": f"index [{name}] already exists"}
                    return 400, {"error": {**error, "root_cause": [error]}, "status": 400}
                body = request.body or {}
                self.indices[name] = {
                    "aliases": {alias: {} for alias in body.get("aliases", {})},
                    "mappings": body.get("mappings", {}),
                    "settings": {
                        "index": {
                            k: str(v).lower() if isinstance(v, bool) else str(v)
                            for k, v in (body.get("settings", {}).get("index", {})).items()
                        }
                    },
                }
                return 200, {"acknowledged": True, "shards_acknowledged": True, "index": name}
            if method == "DELETE" and name in aliases:
                error = {"type": "illegal_argument_exception", "reason": "The provided expression matches an alias"}
                return 400, {"error": {**error, "root_cause": [error]}, "status": 400}
            concrete = aliases.get(name, name)
            if concrete not in self.indices:
                return self._missing(name)
            if method == "DELETE":
                del self.indices[concrete]
                return 200, {"acknowledged": True}
            return 200, {concrete: self.indices[concrete]}
        name = aliases.get(name, name)
        if name not in self.indices:
            return self._missing(name)
        action = segments[1]
        if action == "_mapping" and method in ("PUT", "POST"):
            added = (request.body or {}).get("properties", {})
            mappings = self.indices[name]["mappings"]
            mappings["properties"] = {**mappings.get("properties", {}), **added}
            if "_meta" in (request.body or {}):
                mappings["_meta"] = request.body["_meta"]
            return 200, {"acknowledged": True}
        if action == "_search":
            return 200, self._search(request.body or {})
        if action == "_count":
            return 200, {"count": self.count, "_shards": _SHARDS}
        if action == "_refresh":
            return 200, {"_shards": _SHARDS}
        if action == "_mget":
            docs = []
            for doc in (request.body or {}).get("docs", []):
                found = doc["_id"] in self.stored
                entry: dict[str, Any] = {"_index": name, "_id": doc["_id"], "found": found}
                if found:
                    entry.update(
                        _version=1, _seq_no=0, _primary_term=1, _source={"chunk_count": self.stored[doc["_id"]]}
                    )
                docs.append(entry)
            return 200, {"docs": docs}
        if action in ("_delete_by_query", "_update_by_query"):
            answer: dict[str, Any] = {
                "took": 1,
                "timed_out": False,
                "total": 0,
                "batches": 0,
                "version_conflicts": 0,
                "noops": 0,
                "retries": {"bulk": 0, "search": 0},
                "throttled_millis": 0,
                "requests_per_second": -1.0,
                "throttled_until_millis": 0,
                "failures": [],
            }
            answer["deleted" if action == "_delete_by_query" else "updated"] = 0
            answer.update(self.by_query)
            return 200, answer
        raise AssertionError(f"the wire does not know {method} {request.path}")

    def _search(self, body: dict[str, Any]) -> dict[str, Any]:
        """``hits`` as given, or for a sorted search: ordered by score then chunk id, after ``search_after``."""
        hits = [dict(hit) for hit in self.hits]
        if "sort" in body:
            hits.sort(key=lambda h: (-h["_score"], h["_source"]["chunk_id"]))
            for hit in hits:
                hit["sort"] = [hit["_score"], hit["_source"]["chunk_id"]]
            if "search_after" in body:
                score, chunk_id = body["search_after"]
                hits = [h for h in hits if (-h["_score"], h["_source"]["chunk_id"]) > (-score, chunk_id)]
        hits = hits[: body.get("size", 10)]
        best = max((h["_score"] for h in hits), default=None)
        return {
            "took": 1,
            "timed_out": False,
            "_shards": _SHARDS,
            "hits": {"total": {"value": len(hits), "relation": "eq"}, "max_score": best, "hits": hits},
        }

    def _bulk(self, lines: list[Any]) -> dict[str, Any]:
        items = []
        pairs: list[tuple[str, dict[str, Any], Any]] = []
        position = 0
        while position < len(lines):
            ((op, meta),) = lines[position].items()
            source = None if op == "delete" else lines[position + 1]
            pairs.append((op, meta, source))
            position += 1 if op == "delete" else 2
        for op, meta, source in pairs:
            if self.busy.get(meta["_id"], 0) > 0:
                self.busy[meta["_id"]] -= 1
                error = {"type": "es_rejected_execution_exception", "reason": "rejected execution"}
                items.append({op: {"_index": meta["_index"], "_id": meta["_id"], "status": 429, "error": error}})
            elif meta["_id"] in self.reject:
                error = {"type": self.reject[meta["_id"]], "reason": "failed to parse field [text]: 'secret words'"}
                items.append({op: {"_index": meta["_index"], "_id": meta["_id"], "status": 400, "error": error}})
            elif op == "delete" and meta["_id"] not in self.stored:
                items.append({op: {"_index": meta["_index"], "_id": meta["_id"], "result": "not_found", "status": 404}})
            else:
                if op == "delete":
                    del self.stored[meta["_id"]]
                elif op == "index":
                    self.stored[meta["_id"]] = source["chunk_count"]
                items.append(
                    {
                        op: {
                            "_index": meta["_index"],
                            "_id": meta["_id"],
                            "_version": 1,
                            "result": {"delete": "deleted", "update": "updated"}.get(op, "created"),
                            "_shards": {"total": 1, "successful": 1, "failed": 0},
                            "_seq_no": 0,
                            "_primary_term": 1,
                            "status": 201,
                        }
                    }
                )
        return {"took": 1, "errors": any("error" in next(iter(i.values())) for i in items), "items": items}
