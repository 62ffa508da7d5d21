"""Index settings: the flat ``index.*`` keys a request may set, their checks, and the nested answer shape."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from tests.fakes_opensearch.errors import bad_request, not_modelled

Flat = dict[str, str]

_TIME = re.compile(r"(\d+)(ms|s|m|h|d)")

#: k-NN plugin settings (KNNSettings.java) and their defaults.
EF_SEARCH = "index.knn.algo_param.ef_search"
EXACT_THRESHOLD = "index.knn.advanced.filtered_exact_search_threshold"
DISABLE_EXACT = "index.knn.faiss.efficient_filter.disable_exact_search"
KNN = "index.knn"
#: Read by the fake; a request never sets them.
PRIVATE = ("index.uuid", "index.version.created", "index.creation_date", "index.provided_name")


def _integer(low: int, high: int | None = None) -> Callable[[str, str], str]:
    def check(key: str, value: str) -> str:
        try:
            number = int(value)
        except ValueError:
            raise bad_request(f"Failed to parse value [{value}] for setting [{key}]") from None
        if number < low or (high is not None and number > high):
            bound = f"must be >= {low}" if number < low else f"must be <= {high}"
            raise bad_request(f"Failed to parse value [{value}] for setting [{key}] {bound}")
        return str(number)

    return check


def _boolean(key: str, value: str) -> str:
    if value not in ("true", "false"):
        raise bad_request(f"Failed to parse value [{value}] as only [true] or [false] are allowed.")
    return value


def _time(key: str, value: str) -> str:
    if value != "-1" and _TIME.fullmatch(value) is None:
        raise bad_request(f"failed to parse setting [{key}] with value [{value}] as a time value")
    return value


def _derived_source(key: str, value: str) -> str:
    if _boolean(key, value) == "true":
        raise not_modelled("k-NN derived source (index.knn.derived_source.enabled: true)")
    return value


def _text(key: str, value: str) -> str:
    return value


_CORE: dict[str, Callable[[str, str], str]] = {
    "index.number_of_shards": _integer(1, 1024),
    "index.number_of_replicas": _integer(0),
    "index.refresh_interval": _time,
    "index.max_result_window": _integer(1),
    "index.mapping.total_fields.limit": _integer(0),
    "index.codec": _text,
}
_KNN: dict[str, Callable[[str, str], str]] = {
    KNN: _boolean,
    EF_SEARCH: _integer(2),
    EXACT_THRESHOLD: _integer(-1),
    DISABLE_EXACT: _boolean,
    "index.knn.derived_source.enabled": _derived_source,
}


def flatten(settings: Any) -> Flat:
    """``{"index": {"knn": true}}``, ``{"knn": true}`` or ``{"index.knn": true}`` -> ``{"index.knn": "true"}``."""
    if not isinstance(settings, dict):
        raise bad_request("request [settings] must be an object", type_="settings_exception")
    flat: Flat = {}

    def walk(prefix: str, node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                walk(f"{prefix}.{key}" if prefix else str(key), value)
            return
        if isinstance(node, list | None):
            raise not_modelled(f"setting [{prefix}] with value {node!r}")
        key = prefix if prefix.startswith("index.") else f"index.{prefix}"
        flat[key] = str(node).lower() if isinstance(node, bool) else str(node)

    walk("", settings)
    return flat


def validate(flat: Flat, *, knn_plugin: bool) -> Flat:
    """Check each setting as the server does; unknown ones are refused with the server's message."""
    known = {**_CORE, **(_KNN if knn_plugin else {})}
    checked: Flat = {}
    for key, value in flat.items():
        if key in PRIVATE:
            raise bad_request(f"private index setting [{key}] can not be set explicitly")
        check = known.get(key)
        if check is None:
            raise bad_request(
                f"unknown setting [{key}] please check that any required plugins are installed, "
                "or check the breaking changes documentation for removed settings"
            )
        checked[key] = check(key, value)
    return checked


def structured(flat: Flat) -> dict[str, Any]:
    """Nest flat keys as ``Settings.getAsStructuredMap`` does: a key that is both a value and a prefix
    keeps the value, and its children fall back to dotted names (``"knn": "true", "knn.algo_param": {...}``).
    """
    root: dict[str, Any] = {}
    for key in sorted(flat):
        _place(root, "", key, flat[key])
    return root


def _place(node: dict[str, Any], prefix: str, key: str, value: str) -> None:
    # A port of Settings.processSetting (OpenSearch server).
    head, dot, rest = key.partition(".")
    if not dot:
        existing = node.get(prefix + key)
        if isinstance(existing, dict):
            for child, child_value in existing.items():
                node[f"{prefix}{key}.{child}"] = child_value
        node[prefix + key] = value
        return
    existing = node.get(prefix + head)
    if existing is None:
        inner: dict[str, Any] = {}
        _place(inner, "", rest, value)
        node[prefix + head] = inner
    elif isinstance(existing, dict):
        _place(existing, "", rest, value)
    else:
        _place(node, f"{prefix}{head}.", rest, value)
