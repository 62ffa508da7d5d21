"""Documents against a mapping: which values each field indexes, the vector checks, and dynamic mapping.

Dynamic mapping follows the server's: a new string is ``text`` with a ``keyword`` sub-field (or ``date`` when it
looks like one), an integer ``long``, a fraction ``float`` — so a vector written to an index that has no
``knn_vector`` mapping becomes a ``float`` array, never a vector. Vector values are checked as
``KNNVectorFieldMapper`` checks them (``KNNValidationUtil.java``; no zero vector in cosine space,
``SpaceType.java``) and kept as float32.
"""

from __future__ import annotations

import copy
import math
import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from tests.fakes_opensearch.errors import OpenSearchError, bad_request
from tests.fakes_opensearch.mapping import FieldInfo, Mapping, VectorField, dynamic_value, field_infos, mapping_error

_INTEGER_RANGES = {"long": 2**63, "integer": 2**31, "short": 2**15, "byte": 2**7}
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}([Tt ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?([Zz]|[+-]\d{2}:?\d{2})?)?")
_TOKEN = re.compile(r"\w+")


@dataclass(slots=True)
class ParsedDocument:
    """What a document puts into the index: searchable values per field, and vectors."""

    values: dict[str, list[Any]]
    vectors: dict[str, np.ndarray]


def dynamic_setting_of(mappings: dict[str, Any], object_path: str) -> str:
    """The ``dynamic`` value that governs new fields inside ``object_path`` ("" is the root)."""
    setting = dynamic_value(mappings.get("dynamic", True))
    node = mappings
    for part in object_path.split(".") if object_path else []:
        node = (node.get("properties") or {}).get(part) or {}
        if "dynamic" in node:
            setting = dynamic_value(node["dynamic"])
    return setting


def parse_document(
    mapping: Mapping, source: dict[str, Any], doc_id: str
) -> tuple[ParsedDocument, dict[str, Any] | None]:
    """Check ``source`` against the mapping: the indexed values, and the new mappings if dynamic fields were added.

    The mapping itself is left alone: a document that fails adds no field (the caller commits the new mappings).
    """
    parser = _Parser(mapping, doc_id)
    parser.walk(source, "")
    return parser.parsed, parser.raw if parser.changed else None


class _Parser:
    def __init__(self, mapping: Mapping, doc_id: str) -> None:
        self.raw = mapping.raw
        self.fields = mapping.fields
        self.created = mapping.created
        self.doc_id = doc_id
        self.changed = False
        self.parsed = ParsedDocument(values={}, vectors={})

    def walk(self, node: dict[str, Any], prefix: str) -> None:
        for key, value in node.items():
            path = f"{prefix}{key}"
            objects = isinstance(value, dict) or (
                isinstance(value, list) and bool(value) and all(isinstance(item, dict) for item in value)
            )
            info = self.fields.get(path)
            if objects:
                if info is None:
                    info = self._add(path, {"properties": {}})
                    if info is None:
                        continue
                if info.type != "object":
                    cause = bad_request(f"Can't get text on a START_OBJECT at {path}")
                    raise _field_error(info, self.doc_id, value, cause)
                for item in value if isinstance(value, list) else [value]:
                    self.walk(item, f"{path}.")
                continue
            if value is None or value == []:
                continue
            if info is None:
                info = self._add(path, _dynamic_definition(value))
                if info is None:
                    continue
            if info.type == "object":
                raise mapping_error(
                    f"object mapping for [{path}] tried to parse field [{key}] as object, but found a concrete value"
                )
            if info.vector is not None:
                self.parsed.vectors[path] = _vector(info, value, info.vector, self.doc_id)
                continue
            for field in (f for f in self.fields.values() if f.source_path == path):
                items = value if isinstance(value, list) else [value]
                kept = [v for v in (_scalar(field, item, self.doc_id) for item in items) if v is not None]
                if kept:
                    self.parsed.values.setdefault(field.path, []).extend(kept)

    def _add(self, path: str, definition: dict[str, Any]) -> FieldInfo | None:
        """Map a new field as dynamic mapping would, or None where ``dynamic: false`` leaves it unmapped."""
        parent, _, name = path.rpartition(".")
        setting = dynamic_setting_of(self.raw, parent)
        if setting == "strict":
            raise OpenSearchError(
                400,
                "strict_dynamic_mapping_exception",
                f"mapping set to strict, dynamic introduction of [{name}] within [{parent or '_doc'}] is not allowed",
            )
        if setting == "false":
            return None
        if not self.changed:
            self.raw = copy.deepcopy(self.raw)
            self.changed = True
        node = self.raw
        for part in parent.split(".") if parent else []:
            node = node.setdefault("properties", {}).setdefault(part, {"properties": {}})
        node.setdefault("properties", {})[name] = definition
        self.fields = field_infos(self.raw, self.created)
        return self.fields[path]


def _dynamic_definition(value: Any) -> dict[str, Any]:
    """The mapping dynamic mapping gives a new field (a list takes its first value's): no vectors, ever."""
    if isinstance(value, list):
        return _dynamic_definition(next(item for item in value if item is not None))
    if isinstance(value, bool):
        return {"type": "boolean"}
    if isinstance(value, int):
        return {"type": "long"}
    if isinstance(value, float):
        return {"type": "float"}
    if _DATE.fullmatch(str(value)):
        return {"type": "date"}
    return {"type": "text", "fields": {"keyword": {"type": "keyword", "ignore_above": 256}}}


def _preview(value: Any) -> str:
    return f"'{value}'" if not isinstance(value, list) else "'" + ",".join(str(v) for v in value[:4]) + "'"


def _field_error(field: FieldInfo, doc_id: str, value: Any, cause: OpenSearchError) -> OpenSearchError:
    return mapping_error(
        f"failed to parse field [{field.source_path}] of type [{field.type}] in document with id '{doc_id}'. "
        f"Preview of field's value: {_preview(value)}",
        cause,
    )


def _scalar(field: FieldInfo, value: Any, doc_id: str) -> Any:
    """The indexed form of one value of a non-vector field, or None when it is not indexed (ignore_above)."""
    kind = field.type
    if value is None:
        return None
    if isinstance(value, dict | list):
        cause = bad_request(f"Can't get text on a START_OBJECT at {field.source_path}")
        raise _field_error(field, doc_id, value, cause)
    if kind in ("keyword", "text", "date"):
        text = str(value).lower() if isinstance(value, bool) else str(value)
        if kind == "keyword" and field.ignore_above is not None and len(text) > field.ignore_above:
            return None
        return text
    if kind == "boolean":
        if isinstance(value, bool):
            return value
        if value in ("true", "false", ""):
            return value == "true"
        raise _field_error(
            field, doc_id, value, bad_request(f"Failed to parse value [{value}] as only [true] or [false] are allowed.")
        )
    try:
        if isinstance(value, bool):
            raise ValueError(value)
        number = float(value)
        if not math.isfinite(number):
            raise ValueError(value)
    except ValueError:
        error = OpenSearchError(400, "number_format_exception", f'For input string: "{value}"')
        raise _field_error(field, doc_id, value, error) from None
    if kind in _INTEGER_RANGES:
        bound = _INTEGER_RANGES[kind]
        if not -bound <= number < bound:
            raise _field_error(field, doc_id, value, bad_request(f"Value [{value}] is out of range for {kind}"))
        return int(number)
    return number


def _vector(field: FieldInfo, value: Any, vector: VectorField, doc_id: str) -> np.ndarray:
    """KNNVectorFieldMapper.parseCreateField for float vectors (KNNValidationUtil, SpaceType.validateVector)."""
    if not isinstance(value, list) or any(isinstance(v, bool) or not isinstance(v, int | float) for v in value):
        raise _field_error(field, doc_id, value, bad_request("Vector values must be numbers"))
    array = np.asarray(value, dtype=np.float32)
    if np.isnan(array).any():
        raise _field_error(field, doc_id, value, bad_request("KNN vector values cannot be NaN"))
    if np.isinf(array).any():
        raise _field_error(field, doc_id, value, bad_request("KNN vector values cannot be infinity"))
    if array.shape != (vector.dimension,):
        cause = bad_request(f"Vector dimension mismatch. Expected: {vector.dimension}, Given: {len(value)}")
        raise _field_error(field, doc_id, value, cause)
    if vector.space_type == "cosinesimil" and not array.any():
        cause = bad_request("zero vector is not supported when space type is [cosinesimil]")
        raise _field_error(field, doc_id, value, cause)
    return array


def tokens(text: str) -> list[str]:
    """A rough standard analyzer: lower-cased word tokens."""
    return _TOKEN.findall(text.lower())
