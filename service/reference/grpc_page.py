"""The gRPC reference, read from ``proto/docqa/v1/*.proto`` with their comments.

protoc (grpcio-tools, as ``service.api.grpc.stubs`` uses it) compiles the files into a descriptor set that
keeps the source's comments; the page lists each file's services and methods, then its messages and enums,
every one with the comment written above or beside it in the ``.proto`` file.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from google.protobuf import descriptor_pb2

from service.reference.blocks import cell

_FIELD = descriptor_pb2.FieldDescriptorProto
_SCALARS = {
    value: name.removeprefix("TYPE_").lower()
    for name, value in _FIELD.Type.items()
    if name not in ("TYPE_MESSAGE", "TYPE_ENUM", "TYPE_GROUP")
}
# Paths into FileDescriptorProto / DescriptorProto / ServiceDescriptorProto (descriptor.proto's field numbers).
_MESSAGE, _ENUM, _SERVICE, _NESTED, _FIELDS, _VALUES, _METHODS = 4, 5, 6, 3, 2, 2, 2


def descriptors(proto_root: Path) -> descriptor_pb2.FileDescriptorSet:
    """The compiled ``docqa/v1`` files under ``proto_root``, with their source comments."""
    from grpc_tools import protoc  # type: ignore[import-untyped,unused-ignore]

    files = sorted(p.relative_to(proto_root).as_posix() for p in (proto_root / "docqa" / "v1").glob("*.proto"))
    include = Path(protoc.__file__).parent / "_proto"
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "set.pb"
        args = ["protoc", f"-I{proto_root}", f"-I{include}", "--include_source_info", f"--descriptor_set_out={out}"]
        if protoc.main([*args, *files]) != 0:
            raise RuntimeError(f"protoc could not compile {proto_root}")
        found = descriptor_pb2.FileDescriptorSet()
        found.ParseFromString(out.read_bytes())
    return found


def render(proto_root: Path) -> str:
    """Each file's services (methods with request, response and streaming), messages and enums."""
    out: list[str] = []
    for file in descriptors(proto_root).file:
        comments = _comments(file)
        out += [f"### `{file.name}`", ""]
        if lead := comments.get((12,), ""):  # the comment above ``syntax``: what the file holds
            out += [cell(lead), ""]
        for s, service in enumerate(file.service):
            out += [f"#### service {service.name}", ""]
            if text := comments.get((_SERVICE, s), ""):
                out += [cell(text), ""]
            out += ["| method | request | response | description |", "| --- | --- | --- | --- |"]
            for m, method in enumerate(service.method):
                request = ("stream " if method.client_streaming else "") + _short(method.input_type)
                response = ("stream " if method.server_streaming else "") + _short(method.output_type)
                text = comments.get((_SERVICE, s, _METHODS, m), "")
                out.append(f"| `{method.name}` | `{request}` | `{response}` | {cell(text)} |")
            out.append("")
        for i, message in enumerate(file.message_type):
            out += _message(message, (_MESSAGE, i), comments, "")
        for i, enum in enumerate(file.enum_type):
            out += _enum(enum, (_ENUM, i), comments, "")
    return "\n".join(out).rstrip("\n") + "\n"


def _comments(file: descriptor_pb2.FileDescriptorProto) -> dict[tuple[int, ...], str]:
    found: dict[tuple[int, ...], str] = {}
    for location in file.source_code_info.location:
        text = " ".join(part.strip() for part in (location.leading_comments, location.trailing_comments) if part)
        if not text and location.leading_detached_comments:
            text = location.leading_detached_comments[-1].strip()
        if text:
            found[tuple(location.path)] = text
    return found


def _short(type_name: str) -> str:
    return type_name.removeprefix(".docqa.v1.")


def _message(
    message: descriptor_pb2.DescriptorProto, path: tuple[int, ...], comments: dict[tuple[int, ...], str], outer: str
) -> list[str]:
    if message.options.map_entry:
        return []
    name = outer + message.name
    out = [f"#### {name}", ""]
    if text := comments.get(path, ""):
        out += [cell(text), ""]
    maps = {nested.name: nested for nested in message.nested_type if nested.options.map_entry}
    if message.field:
        out += ["| field | number | type | description |", "| --- | --- | --- | --- |"]
        for f, field in enumerate(message.field):
            kind = _type(field, maps)
            if field.HasField("oneof_index") and not field.proto3_optional:
                kind += f" (one of `{message.oneof_decl[field.oneof_index].name}`)"
            text = comments.get((*path, _FIELDS, f), "")
            out.append(f"| `{field.name}` | {field.number} | {kind} | {cell(text)} |")
    else:
        out.append("No fields.")
    out.append("")
    for n, nested in enumerate(message.nested_type):
        out += _message(nested, (*path, _NESTED, n), comments, name + ".")
    for n, enum in enumerate(message.enum_type):
        out += _enum(enum, (*path, 4, n), comments, name + ".")
    return out


def _type(field: descriptor_pb2.FieldDescriptorProto, maps: dict[str, descriptor_pb2.DescriptorProto]) -> str:
    def one(f: descriptor_pb2.FieldDescriptorProto) -> str:
        return _SCALARS[f.type] if f.type in _SCALARS else _short(f.type_name)

    entry = maps.get(field.type_name.rsplit(".", 1)[-1]) if field.type == _FIELD.TYPE_MESSAGE else None
    if entry is not None and field.label == _FIELD.LABEL_REPEATED:
        return f"`map<{one(entry.field[0])}, {one(entry.field[1])}>`"
    label = "repeated " if field.label == _FIELD.LABEL_REPEATED else "optional " if field.proto3_optional else ""
    return f"`{label}{one(field)}`"


def _enum(
    enum: descriptor_pb2.EnumDescriptorProto, path: tuple[int, ...], comments: dict[tuple[int, ...], str], outer: str
) -> list[str]:
    out = [f"#### enum {outer}{enum.name}", ""]
    if text := comments.get(path, ""):
        out += [cell(text), ""]
    out += ["| value | number | description |", "| --- | --- | --- |"]
    for v, value in enumerate(enum.value):
        out.append(f"| `{value.name}` | {value.number} | {cell(comments.get((*path, _VALUES, v), ''))} |")
    return [*out, ""]
