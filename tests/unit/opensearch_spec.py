"""The official OpenSearch API specification, as JSON-schema validators for request and response bodies.

The specification (OpenAPI 3.1, whose schemas are JSON Schema 2020-12) lives
in ``../shared/opensearch-api-spec/spec`` beside the repository (or where
``OPENSEARCH_API_SPEC`` points). Every YAML file is loaded as one resource of a
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
bare ``type: object``) stay free. Responses are checked as the spec says
(open), since servers add fields.
"""

from __future__ import annotations

import copy
import os
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

_ROOT = Path(__file__).resolve().parents[2]
SPEC_HOME = Path(os.environ.get("OPENSEARCH_API_SPEC") or _ROOT.parent / "shared" / "opensearch-api-spec")
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
    return yaml.load(path.read_text(encoding="utf-8"), Loader=loader)  # noqa: S506 - a safe loader


@lru_cache(maxsize=1)
def _documents() -> dict[str, Any]:
    if not SPEC_DIR.is_dir():
        raise FileNotFoundError(
            f"the OpenSearch API specification is missing at {SPEC_DIR}; "
            "put shared/opensearch-api-spec beside the repository or set OPENSEARCH_API_SPEC"
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
        for token in (fragment.lstrip("/").split("/") if fragment else []):
            node = node[token.replace("~1", "/").replace("~0", "~")]
        return target, node

    def _closure(self, base: str, node: Any, seen: set[int], branch: bool = False) -> Iterator[tuple[dict[str, Any], bool]]:
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


@lru_cache(maxsize=2)
def registry(strict: bool) -> Registry[Any]:
    """All spec files as one registry; ``strict`` closes object schemas as the module explains."""
    documents = _documents()
    if strict:
        documents = copy.deepcopy(documents)
        closer = _Closer(documents)
        for uri, document in documents.items():
            for schema, whole in _schema_roots(document):
                closer.walk(uri, schema, whole)
    resources = [(uri, Resource.from_contents(doc, default_specification=DRAFT202012)) for uri, doc in documents.items()]
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
    ref = _uri(f"namespaces/{namespace}.yaml") + _pointer("components", "requestBodies", name, "content", media, "schema")
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
