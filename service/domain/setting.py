"""How a per-store setting is declared: once, as a field of ``Store``, with everything its projections need.

``setting(...)`` is a dataclass field that carries a ``StoreSetting``: the
setting's type (from the field's annotation), default, bounds or choices,
description, who may set it and who may see it, and its validator. From the
table of them (``service.domain.store.STORE_SETTINGS``) the SQL columns, the
GraphQL input and output fields, the AdminService messages, the ``docqa
settings set`` flags and the reference page ``docs/store-settings.md`` are
derived; tests check each against it.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from acl.errors import InvalidArgument

T = TypeVar("T")
_KEY = "docqa.store_setting"
#: Who may see a setting in a store listing: every reader of the store, or administrators only.
Audience = Literal["reader", "admin"]


@dataclass(frozen=True, slots=True)
class StoreSetting:
    """One per-store setting, as declared (``name`` and ``type`` come from its ``Store`` field)."""

    name: str
    type: type
    default: Any
    description: str
    validate: Callable[[object], Any]
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] = ()
    #: None is a value of the setting (no value); an empty string given to set it means None.
    optional: bool = False
    #: The longest text (a ``String(n)`` column); None for numbers and unbounded text (``Text``).
    max_length: int | None = None
    #: Its ``String`` column's length where that is longer than ``max_length`` (a column made before the bound).
    column_length: int | None = None
    #: Who may change it (every change goes through ``Admin.update_settings``).
    set_by: Literal["admin"] = "admin"
    #: Who sees it in a listing; others get null (GraphQL) or an empty field (gRPC).
    seen_by: Audience = "reader"
    #: Its column may hold NULL for "the configured default" (a store made before the setting existed).
    null_is_default: bool = False
    #: Its column has the default as a server default (added to a table that had rows).
    server_default: bool = False
    #: Its field numbers in ``StoreSettings`` and in ``SetStoreSettingsRequest`` (proto/docqa/v1/admin.proto).
    proto_numbers: tuple[int, int] = (0, 0)
    #: The placeholder in ``docqa settings set --NAME METAVAR``.
    metavar: str = "X"

    @property
    def flag(self) -> str:
        """``--lexical-weight``."""
        return "--" + self.name.replace("_", "-")

    @property
    def camel(self) -> str:
        """``lexicalWeight``: the GraphQL field name."""
        head, *rest = self.name.split("_")
        return head + "".join(part.title() for part in rest)

    @property
    def bounds(self) -> str:
        """The allowed values in words: ``0 to 50``, ``one of rrf, weighted``, ``up to 8000 characters``."""
        if self.choices:
            return "one of " + ", ".join(self.choices)
        if self.minimum is not None and self.maximum is not None:
            return f"{_number(self.minimum)} to {_number(self.maximum)}"
        if self.max_length is not None:
            return f"up to {self.max_length:,} characters"
        return "see the description"


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def setting(
    default: T,
    *,
    description: str,
    validate: Callable[[object], Any],
    minimum: float | None = None,
    maximum: float | None = None,
    choices: tuple[str, ...] = (),
    max_length: int | None = None,
    column_length: int | None = None,
    seen_by: Audience = "reader",
    null_is_default: bool = False,
    server_default: bool = False,
    proto: tuple[int, int] = (0, 0),
    metavar: str = "X",
) -> T:
    """A ``Store`` field that is a per-store setting (see ``StoreSetting``)."""
    declared = StoreSetting(
        name="",
        type=object,
        default=default,
        description=description,
        validate=validate,
        minimum=minimum,
        maximum=maximum,
        choices=choices,
        max_length=max_length,
        column_length=column_length,
        seen_by=seen_by,
        null_is_default=null_is_default,
        server_default=server_default,
        proto_numbers=proto,
        metavar=metavar,
    )
    made: T = field(default=default, metadata={_KEY: declared})
    return made


def settings_of(cls: type) -> tuple[StoreSetting, ...]:
    """The settings declared on the dataclass ``cls``, in field order, named and typed from their fields."""
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        declared = f.metadata.get(_KEY)
        if declared is None:
            continue
        hint = hints[f.name]
        args = typing.get_args(hint) if isinstance(hint, types.UnionType) else (hint,)
        kinds = [a for a in args if a is not type(None)]
        assert len(kinds) == 1, f"{f.name}: one type, or one type or None"
        out.append(dataclasses.replace(declared, name=f.name, type=kinds[0], optional=type(None) in args))
    return tuple(out)


# ---------------------------------------------------------------------------- validators for declarations
def bounded_int(name: str, minimum: int, maximum: int) -> Callable[[object], int]:
    """A validator: an integer in [minimum, maximum] (not a boolean)."""

    def validate(value: object) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= maximum:
            raise InvalidArgument(f"{name} must be an integer between {minimum} and {maximum}")
        return value

    return validate


def cosine(name: str) -> Callable[[object], float]:
    """A validator: a finite number in [-1, 1] (a cosine similarity); numeric strings are numbers."""

    def validate(value: object) -> float:
        try:
            number = float(value)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            raise InvalidArgument(f"{name} must be a number, got {value!r}") from None
        if isinstance(value, bool) or not math.isfinite(number):
            raise InvalidArgument(f"{name} must be a finite number, got {value!r}")
        if not -1.0 <= number <= 1.0:
            raise InvalidArgument(f"{name} must be between -1 and 1 (cosine similarity)")
        return number

    return validate
