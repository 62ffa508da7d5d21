"""Every projection of the store settings agrees with their one declaration (``STORE_SETTINGS``).

The SQL columns the migrations make, the GraphQL input and output fields, the AdminService messages, the
``docqa settings set`` flags and the configuration's ``store_defaults`` are each compared with the table;
the reference page and the proto messages are checked by ``test_reference_pages`` (they are generated).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import String, Text, create_engine, inspect

from acl.errors import InvalidArgument
from service.api.cli.parser import build_parser
from service.api.graphql.schema import build_schema
from service.config import StoreDefaults
from service.domain.setting import StoreSetting
from service.domain.store import STORE_SETTINGS, Store
from service.persistence import schema as sql_schema
from service.persistence.sql_columns import column_type, nullable, server_default
from service.persistence.sql_settings import StoreRow
from service.reference.grpc_page import descriptors
from service.reference.store_settings_page import proto_type

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
IDS = [s.name for s in STORE_SETTINGS]


def test_the_store_fields_are_the_table_and_its_defaults() -> None:
    store = Store(id="s", name="s", embedding_model="m")
    assert [s.name for s in STORE_SETTINGS] == [
        f for f in Store.__slots__ if f not in ("id", "name", "embedding_model")
    ]
    for s in STORE_SETTINGS:
        assert getattr(store, s.name) == s.default
        assert s.set_by == "admin"
        assert s.description.endswith(".")


@pytest.mark.parametrize("declared", STORE_SETTINGS, ids=IDS)
def test_each_setting_takes_its_default_and_bounds_and_refuses_past_them(declared: StoreSetting) -> None:
    if declared.default is not None:
        assert declared.validate(declared.default) == declared.default
    for choice in declared.choices:
        assert declared.validate(choice) == choice
    if declared.choices:
        with pytest.raises(InvalidArgument, match=declared.name):
            declared.validate("not-" + declared.choices[0])
    if declared.minimum is not None and declared.maximum is not None:
        assert declared.validate(declared.type(declared.minimum)) == declared.minimum
        assert declared.validate(declared.type(declared.maximum)) == declared.maximum
        for outside in (declared.minimum - 1, declared.maximum + 1):
            with pytest.raises(InvalidArgument):
                declared.validate(declared.type(outside))
        with pytest.raises(InvalidArgument):
            declared.validate(True)
    if declared.max_length is not None and declared.type is str:
        with pytest.raises(InvalidArgument):
            declared.validate("a" * (declared.max_length + 1))


@pytest.fixture(scope="module")
def stores_columns(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """The ``stores`` columns of a database the migrations brought to head (not the ORM's view of it)."""
    engine = create_engine(f"sqlite:///{tmp_path_factory.mktemp('db') / 'settings.db'}")
    try:
        sql_schema.upgrade(engine)
        return {c["name"]: c for c in inspect(engine).get_columns("stores")}
    finally:
        engine.dispose()


@pytest.mark.parametrize("declared", STORE_SETTINGS, ids=IDS)
def test_the_migrations_make_each_settings_column_as_declared(
    declared: StoreSetting, stores_columns: dict[str, dict[str, Any]]
) -> None:
    column = stores_columns.get(declared.name)
    assert column is not None, f"no migration adds stores.{declared.name}"
    wanted = column_type(declared)
    assert isinstance(column["type"], type(wanted)), (column["type"], wanted)
    if isinstance(wanted, String) and not isinstance(wanted, Text):
        assert column["type"].length >= (declared.max_length or 0)  # every valid value fits
    assert column["nullable"] == nullable(declared)
    default = column["default"]
    expected = server_default(declared)
    if expected is None:
        assert default is None
    else:
        assert default is not None and math.isclose(float(default.strip("'\"()")), float(expected))


def test_the_stores_table_holds_the_settings_and_nothing_else() -> None:
    columns = set(StoreRow.__table__.columns.keys())
    assert columns == {"id", "name", "embedding_model", *IDS}


def _graphql_fields(type_name: str) -> dict[str, tuple[str, bool]]:
    """``{field: (scalar, non-null)}`` of one GraphQL type, from the built schema."""
    graphql_type: Any = build_schema()._schema.get_type(type_name)
    out = {}
    for name, f in graphql_type.fields.items():
        kind = f.type
        required = hasattr(kind, "of_type") and type(kind).__name__ == "GraphQLNonNull"
        out[name] = ((kind.of_type if required else kind).name, required)
    return out


_GRAPHQL_SCALARS = {float: "Float", int: "Int", str: "String", bool: "Boolean"}


def test_the_graphql_output_type_has_each_setting() -> None:
    fields = _graphql_fields("StoreSettings")
    for s in STORE_SETTINGS:
        always = not s.optional and s.seen_by == "reader"
        assert fields[s.camel] == (_GRAPHQL_SCALARS[s.type], always), s.name
    assert set(fields) - {s.camel for s in STORE_SETTINGS} == {"id", "name", "embeddingModel", "documents", "chunks"}


def test_the_graphql_input_has_each_setting_and_nothing_else() -> None:
    fields = _graphql_fields("StoreSettingsInput")
    assert fields == {s.camel: (_GRAPHQL_SCALARS[s.type], False) for s in STORE_SETTINGS}


def _proto_messages() -> dict[str, Any]:
    found = descriptors(ROOT / "proto")
    admin = next(f for f in found.file if f.name == "docqa/v1/admin.proto")
    return {m.name: m for m in admin.message_type}


_PROTO_SCALARS = {"double": 1, "int32": 5, "string": 9, "bool": 8}  # FieldDescriptorProto.Type


def test_the_admin_messages_carry_each_setting_at_its_number() -> None:
    messages = _proto_messages()
    shown = {f.name: f for f in messages["StoreSettings"].field}
    setter = {f.name: f for f in messages["SetStoreSettingsRequest"].field}
    for s in STORE_SETTINGS:
        out_number, in_number = s.proto_numbers
        assert (shown[s.name].number, shown[s.name].type) == (out_number, _PROTO_SCALARS[proto_type(s)])
        assert (setter[s.name].number, setter[s.name].type) == (in_number, _PROTO_SCALARS[proto_type(s)])
        assert setter[s.name].proto3_optional, f"{s.name}: absent must mean unchanged"
    assert set(setter) == {"store_id", *IDS}
    numbers = [n for s in STORE_SETTINGS for n in s.proto_numbers]
    assert all(n > 1 for n in numbers)


def test_docqa_settings_set_has_a_flag_per_setting() -> None:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    settings = sub.choices["settings"]  # type: ignore[index]
    flags = {o: a for a in settings._actions for o in a.option_strings}
    for s in STORE_SETTINGS:
        assert s.flag in flags, s.name
        assert flags[s.flag].dest == s.name
        assert (flags[s.flag].type is int) == (s.type is int)
        assert s.description in (flags[s.flag].help or "")
        assert (f"--clear-{s.flag[2:]}" in flags) == s.optional


def test_the_configured_store_defaults_agree_with_the_declared_defaults() -> None:
    defaults = StoreDefaults()
    shared = [s for s in STORE_SETTINGS if s.name in type(defaults).model_fields]
    assert {s.name for s in shared} >= {"level", "min_threshold", "max_threshold", "max_chunks", "fusion"}
    for s in shared:
        assert getattr(defaults, s.name) == s.default, s.name
        field = type(defaults).model_fields[s.name]
        bounds = {type(m).__name__: m for m in field.metadata}
        if "Ge" in bounds:
            assert bounds["Ge"].ge == s.minimum, s.name
        if "Le" in bounds:
            assert bounds["Le"].le == s.maximum, s.name
