"""Every error class DocQA defines, in whichever layer it lives, is mapped by the one table in
``service.api.errors`` (through itself or one of its bases), never left to fall through as an internal error."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from acl.errors import DocQAError
from service.api.errors import mapping_for

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("acl", "indexer", "service")


def _base_names(node: ast.ClassDef) -> set[str]:
    return {b.id if isinstance(b, ast.Name) else b.attr for b in node.bases if isinstance(b, ast.Name | ast.Attribute)}


def _defining_modules() -> dict[str, str]:
    """Each error class's name and the module that defines it, found in the source (not only in what some test
    happened to import): a class is an error when it derives from ``DocQAError`` or from another error class."""
    classes: list[tuple[str, set[str], str]] = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "_gen" in path.parts:
                continue
            module = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
            tree = ast.parse(path.read_text(encoding="utf-8"))
            classes += [(n.name, _base_names(n), module) for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]
    errors = {"DocQAError": "acl.errors"}
    grown = True
    while grown:
        found = {name: module for name, bases, module in classes if bases & errors.keys() and name not in errors}
        errors |= found
        grown = bool(found)
    return errors


def _subclasses(cls: type[DocQAError]) -> set[type[DocQAError]]:
    direct = set(cls.__subclasses__())
    return direct.union(*(_subclasses(c) for c in direct))


def test_every_error_class_in_every_layer_is_in_the_one_table() -> None:
    defined = _defining_modules()
    for module in set(defined.values()):
        importlib.import_module(module)
    classes = {c for c in _subclasses(DocQAError) if c.__module__.split(".")[0] in PACKAGES}
    assert {c.__name__ for c in classes} == set(defined) - {"DocQAError"}
    internal = mapping_for(Exception("not ours"))
    unmapped = sorted(f"{c.__module__}.{c.__name__}" for c in classes if mapping_for(c.__new__(c)) == internal)
    assert unmapped == []


def test_each_layer_keeps_its_own_errors() -> None:
    defined = _defining_modules()
    assert defined["IndexUnavailable"] == defined["LoadError"] == defined["UnsafePath"] == "indexer.errors"
    assert defined["GeneratorUnavailable"] == "service.generation.errors"
    assert defined["RerankerUnavailable"] == "service.ranking.errors"
    assert defined["InvalidArgument"] == defined["ConfigurationError"] == "acl.errors"
