"""The GraphQL fields of the store settings, derived from their declarations (``STORE_SETTINGS``).

``settings_output`` adds one field per setting to the ``StoreSettings`` type
(nullable where the setting may be None or where only administrators see it);
``settings_input`` adds one optional field per setting to
``StoreSettingsInput``. Each field's description is the declaration's, with
its bounds. Both run before strawberry reads the class.
"""

from __future__ import annotations

from typing import Any, TypeVar

import strawberry

from service.domain.setting import StoreSetting
from service.domain.store import STORE_SETTINGS

C = TypeVar("C", bound=type)


def _description(declared: StoreSetting) -> str:
    return f"{declared.description} Allowed: {declared.bounds}."


def _add(cls: C, declared: StoreSetting, annotation: Any, default: Any) -> None:
    cls.__annotations__[declared.name] = annotation
    setattr(cls, declared.name, default)


def settings_output(cls: C) -> C:
    """``cls`` with a field for each setting (null where the viewer may not see it, or it has no value)."""
    for declared in STORE_SETTINGS:
        hidden = declared.optional or declared.seen_by != "reader"
        annotation = declared.type | None if hidden else declared.type
        _add(cls, declared, annotation, strawberry.field(description=_description(declared)))
    return cls


def settings_input(cls: C) -> C:
    """``cls`` with an optional field for each setting (absent: left as it is)."""
    for declared in STORE_SETTINGS:
        text = _description(declared) + (' "" removes it.' if declared.optional else "")
        _add(cls, declared, declared.type | None, strawberry.field(default=None, description=text))
    return cls


@strawberry.type(description="One store setting as declared: what the admin console builds its settings form from.")
class StoreSettingField:
    name: str = strawberry.field(description="The field's name in StoreSettings and StoreSettingsInput.")
    type: str = strawberry.field(description="Float, Int or String.")
    minimum: float | None
    maximum: float | None
    choices: list[str] = strawberry.field(description="The allowed values; empty when any value in bounds is.")
    max_length: int | None = strawberry.field(description="The longest text, in characters.")
    optional: bool = strawberry.field(description='The setting may have no value ("" removes it).')
    bounds: str = strawberry.field(description="The allowed values, in words.")
    description: str
    default: str | None = strawberry.field(description="A new store's value where store_defaults names none.")
    seen_by: str = strawberry.field(description="reader (every reader of the store) or admin.")


_SCALARS = {float: "Float", int: "Int", str: "String", bool: "Boolean"}


def setting_fields() -> list[StoreSettingField]:
    """Every store setting's declaration, in ``Store``'s order."""
    return [
        StoreSettingField(
            name=s.camel,
            type=_SCALARS[s.type],
            minimum=s.minimum,
            maximum=s.maximum,
            choices=list(s.choices),
            max_length=s.max_length,
            optional=s.optional,
            bounds=s.bounds,
            description=s.description,
            default=None if s.default is None else str(s.default),
            seen_by=s.seen_by,
        )
        for s in STORE_SETTINGS
    ]
