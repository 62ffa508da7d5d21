"""The configuration reference: every key of the settings model with its type, default and variable.

Read from the model itself (``service.config.Settings``): the sections and keys from the pydantic fields,
types and bounds from their annotations and constraints, defaults from the fields, descriptions from the
``#:`` comments above each field and the sections' docstrings.
"""

from __future__ import annotations

import ast
import enum
import inspect
import textwrap
import types
import typing
from functools import cache
from pathlib import Path
from typing import Any, Literal

import annotated_types
from pydantic import BaseModel, SecretStr
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from service.reference.blocks import cell

_BOUNDS = (
    (annotated_types.Ge, "ge", "≥"),
    (annotated_types.Gt, "gt", ">"),
    (annotated_types.Le, "le", "≤"),
    (annotated_types.Lt, "lt", "<"),
    (annotated_types.MinLen, "min_length", "length ≥"),
    (annotated_types.MaxLen, "max_length", "length ≤"),
)
_NAMES = {str: "string", int: "integer", float: "number", bool: "boolean", Path: "path", SecretStr: "secret"}


@cache
def _comments(model: type[BaseModel]) -> dict[str, str]:
    """The ``#:`` comment lines right above each field of the model's class body, by field name."""
    lines, _ = inspect.getsourcelines(model)
    body = ast.parse(textwrap.dedent("".join(lines))).body[0]
    assert isinstance(body, ast.ClassDef)
    found: dict[str, str] = {}
    for node in body.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            above: list[str] = []
            row = node.lineno - 2  # the line above the field, 0-based in ``lines``
            while row >= 0 and lines[row].strip().startswith("#:"):
                above.insert(0, lines[row].strip()[2:].strip())
                row -= 1
            found[node.target.id] = " ".join(above)
    return found


def _options(annotation: Any) -> tuple[Any, ...]:
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return typing.get_args(annotation)
    return (annotation,)


def _section_model(annotation: Any) -> type[BaseModel] | None:
    for option in _options(annotation):
        if isinstance(option, type) and issubclass(option, BaseModel):
            return option
    return None


def type_text(annotation: Any) -> str:
    """A reader's name for a field's type: ``integer``, ``one of rrf, dense``, ``path or null``."""
    options = [o for o in _options(annotation) if o is not type(None)]
    words = []
    for option in options:
        origin = typing.get_origin(option)
        if origin is Literal:
            words.append("one of " + ", ".join(f"`{value}`" for value in typing.get_args(option)))
        elif origin in (tuple, list, frozenset, set):
            words.append("list of " + type_text(typing.get_args(option)[0]))
        elif isinstance(option, type) and issubclass(option, enum.Enum):
            words.append("one of " + ", ".join(f"`{member.value}`" for member in option))
        elif isinstance(option, type) and issubclass(option, BaseModel):
            words.append(f"section `{option.__name__}`")
        else:
            words.append(_NAMES.get(option, getattr(option, "__name__", str(option))))
    text = " or ".join(words)
    return text + " or null" if len(options) < len(_options(annotation)) else text


def bounds_text(field: FieldInfo) -> str:
    parts = []
    for item in field.metadata:
        for kind, attribute, sign in _BOUNDS:
            if isinstance(item, kind):
                parts.append(f"{sign} {getattr(item, attribute)}")
        pattern = getattr(item, "pattern", None)
        if isinstance(pattern, str):
            parts.append(f"matches `{pattern}`")
    return ", ".join(parts)


def default_text(field: FieldInfo) -> str:
    if field.default_factory is not None:
        return f"computed: `{getattr(field.default_factory, '__name__', 'factory')}()`"
    value = field.default
    if value is PydanticUndefined:
        return "required"
    if value is None:
        return "`null`"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, enum.Enum):
        value = value.value
    if isinstance(value, tuple | list | frozenset):
        return "`[" + ", ".join(str(item) for item in value) + "]`"
    return f"`{value}`"


def env_name(key: str) -> str:
    return "DOCQA_" + key.upper().replace(".", "__")


def _doc(model: type[BaseModel]) -> str:
    own = model.__dict__.get("__doc__")
    return inspect.cleandoc(own).split("\n\n", 1)[0].replace("\n", " ") if own else ""


def render(model: type[BaseModel]) -> str:
    """One Markdown table per section of ``model``, depth first, top-level keys first."""
    out: list[str] = []
    _section(model, "", out)
    return "\n".join(out).rstrip("\n") + "\n"


def _section(model: type[BaseModel], prefix: str, out: list[str]) -> None:
    title = prefix.rstrip(".") or "top level"
    out += [f"### `{title}`" if prefix else "### Top level", ""]
    if doc := _doc(model):
        out += [doc, ""]
    out += ["| key | type | default | environment variable | description |", "| --- | --- | --- | --- | --- |"]
    nested: list[tuple[str, type[BaseModel]]] = []
    comments = _comments(model)
    for name, field in model.model_fields.items():
        key = prefix + name
        section = _section_model(field.annotation)
        if section is not None and _options(field.annotation) == (section,):
            nested.append((key, section))
            continue
        if section is not None:  # an optional section: absent unless configured
            nested.append((key, section))
        kind = type_text(field.annotation)
        if bounds := bounds_text(field):
            kind += f" ({bounds})"
        secret = SecretStr in _options(field.annotation)
        env = f"`{env_name(key)}`" + (" (secret: environment or file only)" if secret else "")
        if section is not None:
            env = "keys below"
        row = [f"`{key}`", kind, default_text(field), env, cell(comments.get(name) or field.description or "")]
        out.append("| " + " | ".join(row) + " |")
    out.append("")
    for key, section in nested:
        _section(section, key + ".", out)
