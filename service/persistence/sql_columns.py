"""The ``stores`` table's column of each declared store setting (``service.domain.store.STORE_SETTINGS``).

A setting's column follows from its declaration: its type (``Float``,
``Integer``, ``String(n)`` for text of at most n (up to 2,000) characters, ``Text`` for longer), NULL
where None is a value or where NULL reads as the configured default, and a
server default for a setting added to a table that already had rows. The
migration that adds it writes the same column; a test compares the two.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Float, Integer, String, Text
from sqlalchemy.orm import MappedColumn, mapped_column
from sqlalchemy.types import TypeEngine

from service.domain.setting import StoreSetting


def column_type(setting: StoreSetting) -> TypeEngine[Any]:
    """The SQL type of ``setting``'s column."""
    if setting.type is bool:
        raise TypeError(f"{setting.name}: no column type for booleans yet")
    if setting.type is float:
        return Float()
    if setting.type is int:
        return Integer()
    if setting.type is str:
        length = setting.column_length or setting.max_length
        return Text() if length is None or length > 2_000 else String(length)
    raise TypeError(f"{setting.name}: no column type for {setting.type.__name__}")


def nullable(setting: StoreSetting) -> bool:
    """Whether ``setting``'s column may hold NULL."""
    return setting.optional or setting.null_is_default


def server_default(setting: StoreSetting) -> str | None:
    """The column's server default as DDL text, or None."""
    return str(setting.default) if setting.server_default else None


def store_column(setting: StoreSetting) -> MappedColumn[Any]:
    """The mapped column of ``setting`` in ``stores``."""
    return mapped_column(
        setting.name, column_type(setting), nullable=nullable(setting), server_default=server_default(setting)
    )
