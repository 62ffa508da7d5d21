"""The store settings' reference page and their AdminService messages, generated from ``STORE_SETTINGS``.

``render`` makes the table of ``docs/store-settings.md``: each setting with
its type, bounds, default, who may set and see it, and how each interface
names it. ``proto_messages`` makes ``StoreSettings`` and
``SetStoreSettingsRequest`` in ``proto/docqa/v1/admin.proto``: the fields a
store has besides its settings, then one field per setting at the numbers
its declaration gives.
"""

from __future__ import annotations

from service.domain.setting import StoreSetting
from service.domain.store import STORE_SETTINGS
from service.reference.blocks import cell

_PROTO_TYPES = {float: "double", int: "int32", str: "string", bool: "bool"}
#: ``StoreSettings``' fields that are not settings: (number, type, name, comment).
_STORE_FIELDS = (
    (1, "string", "store_id", ""),
    (2, "string", "name", ""),
    (3, "string", "embedding_model", "empty unless the caller is an admin"),
    (10, "int32", "documents", "of the documents the caller may read"),
    (11, "int32", "chunks", "of the documents the caller may read"),
)


def proto_type(declared: StoreSetting) -> str:
    """The proto scalar type of ``declared``'s fields."""
    return _PROTO_TYPES[declared.type]


def _default(declared: StoreSetting) -> str:
    if declared.default is None:
        return "none"
    text = str(declared.default)
    return f"`{text}`" if len(text) <= 40 else "the built-in prompt (`service/domain/store.py`)"


def render() -> str:
    """The Markdown table of every store setting."""
    out = [
        "| Setting | Type | Allowed | Default | Set by | Seen by | GraphQL | CLI | Description |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for s in STORE_SETTINGS:
        kind = s.type.__name__ + (" or none" if s.optional else "")
        seen = "every reader of the store" if s.seen_by == "reader" else "admins"
        out.append(
            f"| `{s.name}` | {kind} | {cell(s.bounds)} | {cell(_default(s))} | {s.set_by} | {seen} | "
            f"`{s.camel}` | `{s.flag} {s.metavar}` | {cell(s.description)} |"
        )
    return "\n".join(out) + "\n"


def _field(label: str, kind: str, name: str, number: int, comment: str) -> str:
    line = f"  {label}{kind} {name} = {number};"
    return f"{line}  // {comment}" if comment else line


def proto_messages() -> str:
    """The two AdminService messages that carry store settings."""
    shown = [(*f[:3], f[0], f[3]) for f in _STORE_FIELDS]
    shown += [(s.proto_numbers[0], proto_type(s), s.name, s.proto_numbers[0], _comment(s)) for s in STORE_SETTINGS]
    out = ["message StoreSettings {"]
    out += [_field("", kind, name, number, comment) for _, kind, name, number, comment in sorted(shown)]
    out += ["}", "", "// Fields left absent are not changed.", "message SetStoreSettingsRequest {"]
    out.append(_field("", "string", "store_id", 1, ""))
    for s in sorted(STORE_SETTINGS, key=lambda s: s.proto_numbers[1]):
        clears = "; an empty string removes it" if s.optional else ""
        out.append(_field("optional ", proto_type(s), s.name, s.proto_numbers[1], s.bounds + clears))
    return "\n".join([*out, "}"]) + "\n"


def _comment(s: StoreSetting) -> str:
    hidden = "; empty unless the caller is an admin" if s.seen_by != "reader" else ""
    none = "; empty: none" if s.optional else ""
    return f"{s.description.removesuffix('.')} ({s.bounds}){hidden}{none}."
