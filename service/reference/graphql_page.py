"""The GraphQL reference, read from the SDL file ``graphql/schema.graphql``.

That file is exported from the strawberry schema and checked against it by ``tests/unit/test_schema_drift.py``;
this page is generated from the file, so neither the page nor the file can drift from the schema unseen.
"""

from __future__ import annotations

from pathlib import Path

from graphql import (
    GraphQLArgument,
    GraphQLEnumType,
    GraphQLField,
    GraphQLInputField,
    GraphQLInputObjectType,
    GraphQLObjectType,
    GraphQLScalarType,
    GraphQLSchema,
    ast_from_value,
    build_schema,
    print_ast,
)
from service.reference.blocks import cell

_ROOTS = ("Query", "Mutation", "Subscription")


def render(sdl: Path) -> str:
    """The operations of each root type, then every object, input, enum and custom scalar type."""
    schema = build_schema(sdl.read_text(encoding="utf-8"))
    out: list[str] = []
    for root in _ROOTS:
        kind = schema.type_map.get(root)
        if isinstance(kind, GraphQLObjectType):
            out += [f"### {root}", "", "| field | arguments | returns | description |", "| --- | --- | --- | --- |"]
            for name, field in kind.fields.items():
                arguments = "<br>".join(_argument(n, a) for n, a in field.args.items())
                out.append(f"| `{name}` | {arguments} | `{field.type}` | {cell(field.description or '')} |")
            out.append("")
    named = [t for n, t in sorted(_types(schema).items()) if n not in _ROOTS]
    out += _objects(named)
    return "\n".join(out).rstrip("\n") + "\n"


def _types(schema: GraphQLSchema) -> dict[str, object]:
    return {name: kind for name, kind in schema.type_map.items() if not name.startswith("__")}


def _objects(named: list[object]) -> list[str]:
    out: list[str] = []
    for title, kind_class in (
        ("Object types", GraphQLObjectType),
        ("Input types", GraphQLInputObjectType),
        ("Enums", GraphQLEnumType),
    ):
        out += [f"### {title}", ""]
        for kind in named:
            if isinstance(kind, kind_class):
                out += _one(kind)
    scalars = [k for k in named if isinstance(k, GraphQLScalarType) and k.ast_node is not None]
    if scalars:
        out += ["### Custom scalars", ""]
        for scalar in scalars:
            out += [f"#### {scalar.name}", "", cell(scalar.description or ""), ""]
    return out


def _one(kind: object) -> list[str]:
    assert isinstance(kind, GraphQLObjectType | GraphQLInputObjectType | GraphQLEnumType)
    out = [f"#### {kind.name}", ""]
    if kind.description:
        out += [cell(kind.description), ""]
    if isinstance(kind, GraphQLEnumType):
        out += ["| value | description |", "| --- | --- |"]
        out += [f"| `{name}` | {cell(value.description or '')} |" for name, value in kind.values.items()]
    elif isinstance(kind, GraphQLInputObjectType):
        out += ["| field | type | default | description |", "| --- | --- | --- | --- |"]
        out += [
            f"| `{name}` | `{field.type}` | {_default(field)} | {cell(field.description or '')} |"
            for name, field in kind.fields.items()
        ]
    else:
        out += ["| field | arguments | type | description |", "| --- | --- | --- | --- |"]
        out += [_field_row(name, field) for name, field in kind.fields.items()]
    return [*out, ""]


def _field_row(name: str, field: GraphQLField) -> str:
    arguments = "<br>".join(_argument(n, a) for n, a in field.args.items())
    return f"| `{name}` | {arguments} | `{field.type}` | {cell(field.description or '')} |"


def _argument(name: str, argument: GraphQLArgument) -> str:
    default = _default(argument)
    return f"`{name}: {argument.type}`" + (f" = {default}" if default else "")


def _default(field: GraphQLArgument | GraphQLInputField) -> str:
    if field.ast_node is not None and field.ast_node.default_value is not None:
        return f"`{print_ast(field.ast_node.default_value)}`"
    if field.default_value is not None and (node := ast_from_value(field.default_value, field.type)) is not None:
        return f"`{print_ast(node)}`"
    return ""
