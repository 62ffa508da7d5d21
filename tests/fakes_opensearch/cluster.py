"""The fake cluster's state: indices, aliases, templates; creating and deleting indices; writing documents.

Every method expects the caller to hold ``Cluster.lock``.
"""

from __future__ import annotations

import base64
import fnmatch
import os
import threading
import time
from dataclasses import dataclass
from typing import Any

from tests.fakes_opensearch import settings as index_settings
from tests.fakes_opensearch.document_parser import parse_document
from tests.fakes_opensearch.errors import OpenSearchError, bad_request, index_not_found, not_modelled
from tests.fakes_opensearch.knn import LeafSearch
from tests.fakes_opensearch.mapping import Mapping, validate_mappings
from tests.fakes_opensearch.source import merge, stored_source
from tests.fakes_opensearch.storage import PRIMARY_TERM, Current, Indexed, IndexState, Shard
from tests.fakes_opensearch.versions import Version, version_id

_INVALID_NAME_CHARS = set('\\/*?"<>| ,#:')
_MAX_ID_BYTES = 512


@dataclass(frozen=True, slots=True)
class Written:
    """One write: its answer item, and where it landed (None when it failed)."""

    item: dict[str, Any]
    shard: tuple[str, int, int] | None = None  # (index, shard, seq_no)


class Cluster:
    """All indices of the fake, with the rules of index creation and of single-document writes."""

    def __init__(
        self, version: Version, *, knn_plugin: bool, templates: list[dict[str, Any]], refresh_interval_s: float
    ) -> None:
        self.version = version
        self.knn_plugin = knn_plugin
        self.refresh_interval_s = refresh_interval_s
        self.lock = threading.Lock()
        #: Notified on every refresh and on close (``refresh=wait_for`` waits on it).
        self.refreshed = threading.Condition(self.lock)
        self.closed = False
        self.indices: dict[str, IndexState] = {}
        self.templates: dict[str, dict[str, Any]] = {}
        self.auto_created: list[str] = []
        self.knn_modes: list[list[LeafSearch]] = []
        for number, template in enumerate(templates):
            self.put_template(str(template.get("name", f"template-{number}")), template)

    # ------------------------------------------------------------------------ names
    def concrete(self, name: str) -> IndexState:
        index = self.indices.get(name)
        if index is None:
            raise index_not_found(name)
        return index

    def alias_members(self, alias: str) -> list[IndexState]:
        return [index for index in self.indices.values() if alias in index.aliases]

    def resolve(self, expression: str, *, ignore_unavailable: bool = False) -> list[IndexState]:
        """Indices named by a comma-separated list of names, aliases and ``*`` patterns (``_all``: every one)."""
        found: dict[str, IndexState] = {}
        for part in expression.split(","):
            if part in ("_all", "*", ""):
                found.update(self.indices)
            elif "*" in part:
                for index in self.indices.values():
                    if fnmatch.fnmatchcase(index.name, part) or any(
                        fnmatch.fnmatchcase(a, part) for a in index.aliases
                    ):
                        found[index.name] = index
            elif part in self.indices:
                found[part] = self.indices[part]
            elif self.alias_members(part):
                found.update((index.name, index) for index in self.alias_members(part))
            elif not ignore_unavailable:
                raise index_not_found(part)
        return [found[name] for name in sorted(found)]

    def write_index(self, name: str, *, require_alias: bool) -> IndexState | None:
        """The index a write to ``name`` goes to (an alias's write index); None when ``name`` names nothing."""
        members = self.alias_members(name)
        if members:
            flagged = [i for i in members if i.aliases[name].get("is_write_index") is True]
            candidates = [i for i in members if i.aliases[name].get("is_write_index") is not False]
            if flagged or (len(candidates) == 1 and len(members) == 1):
                return (flagged or candidates)[0]
            raise bad_request(
                f"no write index is defined for alias [{name}]. The write index may be explicitly disabled using "
                "is_write_index=false or the alias points to multiple indices without one being designated as a "
                "write index"
            )
        if require_alias:
            reason = f"no such index [{name}] and [require_alias] request flag is [true] and [{name}] is not an alias"
            raise index_not_found(name, reason)
        return self.indices.get(name)

    # ------------------------------------------------------------------------ templates and creation
    def put_template(self, name: str, body: dict[str, Any]) -> None:
        """A composable index template (``PUT /_index_template/{name}``)."""
        unknown = set(body) - {"index_patterns", "template", "priority", "version", "_meta", "name"}
        if "composed_of" in body or "data_stream" in body:
            raise not_modelled("component templates and data streams")
        if unknown:
            raise bad_request(
                f"unknown key(s) {sorted(unknown)} in index template [{name}]", type_="x_content_parse_exception"
            )
        patterns = body.get("index_patterns")
        patterns = [patterns] if isinstance(patterns, str) else patterns
        if not patterns or not all(isinstance(p, str) for p in patterns):
            raise bad_request(
                f"index template [{name}] must have index_patterns", type_="action_request_validation_exception"
            )
        template = body.get("template") or {}
        flat = index_settings.validate(
            index_settings.flatten(template.get("settings") or {}), knn_plugin=self.knn_plugin
        )
        knn_enabled = flat.get(index_settings.KNN) == "true"
        validate_mappings(
            template.get("mappings") or {}, knn_plugin=self.knn_plugin, knn_enabled=knn_enabled, created=self.version
        )
        priority = int(body.get("priority", 0))
        for other_name, other in self.templates.items():
            overlap = [
                p
                for p in patterns
                if any(fnmatch.fnmatchcase(p, q) or fnmatch.fnmatchcase(q, p) for q in other["index_patterns"])
            ]
            if other_name != name and overlap and int(other.get("priority", 0)) == priority:
                raise bad_request(
                    f"index template [{name}] has index patterns {patterns} matching patterns from existing "
                    f"templates [{other_name}] with patterns ({other_name} => {other['index_patterns']}) that have "
                    f"the same priority [{priority}], multiple index templates may not match during index creation, "
                    "please use a different priority"
                )
        self.templates[name] = {**body, "index_patterns": list(patterns), "priority": priority}

    def put_mapping(self, expression: str, body: Any) -> None:
        """``PUT /{index}/_mapping``: new fields are added, ``_meta`` and ``dynamic`` replaced; a mapped field
        may not change its type (changing its other parameters, or ``_source``, is not modelled)."""
        if not isinstance(body, dict):
            raise bad_request("request body is required", type_="action_request_validation_exception")
        targets = self.resolve(expression)
        for index in targets:
            checked = validate_mappings(
                body,
                knn_plugin=self.knn_plugin,
                knn_enabled=index.setting(index_settings.KNN) == "true",
                created=index.created,
            )
            if "_source" in checked:
                raise not_modelled("changing _source of an existing index")
            mapped = index.mapping.raw.get("properties", {})
            for name, definition in (checked.get("properties") or {}).items():
                old = mapped.get(name)
                if old is None or old == definition:
                    continue
                if old.get("type", "object") != definition.get("type", "object"):
                    raise OpenSearchError(
                        400, "illegal_argument_exception",
                        f"mapper [{name}] cannot be changed from type [{old.get('type')}] to "
                        f"[{definition.get('type')}]",
                    )  # fmt: skip
                raise not_modelled(f"changing the parameters of the mapped field [{name}]")
        for index in targets:
            raw = merge(index.mapping.raw, {"properties": body.get("properties") or {}})
            for key in ("_meta", "dynamic"):
                if key in body:
                    raw[key] = body[key]
            index.mapping = Mapping(raw, index.created)

    def _template_for(self, name: str) -> dict[str, Any]:
        matching = [
            t for t in self.templates.values() if any(fnmatch.fnmatchcase(name, p) for p in t["index_patterns"])
        ]
        if not matching:
            return {}
        best: dict[str, Any] = max(matching, key=lambda t: int(t.get("priority", 0)))
        return best.get("template") or {}

    def create_index(self, name: str, body: Any, *, created: Version | None = None) -> IndexState:
        """``PUT /{name}``: the template (if one matches) under the request, which wins on conflicts."""
        created = created or self.version
        _check_index_name(name)
        if name in self.indices:
            raise OpenSearchError(
                400, "resource_already_exists_exception", f"index [{name}/{self.indices[name].uuid}] already exists",
                index=name, index_uuid=self.indices[name].uuid,
            )  # fmt: skip
        if self.alias_members(name):
            raise OpenSearchError(
                400, "invalid_index_name_exception", f"Invalid index name [{name}], already exists as alias", index=name
            )
        body = body or {}
        if not isinstance(body, dict) or set(body) - {"settings", "mappings", "aliases"}:
            raise bad_request(
                f"unknown key(s) in the create index request: {sorted(body) if isinstance(body, dict) else body!r}",
                type_="parse_exception",
            )
        template = self._template_for(name)
        flat = index_settings.flatten(template.get("settings") or {})
        flat.update(index_settings.flatten(body.get("settings") or {}))
        flat = index_settings.validate(flat, knn_plugin=self.knn_plugin)
        raw = merge(template.get("mappings") or {}, body.get("mappings") or {})
        raw = validate_mappings(
            raw, knn_plugin=self.knn_plugin, knn_enabled=flat.get(index_settings.KNN) == "true", created=created
        )
        aliases = {**(template.get("aliases") or {}), **(body.get("aliases") or {})}
        for alias, props in aliases.items():
            self._check_alias(alias, props)
        shards = int(flat.get("index.number_of_shards", "1"))
        flat.setdefault("index.number_of_shards", str(shards))
        flat.setdefault("index.number_of_replicas", "1")
        index = IndexState(
            name=name,
            settings=flat,
            mapping=Mapping(raw, created),
            created=created,
            shards=[Shard(n) for n in range(shards)],
        )
        flat["index.uuid"] = index.uuid
        flat["index.version.created"] = str(version_id(created))
        flat["index.creation_date"] = str(int(time.time() * 1000))
        flat["index.provided_name"] = name
        index.aliases = {alias: dict(props or {}) for alias, props in aliases.items()}
        self.indices[name] = index
        return index

    def _check_alias(self, alias: str, props: Any) -> None:
        if alias in self.indices:
            raise OpenSearchError(
                400, "invalid_alias_name_exception",
                f"Invalid alias name [{alias}]: an index or data stream exists with the same name as the alias",
            )  # fmt: skip
        for key in props or {}:
            if key != "is_write_index":
                raise not_modelled(f"alias property [{key}]")

    def update_aliases(self, actions: Any) -> None:
        """``POST /_aliases`` with ``add`` and ``remove`` actions."""
        if not isinstance(actions, list) or not actions:
            raise bad_request(
                "Validation Failed: 1: Must specify at least one alias action;",
                type_="action_request_validation_exception",
            )
        for action in actions:
            ((kind, spec),) = action.items()
            if kind not in ("add", "remove"):
                raise not_modelled(f"alias action [{kind}]")
            alias, props = spec.get("alias"), {k: v for k, v in spec.items() if k not in ("index", "alias")}
            for index in self.resolve(spec.get("index", "")):
                if kind == "add":
                    self._check_alias(alias, props)
                    index.aliases[alias] = props
                elif alias not in index.aliases:
                    raise OpenSearchError(
                        404, "aliases_not_found_exception", f"aliases [{alias}] missing", **{"resource.id": alias}
                    )
                else:
                    del index.aliases[alias]

    def delete_indices(self, expression: str) -> None:
        """``DELETE /{index}``: concrete names only; an alias is refused, as the real server refuses it."""
        targets = []
        for part in expression.split(","):
            if "*" in part or part == "_all":
                raise not_modelled("deleting indices by wildcard")
            if part not in self.indices and self.alias_members(part):
                raise bad_request(
                    f"The provided expression [{part}] matches an alias, "
                    "specify the corresponding concrete indices instead."
                )
            targets.append(self.concrete(part))
        for index in targets:
            del self.indices[index.name]
        self.refreshed.notify_all()

    # ------------------------------------------------------------------------ writes
    def target(self, name: str, *, require_alias: bool) -> IndexState:
        """The index a document write goes to, created (with a dynamic mapping) when nothing has the name."""
        index = self.write_index(name, require_alias=require_alias)
        if index is None:
            index = self.create_index(name, {})
            self.auto_created.append(name)
        return index

    def index_document(
        self, index: IndexState, doc_id: str | None, source: Any, *, create: bool, if_seq: tuple[Any, Any] | None = None
    ) -> Written:
        """``index`` / ``create`` of one document (the ``_id`` is generated when None)."""
        doc_id = _check_id(doc_id) if doc_id is not None else _generated_id()
        if not isinstance(source, dict):
            raise bad_request("The document must be a JSON object", type_="mapper_parsing_exception")
        shard = index.shard_of(doc_id)
        current = index.get(doc_id)
        _check_if_seq(doc_id, current, if_seq)
        if create and current is not None:
            raise OpenSearchError(
                409, "version_conflict_engine_exception",
                f"[{doc_id}]: version conflict, document already exists (current version [{current.version}])",
                index=index.name, shard=str(shard.number), index_uuid=index.uuid,
            )  # fmt: skip
        parsed, new_mappings = parse_document(index.mapping, source, doc_id)
        if new_mappings is not None:
            index.mapping = Mapping(new_mappings, index.created)
        version = index.last_version(doc_id) + 1
        kept = stored_source(index.mapping.raw, source)
        state = shard.write(
            doc_id, Indexed(doc_id, kept, parsed.values, parsed.vectors, version, shard.next_seq_no), version
        )
        result, status = ("updated", 200) if current is not None else ("created", 201)
        return self._written(index, shard, doc_id, state, result, status)

    def delete_document(self, index: IndexState, doc_id: str, *, if_seq: tuple[Any, Any] | None = None) -> Written:
        shard = index.shard_of(_check_id(doc_id))
        current = index.get(doc_id)
        _check_if_seq(doc_id, current, if_seq)
        state = shard.write(doc_id, None, index.last_version(doc_id) + 1)
        result, status = ("deleted", 200) if current is not None else ("not_found", 404)
        return self._written(index, shard, doc_id, state, result, status)

    def update_document(
        self, index: IndexState, doc_id: str, body: Any, *, if_seq: tuple[Any, Any] | None = None
    ) -> Written:
        """A partial update: the new document is the *stored* ``_source`` merged with ``doc``, indexed again.

        That is why a vector left out of ``_source`` (``_source.excludes``) is lost by an update (k-NN#1694).
        """
        if not isinstance(body, dict):
            raise bad_request("update requires an object", type_="action_request_validation_exception")
        unknown = set(body) - {"doc", "doc_as_upsert", "upsert", "detect_noop"}
        if unknown:
            raise not_modelled(f"update parameters {sorted(unknown)} (scripted updates included)")
        if "doc" not in body and "upsert" not in body:
            raise bad_request(
                "Validation Failed: 1: script or doc is missing;", type_="action_request_validation_exception"
            )
        shard = index.shard_of(_check_id(doc_id))
        current = index.get(doc_id)
        _check_if_seq(doc_id, current, if_seq)
        if current is None or current.doc is None:
            if body.get("doc_as_upsert"):
                return self.index_document(index, doc_id, body.get("doc"), create=True)
            if "upsert" in body:
                return self.index_document(index, doc_id, body["upsert"], create=True)
            raise OpenSearchError(
                404, "document_missing_exception", f"[{doc_id}]: document missing",
                index=index.name, shard=str(shard.number), index_uuid=index.uuid,
            )  # fmt: skip
        merged = merge(current.doc.source, body.get("doc") or {})
        if body.get("detect_noop", True) and merged == current.doc.source:
            item = self._written(index, shard, doc_id, current, "noop", 200).item
            item["_shards"] = {"total": 0, "successful": 0, "failed": 0}
            return Written(item)
        return self.index_document(index, doc_id, merged, create=False)

    def _written(
        self, index: IndexState, shard: Shard, doc_id: str, state: Current, result: str, status: int
    ) -> Written:
        replicas = int(index.setting("index.number_of_replicas") or 1)
        item = {
            "_index": index.name,
            "_id": doc_id,
            "_version": state.version,
            "result": result,
            "_shards": {"total": 1 + replicas, "successful": 1, "failed": 0},
            "_seq_no": state.seq_no,
            "_primary_term": PRIMARY_TERM,
            "status": status,
        }
        return Written(item, (index.name, shard.number, state.seq_no))

    # ------------------------------------------------------------------------ refresh
    def refresh(self, indices: list[IndexState] | None = None, shards: set[tuple[str, int]] | None = None) -> None:
        """Refresh whole indices, or only the given ``(index, shard)`` pairs; wakes ``wait_for`` writers."""
        for index in indices if indices is not None else list(self.indices.values()):
            for shard in index.shards:
                if shards is None or (index.name, shard.number) in shards:
                    shard.refresh()
        self.refreshed.notify_all()

    def visible(self, targets: dict[tuple[str, int], int]) -> bool:
        """Are these writes (``(index, shard) -> seq_no``) searchable yet (or their index gone)?"""
        for (name, number), seq_no in targets.items():
            index = self.indices.get(name)
            if index is not None and index.shards[number].visible_seq_no < seq_no:
                return False
        return True

    def periodic_refresh(self) -> None:
        """The refresh ticker: every index with buffered writes, unless its ``refresh_interval`` is ``-1``."""
        for index in self.indices.values():
            if index.setting("index.refresh_interval") != "-1" and index.has_buffered():
                index.refresh()
        self.refreshed.notify_all()


def _check_index_name(name: str) -> None:
    problem = None
    if name != name.lower():
        problem = "must be lowercase"
    elif name.startswith(("_", "-", "+")):
        problem = "must not start with '_', '-', or '+'"
    elif _INVALID_NAME_CHARS & set(name):
        problem = 'must not contain the following characters [ , ", *, \\, <, |, ,, >, /, ?, #, :]'
    elif name in (".", ".."):
        problem = "must not be '.' or '..'"
    elif len(name.encode()) > 255:
        problem = "index name is too long, (" + str(len(name.encode())) + " > 255)"
    if problem is not None:
        raise OpenSearchError(
            400, "invalid_index_name_exception", f"Invalid index name [{name}], {problem}", index=name
        )


def _check_id(doc_id: str) -> str:
    if doc_id == "":
        raise bad_request(
            "Validation Failed: 1: if _id is specified it must not be empty;",
            type_="action_request_validation_exception",
        )
    size = len(doc_id.encode())
    if size > _MAX_ID_BYTES:
        raise bad_request(
            f"Validation Failed: 1: id [{doc_id}] is too long, must be no longer than 512 bytes but was: {size};",
            type_="action_request_validation_exception",
        )
    return doc_id


def _check_if_seq(doc_id: str, current: Current | None, if_seq: tuple[Any, Any] | None) -> None:
    if if_seq is None:
        return
    seq_no, term = if_seq
    if current is None or current.seq_no != int(seq_no) or int(term) != PRIMARY_TERM:
        have = (
            "document does not exist"
            if current is None
            else f"current document has seqNo [{current.seq_no}] and primary term [{PRIMARY_TERM}]"
        )
        raise OpenSearchError(
            409, "version_conflict_engine_exception",
            f"[{doc_id}]: version conflict, required seqNo [{seq_no}], primary term [{term}]. {have}",
        )  # fmt: skip


def _generated_id() -> str:
    return base64.urlsafe_b64encode(os.urandom(15)).decode()
