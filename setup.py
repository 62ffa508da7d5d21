"""The build step: the gRPC stubs of proto/ generated into the package before it is built.

Everything else is declared in pyproject.toml. ``build_py`` runs for wheels and for
editable installs (``pip install -e``) alike; it loads ``service/api/grpc/stubgen.py`` by
path (the project's dependencies are not installed yet) and writes the messages, the
services and their ``.pyi`` files to ``service/api/grpc/_gen`` (git-ignored), which the
wheel then carries: an installed DocQA does not need proto/.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
GEN_PACKAGE = "service.api.grpc._gen"


def _stubgen():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("_docqa_stubgen", HERE / "service" / "api" / "grpc" / "stubgen.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


class BuildPyWithStubs(build_py):
    """``build_py`` that first generates the gRPC stubs (when missing or stale) and packages them."""

    def finalize_options(self) -> None:
        stubgen = _stubgen()
        if stubgen.proto_files() and not stubgen.fresh():
            stubgen.generate(required=True)
        if self.distribution.packages is not None and GEN_PACKAGE not in self.distribution.packages:
            self.distribution.packages.append(GEN_PACKAGE)
        super().finalize_options()


setup(cmdclass={"build_py": BuildPyWithStubs})
