"""Mappings: what a create request may declare, and the fields a mapping defines.

The ``knn_vector`` rules are copied from the plugin (``KNNVectorFieldMapper.java``, ``KNNEngine.java``,
``EngineResolver.java``, ``AbstractKNNMethod.java``, the SUPPORTED_SPACES of ``FaissHNSWMethod.java``,
``LuceneHNSWMethod.java`` and ``NmslibHNSWMethod.java``); the rest follows the OpenSearch server's mappers.
How documents are parsed against a mapping is in ``document_parser``, ``_source`` filtering in ``source``.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from tests.fakes_opensearch.errors import OpenSearchError, bad_request, not_modelled
from tests.fakes_opensearch.versions import V_2_17_0, V_2_18_0, V_2_19_0, V_3_0_0, Version, version_text

ENGINES = ("faiss", "lucene", "nmslib")
SPACES = ("l2", "cosinesimil", "innerproduct", "l1", "linf", "hamming")
#: SUPPORTED_SPACES of FaissHNSWMethod / LuceneHNSWMethod / NmslibHNSWMethod; faiss gained cosinesimil in 2.19.
_ENGINE_SPACES = {
    "faiss": ("l2", "innerproduct", "hamming", "cosinesimil"),
    "lucene": ("l2", "cosinesimil", "innerproduct", "hamming"),
    "nmslib": ("l2", "l1", "linf", "cosinesimil", "innerproduct"),
}
#: KNNEngine.MAX_DIMENSIONS_BY_ENGINE.
MAX_DIMENSION = 16_000
_MODES = ("in_memory", "on_disk")
_COMPRESSIONS = ("1x", "2x", "4x", "8x", "16x", "32x")
_ROOT_KEYS = {"properties", "dynamic", "_source", "_meta"}
_COMMON = {"type", "index", "doc_values", "store", "null_value", "fields", "copy_to", "boost"}
_PARAMETERS: dict[str, set[str]] = {
    "keyword": _COMMON | {"ignore_above"},
    "text": {"type", "index", "store", "fields", "norms", "analyzer", "search_analyzer"},
    "long": _COMMON | {"coerce"},
    "integer": _COMMON | {"coerce"},
    "short": _COMMON | {"coerce"},
    "byte": _COMMON | {"coerce"},
    "float": _COMMON | {"coerce"},
    "double": _COMMON | {"coerce"},
    "half_float": _COMMON | {"coerce"},
    "boolean": _COMMON,
    "date": _COMMON | {"format"},
    "object": {"type", "properties", "dynamic", "enabled"},
    "knn_vector": {"type", "dimension", "method", "space_type", "mode", "compression_level", "data_type"},
}


@dataclass(frozen=True, slots=True)
class VectorField:
    """A ``knn_vector`` field as the plugin resolved it."""

    dimension: int
    engine: str
    space_type: str


@dataclass(frozen=True, slots=True)
class FieldInfo:
    """One mapped leaf field (a multi-field like ``title.keyword`` reads its parent's ``_source`` value)."""

    path: str
    type: str
    source_path: str
    searchable: bool
    doc_values: bool
    ignore_above: int | None = None
    vector: VectorField | None = None


def mapping_error(reason: str, cause: OpenSearchError | None = None) -> OpenSearchError:
    extra = {"caused_by": cause.cause()} if cause is not None else {}
    return OpenSearchError(400, "mapper_parsing_exception", reason, **extra)


# ---------------------------------------------------------------------------- validation at index creation
def validate_mappings(mappings: Any, *, knn_plugin: bool, knn_enabled: bool, created: Version) -> dict[str, Any]:
    """Check a ``mappings`` body; returns a copy to keep (the server echoes what it was given)."""
    if not isinstance(mappings, dict):
        raise mapping_error("Failed to parse mapping [_doc]: mapping must be an object")
    checked: dict[str, Any] = copy.deepcopy(mappings)
    mappings = checked
    unknown = sorted(set(mappings) - _ROOT_KEYS)
    if unknown:
        modelled_elsewhere = {"dynamic_templates", "_routing", "date_detection", "numeric_detection"}
        if modelled_elsewhere & set(unknown):
            raise not_modelled(f"mapping parameters {unknown}")
        details = ", ".join(f"{key} : {mappings[key]}" for key in unknown)
        raise mapping_error(f"Root mapping definition has unsupported parameters:  [{details}]")
    if "dynamic" in mappings:
        dynamic_value(mappings["dynamic"])
    source = mappings.get("_source", {})
    if not isinstance(source, dict) or set(source) - {"excludes", "includes", "enabled"}:
        raise mapping_error(f"Failed to parse mapping [_doc]: unsupported [_source] parameters {source!r}")
    if source.get("enabled") is False:
        raise not_modelled("_source.enabled: false")
    try:
        _validate_properties(mappings.get("properties", {}), "", knn_plugin, knn_enabled, created)
    except OpenSearchError as error:
        if error.type == "fake_not_modelled_exception":
            raise
        raise mapping_error(f"Failed to parse mapping [_doc]: {error.reason}", error) from None
    return checked


def dynamic_value(value: Any) -> str:
    text = str(value).lower() if isinstance(value, bool) else str(value)
    if text not in ("true", "false", "strict"):
        raise mapping_error(f"Could not convert [dynamic] to boolean or strict: [{value}]")
    return text


def _validate_properties(properties: Any, prefix: str, knn_plugin: bool, knn_enabled: bool, created: Version) -> None:
    if not isinstance(properties, dict):
        raise mapping_error(f"Expected map for property [properties] on field [{prefix or '_doc'}]")
    for name, definition in properties.items():
        path = f"{prefix}{name}"
        if not isinstance(definition, dict):
            raise mapping_error(f"Expected map for property [fields] on field [{path}] but got a class {definition!r}")
        kind = definition.get("type", "object" if "properties" in definition else None)
        if kind is None:
            raise mapping_error(f"No type specified for field [{path}]")
        if (kind == "knn_vector" and not knn_plugin) or kind not in _PARAMETERS:
            if kind in ("nested", "flat_object", "geo_point", "ip", "binary", "scaled_float", "unsigned_long"):
                raise not_modelled(f"field type [{kind}]")
            raise mapping_error(f"No handler for type [{kind}] declared on field [{path}]")
        for parameter in definition:
            if parameter not in _PARAMETERS[kind]:
                raise mapping_error(f"unknown parameter [{parameter}] on mapper [{path}] of type [{kind}]")
        if kind == "object":
            if "dynamic" in definition:
                dynamic_value(definition["dynamic"])
            if definition.get("enabled") is False:
                raise not_modelled("object fields with enabled: false")
            _validate_properties(definition.get("properties", {}), f"{path}.", knn_plugin, knn_enabled, created)
        elif kind == "knn_vector":
            resolve_vector(path, definition, knn_enabled=knn_enabled, created=created)
        elif kind == "text" and definition.get("analyzer", "standard") != "standard":
            raise not_modelled(f"analyzer [{definition['analyzer']}] on field [{path}]")
        for sub_name, sub in (definition.get("fields") or {}).items():
            if not isinstance(sub, dict) or sub.get("type") not in ("keyword", "text"):
                raise not_modelled(f"multi-field [{path}.{sub_name}] of type {sub!r}")


def resolve_vector(path: str, definition: dict[str, Any], *, knn_enabled: bool, created: Version) -> VectorField:
    """Validate a ``knn_vector`` definition and resolve its engine and space (KNNVectorFieldMapper.TypeParser)."""
    dimension = definition.get("dimension")
    method = definition.get("method")
    if "model_id" in definition:
        raise not_modelled("knn_vector fields built from a trained model")
    if definition.get("data_type", "float") != "float":
        raise not_modelled(f"knn_vector data_type [{definition['data_type']}]")
    if dimension is None:
        raise bad_request(f"Dimension value missing for vector: {path}")
    if isinstance(dimension, bool) or not isinstance(dimension, int | str) or not str(dimension).isdigit():
        raise mapping_error(f"Unable to parse [dimension] from provided value [{dimension}] for vector [{path}]")
    dimension = int(dimension)
    if dimension <= 0:
        raise bad_request(f"Dimension value must be greater than 0 for vector: {path}")
    if dimension > MAX_DIMENSION:
        raise bad_request(f"Dimension value cannot be greater than {MAX_DIMENSION} for vector: {path}")
    mode, compression = definition.get("mode"), definition.get("compression_level")
    if mode is not None and mode not in _MODES:
        raise bad_request(f"Invalid mode [{mode}]; expected one of {list(_MODES)}")
    if compression is not None and compression not in _COMPRESSIONS:
        raise bad_request(f"Invalid compression level [{compression}]; expected one of {list(_COMPRESSIONS)}")
    if not knn_enabled:
        # Since 2.17 a knn_vector on an index without index.knn is a flat (graph-less) field.
        if method is not None:
            raise bad_request("Cannot set modelId or method parameters when index.knn setting is false")
        raise not_modelled("knn_vector fields on an index without index.knn: true (flat vectors)")
    if (mode is not None or compression is not None) and created < V_2_17_0:
        raise mapping_error("Compression and mode can only be used on indices created on or after version 2.17.0")
    method = method or {}
    if not isinstance(method, dict):
        raise mapping_error(f"Unable to parse [method] for vector [{path}]")
    unknown = set(method) - {"name", "engine", "space_type", "parameters"}
    if unknown:
        raise mapping_error(f"Unknown parameters {sorted(unknown)} in [method] of vector [{path}]")
    name = method.get("name", "hnsw")
    if name != "hnsw":
        raise not_modelled(f'k-NN method "{name}" (only "hnsw")')
    top_space, method_space = definition.get("space_type"), method.get("space_type")
    if top_space is not None and method_space is not None and top_space != method_space:
        raise mapping_error(
            'Space type in "method" and top level space type should be same or one of them should be defined'
        )
    space = method_space or top_space or "l2"
    if space not in SPACES:
        raise bad_request(f"Unable to find space: {space}")
    engine = method.get("engine") or _default_engine(mode, compression, created)
    if engine not in ENGINES:
        raise bad_request(f"Invalid engine type: {engine}")
    if engine == "nmslib" and created >= V_3_0_0:
        # KNNVectorFieldMapper.validateBlockedKNNEngine (the double spaces are the plugin's).
        raise bad_request(
            "nmslib engine is deprecated in OpenSearch  and cannot be used for new index creation in OpenSearch "
            f"from  {version_text(V_3_0_0)}."
        )
    supported = space in _ENGINE_SPACES[engine] and not (
        engine == "faiss" and space == "cosinesimil" and created < V_2_19_0
    )
    if not supported:
        raise bad_request(
            f'Validation Failed: 1: "hnsw" with "{engine}" configuration does not support space type: "{space}".;'
        )
    parameters = method.get("parameters") or {}
    for key, value in parameters.items():
        if key not in ("m", "ef_construction", "ef_search", "encoder"):
            raise bad_request(f"Invalid parameter [{key}] for method [hnsw] of engine [{engine}]")
        if key == "encoder":
            if not isinstance(value, dict) or value.get("name") != "flat":
                raise not_modelled(f"encoder {value!r} (quantised vectors)")
        elif isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise bad_request(f"Invalid value [{value}] for parameter [{key}] of method [hnsw]")
    return VectorField(dimension=dimension, engine=engine, space_type=space)


def _default_engine(mode: str | None, compression: str | None, created: Version) -> str:
    """EngineResolver: faiss by default since 2.18 (nmslib before), lucene for 4x compression."""
    if compression == "4x":
        return "lucene"
    if compression not in (None, "1x"):
        return "faiss"
    if mode is not None:
        return "faiss" if created >= V_2_19_0 or mode == "on_disk" else "nmslib"
    return "faiss" if created >= V_2_18_0 else "nmslib"


# ---------------------------------------------------------------------------- reading a mapping
class Mapping:
    """An index's mappings (as echoed) and its mapped fields by dotted path."""

    def __init__(self, raw: dict[str, Any], created: Version) -> None:
        self.raw = raw
        self.created = created
        self.fields = field_infos(raw, created)

    def field(self, path: str) -> FieldInfo | None:
        return self.fields.get(path)

    def vector(self, path: str) -> VectorField | None:
        info = self.fields.get(path)
        return info.vector if info is not None else None


def field_infos(mappings: dict[str, Any], created: Version) -> dict[str, FieldInfo]:
    """Every mapped field (objects included, and multi-fields like ``title.keyword``) by dotted path."""
    found: dict[str, FieldInfo] = {}

    def walk(properties: dict[str, Any], prefix: str) -> None:
        for name, definition in properties.items():
            path = f"{prefix}{name}"
            kind = definition.get("type", "object")
            if kind == "object":
                found[path] = FieldInfo(path, "object", path, False, False)
                walk(definition.get("properties", {}), f"{path}.")
                continue
            vector = None
            if kind == "knn_vector":
                vector = resolve_vector(path, definition, knn_enabled=True, created=created)
            found[path] = _info(path, path, kind, definition, vector)
            for sub_name, sub in (definition.get("fields") or {}).items():
                found[f"{path}.{sub_name}"] = _info(f"{path}.{sub_name}", path, sub["type"], sub, None)

    walk(mappings.get("properties", {}), "")
    return found


def _info(path: str, source_path: str, kind: str, definition: dict[str, Any], vector: VectorField | None) -> FieldInfo:
    return FieldInfo(
        path=path,
        type=kind,
        source_path=source_path,
        searchable=definition.get("index", True) is not False,
        doc_values=definition.get("doc_values", kind != "text") is not False,
        ignore_above=definition.get("ignore_above"),
        vector=vector,
    )
