"""JSON objects: ``_source`` filtering with wildcards, and the deep merge of templates and partial updates."""

from __future__ import annotations

import copy
import fnmatch
from typing import Any


def stored_source(mappings: dict[str, Any], source: dict[str, Any]) -> dict[str, Any]:
    """What the index keeps as ``_source`` under the mapping's ``_source.includes/excludes``."""
    spec = mappings.get("_source") or {}
    return filter_source(source, list(spec.get("includes") or []), list(spec.get("excludes") or []))


def filter_source(source: dict[str, Any], includes: list[str], excludes: list[str]) -> dict[str, Any]:
    """Source filtering with ``*`` wildcards on dotted paths (XContentMapValues.filter)."""

    def keep(node: dict[str, Any], prefix: str, included: bool) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in node.items():
            path = f"{prefix}{key}"
            if any(fnmatch.fnmatchcase(path, pattern) for pattern in excludes):
                continue
            here = included or not includes or any(fnmatch.fnmatchcase(path, pattern) for pattern in includes)
            if isinstance(value, dict):
                inner = keep(value, f"{path}.", here)
                if inner or (here and not value):
                    out[key] = inner
            elif isinstance(value, list) and value and all(isinstance(item, dict) for item in value):
                items = [keep(item, f"{path}.", here) for item in value]
                items = [item for item in items if item]
                if items:
                    out[key] = items
            elif here:
                out[key] = copy.deepcopy(value)
        return out

    return keep(source, "", False)


def merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """Deep merge of two JSON objects; ``override`` wins on conflicts (templates, partial updates)."""
    merged = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged
